"""Parser of the corpus's per-class `crop_area.properties` files.

Real lines look like `Img_000_0001=45,76,538,404`: the key is the image file
name without extension (its case may differ from the file), the value the box
in pixels as x,y,w,h. Files come with CRLF or LF, a BOM, `[section]` lines,
comments and malformed values (`=,986,590`, `dissimilar,...`, two numbers,
zero area). A line that gives no usable box is counted and otherwise ignored:
that image simply has no box.
"""

from __future__ import annotations

import dataclasses
import os
import re

from photo_datasets.photos.images import IMAGE_SUFFIXES

# Four integers, then anything (trailing junk is tolerated).
_BOX = re.compile(r"^\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)(?!\d)")


@dataclasses.dataclass
class CropAreas:
  boxes: dict[str, tuple[int, int, int, int]]  # lower-case key -> (x, y, w, h)
  bad_lines: list[str]


def parse_crop_areas(data: bytes) -> CropAreas:
  text = data.decode("utf-8-sig", errors="replace")
  boxes, bad = {}, []
  for raw in text.splitlines():
    line = raw.strip()
    if not line or line[0] in "#!;" or (line[0] == "[" and line[-1] == "]"):
      continue
    key, sep, value = line.partition("=")
    match = _BOX.match(value)
    if not sep or not key.strip() or not match:
      bad.append(line)
      continue
    x, y, w, h = map(int, match.groups())
    if w <= 0 or h <= 0:
      bad.append(line)
      continue
    boxes[crop_key(key)] = (x, y, w, h)
  return CropAreas(boxes, bad)


def crop_key(name: str) -> str:
  """The key of an image in a crop file: its file name without the image
  extension, in lower case (`Img_001_0006.JPG` -> `img_001_0006`). Keys are
  written without extension; one that has it is tolerated."""
  stem, suffix = os.path.splitext(name.strip().lower())
  return stem if suffix in IMAGE_SUFFIXES else stem + suffix

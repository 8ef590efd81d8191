"""A kfood.zip joined in name order: its pieces' order worked out from its bytes.

A shell glob sorts the pieces as text (`part10737418240` before
`part2147483648`), so a join by `cat kfood.zip.part*` holds every byte in the
wrong order. The piece size is tried where it is likeliest (AIHub's 1 GiB,
then round sizes: a few bytes read each), then worked out from where the
zip's end record lies in the file, which fixes it among few sizes at any
size the bytes allow; the zip's directory, read through the pieces in that
order, must then agree with its bytes.
"""

from __future__ import annotations

import itertools
import os

from korean_food import incomplete
from korean_food.names import decode_name
from photo_datasets.archives import pieces as pieced
from photo_datasets.archives import storage, zips

# The round sizes tried first: where the last piece by name is also the last by offset, the end
# record lies at the file's end whatever the piece size, and only these are found.
_MIN_PIECE, _MAX_PIECE = 512, 4 << 30


def find_join(f: zips.Seekable, path: str, size: int,
              end_in_place: bool = False) -> tuple[list[pieced.Extent], str] | None:
  """The file at `path` as pieces joined in name order, if a piece size puts
  its zip together: AIHub's and other round sizes first (a few bytes read
  each), then the sizes that put an end record found in the file where such
  a join has it (the file read once, only where it is no cut download). With
  `end_in_place` (the zip's own end record and directory agree: its last
  piece stayed last), the round sizes only: no other size moves no end record."""
  for piece_size in pieced.piece_sizes(size, _MIN_PIECE, _MAX_PIECE):
    at = _end_record_at(path, size, piece_size)
    if zips.read_at(f, at, 4) == zips.END_SIGNATURE and _joins(path, size, piece_size):
      return _joined(path, size, _smallest_alike(path, size, piece_size))
  if end_in_place or _cut_from_start(f, size):
    return None
  for end in zips.end_records(f, size):
    for piece_size in pieced.text_order_sizes(size, end):
      if _joins(path, size, piece_size):
        return _joined(path, size, piece_size)
  return None


def _joins(path: str, size: int, piece_size: int) -> bool:
  return incomplete.problem_of(
      pieced.PiecedFile(pieced.joined_in_text_order(path, size, piece_size)), size) is None


def _smallest_alike(path: str, size: int, piece_size: int) -> int:
  """The smallest piece size whose name-order join reads the file as `piece_size`'s does: the
  bytes cannot tell 2 pieces of 1 MiB that sort together from one of 2 MiB, and the smaller is
  the likelier download."""
  runs = pieced.runs(pieced.joined_in_text_order(path, size, piece_size))
  while (piece_size % 2 == 0
         and pieced.runs(pieced.joined_in_text_order(path, size, piece_size // 2)) == runs):
    piece_size //= 2
  return piece_size


def _joined(path: str, size: int, piece_size: int) -> tuple[list[pieced.Extent], str]:
  extents = pieced.joined_in_text_order(path, size, piece_size)
  offsets = pieced.text_order(size, piece_size)
  first, second = next((a, b) for a, b in itertools.pairwise(offsets) if a > b)
  name = os.path.basename(path)
  repair = (f"`python -m korean_food repair {path}` puts it in order in place (no extra disk)"
            if storage.is_local(path) else
            "`python -m korean_food repair` puts a copy of it on a disk in order in place (a "
            "bucket's file cannot be rewritten)")
  return extents, (
      f"{path} is the download's {len(extents)} pieces of {pieced.size_in_words(piece_size)} "
      f"joined in name order (as text, {name}.part{first} sorts before {name}.part{second}): "
      f"its bytes are all there, and the build reads it in the right order as it is. Other "
      f"tools cannot open it; {repair}.")


def _cut_from_start(f: zips.Seekable, size: int) -> bool:
  """The zip's members follow each other from its start to its end, the last cut short: a
  transfer cut."""
  last = None
  for member in zips.local_members(f, size, decode_name):
    last = member
  return last is not None and last[1] + last[2] > size


def _end_record_at(path: str, size: int, piece_size: int) -> int:
  """Where the end record (without a comment) lies in a name-order join of this piece size."""
  offsets = pieced.text_order(size, piece_size)
  last = offsets.index((size - 1) // piece_size * piece_size)
  return size - zips.END.size - (len(offsets) - 1 - last) * piece_size

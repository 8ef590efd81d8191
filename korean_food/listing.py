"""What the Korean food corpus holds, file by file: photos, crop files, junk.

Each rule of the corpus has its home here:

* junk: macOS and Windows by-products (`__MACOSX/`, `._*`, `.DS_Store`,
  `Thumbs.db`) and every file that is neither an image nor a zip, such as
  `org_url.csv`: counted as ignored;
* the download's own forms (pieces named by offset, `download.tar`, a zip
  joined in name order): read as they are by `download`; what it found goes
  into the warnings; a browser's unfinished `kfood.zip.part`: ignored, with a
  warning;
* unreadable archives (reported by the walker): a zip that cannot be opened
  or holds no file, and a member whose directory entry is damaged, skipped
  with the reason;
* crop files: `crop_area.properties`, parsed into boxes per class folder (a
  damaged one is skipped, its folder's photos get no boxes);
* class folders: the folder holding an image must be one of the 150 classes;
* prefix mismatches: an `Img_XXX_` prefix naming another class than the
  folder keeps the folder's label, with a warning;
* series order: the `YYYY` of `Img_XXX_YYYY` numbers a class's photos in the
  order they were collected, so one blog's shots of a dish come together.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from korean_food import classes, corpus, crop_areas, download
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos.images import IMAGE_SUFFIXES
from photo_datasets.photos.records import Candidate

CROP_FILE = "crop_area.properties"
_UNFINISHED = re.compile(r"\.zip\.part$", re.IGNORECASE)  # A browser's download in progress.
_PREFIX = re.compile(r"^img_(\d{3})_", re.IGNORECASE)
_NUMBER = re.compile(r"^img_\d{3}_(\d+)\.", re.IGNORECASE)


def series_position(file_name: str) -> int | None:
  """The photo's number within its class (`Img_XXX_YYYY`), or None for another name."""
  match = _NUMBER.match(file_name.rsplit("/", 1)[-1])
  return int(match[1]) if match else None


def _unreadable(e: Exception) -> str:
  return f"unreadable: {e or type(e).__name__}"  # `zipfile`'s EOFError says nothing itself.


def is_junk(parts: tuple[str, ...]) -> bool:
  """macOS/Windows by-products and every file that is neither an image nor a zip."""
  return ("__MACOSX" in parts or parts[-1].startswith(".")
          or not parts[-1].lower().endswith(IMAGE_SUFFIXES + (".zip",)))


class CorpusListing:
  """Iterates over the photos of a corpus root as `Candidate`s, reporting what
  it leaves out; afterwards `crop_areas` holds the boxes of every crop file.
  Each folder's crop file is read before its photos, which carry their boxes.

  Args:
    source: the manual dir, in any layout `corpus.walk` reads, with the
      download's zips found in it.
    report: receives the skips, warnings and counts.
  """

  def __init__(self, source: download.Download, report: BuildReport):
    self.source, self.report = source, report
    # Class name -> {crop key: (x, y, w, h) in stored pixels}.
    self.crop_areas: dict[str, dict[str, tuple[int, int, int, int]]] = {}

  def __iter__(self) -> Iterator[Candidate]:
    report = self.report
    report.counts["bad crop lines"] = 0
    report.warnings += [archive.note for archive in self.source.archives if archive.note]
    for file, read in corpus.walk(self.source, first=lambda name: name.lower() == CROP_FILE):
      folder = file.parts[-2] if len(file.parts) > 1 else ""
      if file.name.lower() == CROP_FILE and not file.bad_archive:
        try:
          parsed = crop_areas.parse_crop_areas(read())
        except Exception as e:  # A damaged archive member: its folder's photos get no boxes.
          report.skip("/".join(file.parts), _unreadable(e))
          continue
        self.crop_areas.setdefault(folder, {}).update(parsed.boxes)
        report.counts["bad crop lines"] += len(parsed.bad_lines)
      elif is_junk(file.parts):
        report.ignored_files += 1
        if _UNFINISHED.search(file.name):
          report.warnings.append(
              f"{file.name} is an unfinished download (a browser's partial file): let it finish "
              f"or download again; the build read the rest")
      elif file.bad_archive:
        report.skip("/".join(file.parts), file.problem)
      elif (food := classes.class_by_name().get(folder)) is None:
        report.skip("/".join(file.parts), f"folder {folder!r} is not one of the 150 classes")
      else:
        file_name = f"{food.super_category}/{food.name}/{file.name}"
        self._check_prefix(file_name, food)
        try:  # Read here only where a worker cannot read it itself.
          data = b"" if file.span else read()
        except Exception as e:  # A damaged archive member.
          report.skip(file_name, _unreadable(e))
          continue
        yield Candidate(file_name, file.location, data, self.crop_area(folder, file.name),
                        file.span)

  def crop_area(self, folder: str, file_name: str) -> tuple[int, int, int, int] | None:
    """The crop box of a photo in stored pixels, from the crop files read so far."""
    return self.crop_areas.get(folder, {}).get(crop_areas.crop_key(file_name))

  def _check_prefix(self, file_name: str, food: classes.FoodClass) -> None:
    prefix = _PREFIX.match(file_name.rsplit("/", 1)[-1])
    if prefix and int(prefix[1]) != food.index:
      self.report.warnings.append(
          f"{file_name}: prefix Img_{prefix[1]} is class {int(prefix[1])}, "
          f"but the folder is class {food.index}; kept the folder's label")

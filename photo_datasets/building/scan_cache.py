"""The saved scan: what a scan learned, kept in TFDS's download dir and reused
by every config built later from the same, unchanged source files, by the same
rules.

A saved scan holds each photo's checks, near-copy group, series and split: it
is named by the source's files and by the rules that decided them (as Hugging
Face `datasets` names a cache by its input and a hash of its transform). The
rules are the source code of the modules that decide a scan (`RULE_MODULES`,
and the dataset's own package) and the versions of the libraries that decode
and measure the photos, so a scan by any other release, or with another
OpenCV or Pillow, is never taken for today's, whether or not a constant was
bumped.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import importlib.metadata
import inspect
import json
import logging
import operator
import os
import pathlib
from collections.abc import Callable
from typing import Any

from etils import epath

from photo_datasets.archives import storage
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import images, near_duplicates
from photo_datasets.photos.records import Photo, Span

_PACKAGE = pathlib.Path(__file__).parent.parent
# The shared modules whose code decides what a scan saves (this one: its rows).
RULE_MODULES = ("photos/*.py", "archives/*.py", "building/scan.py", "building/scan_cache.py",
                "catalog/build_report.py")
# The libraries that decode, resize, measure and match the photos.
RULE_LIBRARIES = ("faiss-cpu", "numpy", "opencv-python-headless", "pillow", "simplejpeg")


@functools.cache
def rules(dataset_package: str) -> str:
  """The digest of what decides a scan of the dataset whose package (its
  builder's folder) is `dataset_package`: the code of `RULE_MODULES` and of the
  package, and the versions of `RULE_LIBRARIES`."""
  digest = hashlib.sha256()
  files = [p for pattern in RULE_MODULES for p in sorted(_PACKAGE.glob(pattern))]
  files += sorted(pathlib.Path(dataset_package).glob("*.py"))
  for path in files:
    code = path.read_bytes()
    digest.update(f"{path.parent.name}/{path.name}\0{len(code)}\0".encode() + code)
  for library in RULE_LIBRARIES:
    digest.update(f"{library}\0{_installed_version(library)}\0".encode())
  return digest.hexdigest()


def _installed_version(distribution: str) -> str:
  try:
    return importlib.metadata.version(distribution)
  except importlib.metadata.PackageNotFoundError:
    return ""


def source_fingerprint(root: str) -> str:
  """Changes whenever a file under `root` is added, removed, resized or touched."""
  digest = hashlib.sha256(root.encode("utf-8", "surrogateescape"))
  for folder, dirs, files in storage.walk(root):
    dirs.sort()
    for name in sorted(files):
      size, mtime_ns = storage.stamp(os.path.join(folder, name))
      digest.update(f"\0{folder}/{name}\0{size}\0{mtime_ns}".encode(
          "utf-8", "surrogateescape"))
  return digest.hexdigest()


def saved_scan(cache_dir: str | os.PathLike[str], builder: type[Any], source: str) -> epath.Path:
  """Where the scan of `source` by a build of the dataset `builder` (its class) is saved in
  `cache_dir`: named by the files and by today's `rules`, so a scan of other files or by other
  rules is never taken for it (`why_not_reused` tells them apart)."""
  scan_rules = rules(os.path.dirname(inspect.getfile(builder)))
  name = f"{builder.name}-{source_fingerprint(source)[:20]}-{scan_rules[:12]}.json"
  return epath.Path(cache_dir) / name


def why_not_reused(path: epath.Path, dataset: str) -> str | None:
  """Why the saved scans of `dataset` beside `path` (none of them `path`) cannot be reused, in a
  line; None where there are none."""
  others = [p for p in path.parent.glob(f"{dataset}-*.json") if p != path]
  if not others:
    return None
  source = path.stem.split("-")[1]
  names = [other.stem.split("-") for other in others]
  if any(parts[1:2] == [source] and len(parts) == 3 for parts in names):
    return (f"the saved scan of these files in {path.parent} was made by another version of "
            "the package or of its image libraries, whose checks, groups or splits may differ")
  if any(len(parts) == 2 for parts in names):  # Named by the source alone: before 1.7.0.
    return (f"the saved scan in {path.parent} was made by an earlier version of the package, "
            "whose checks, groups or splits may differ")
  return (f"no saved scan in {path.parent} is of these files (the download changed or moved since, "
          "or it is another one)")


def save_scan(path: epath.Path, photos: list[Photo], report: BuildReport) -> None:
  """Writes the scan durably (flushed to disk, then renamed into place); a
  read-only folder only costs a rescan later."""
  rows = [[p.file_name, list(p.location), p.digest, _check_row(p.check), p.box, p.group_digest,
           _fields(p.span) if p.span else None, p.nbytes, p.quality, list(p.moments)]
          for p in photos]
  text = json.dumps({"photos": rows, "report": report.as_metadata()})
  try:
    if storage.is_local(path):
      write_durably(os.fspath(path), text.encode("utf-8"))
    else:  # A bucket's object is written whole or not at all.
      path.parent.mkdir(parents=True, exist_ok=True)
      path.write_bytes(text.encode("utf-8"))
  except OSError as e:
    logging.warning("Could not save the scan in %s: %s", path.parent, e)


def write_durably(path: str, data: bytes) -> None:
  """`path` holds either its old content or all of `data`, even after a crash
  or a power loss: written beside it, flushed to the disk, then renamed."""
  folder = os.path.dirname(path) or "."
  os.makedirs(folder, exist_ok=True)
  partial = f"{path}.partial"
  with open(partial, "wb") as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())
  os.replace(partial, path)
  if hasattr(os, "O_DIRECTORY"):  # The rename itself, on POSIX.
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
      os.fsync(fd)
    finally:
      os.close(fd)


# Dataclass -> a getter of all its fields (more than one) as a tuple.
_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _fields(flat: Any) -> list[Any]:
  """A dataclass of plain values as a list: `dataclasses.astuple` without its deep copies,
  nor `dataclasses.fields` per call, as the main process does this for every photo
  (docs/performance.md#the-main-process)."""
  if (getter := _GETTERS.get(type(flat))) is None:
    getter = _GETTERS[type(flat)] = operator.attrgetter(
        *(field.name for field in dataclasses.fields(flat)))
  return list(getter(flat))


def _check_row(check: images.ImageCheck) -> list[object]:
  *fields, hashes, padding = _fields(check)
  return [*fields, base64.b64encode(hashes).decode("ascii"), padding]


def _check_of_row(row: list[Any]) -> images.ImageCheck:
  fmt, mode, width, height, orientation, hashes, padding = row
  check = images.ImageCheck(fmt, mode, width, height, orientation,
                            base64.b64decode(hashes, validate=True), int(padding))
  if len(check.hashes) != near_duplicates.HASH_BYTES * len(near_duplicates.REGIONS):
    raise ValueError(f"hashes of {len(check.hashes)} bytes")
  return check


def _photo_of_row(row: list[Any]) -> Photo:
  name, location, digest, check, box, group_digest, span, nbytes, scores, moments = row
  if not (isinstance(name, str) and isinstance(digest, str) and len(digest) == 64
          and isinstance(nbytes, int) and isinstance(scores, dict) and isinstance(moments, list)):
    raise ValueError(f"malformed photo row {str(row)[:80]}")
  return Photo(name, tuple(location), digest, _check_of_row(check),
               tuple(box) if box else None, group_digest, Span(*span) if span else None, nbytes,
               {str(k): float(v) for k, v in scores.items()}, tuple(float(v) for v in moments))


def load_scan(path: epath.Path) -> tuple[list[Photo], BuildReport] | None:
  """The saved scan, or None where it cannot be used: it is only ever an
  optimisation, so a file cut short or garbled costs a rescan and one line in
  the log, never the build."""
  try:
    saved = json.loads(path.read_bytes())
    photos = [_photo_of_row(row) for row in saved["photos"]]
    return photos, BuildReport.from_metadata(saved["report"])
  except Exception as e:  # Anything in the file may be wrong.
    logging.warning("Ignoring the saved scan %s, which cannot be used (%s: %s); "
                    "scanning the source again.", path, type(e).__name__, str(e)[:200])
    return None

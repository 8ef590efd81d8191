"""The saved scan: what a scan learned, kept in TFDS's download dir and reused
by every config built later from the same, unchanged source files."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import json
import logging
import operator
import os
from collections.abc import Callable
from typing import Any

from etils import epath

from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import images, near_duplicates
from photo_datasets.photos.records import Photo, Span

# Bump when the scan learns something new or checks differently.
_SCAN_FORMAT = 12


def source_fingerprint(root: str) -> str:
  """Changes whenever a file under `root` is added, removed, resized or touched."""
  digest = hashlib.sha256(f"{_SCAN_FORMAT}\0{root}".encode())
  for folder, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(files):
      stat = os.stat(os.path.join(folder, name))
      digest.update(f"\0{folder}/{name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode(
          "utf-8", "surrogateescape"))
  return digest.hexdigest()


def saved_scan(cache_dir: str | os.PathLike[str], dataset: str, source: str) -> epath.Path:
  """Where the scan of `source` by a build of `dataset` is saved in `cache_dir`: named by the
  source's files and this version's scan format, so a scan of other files or of another format
  is never taken for it (`why_not_reused` tells them apart)."""
  return epath.Path(cache_dir) / f"{dataset}-{source_fingerprint(source)[:20]}.json"


def why_not_reused(path: epath.Path, dataset: str) -> str | None:
  """Why the saved scans of `dataset` beside `path` (none of them `path`) cannot be reused, in a
  line; None where there are none. Their format is read from their first bytes."""
  others = [p for p in path.parent.glob(f"{dataset}-*.json") if p != path]
  if not others:
    return None
  formats = set()
  for other in others:
    with contextlib.suppress(OSError, ValueError, IndexError), open(other, "rb") as f:
      head = f.read(64).decode("ascii", "replace")  # '{"format": N, "photos": ...'
      formats.add(int(head.split(":", 1)[1].split(",", 1)[0]))
  if formats and _SCAN_FORMAT not in formats:
    return (f"the saved scan in {path.parent} was made by another version of the package (scan "
            f"format {', '.join(map(str, sorted(formats)))}; this one reads {_SCAN_FORMAT})")
  return (f"no saved scan in {path.parent} is of these files (the download changed or moved since, "
          "or it is another one)")


def save_scan(path: epath.Path, photos: list[Photo], report: BuildReport) -> None:
  """Writes the scan durably (flushed to disk, then renamed into place); a
  read-only folder only costs a rescan later."""
  rows = [[p.file_name, list(p.location), p.digest, _check_row(p.check), p.box, p.group_digest,
           _fields(p.span) if p.span else None, p.nbytes, p.quality, list(p.moments)]
          for p in photos]
  text = json.dumps({"format": _SCAN_FORMAT, "photos": rows, "report": report.as_metadata()})
  try:
    write_durably(os.fspath(path), text.encode("utf-8"))
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
  optimisation, so a file cut short, garbled or of another format costs a
  rescan and one line in the log, never the build."""
  try:
    saved = json.loads(path.read_bytes())
    if saved.get("format") != _SCAN_FORMAT:
      raise ValueError(f"format {saved.get('format')!r}, this version reads {_SCAN_FORMAT}")
    photos = [_photo_of_row(row) for row in saved["photos"]]
    return photos, BuildReport.from_metadata(saved["report"])
  except Exception as e:  # Anything in the file may be wrong.
    logging.warning("Ignoring the saved scan %s, which cannot be used (%s: %s); "
                    "scanning the source again.", path, type(e).__name__, str(e)[:200])
    return None

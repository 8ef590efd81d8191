"""The scan: every candidate file read once, validated and hashed, on every core.

A builder lists its source as `Candidate`s (name, location, and the bytes or
the `Span` where a worker reads them), in location order in this process.
Workers read and decode each one completely
(`images.decode_and_inspect`), hash it for the split rule and score its
quality from the same pixels (`quality.measure`); what cannot be
used is skipped with its reason in the `BuildReport`. The result is saved in
TFDS's download dir, keyed by the names, sizes and times of the source files,
and reused by every config built later from the same files.

The first build of a sized config also converts each photo from the scan's
own decode (`ConvertedImages`), so a photo is decoded once, not twice: the
results wait in an unnamed temporary file until TFDS asks for each split.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import hashlib
import json
import logging
import os
import struct
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from etils import epath
from tensorflow_datasets.core.utils import tqdm_utils

from photo_datasets.build import parallel
from photo_datasets.photos import images, near_duplicates, quality, series, splits
from photo_datasets.report import BuildReport, Skipped, class_folder

Box = images.Box
PixelBox = tuple[int, int, int, int]  # x, y, width, height in the stored pixels.


_ZIP_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length
_ZIP_STORED, _ZIP_DEFLATED = 0, 8


@dataclasses.dataclass(frozen=True)
class Span:
  """Where a file's bytes lie on disk, so that a worker reads them itself and
  the main process hands it a few numbers instead of the bytes: the whole file
  at `path`, or with `zip_method` set, the zip member whose local header
  starts at `offset` (`size` bytes as stored; stored or deflated), checked
  against its CRC-32 as `zipfile` does."""

  path: str
  offset: int = 0
  size: int = -1
  zip_method: int | None = None
  crc: int = 0

  def read(self) -> bytes:
    with open(self.path, "rb") as f:
      if self.zip_method is None:
        return f.read()
      f.seek(self.offset)
      signature, name_length, extra_length = _ZIP_LOCAL_HEADER.unpack(f.read(_ZIP_LOCAL_HEADER.size))
      if signature != b"PK\x03\x04":
        raise OSError(f"no zip member at offset {self.offset} of {self.path}")
      f.seek(name_length + extra_length, os.SEEK_CUR)
      raw = f.read(self.size)
    if len(raw) != self.size:
      raise OSError(f"zip member truncated: {len(raw)} of {self.size} bytes")
    data = raw if self.zip_method == _ZIP_STORED else zlib.decompress(raw, -15)
    if zlib.crc32(data) != self.crc:
      raise OSError("bad CRC-32 of the zip member (a damaged archive)")
    return data


READABLE_ZIP_METHODS = (_ZIP_STORED, _ZIP_DEFLATED)


@dataclasses.dataclass(frozen=True)
class Candidate:
  """A source file that may be an image: its bytes, or where a worker reads them."""

  file_name: str  # Example key and `file_name` feature: "<...>/<class>/<file>".
  location: tuple[str, ...]  # How the builder's reader finds the bytes again.
  data: bytes = b""  # Read by the listing, where `span` is None.
  # Its crop box, where the listing knows it already (the builder's `_annotate`
  # has the last word): lets the scan convert a cropped photo too.
  crop: PixelBox | None = None
  span: Span | None = None  # Read by the worker that scans it.

  def read(self) -> bytes:
    return self.data if self.span is None else self.span.read()


def photo_box(crop: PixelBox, check: images.ImageCheck) -> Box | None:
  """A crop box in stored pixels as a relative box on the upright image; None
  when nothing of it lies inside the image."""
  box = images.relative_box(crop, *check.stored_size)
  return None if box is None else images.upright_box(box, check.orientation)


@dataclasses.dataclass(frozen=True)
class Photo:
  """One valid source image, as learned by the scan."""

  file_name: str
  location: tuple[str, ...]
  digest: str  # SHA-256 of the source bytes.
  check: images.ImageCheck
  box: Box | None = None
  # The SHA-256 whose split the photo's group of near copies and series takes
  # (`splits.group_leader`); None for a photo in no group.
  group_digest: str | None = None
  span: Span | None = None  # Where its bytes lie: generation reads them there, without the builder's reader.
  nbytes: int = 0  # Size of the source file.
  # `quality.scores` of its scan pixels (flags in `quality.flag_rows`); not
  # hashed, as a dict cannot be.
  quality: dict[str, float] = dataclasses.field(default_factory=dict, hash=False)
  # `quality.moments` of its scan pixels: mean R, G, B and mean R², G², B² on
  # 0-255 (`quality.channel_stats`).
  moments: tuple[float, ...] = ()

  @property
  def split(self) -> str:
    return splits.split_of(self.group_digest or self.digest)

  @property
  def folder(self) -> str:
    return class_folder(self.file_name)


class ConvertedImages:
  """The stored images of one sized config, converted by the scan from its own
  decode, on disk until generation asks for them.

  An unnamed temporary file in `folder` (the build's own): nothing is left
  behind, even when the build is killed. Its index keeps a few numbers per photo.
  """

  def __init__(self, size: int, folder: str | os.PathLike[str]):
    self.size = size
    self._file = tempfile.TemporaryFile(dir=folder)
    self._index: dict[str, tuple[int, int, Box | None]] = {}
    self._end = 0

  def add(self, file_name: str, image: bytes, box: Box | None) -> None:
    self._file.seek(self._end)
    self._file.write(image)
    self._index[file_name] = (self._end, len(image), box)
    self._end += len(image)

  def take(self, photo: Photo, size: int | None) -> bytes | None:
    """The photo's stored image, if it was converted for `size` with the box
    the photo has now."""
    entry = self._index.get(photo.file_name)
    if entry is None or size != self.size or entry[2] != photo.box:
      return None
    offset, length, _ = entry
    self._file.seek(offset)
    return self._file.read(length)

  def __len__(self) -> int:
    return len(self._index)

  def close(self) -> None:
    self._file.close()


@dataclasses.dataclass(frozen=True)
class _Scanned:
  photo: Photo
  image: bytes | None  # Converted from the scan's decode, for `_Inspect.size`.
  box: Box | None  # The crop box it was converted with.
  series_features: bytes = b""  # `series.colour_histogram`, where the builder orders its photos.


@dataclasses.dataclass(frozen=True)
class _Inspect:
  """The per-file work of the scan (runs in a worker): the check, the hashes,
  the series features, and for a sized config the conversion from the same decode."""

  size: int | None
  series: bool = False

  def __call__(self, candidate: Candidate) -> _Scanned | Skipped:
    try:
      data = candidate.read()
    except Exception as e:  # The file went away, or a damaged archive member.
      return Skipped(candidate.file_name, f"unreadable: {type(e).__name__}: {e}")
    try:
      check, pixels = images.decode_and_inspect(data)
    except images.BadImage as e:
      return Skipped(candidate.file_name, str(e))
    scores, moments = quality.measure(pixels)  # From the pixels just decoded: no second decode.
    features = series.colour_histogram(pixels) if self.series else b""
    photo = Photo(candidate.file_name, candidate.location, splits.content_digest(data), check,
                  span=candidate.span, nbytes=len(data), quality=scores, moments=moments)
    box = photo_box(candidate.crop, check) if candidate.crop else None
    image = None
    if self.size and images.encodes_from_scan(check, self.size, box):
      try:
        image = images.encode_image(data, check, size=self.size, box=box, decoded=pixels)
      except Exception:  # Generation converts it again, and reports the failure.
        image = None
    return _Scanned(photo, image, box, features)


def _crashed(candidate: Candidate) -> Skipped:
  return Skipped(candidate.file_name,
                 "checking or converting it killed the worker process (out of memory or a decoder crash)")


def scan(candidates: Iterable[Candidate], report: BuildReport, *, workers: int,
         converted: ConvertedImages | None = None,
         series_position: Callable[[str], int | None] | None = None) -> list[Photo]:
  """Validates and hashes every candidate; returns the photos sorted by name.
  With `converted`, also converts each photo for its config where the scan's
  decode suffices. With `series_position` (a file name's place in its class's
  natural order, or None), also groups the series (`series.groups`)."""

  def first_copies() -> Iterator[Candidate]:
    seen = set()
    for candidate in tqdm_utils.tqdm(candidates, desc="Scanning", unit=" files"):
      if candidate.file_name in seen:
        report.warnings.append(
            f"{candidate.file_name} appears twice in the source; kept the first copy")
        continue
      seen.add(candidate.file_name)
      yield candidate

  photos = []
  features: dict[str, bytes] = {}  # Only until the series are found: never saved.
  inspect = _Inspect(converted.size if converted is not None else None, series=series_position is not None)
  for result in parallel.ordered_map(inspect, first_copies(), workers=workers, on_crash=_crashed):
    if isinstance(result, Skipped):
      report.skipped_files.append(result)
      continue
    photos.append(result.photo)
    features[result.photo.file_name] = result.series_features
    if converted is not None and result.image is not None:
      converted.add(result.photo.file_name, result.image, result.box)
  by_digest = collections.defaultdict(list)
  for photo in photos:
    by_digest[photo.digest].append(photo.file_name)
  report.duplicates = sorted(sorted(group) for group in by_digest.values() if len(group) > 1)
  report.counts["images converted to JPEG"] = sum(not p.check.is_clean_jpeg for p in photos)
  photos = sorted(photos, key=lambda p: p.file_name)
  found: list[list[int]] = []
  if series_position is not None:
    names = [p.file_name for p in photos]
    found = series.groups(names, [features.pop(n) for n in names], series_position, class_folder)
  return group_near_duplicates(photos, report, found)


def _components(count: int, pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
  """The connected components of two or more of `range(count)` under `pairs`, each sorted, by first index."""
  parent = list(range(count))

  def root(i: int) -> int:
    while parent[i] != i:
      parent[i] = parent[parent[i]]
      i = parent[i]
    return i

  for a, b in pairs:
    low, high = sorted((root(a), root(b)))
    parent[high] = low
  members = collections.defaultdict(list)
  for i in range(count):
    members[root(i)].append(i)
  return sorted(group for group in members.values() if len(group) > 1)


def group_near_duplicates(photos: list[Photo], report: BuildReport,
                          series_groups: Iterable[list[int]] = ()) -> list[Photo]:
  """Gives every group of near-duplicate photos and series (`series.groups`,
  indices of `photos`), joined where they touch, the split of its leader
  (`splits.group_leader`); lists the near-copy groups that are more than
  byte-identical copies, and the series."""
  series_groups = list(series_groups)
  near = near_duplicates.groups([p.check.hashes for p in photos])
  report.near_duplicates = []
  for members in near:
    if len({photos[i].digest for i in members}) > 1:
      names = [photos[i].file_name for i in members]
      report.near_duplicates.append(
          {"files": names, "across_classes": len({class_folder(n) for n in names}) > 1})
  report.series = [{"files": [photos[i].file_name for i in members]} for members in series_groups]
  grouped = list(photos)
  moved = 0
  chains = [(members[0], other) for members in near + series_groups for other in members[1:]]
  for members in _components(len(photos), chains):
    group_digest = splits.group_leader(photos[i].digest for i in members)
    for i in members:
      grouped[i] = dataclasses.replace(photos[i], group_digest=group_digest)
      moved += grouped[i].split != photos[i].split
  report.counts["photos in near-duplicate groups"] = sum(len(g["files"]) for g in report.near_duplicates)
  report.counts["photos in series"] = sum(len(g["files"]) for g in report.series)
  report.counts["photos moved to their group's split"] = moved
  return grouped


# Bump when the scan learns something new or checks differently.
_SCAN_FORMAT = 9


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


def save_scan(path: epath.Path, photos: list[Photo], report: BuildReport) -> None:
  """Writes the scan durably (flushed to disk, then renamed into place); a
  read-only folder only costs a rescan later."""
  rows = [[p.file_name, list(p.location), p.digest, _check_row(p.check), p.box, p.group_digest,
           dataclasses.astuple(p.span) if p.span else None, p.nbytes, p.quality, list(p.moments)]
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


def _check_row(check: images.ImageCheck) -> list[object]:
  *fields, hashes = dataclasses.astuple(check)
  return [*fields, base64.b64encode(hashes).decode("ascii")]


def _check_of_row(row: list[Any]) -> images.ImageCheck:
  fmt, mode, width, height, orientation, hashes = row
  check = images.ImageCheck(fmt, mode, width, height, orientation, base64.b64decode(hashes, validate=True))
  if len(check.hashes) != near_duplicates.HASH_BYTES * len(near_duplicates.REGIONS):
    raise ValueError(f"hashes of {len(check.hashes)} bytes")
  return check


def _photo_of_row(row: list[Any]) -> Photo:
  name, location, digest, check, box, group_digest, span, nbytes, scores, moments = row
  if not (isinstance(name, str) and isinstance(digest, str) and len(digest) == 64 and isinstance(nbytes, int)
          and isinstance(scores, dict) and isinstance(moments, list)):
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
    logging.warning("Ignoring the saved scan %s, which cannot be used (%s: %s); scanning the source again.",
                    path, type(e).__name__, str(e)[:200])
    return None

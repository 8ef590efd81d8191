"""Walks the Korean food corpus in any form a user may hold it.

The manual dir may hold `kfood.zip` (27 inner zips, stored uncompressed), some
of the inner `<group>.zip` files, or an extracted tree at any depth, or a mix.
Stored zip members, inner zips included, are read in place through a window
on the outer file (`zips.Window`); nothing is extracted. A
compressed inner zip, as a user's re-zipping may produce, is copied to a
temporary file first. The download's other forms (pieces named by offset,
`download.tar`, a zip joined in name order) are read through
`download.Archive`s as one file; a worker reads a photo in its piece unless
it straddles two.

Names are decoded as the corpus needs (`names`).
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from typing import IO

from korean_food import download
from korean_food.names import disk_name, member_name
from photo_datasets.archives import zips
from photo_datasets.archives.pieces import PiecedFile, whole_file
from photo_datasets.photos.records import Span


@dataclasses.dataclass(frozen=True)
class CorpusFile:
  """One file of the corpus, wherever it lies."""

  parts: tuple[str, ...]  # NFC folder names and file name, root first.
  location: tuple[str, ...]  # Disk path, then zip member names, outermost first.
  bad_archive: bool = False  # A `.zip` that cannot be opened (a truncated download?).
  span: Span | None = None  # Where its bytes lie on disk; None inside a compressed inner zip.
  size: int = 0  # Its size in bytes, from the zip's directory or the file system.

  @property
  def name(self) -> str:
    return self.parts[-1]


def _open_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[IO[bytes], int | None]:
  """A seekable file object over a member that is itself a zip, and where its
  bytes start in the zip's own file (None when copied to a temporary file)."""
  if info.compress_type == zipfile.ZIP_STORED and zf.fp is not None:
    start = zips.data_start(zf.fp, info.header_offset)
    if start is not None:
      return io.BufferedReader(zips.Window(zf.fp, start, info.file_size), 1 << 20), start
  spool = tempfile.TemporaryFile()
  with zf.open(info) as member:
    shutil.copyfileobj(member, spool, 1 << 20)
  spool.seek(0)
  return spool, None


def _is_zip(name: str) -> bool:
  return name.lower().endswith(".zip")


def _walk_zip(zf: zipfile.ZipFile, location: tuple[str, ...], first: Callable[[str], bool],
              disk: tuple[PiecedFile, int] | None) -> Iterator[tuple[CorpusFile, zipfile.ZipFile]]:
  """`disk`: the file on disk (or made of pieces) that holds `zf`'s bytes and
  where they start in it, or None."""
  # Stable: the files named by `first`, then the rest in archive order.
  for info in sorted(zf.infolist(), key=lambda info: not first(info.filename.rsplit("/", 1)[-1])):
    if info.is_dir():
      continue
    name = member_name(info).replace("\\", "/")
    parts = tuple(p for p in name.split("/") if p)
    if _is_zip(name):
      fileobj, start = _open_member(zf, info)
      try:
        inner = zipfile.ZipFile(fileobj)
      except zipfile.BadZipFile:  # E.g. a macOS `__MACOSX/._구이.zip`.
        yield CorpusFile(parts, location + (info.filename,), bad_archive=True), zf
        continue
      inner_disk = None if disk is None or start is None else (disk[0], disk[1] + start)
      with inner:
        yield from _walk_zip(inner, location + (info.filename,), first, inner_disk)
    else:
      yield CorpusFile(parts, location + (info.filename,), span=_member_span(info, disk), size=info.file_size), zf


def _member_span(info: zipfile.ZipInfo, disk: tuple[PiecedFile, int] | None) -> Span | None:
  """Where a worker reads the member: in the file (or the piece) that holds
  all of it; None where it straddles two pieces (the listing reads it)."""
  if disk is None or info.compress_type not in zips.READABLE_METHODS or info.flag_bits & zips.ENCRYPTED_FLAG:
    return None
  file, start = disk
  offset = start + info.header_offset
  # The local header's extra field may differ from the directory's: with a
  # margin, then exactly where the margin crosses a piece's end.
  size = zips.LOCAL.size + len(info.orig_filename.encode("utf-8")) + len(info.extra) + info.compress_size
  place = file.locate(offset, size + 1024) if len(file.extents) > 1 else (file.extents[0].path, offset)
  if place is None:
    data = zips.data_start(file, offset)
    place = None if data is None else file.locate(offset, data - offset + info.compress_size)
    if place is None:
      return None
  return Span(place[0], place[1], info.compress_size, info.compress_type, info.CRC)


def walk(root: str | os.PathLike[str], first: Callable[[str], bool] = lambda name: False,
         archives: Sequence[download.Archive] | None = None) -> Iterator[tuple[CorpusFile, Callable[[], bytes]]]:
  """Yields every file under `root` (zips opened) with a function reading it.

  In each folder and archive, the files whose name `first` accepts come
  first (the crop files, so that the photos after them have their boxes).
  The download's zips held in pieces, in a tar or joined out of order are
  read as `archives` say (default: `download.find(root)`, which raises
  `download.DownloadError` for an incomplete download).

  A zip that cannot be opened is yielded itself, marked `bad_archive`. The
  reader is valid until the next file is yielded.
  """
  root = os.fspath(root)
  archives = download.find(root) if archives is None else archives
  covered = {path for archive in archives for path in archive.covers}
  starts: dict[str, list[download.Archive]] = {}
  for archive in archives:
    starts.setdefault(archive.covers[0], []).append(archive)
  for dirpath, dirnames, filenames in os.walk(root):
    dirnames.sort()
    rel = os.path.relpath(dirpath, root)
    folder = () if rel == "." else tuple(disk_name(p) for p in rel.split(os.sep))
    for file in sorted(filenames, key=lambda name: (not first(name), name)):
      path = os.path.join(dirpath, file)
      if path in covered:
        for archive in starts.get(path, []):
          yield from _walk_archive(archive, folder, first)
      elif _is_zip(file):
        try:
          zf = zipfile.ZipFile(path)
        except zipfile.BadZipFile:
          yield CorpusFile(folder + (disk_name(file),), (path,), bad_archive=True), functools.partial(_bad_zip, path)
          continue
        with zf:
          for corpus_file, owner in _walk_zip(zf, (path,), first, (whole_file(path, os.path.getsize(path)), 0)):
            yield corpus_file, functools.partial(owner.read, corpus_file.location[-1])
      else:
        corpus_file = CorpusFile(folder + (disk_name(file),), (path,), span=Span(path), size=os.path.getsize(path))
        yield corpus_file, functools.partial(_read_file, path)


def _walk_archive(archive: download.Archive, folder: tuple[str, ...], first: Callable[[str], bool],
                  ) -> Iterator[tuple[CorpusFile, Callable[[], bytes]]]:
  if not archive.extents:  # A second copy of a zip read elsewhere.
    return
  name = download.zip_name(archive.location)
  with archive.open() as view:
    try:
      zf = zipfile.ZipFile(view)
    except zipfile.BadZipFile:
      yield CorpusFile(folder + (name,), (archive.location,), bad_archive=True), functools.partial(
          _bad_zip, archive.location)
      return
    with zf:
      for corpus_file, owner in _walk_zip(zf, (archive.location,), first, (view, 0)):
        yield corpus_file, functools.partial(owner.read, corpus_file.location[-1])


def _read_file(path: str) -> bytes:
  with open(path, "rb") as f:
    return f.read()


def _bad_zip(path: str) -> bytes:
  raise zipfile.BadZipFile(f"{path} is not a readable zip archive")


class Reader:
  """Reads files by location, keeping the zips on the current path open.

  Read in location order, each archive is opened once.
  """

  def __init__(self) -> None:
    self._open: dict[tuple[str, ...], zipfile.ZipFile] = {}

  def __enter__(self) -> Reader:
    return self

  def __exit__(self, *exc_info: object) -> None:
    for zf in reversed(list(self._open.values())):
      _close(zf)
    self._open.clear()

  def _zip(self, location: tuple[str, ...]) -> zipfile.ZipFile:
    if location not in self._open:
      for key in [k for k in self._open if k != location[: len(k)]]:
        _close(self._open.pop(key))
      if len(location) == 1:
        self._open[location] = zipfile.ZipFile(download.open_archive(location[0]))
      else:
        parent = self._zip(location[:-1])
        member, _ = _open_member(parent, parent.getinfo(location[-1]))
        self._open[location] = zipfile.ZipFile(member)
    return self._open[location]

  def read(self, location: tuple[str, ...]) -> bytes:
    if len(location) == 1:
      return _read_file(location[0])
    return self._zip(location[:-1]).read(location[-1])


def _close(zf: zipfile.ZipFile) -> None:
  """Closes a zip and the pieces it reads through (which `ZipFile` leaves open)."""
  fp = zf.fp
  zf.close()
  if isinstance(fp, PiecedFile):
    fp.close()

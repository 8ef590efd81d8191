"""Walks the Korean food corpus in any form a user may hold it.

The manual dir may hold `kfood.zip` (27 inner zips, stored uncompressed), some
of the inner `<group>.zip` files, or an extracted tree at any depth, or a mix.
Stored zip members, inner zips included, are read in place through a window
on the outer file (`zips.Window`); nothing is extracted. A compressed inner
zip, as a user's re-zipping may produce, is copied to a temporary file first.
The download's other forms (pieces named by offset, `download.tar`, a zip
joined in name order) are read through `download.Archive`s as one file; a
worker reads a photo in its piece unless it straddles two.

A damaged archive is skipped with the reason, never fatal: a zip that
cannot be opened or holds no file, and a member whose directory entry is
damaged (`zips.open_zip`: the zip's other members are kept). A member is read
whole only up to `zips.MAX_MEMBER_SIZE`, and inflated no further than its
declared size.

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
from collections.abc import Callable, Iterator
from typing import IO

from korean_food import download
from korean_food.names import decode_name, disk_name, member_name
from photo_datasets.archives import storage, zips
from photo_datasets.archives.pieces import PiecedFile, whole_file
from photo_datasets.photos.records import Span


@dataclasses.dataclass(frozen=True)
class CorpusFile:
  """One file of the corpus, wherever it lies."""

  parts: tuple[str, ...]  # NFC folder names and file name, root first.
  location: tuple[str, ...]  # Disk path, then zip member names, outermost first.
  # Why it cannot be read: a `.zip` that cannot be opened (a truncated
  # download?) or holds no file, or a member whose directory entry is damaged.
  problem: str = ""
  span: Span | None = None  # Where its bytes lie on disk; None inside a compressed inner zip.
  size: int = 0  # Its size in bytes, from the zip's directory or the file system.

  @property
  def name(self) -> str:
    return self.parts[-1]

  @property
  def bad_archive(self) -> bool:
    return bool(self.problem)


_UNREADABLE = "not a readable zip archive (truncated or incomplete download?)"
_NO_FILES = "a zip archive that holds no files (empty, or folders only)"
_NAMELESS = ("a damaged entry in its zip's directory (no name): left out, the zip's other "
             "members read")
Read = Callable[[], bytes]


def _open_zip(fileobj: zips.File, size: int) -> tuple[zipfile.ZipFile, list[tuple[str, str]]] | str:
  """`zips.open_zip` with the corpus's names; a problem given in words."""
  opened = zips.open_zip(fileobj, size, decode_name)
  return f"{_UNREADABLE}: {opened}" if isinstance(opened, str) else opened


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
  """A member's bytes, refused past `zips.MAX_MEMBER_SIZE` before it is read.
  Read in one call of at most its declared size: `ZipExtFile.read()` would
  inflate all of its compressed bytes at once, however much they give."""
  if info.file_size > zips.MAX_MEMBER_SIZE:
    raise zips.too_large(info.file_size)
  # `zipfile` reads as many stored bytes as the directory declares in one call.
  if zf.fp is not None and info.header_offset + info.compress_size > zf.fp.seek(0, io.SEEK_END):
    raise OSError(f"zip member truncated: its {info.compress_size:,} bytes run past the end "
                  f"of its zip")
  with zf.open(info) as member:
    return member.read(info.file_size + 1)


def _refused(problem: str) -> bytes:
  raise OSError(problem)


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


def _walk_zip(zf: zipfile.ZipFile, parts: tuple[str, ...], location: tuple[str, ...],
              first: Callable[[str], bool], disk: tuple[PiecedFile, int] | None,
              left_out: list[tuple[str, str]]) -> Iterator[tuple[CorpusFile, Read]]:
  """The files of `zf` (the corpus file `parts`, at `location`) and of the zips
  in it. `disk`: the file on disk (or made of pieces) that holds `zf`'s bytes
  and where they start in it, or None. `left_out`: the members `zf` was opened
  without (`zips.open_zip`), "" for the zip itself."""
  for name, why in left_out:
    file = (CorpusFile(_member_parts(name), location + (name,), problem=why) if name
            else CorpusFile(parts, location, problem=why))
    yield file, functools.partial(_refused, why)
  files = 0
  # Stable: the files named by `first`, then the rest in archive order.
  for info in sorted(zf.infolist(), key=lambda info: not first(info.filename.rsplit("/", 1)[-1])):
    if not info.filename:  # A damaged directory entry: `is_dir` fails on it.
      yield CorpusFile(parts, location, problem=_NAMELESS), functools.partial(_refused, _NAMELESS)
      continue
    if info.is_dir():
      continue
    files += 1
    member_parts = _member_parts(member_name(info))
    if _is_zip(info.filename):
      try:
        fileobj, start = _open_member(zf, info)
      # A damaged local header, or a compressed zip that does not inflate.
      except zips.ZIP_ERRORS as e:
        problem = f"{_UNREADABLE}: {e or type(e).__name__}"
        yield (CorpusFile(member_parts, location + (info.filename,), problem=problem),
               functools.partial(_refused, problem))
        continue
      opened = _open_zip(fileobj, info.file_size)
      # E.g. a macOS `__MACOSX/._구이.zip`: its bytes read as a member's.
      if isinstance(opened, str):
        fileobj.close()
        yield (CorpusFile(member_parts, location + (info.filename,), problem=opened),
               functools.partial(_read_member, zf, info))
        continue
      inner, inner_left_out = opened
      inner_disk = None if disk is None or start is None else (disk[0], disk[1] + start)
      try:
        yield from _walk_zip(inner, member_parts, location + (info.filename,), first, inner_disk,
                             inner_left_out)
      finally:
        _close(inner)
    else:
      file = CorpusFile(member_parts, location + (info.filename,), span=_member_span(info, disk),
                        size=info.file_size)
      yield file, functools.partial(_read_member, zf, info)
  if not files and not left_out:
    yield CorpusFile(parts, location, problem=_NO_FILES), functools.partial(_refused, _NO_FILES)


def _member_parts(name: str) -> tuple[str, ...]:
  return tuple(p for p in name.replace("\\", "/").split("/") if p)


def _member_span(info: zipfile.ZipInfo, disk: tuple[PiecedFile, int] | None) -> Span | None:
  """Where a worker reads the member: in the file (or the piece) that holds
  all of it; None where it straddles two pieces (the listing reads it)."""
  if (disk is None or info.compress_type not in zips.READABLE_METHODS
      or info.flag_bits & zips.ENCRYPTED_FLAG):
    return None
  file, start = disk
  offset = start + info.header_offset
  # The local header's extra field may differ from the directory's: with a
  # margin, then exactly where the margin crosses a piece's end.
  size = (zips.LOCAL.size + len(info.orig_filename.encode("utf-8")) + len(info.extra)
          + info.compress_size)
  place = (file.locate(offset, size + 1024) if len(file.extents) > 1  # One piece: it holds all.
           else (file.extents[0].path, file.extents[0].offset + offset))
  if place is None:
    data = zips.data_start(file, offset)
    place = None if data is None else file.locate(offset, data - offset + info.compress_size)
    if place is None:
      return None
  return Span(place[0], place[1], info.compress_size, info.compress_type, info.CRC, info.file_size)


def walk(source: download.Download | str | os.PathLike[str],
         first: Callable[[str], bool] = lambda name: False) -> Iterator[tuple[CorpusFile, Read]]:
  """Yields every file of the manual dir, zips opened, with a function reading it.

  Folders come depth first, subfolders in name order, and a folder's files by
  name; a zip's members in archive order, the files of a zip inside it where
  that zip lies. Nothing is extracted.

  Args:
    source: the manual dir as `download.locate` found it, or its path (then
      located here).
    first: in each folder and archive, the files whose name it accepts come
      first (the crop files, so that the photos after them have their boxes).

  Yields:
    `(file, read)` pairs: the `CorpusFile` and a function of no argument
    returning its bytes, valid until the next pair is yielded. The download's
    zips held in pieces, in a tar or joined out of order are read as
    `source.archives` say. A zip that cannot be opened or holds no file is
    yielded itself, with its `problem`; so is a member its zip was opened
    without.

  Raises:
    download.DownloadError: `source` is a path to an incomplete download.
  """
  if not isinstance(source, download.Download):
    source = download.locate(source)
  covered = {path for archive in source.archives for path in archive.covers}
  starts: dict[str, list[download.Archive]] = {}
  for archive in source.archives:
    starts.setdefault(archive.covers[0], []).append(archive)
  for dirpath, filenames in source.folders:
    rel = storage.relative(dirpath, source.root)
    folder = () if rel == "." else tuple(disk_name(p) for p in rel.split(os.sep))
    for file in sorted(filenames, key=lambda name: (not first(name), name)):
      path = os.path.join(dirpath, file)
      if path in covered:
        for archive in starts.get(path, []):
          yield from _walk_archive(archive, folder, first)
      elif _is_zip(file):
        size = storage.size(path)
        with storage.open_binary(path) as f:
          yield from _walk_top(f, size, folder + (disk_name(file),), (path,), first,
                               (whole_file(path, size), 0))
      else:
        corpus_file = CorpusFile(folder + (disk_name(file),), (path,), span=Span(path),
                                 size=storage.size(path))
        yield corpus_file, functools.partial(storage.read_bytes, path)


def _walk_archive(archive: download.Archive, folder: tuple[str, ...], first: Callable[[str], bool],
                  ) -> Iterator[tuple[CorpusFile, Read]]:
  if not archive.extents:  # A second copy of a zip read elsewhere.
    return
  with archive.open() as view:
    parts = folder + (download.zip_name(archive.location),)
    yield from _walk_top(view, view.size, parts, (archive.location,), first, (view, 0))


def _walk_top(f: zips.File, size: int, parts: tuple[str, ...], location: tuple[str, ...],
              first: Callable[[str], bool],
              disk: tuple[PiecedFile, int]) -> Iterator[tuple[CorpusFile, Read]]:
  """The files of the zip in `f`, a file of the manual dir or a download's `Archive`."""
  opened = _open_zip(f, size)
  if isinstance(opened, str):
    yield CorpusFile(parts, location, problem=opened), functools.partial(_refused, opened)
    return
  zf, left_out = opened
  try:
    yield from _walk_zip(zf, parts, location, first, disk, left_out)
  finally:
    zf.close()


class Reader:
  """Reads a file of the corpus back by its `CorpusFile.location`: the
  builder's `READER` (a `generation.Reader`).

  A context manager: `read(location)` returns the file's bytes, keeping the
  zips on its path open for the next read, and leaving the context closes
  them. Read in location order, each archive is opened once. `read` raises
  `OSError` for a file that cannot be read (missing, truncated, or larger than
  `zips.MAX_MEMBER_SIZE`) and `zipfile.BadZipFile` for a damaged zip or member.
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
        source = download.open_archive(location[0])
        # Closed by `_close`.
        fileobj: zips.File = storage.open_binary(source) if isinstance(source, str) else source
        size = storage.size(source) if isinstance(source, str) else source.size
      else:
        parent = self._zip(location[:-1])
        info = parent.getinfo(location[-1])
        fileobj, size = _open_member(parent, info)[0], info.file_size
      opened = _open_zip(fileobj, size)
      if isinstance(opened, str):
        fileobj.close()
        raise zipfile.BadZipFile(f"{location[-1]}: {opened}")
      self._open[location] = opened[0]
    return self._open[location]

  def read(self, location: tuple[str, ...]) -> bytes:
    if len(location) == 1:
      return storage.read_bytes(location[0])
    zf = self._zip(location[:-1])
    return _read_member(zf, zf.getinfo(location[-1]))


def _close(zf: zipfile.ZipFile) -> None:
  """Closes a zip and the file it reads through (which `ZipFile` leaves open when handed a file)."""
  fp = zf.fp
  zf.close()
  if fp is not None:
    fp.close()

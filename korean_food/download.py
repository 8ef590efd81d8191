"""The forms AIHub's download of kfood.zip arrives in, each read as it is.

AIHub's API (and aihubshell, which calls it) sends one `download.tar`; in it,
in a folder (e.g. `21.한국음식/`), the zip in 1 GiB pieces named by their
starting byte offset: `kfood.zip.part0`, `kfood.zip.part1073741824`, ...
What a user holds is then one of:

* the pieces, untarred, at any folder depth: read as one file in offset order;
* `download.tar` itself: the pieces read at their members' offsets in the tar;
* `kfood.zip` joined in name (text) order (a shell glob sorts the pieces
  as text; aihubshell's `sort -V` has been reported to do so on macOS): found from the zip's own
  structure, its pieces' order worked out, read as it is with a warning that
  gives the command repairing it in place (`python -m korean_food repair
  kfood.zip`);
* a cut transfer (aihubshell joins what arrived even when curl failed), or a
  missing or short piece: refused before any scan (`DownloadError`), naming
  what is missing and what arrived whole.

Nothing is joined, extracted or copied; every check reads a few hundred bytes
per piece or member, so it takes well under a second.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import re
import struct
import tarfile
from collections.abc import Iterable, Iterator
from typing import IO, Protocol

from photo_datasets.archives.pieces import Extent, PiecedFile

PIECE = re.compile(r"^(?P<base>.+\.zip)\.part(?P<offset>\d+)$", re.IGNORECASE)
DOWNLOAD_COMMAND = "aihubshell -mode d -datasetkey 79 -filekey 50036"
_MIN_PIECE, _MAX_PIECE = 1 << 20, 4 << 30
_EOCD = struct.Struct("<4s4H2LH")  # signature, disk, cd disk, entries here, entries, cd size, cd offset, comment
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_LOCAL = struct.Struct("<4s5H3L2H")
# Local headers checked per zip: all of the download's 27, a sample of each group zip's.
_CHECKED_MEMBERS, _CHECKED_GROUP_MEMBERS = 1000, 64


class _Seekable(Protocol):
  def seek(self, offset: int, /) -> object: ...

  def read(self, size: int, /) -> bytes: ...


class DownloadError(ValueError):
  """The download is incomplete: refused before the scan, saying what to do."""


@dataclasses.dataclass(frozen=True)
class Archive:
  """A zip of the download read through its pieces, wherever they lie.

  `location` names it for `open_archive`: the first piece on disk, the first
  piece's member in a tar (`<tar>/<member>`), or a zip joined out of order.
  """

  location: str
  extents: tuple[Extent, ...]
  covers: tuple[str, ...]  # The files on disk it is read from.
  note: str = ""  # What was found, for the build's warnings.

  @property
  def size(self) -> int:
    return sum(e.size for e in self.extents)

  def open(self) -> PiecedFile:
    return PiecedFile(list(self.extents))


# ---------------------------------------------------------------------------
# The zip's own structure.


@dataclasses.dataclass(frozen=True)
class _Member:
  name: str
  header_offset: int
  size: int  # As stored.


def zip_members(f: _Seekable, size: int, checked: int = _CHECKED_MEMBERS) -> list[_Member] | str:
  """The members of the zip in `f` if its end record, central directory and
  (a sample of) local headers agree where a zip has them; else what is wrong."""
  tail_size = min(size, _EOCD.size + 0xFFFF)
  tail = _read_at(f, size - tail_size, tail_size)
  at = tail.rfind(b"PK\x05\x06")
  while at >= 0 and at + _EOCD.size + _EOCD.unpack_from(tail, at)[-1] != len(tail):
    at = tail.rfind(b"PK\x05\x06", 0, at)
  if at < 0:
    return "no end record at its end"
  end = size - tail_size + at
  _, _, _, _, entries, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, at)
  if 0xFFFF in (entries,) or 0xFFFFFFFF in (cd_size, cd_offset):
    if end < _ZIP64_LOCATOR.size + _ZIP64_EOCD.size:
      return "no ZIP64 end record"
    sig, _, record, _ = _ZIP64_LOCATOR.unpack(_read_at(f, end - _ZIP64_LOCATOR.size, _ZIP64_LOCATOR.size))
    zip64 = _read_at(f, record, _ZIP64_EOCD.size)
    if sig != b"PK\x06\x07" or len(zip64) < _ZIP64_EOCD.size or zip64[:4] != b"PK\x06\x06":
      return "no ZIP64 end record where its locator says"
    _, _, _, _, _, _, _, entries, cd_size, cd_offset = _ZIP64_EOCD.unpack(zip64)
    end = record
  if cd_offset + cd_size != end:
    return "its central directory is not where the end record says"
  try:
    return _directory(f, _read_at(f, cd_offset, cd_size), entries, checked)
  except struct.error:
    return "its central directory is cut short"


def _directory(f: _Seekable, directory: bytes, entries: int, checked: int) -> list[_Member] | str:
  members, pos = [], 0
  for _ in range(entries):
    if directory[pos:pos + 4] != b"PK\x01\x02":
      return "its central directory is not where the end record says"
    *_, csize, usize, name_len, extra_len, comment_len, _, _, _, offset = _CENTRAL.unpack_from(directory, pos)
    start = pos + _CENTRAL.size
    name = _decode(directory[start:start + name_len])
    csize, offset = _zip64_fields(directory[start + name_len:start + name_len + extra_len], usize, csize, offset)
    members.append(_Member(name, offset, csize))
    pos = start + name_len + extra_len + comment_len
  step = -(-len(members) // checked)
  for member in members[::step]:
    if _read_at(f, member.header_offset, 4) != b"PK\x03\x04":
      return f"its directory places {member.name} at byte {member.header_offset}, where no member starts"
  return members


def _zip64_fields(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int]:
  pos = 0
  while pos + 4 <= len(extra):
    tag, length = struct.unpack_from("<2H", extra, pos)
    if tag == 1:
      values = iter(struct.unpack_from(f"<{length // 8}Q", extra, pos + 4))
      if usize == 0xFFFFFFFF:
        next(values, 0)
      if csize == 0xFFFFFFFF:
        csize = next(values, csize)
      if offset == 0xFFFFFFFF:
        offset = next(values, offset)
    pos += 4 + length
  return csize, offset


def _decode(raw: bytes) -> str:
  from korean_food.corpus import decode_name  # Which imports this module.
  return decode_name(raw)


def _read_at(f: _Seekable, offset: int, size: int) -> bytes:
  f.seek(offset)
  return f.read(size)


def _local_members(f: _Seekable, size: int) -> Iterator[tuple[str, int, int]]:
  """(name, data start, stored size) of each member from the start of a zip
  without its directory, as far as the local headers chain."""
  pos = 0
  while pos + _LOCAL.size <= size:
    header = _read_at(f, pos, _LOCAL.size)
    if len(header) < _LOCAL.size or header[:4] != b"PK\x03\x04":
      return
    _, _, flags, _, _, _, _, csize, usize, name_len, extra_len = _LOCAL.unpack(header)
    name = _decode(_read_at(f, pos + _LOCAL.size, name_len))
    csize, _ = _zip64_fields(_read_at(f, pos + _LOCAL.size + name_len, extra_len), usize, csize, 0)
    if flags & 0x8 and csize == 0:  # Sizes in a data descriptor after the data: cannot follow.
      return
    start = pos + _LOCAL.size + name_len + extra_len
    yield name, start, csize
    pos = start + csize


def _is_download(f: _Seekable, size: int) -> bool:
  """A zip of zips, as kfood.zip holds the 27 group zips (a cut group zip is no download)."""
  members = itertools.islice(_local_members(f, size), 1000)
  return any(name.lower().endswith(".zip") for name, _, _ in members)


def _whole_groups(f: _Seekable, size: int) -> list[str]:
  """The group zips of a cut download whose every byte arrived."""
  whole = []
  for name, start, csize in _local_members(f, size):
    if start + csize > size:
      break
    if name.lower().endswith(".zip") and isinstance(zip_members(_Slice(f, start), csize, _CHECKED_GROUP_MEMBERS), list):
      whole.append(name.rsplit("/", 1)[-1])
  return whole


class _Slice:
  """Bytes from `start` on of a file, as a file (enough for `zip_members`)."""

  def __init__(self, f: _Seekable, start: int):
    self._f, self._start = f, start

  def seek(self, offset: int) -> None:
    self._f.seek(self._start + offset)

  def read(self, size: int) -> bytes:
    return self._f.read(size)


# ---------------------------------------------------------------------------
# Pieces, on disk or in a tar.


@dataclasses.dataclass(frozen=True)
class _Piece:
  name: str  # As the user sees it: a path on disk, or `<tar>/<member>`.
  offset: int  # From its name.
  extent: Extent


def _check_pieces(base: str, pieces: list[_Piece]) -> None:
  """Each piece starts where the one before it ended; else name what is missing or short."""
  pieces = sorted(pieces, key=lambda p: p.offset)
  piece_size = pieces[0].extent.size if len(pieces) > 1 else 0
  problems, bad = [], set()
  expected = 0
  for i, piece in enumerate(pieces):
    while expected < piece.offset:  # Pieces missing before this one.
      end = min(expected + piece_size, piece.offset) if piece_size else piece.offset
      problems.append(f"{base}.part{expected} (bytes {expected:,}–{end - 1:,}) is missing")
      expected = end
    if piece.offset < expected:
      problems.append(f"{piece.name} overlaps the piece before it (it starts at byte {piece.offset:,}, "
                      f"the one before ends at byte {expected - 1:,})")
      bad.add(piece.name)
    following = pieces[i + 1].offset if i + 1 < len(pieces) else None
    should = min(piece_size, following - piece.offset) if following is not None else None
    if should is not None and piece.extent.size < should:
      problems.append(f"{piece.name} is short: {piece.extent.size:,} of its {should:,} bytes "
                      f"(bytes {piece.offset:,}–{piece.offset + should - 1:,})")
      bad.add(piece.name)
      expected = piece.offset + should
    else:
      expected = piece.offset + piece.extent.size
  if problems:
    fine = len(pieces) - len(bad)
    raise DownloadError(
        f"The download of {base} is incomplete: " + "; ".join(problems)
        + f". The other {fine} pieces are fine. Download the missing or short pieces again "
        f"({DOWNLOAD_COMMAND}, or AIHub's API), then build again.")


def _archive(location: str, base: str, pieces: list[_Piece], covers: tuple[str, ...]) -> Archive:
  _check_pieces(base, pieces)
  pieces = sorted(pieces, key=lambda p: p.offset)
  archive = Archive(location, tuple(p.extent for p in pieces), covers)
  _check_whole(archive, base, f"{len(pieces)} pieces in {os.path.dirname(location)}")
  return archive


def _agrees(f: _Seekable, size: int) -> str | None:
  """None when the zip's directory agrees with its bytes, its group zips' own
  included (each piece of the download holds some of their records)."""
  members = zip_members(f, size)
  if isinstance(members, str):
    return members
  for member in members:
    if member.name.lower().endswith(".zip"):
      header = _read_at(f, member.header_offset, _LOCAL.size)
      start = member.header_offset + _LOCAL.size + sum(struct.unpack_from("<2H", header, 26))
      if _read_at(f, start, 4) != b"PK\x03\x04":  # Compressed, or no zip (an AppleDouble `._구이.zip`).
        continue
      inner = zip_members(_Slice(f, start), member.size, _CHECKED_GROUP_MEMBERS)
      if isinstance(inner, str):
        return f"{member.name}, at byte {start:,}, has {inner}"
  return None


@functools.lru_cache(maxsize=16)
def _problem(extents: tuple[Extent, ...], stamps: tuple[tuple[int, int], ...]) -> str | None:
  """`_agrees` of the extents read as one file, once per state of the files (`stamps`)."""
  with PiecedFile(list(extents)) as f:
    return _agrees(f, f.size)


def _stamps(paths: Iterable[str]) -> tuple[tuple[int, int], ...]:
  return tuple((os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in paths)


def _check_whole(archive: Archive, name: str, form: str) -> None:
  problem = _problem(archive.extents, _stamps(sorted({e.path for e in archive.extents})))
  if problem is None:
    return
  if problem.startswith("no end record"):
    with archive.open() as f:
      raise DownloadError(_cut_message(name, form, archive.size, _whole_groups(f, archive.size)))
  raise DownloadError(f"{name} ({form}, {archive.size:,} bytes): the pieces fit by their names, but the zip "
                      f"does not: {problem}. Download it again ({DOWNLOAD_COMMAND}).")


def _cut_message(name: str, form: str, size: int, whole: list[str]) -> str:
  arrived = (f"The group zips that arrived whole: {', '.join(whole)} ({len(whole)} of 27)."
             if whole else "No group zip arrived whole.")
  return (f"{name} ({form}) ends at {size:,} bytes without the zip's end record: the transfer was cut "
          f"(the whole kfood.zip is about 16 GB). Download it again ({DOWNLOAD_COMMAND}); if you "
          f"called AIHub's API yourself and kept download.tar, `curl -C -` with the same request "
          f"continues it where it stopped, if the server allows. {arrived}")


def _disk_pieces(folder: str) -> dict[str, list[_Piece]]:
  groups: dict[str, list[_Piece]] = {}
  for name in os.listdir(folder):
    match = PIECE.match(name)
    path = os.path.join(folder, name)
    if match and os.path.isfile(path):
      groups.setdefault(match["base"], []).append(
          _Piece(path, int(match["offset"]), Extent(path, 0, os.path.getsize(path))))
  return groups


def _tar_pieces(path: str) -> dict[str, list[_Piece]]:
  """Pieces in the tar by `<folder>/<base>`, each read at its member's offset.
  A member cut short by the end of the file keeps the bytes that are there."""
  size = os.path.getsize(path)
  groups: dict[str, list[_Piece]] = {}
  with tarfile.open(path, "r:") as tar:
    for member in _members(tar):
      folder, _, name = member.name.rpartition("/")
      match = PIECE.match(name)
      if match and member.isfile():
        extent = Extent(path, member.offset_data, max(0, min(member.size, size - member.offset_data)))
        key = f"{folder}/{match['base']}" if folder else match["base"]
        groups.setdefault(key, []).append(_Piece(f"{path}/{member.name}", int(match["offset"]), extent))
  return groups


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
  """The tar's members, up to where a cut tar ends."""
  while True:
    try:
      member = tar.next()
    except tarfile.ReadError:  # "unexpected end of data": the tar is cut in a member.
      return
    if member is None:
      return
    yield member


def is_tar(name: str) -> bool:
  return name.lower().endswith(".tar")


def find(root: str | os.PathLike[str]) -> list[Archive]:
  """Every zip under `root` held as pieces, in a tar or joined in name order,
  checked; raises `DownloadError` for an incomplete download. A second copy
  of one zip (a tar and its untarred pieces) gets no extents, and a note."""
  plain: dict[tuple[str, int], str] = {}  # (name, size) -> a zip on disk that reads in place.
  archives: list[Archive] = []  # Joined out of order, then pieces on disk, then in tars.
  pieced: list[Archive] = []
  for folder, dirs, files in os.walk(os.fspath(root)):
    dirs.sort()
    for base, pieces in sorted(_disk_pieces(folder).items()):
      first = min(pieces, key=lambda p: p.offset)
      pieced.append(_archive(first.name, base, pieces, tuple(sorted(p.name for p in pieces))))
    for name in sorted(files):
      path = os.path.join(folder, name)
      if name.lower().endswith(".zip"):
        joined = examine(path)
        if joined:
          archives.append(joined)
        else:
          plain.setdefault((name.lower(), os.path.getsize(path)), path)
      elif is_tar(name) and tarfile.is_tarfile(path):
        for group, pieces in sorted(_tar_pieces(path).items()):
          first = min(pieces, key=lambda p: p.offset)
          pieced.append(_archive(first.name, group.rsplit("/", 1)[-1], pieces, (path,)))
  read: dict[tuple[str, int], str] = dict(plain)
  kept = []
  for archive in archives + pieced:
    key = (zip_name(archive.location).lower(), archive.size)
    if key in read:  # The tar and the pieces untarred from it, say.
      archive = dataclasses.replace(archive, extents=(), note=(
          f"{archive.location} holds the same {zip_name(archive.location)} as {read[key]}: read once"))
    else:
      read[key] = archive.location
    kept.append(archive)
  return kept


# ---------------------------------------------------------------------------
# A zip joined in name order, or cut.


def name_order(size: int, piece_size: int) -> list[int]:
  """The pieces' starting offsets in the order a text sort of their names gives."""
  return sorted(range(0, size, piece_size), key=str)


def _joined_extents(path: str, size: int, piece_size: int) -> list[Extent]:
  """Where each piece, in offset order, lies in a file joined in name order."""
  at, where = 0, {}
  for offset in name_order(size, piece_size):
    where[offset] = at
    at += min(piece_size, size - offset)
  return [Extent(path, where[o], min(piece_size, size - o)) for o in range(0, size, piece_size)]


def _piece_sizes(size: int) -> Iterator[int]:
  """AIHub's 1 GiB first, then every power of two, whole MiB and whole MB from
  4 GiB down to 1 MiB that gives more than one order (a join of pieces whose
  names sort as numbers is no mistake)."""
  seen: set[int] = set()
  candidates = [1 << 30, *(1 << k for k in range(32, 19, -1)), *range(_MAX_PIECE, _MIN_PIECE - 1, -(1 << 20)),
                *range(_MAX_PIECE // 1_000_000 * 1_000_000, _MIN_PIECE, -1_000_000)]
  for piece_size in candidates:
    last = (size - 1) // piece_size * piece_size
    if piece_size in seen or piece_size >= size or len(str(last)) == len(str(piece_size)):
      continue
    seen.add(piece_size)
    yield piece_size


def _end_record_at(path: str, size: int, piece_size: int) -> int:
  """Where the end record (without a comment) lies in a name-order join of this piece size."""
  offsets = name_order(size, piece_size)
  last = offsets.index((size - 1) // piece_size * piece_size)
  return size - _EOCD.size - (len(offsets) - 1 - last) * piece_size


@functools.lru_cache(maxsize=256)
def _examine(path: str, size: int, mtime_ns: int) -> Archive | str | None:
  """A zip on disk: None when it reads in place, an `Archive` when it is a
  name-order join, else why it cannot be read (a `DownloadError` message
  when it is the download cut short)."""
  with open(path, "rb") as f:
    problem = zip_members(f, size, _CHECKED_GROUP_MEMBERS)
    if not isinstance(problem, str):
      return None
    if _read_at(f, 0, 4) != b"PK\x03\x04":
      return problem
    for piece_size in _piece_sizes(size):
      if _read_at(f, _end_record_at(path, size, piece_size), 4) != b"PK\x05\x06":
        continue
      extents = _joined_extents(path, size, piece_size)
      if _agrees(PiecedFile(extents), size) is None:
        name = os.path.basename(path)
        count = len(extents)
        return Archive(path, tuple(extents), (path,), note=(
            f"{path} is the download's {count} pieces of {_human(piece_size)} joined in name order "
            f"(as text, {name}.part10737418240 sorts before {name}.part2147483648): its bytes are all there, "
            f"and the build reads it in the right order as it is. Other tools cannot open it; "
            f"`python -m korean_food repair {path}` puts it in order in place (no extra disk)."))
    if _is_download(f, size):
      raise DownloadError(_cut_message(path, "joined", size, _whole_groups(f, size)))
  return problem


def examine(path: str) -> Archive | None:
  """A zip on disk that does not read in place: its `Archive` if it is a
  name-order join; None when it reads in place or is no zip of the download
  (a junk or broken group zip, skipped by the listing). Raises
  `DownloadError` for the download cut short."""
  stat = os.stat(path)
  found = _examine(path, stat.st_size, stat.st_mtime_ns)
  return found if isinstance(found, Archive) else None


def _human(size: int) -> str:
  for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("GB", 10**9), ("MB", 10**6)):
    if size % scale == 0:
      return f"{size // scale} {unit}"
  return f"{size:,} bytes"


def zip_name(location: str) -> str:
  """The name of the zip an `Archive.location` reads: `kfood.zip` for its pieces."""
  name = os.path.basename(location)
  match = PIECE.match(name)
  return match["base"] if match else name


def open_archive(location: str) -> str | PiecedFile:
  """The zip named by a file's first location (`Archive.location`, or a zip on
  disk, given back as its path)."""
  if os.path.isfile(location):
    match = PIECE.match(os.path.basename(location))
    if match:
      pieces = _disk_pieces(os.path.dirname(location))[match["base"]]
      return PiecedFile([p.extent for p in sorted(pieces, key=lambda p: p.offset)])
    archive = examine(location)
    return archive.open() if archive else location
  tar, member = location, ""
  while tar and not os.path.isfile(tar):
    tar, _, last = tar.rpartition("/")
    member = f"{last}/{member}" if member else last
  folder, _, name = member.rpartition("/")
  match = PIECE.match(name)
  if not (tar and is_tar(tar) and match):
    raise FileNotFoundError(location)
  pieces = _tar_pieces(tar)[f"{folder}/{match['base']}" if folder else match["base"]]
  return PiecedFile([p.extent for p in sorted(pieces, key=lambda p: p.offset)])


# ---------------------------------------------------------------------------
# Repairing a name-order join in place.

_REPAIR_CHUNK = 64 << 20


def repair(path: str) -> str:
  """Puts a name-order join in offset order in place, a chunk at a time: no
  extra disk, 128 MiB of memory. Stopped midway, the file is in neither order."""
  archive = examine(path)
  if archive is None:
    return f"{path} reads as a zip already: nothing to do."
  size, piece_size = archive.size, archive.extents[0].size
  with open(path, "r+b") as f:
    # The last (short) piece goes to the end: rotate it past the full pieces after it.
    last = archive.extents[-1]
    _rotate_left(f, last.offset, size, last.size)
    # Then the full pieces, all one size, are a permutation: swapped into place one by one.
    full = [e.offset if e.offset < last.offset else e.offset - last.size for e in archive.extents[:-1]]
    where = {at: i for i, at in enumerate(full)}  # Position -> the piece now there.
    for i in range(len(full)):
      target = i * piece_size
      if full[i] != target:
        other = where[target]
        _swap(f, full[i], target, piece_size)
        where[full[i]], where[target] = other, i
        full[other], full[i] = full[i], target
    f.flush()
    os.fsync(f.fileno())
  _examine.cache_clear()
  return f"{path} is in order: {len(archive.extents)} pieces of {_human(piece_size)}."


def _swap(f: IO[bytes], a: int, b: int, size: int) -> None:
  """Swaps bytes [a, a + size) and [b, b + size), which do not overlap."""
  for done in range(0, size, _REPAIR_CHUNK):
    n = min(_REPAIR_CHUNK, size - done)
    first, second = _read_at(f, a + done, n), _read_at(f, b + done, n)
    f.seek(a + done)
    f.write(second)
    f.seek(b + done)
    f.write(first)


def _rotate_left(f: IO[bytes], start: int, end: int, shift: int) -> None:
  """Bytes [start, end) rotated left by `shift` (Gries–Mills block swaps)."""
  left, right = shift, end - start - shift
  while left and right:
    if left <= right:
      _swap(f, start, start + right, left)
      right -= left
    else:
      _swap(f, start, start + left, right)
      start, left = start + right, left - right

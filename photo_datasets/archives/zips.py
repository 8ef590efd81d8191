"""The zip format, as far as reading an archive in place needs it.

Python's `zipfile` opens an archive; this module reads the structure itself
where `zipfile` cannot help: checking that a file's end record, ZIP64 records,
central directory and local headers agree (a download cut short or joined out
of order fails that), following local headers from the start of a zip without
its directory (what arrived of a cut download), reading one member's bytes at
a known offset in a worker process without opening the archive, and a zip
whose directory has a damaged entry as `zipfile` reads it less that entry
(`zipfile` refuses the whole zip).

No field is trusted: sizes and lengths are checked against the bytes that
hold them, and a member is never read or inflated past `MAX_MEMBER_SIZE`, so
a damaged archive or a zip bomb costs a photo's memory at most.

Names are decoded by the caller (`decode`): which encodings a corpus uses is
the dataset's business, not the format's.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any, Protocol

from photo_datasets.archives import storage
from photo_datasets.archives.pieces import ReadOnlyView

# signature, disk, central directory's disk, entries here, entries, directory size, directory
# offset, comment length
END = struct.Struct("<4s4H2LH")
END_SIGNATURE = b"PK\x05\x06"
# signature, the ZIP64 end record's disk, its offset, disks
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_LOCATOR_SIGNATURE = b"PK\x06\x07"
# signature, size of the rest, versions made by and needed, disk, the directory's disk,
# entries here, entries, directory size, directory offset
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")
_ZIP64_END_SIGNATURE = b"PK\x06\x06"
# signature, versions made by and needed, flags, method, time, date, CRC-32, stored size, size,
# name length, extra length, comment length, disk, internal and external attributes, local
# header's offset
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_CENTRAL_SIGNATURE = b"PK\x01\x02"
# signature, version, flags, method, time, date, CRC-32, stored size, size, name length, extra
# length
LOCAL = struct.Struct("<4s5H3L2H")
LOCAL_SIGNATURE = b"PK\x03\x04"
STORED, DEFLATED = 0, 8
READABLE_METHODS = (STORED, DEFLATED)
ENCRYPTED_FLAG = 0x1
_SIZES_AFTER_DATA_FLAG = 0x8  # Sizes in a data descriptor after the data.
_FULL = 0xFFFFFFFF  # A 32-bit field whose value is in the ZIP64 extra field.
# No photo the scan accepts is larger: it refuses more pixels than PIL's
# `Image.MAX_IMAGE_PIXELS`, at most 4 bytes each even uncompressed. A member
# declared larger is refused before it is read (and one that inflates past its
# declared size as soon as it does): a lying header or a zip bomb cannot take
# a worker's memory.
MAX_MEMBER_SIZE = 512 << 20
# What `zipfile` raises for a damaged zip or entry (a name that is no UTF-8
# under the UTF-8 flag is a ValueError; an unknown version, NotImplementedError;
# an entry flagged encrypted, opened without a password, RuntimeError).
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError,
              EOFError, OSError, ValueError, struct.error, zlib.error)

Decode = Callable[[bytes], str]
File = IO[bytes] | ReadOnlyView  # A file on disk, a member's window, or pieces.


class Seekable(Protocol):
  def seek(self, offset: int, /) -> object: ...

  def read(self, size: int, /) -> bytes: ...


@dataclasses.dataclass(frozen=True)
class Member:
  """A member as the central directory lists it."""

  name: str
  header_offset: int
  size: int  # As stored.


def read_at(f: Seekable, offset: int, size: int) -> bytes:
  """Bytes [offset, offset + size) of `f`, as many as it has. An offset from a
  damaged field may lie before the file's start or past what a file system
  can seek to: no bytes are there."""
  if not 0 <= offset < 1 << 63 or size <= 0:  # 1 << 63: past any file offset (`off_t`).
    return b""
  try:
    f.seek(offset)
  except OSError:  # Past the largest file the file system holds.
    return b""
  return f.read(size)


def end_records(f: Seekable, size: int, chunk: int = 64 << 20) -> Iterator[int]:
  """Where each end record in the file ends (after its comment), from the
  file's end back: where a zip's last byte is when its pieces are out of order."""
  at = size
  while at > 0:
    start = max(0, at - chunk)
    data = read_at(f, start, min(at + len(END_SIGNATURE) - 1, size) - start)
    found = data.rfind(END_SIGNATURE)
    while found >= 0:
      if start + found < at:  # Those at `at` or later were in the chunk before.
        record = read_at(f, start + found, END.size)
        if len(record) == END.size:
          yield start + found + END.size + END.unpack(record)[-1]
      found = data.rfind(END_SIGNATURE, 0, found)
    at = start


@dataclasses.dataclass(frozen=True)
class _Directory:
  """Where a zip's central directory is, as its end records say: the directory ends at `end`."""

  end: int
  size: int
  offset: int


def _find_directory(f: Seekable, size: int) -> _Directory | str:
  """The zip's directory as its end record (at the file's end, after its
  comment) and ZIP64 end record say; else what is wrong, in words. The ZIP64
  locator is looked for right before the end record whatever the classic
  fields hold, as `zipfile` does: it writes ZIP64 records beside normal
  classic values for a directory between 2 and 4 GiB."""
  tail_size = min(size, END.size + 0xFFFF)
  tail = read_at(f, size - tail_size, tail_size)
  at = tail.rfind(END_SIGNATURE)
  while at >= 0 and (at + END.size > len(tail)
                     or at + END.size + END.unpack_from(tail, at)[-1] != len(tail)):
    at = tail.rfind(END_SIGNATURE, 0, at)
  if at < 0:
    return "no end record at its end"
  end = size - tail_size + at
  _, _, _, _, entries, directory_size, directory_offset, _ = END.unpack_from(tail, at)
  full = entries == 0xFFFF or _FULL in (directory_size, directory_offset)
  locator = read_at(f, end - _ZIP64_LOCATOR.size, _ZIP64_LOCATOR.size)
  if len(locator) < _ZIP64_LOCATOR.size or locator[:4] != _ZIP64_LOCATOR_SIGNATURE:
    return "no ZIP64 end record" if full else _Directory(end, directory_size, directory_offset)
  _, disk, record, disks = _ZIP64_LOCATOR.unpack(locator)
  if disk != 0 or disks > 1:
    return "it spans several disks"
  before_locator = record <= end - _ZIP64_LOCATOR.size - _ZIP64_END.size
  zip64 = read_at(f, record, _ZIP64_END.size) if before_locator else b""
  if len(zip64) < _ZIP64_END.size or zip64[:4] != _ZIP64_END_SIGNATURE:
    # No ZIP64 record where the locator says: the classic values, where they are whole, as
    # `zipfile` reads them.
    return "no ZIP64 end record where its locator says" if full else _Directory(
        end, directory_size, directory_offset)
  *_, directory_size, directory_offset = _ZIP64_END.unpack(zip64)
  return _Directory(record, directory_size, directory_offset)


def members(f: Seekable, size: int, decode: Decode, checked: int) -> list[Member] | str:
  """The members of the zip in `f` (`size` bytes) if its end record, central
  directory and (`checked` of) its local headers agree where a zip has them;
  else what is wrong, in words. A member whose directory entry lacks a value
  it needs (a damaged ZIP64 extra field) is left out: the walker reports it."""
  found = _find_directory(f, size)
  if isinstance(found, str):
    return found
  if found.offset + found.size != found.end:
    return "its central directory is not where the end record says"
  return _directory(f, read_at(f, found.offset, found.size), decode, checked)


def nested_problem(f: Seekable, size: int, decode: Decode, checked: int,
                   inner_checked: int) -> str | None:
  """None when the zip in `f` agrees with its bytes (`members`), and so does
  each stored zip in it; else what is wrong, in words."""
  found = members(f, size, decode, checked)
  if isinstance(found, str):
    return found
  for member in found:
    if member.name.lower().endswith(".zip"):
      start = data_start(f, member.header_offset)
      # Compressed, or no zip (an AppleDouble `._name.zip`): not checked.
      if start is None or read_at(f, start, 4) != LOCAL_SIGNATURE:
        continue
      inner = members(Slice(f, start), member.size, decode, inner_checked)
      if isinstance(inner, str):
        return f"{member.name}, at byte {start:,}, has {inner}"
  return None


def _entries(directory: bytes) -> Iterator[tuple[int, int]]:
  """(start, end) of each entry of a central directory, as far as they chain;
  by its bytes, not the end record's count of entries, as `zipfile` reads it."""
  pos = 0
  while (end := _entry_end(directory, pos)) is not None:
    yield pos, end
    pos = end


def _entry_end(directory: bytes, pos: int) -> int | None:
  """Where the directory entry at `pos` ends; None where no whole entry is there."""
  if directory[pos:pos + 4] != _CENTRAL_SIGNATURE or pos + _CENTRAL.size > len(directory):
    return None
  name_len, extra_len, comment_len = _CENTRAL.unpack_from(directory, pos)[10:13]
  end = pos + _CENTRAL.size + name_len + extra_len + comment_len
  return end if end <= len(directory) else None


def _directory(f: Seekable, directory: bytes, decode: Decode, checked: int) -> list[Member] | str:
  found, entries = [], list(_entries(directory))
  for start, _ in entries:
    fields = _CENTRAL.unpack_from(directory, start)
    stored, usize, name_len, extra_len, offset = *fields[8:12], fields[-1]
    name_at = start + _CENTRAL.size
    name = decode(directory[name_at:name_at + name_len])
    extra = directory[name_at + name_len:name_at + name_len + extra_len]
    _, stored, offset = _zip64_fields(extra, usize, stored, offset)
    if _FULL not in (stored, offset):
      found.append(Member(name, offset, stored))
  if (entries[-1][1] if entries else 0) != len(directory):
    return (f"its central directory is damaged after {len(entries)} entries" if entries
            else "its central directory is not where the end record says")
  for member in found[::max(1, -(-len(found) // checked))]:
    if read_at(f, member.header_offset, 4) != LOCAL_SIGNATURE:
      return (f"its directory places {member.name} at byte {member.header_offset}, where no "
              f"member starts")
  return found


def _zip64_fields(extra: bytes, usize: int, stored: int, offset: int) -> tuple[int, int, int]:
  """(size, stored size, header offset), from the ZIP64 extra field where the
  32-bit ones are full. A field that claims more bytes than the extra field
  holds is read as far as it goes: a value it lacks stays full."""
  pos = 0
  while pos + 4 <= len(extra):
    tag, length = struct.unpack_from("<2H", extra, pos)
    if tag == 1:
      body = extra[pos + 4:pos + 4 + length]
      values = iter(struct.unpack_from(f"<{len(body) // 8}Q", body))
      if usize == _FULL:
        usize = next(values, usize)
      if stored == _FULL:
        stored = next(values, stored)
      if offset == _FULL:
        offset = next(values, offset)
    pos += 4 + length
  return usize, stored, offset


def local_members(f: Seekable, size: int, decode: Decode) -> Iterator[tuple[str, int, int]]:
  """(name, data start, stored size) of each member from the start of a zip
  without its directory, as far as the local headers chain."""
  pos = 0
  while pos + LOCAL.size <= size:
    header = read_at(f, pos, LOCAL.size)
    if len(header) < LOCAL.size or header[:4] != LOCAL_SIGNATURE:
      return
    _, _, flags, _, _, _, _, stored, usize, name_len, extra_len = LOCAL.unpack(header)
    name = decode(read_at(f, pos + LOCAL.size, name_len))
    extra = read_at(f, pos + LOCAL.size + name_len, extra_len)
    _, stored, _ = _zip64_fields(extra, usize, stored, 0)
    # Sizes in a data descriptor, or a damaged ZIP64 field without them: cannot follow.
    if (flags & _SIZES_AFTER_DATA_FLAG and stored == 0) or stored == _FULL:
      return
    start = pos + LOCAL.size + name_len + extra_len
    yield name, start, stored
    pos = start + stored


def data_start(f: Seekable, header_offset: int) -> int | None:
  """Where the data of the member whose local header is at `header_offset`
  starts; None where no local header is there."""
  header = read_at(f, header_offset, LOCAL.size)
  if len(header) < LOCAL.size or header[:4] != LOCAL_SIGNATURE:
    return None
  name_len, extra_len = LOCAL.unpack(header)[-2:]
  return int(header_offset + LOCAL.size + name_len + extra_len)


def read_member(path: str, header_offset: int, stored: int, method: int, crc: int,
                file_size: int = -1) -> bytes:
  """The bytes of the member of the zip file at `path` whose local header is
  at `header_offset` (`stored` bytes as stored, `method` STORED or DEFLATED,
  `file_size` bytes as its directory declares them, -1 where not known),
  checked against its size and CRC-32 as `zipfile` does. A member declared
  past `MAX_MEMBER_SIZE` is refused before it is read, and one that inflates
  past its declared size as soon as it does."""
  limit = MAX_MEMBER_SIZE if file_size < 0 else file_size
  if max(stored, limit) > MAX_MEMBER_SIZE:
    raise too_large(max(stored, limit))
  with storage.open_binary(path) as f:
    start = data_start(f, header_offset)
    if start is None:
      raise OSError(f"no zip member at offset {header_offset} of {path}")
    there = max(0, f.seek(0, io.SEEK_END) - start)
    if stored > there:  # Before a read of `stored` bytes allocates them.
      raise OSError(f"zip member truncated: {there} of {stored} bytes")
    raw = read_at(f, start, stored)
  data = raw if method == STORED else _inflate(raw, limit)
  if file_size >= 0 and len(data) != file_size:
    raise OSError(f"zip member holds {len(data):,} of its declared {file_size:,} bytes "
                  f"(a damaged archive)")
  if zlib.crc32(data) != crc:
    raise OSError("bad CRC-32 of the zip member (a damaged archive)")
  return data


def too_large(size: int) -> OSError:
  """The error for a member declared past `MAX_MEMBER_SIZE`, raised before it is read."""
  return OSError(f"zip member of {size:,} bytes, more than any photo can be ({MAX_MEMBER_SIZE:,}): "
                 f"a damaged archive or a zip bomb")


def _inflate(raw: bytes, limit: int) -> bytes:
  """`raw` inflated, refused as soon as it gives more than `limit` bytes."""
  try:
    # One byte past the limit tells a member that gives more; a `max_length` of 0 is no limit.
    data = zlib.decompressobj(-15).decompress(raw, limit + 1)
  except zlib.error as e:
    raise OSError(f"zip member does not inflate ({e}): a damaged archive") from None
  if len(data) > limit:
    raise OSError(f"zip member inflates past its declared {limit:,} bytes: a damaged archive "
                  f"or a zip bomb")
  return data


def open_zip(f: File, size: int,
             decode: Decode) -> tuple[zipfile.ZipFile, list[tuple[str, str]]] | str:
  """The zip in `f` (`size` bytes) as `zipfile` reads it, and the members
  left out of it (name, why); else why it cannot be read, in words.

  `zipfile` refuses a whole zip for one damaged entry in its directory (an
  extra field longer than its bytes, a name that is no UTF-8 under the UTF-8
  flag); such a zip is read through a directory of the entries `zipfile`
  takes, each tried by `zipfile` itself, and the others are left out. Where
  the entries stop chaining, the next is found by its signature, and what lay
  between is left out under the name "" (the zip itself); so too where
  `zipfile` takes a directory whose entries do not chain to its end (it
  would read the entries a damaged length runs over as that entry's bytes).

  Args:
    f: the zip's bytes: a file on disk, a member's `Window`, or pieces.
    size: the zip's size in bytes.
    decode: turns a left-out member's raw name into text.

  Returns:
    `(zip_file, left_out)`: the `zipfile.ZipFile`, and (name, why) of each
    member left out of it (none for an intact zip); or why the zip cannot be
    read, in words.
  """
  found = _find_directory(f, size)
  # Before `zipfile` reads the whole directory its end record declares: a
  # damaged size would be read into memory before `zipfile` finds no entry.
  if (not isinstance(found, str) and found.size
      and read_at(f, found.end - found.size, 4) != _CENTRAL_SIGNATURE):
    return "its end record does not lead to its central directory"
  try:
    whole = zipfile.ZipFile(f)
  except ZIP_ERRORS as e:
    problem = str(e) or type(e).__name__
  else:
    unchained = None if isinstance(found, str) else _unchained(f, found)
    if unchained is None:
      return whole, []
    whole.close()  # Not `f`: a `ZipFile` handed a file leaves it open.
    problem = unchained
  if isinstance(found, str) or found.offset + found.size != found.end:
    return problem
  mended = _open_mended(f, found, decode)
  return problem if mended is None else mended


def _open_mended(f: File, found: _Directory,
                 decode: Decode) -> tuple[zipfile.ZipFile, list[tuple[str, str]]] | None:
  """The zip in `f` read through a directory of the entries of `found` that
  `zipfile` takes, and (name, why) of the members left out (`open_zip`); None
  where it refuses no entry (the damage is elsewhere) or refuses that zip too."""
  kept, left_out = _split_directory(read_at(f, found.offset, found.size), found.offset, decode)
  if not left_out:  # Not an entry `zipfile` refuses.
    return None
  mended = Mended(f, found.offset, _directory_end(b"".join(kept), len(kept), found.offset))
  try:
    return zipfile.ZipFile(mended), left_out
  except ZIP_ERRORS:
    return None


def _split_directory(directory: bytes, offset: int,
                     decode: Decode) -> tuple[list[bytes], list[tuple[str, str]]]:
  """The entries of `directory` (a central directory at byte `offset` of its
  zip) that `zipfile` takes, and (name, why) of each member it refuses or
  whose entry is lost where the entries stop chaining."""
  kept, left_out, pos = [], [], 0
  while pos < len(directory):
    end = _entry_end(directory, pos)
    if end is None:  # The entries chain no further: the next is found by its signature.
      left_out.append(("", f"its central directory is damaged at byte {offset + pos:,}: "
                           f"the member listed there is lost, the others read"))
      pos = directory.find(_CENTRAL_SIGNATURE, pos + 1)
      if pos < 0:
        break
      continue
    refused = _refusal(directory[pos:end])
    if refused is None:
      kept.append(directory[pos:end])
    else:
      name_at = pos + _CENTRAL.size
      name_len = _CENTRAL.unpack_from(directory, pos)[10]
      left_out.append((decode(directory[name_at:name_at + name_len]), refused))
    pos = end
  return kept, left_out


def _unchained(f: Seekable, found: _Directory) -> str | None:
  """Why the directory `zipfile` read does not chain entry by entry to its
  end, or None. `zipfile` stops at the entry whose lengths reach the end, and
  takes the entries after it for that entry's name, extra field or comment: a
  damaged length loses them without a word."""
  directory = read_at(f, found.end - found.size, found.size)
  entries = list(_entries(directory))
  if (entries[-1][1] if entries else 0) == len(directory):
    return None
  return f"its central directory is damaged after {len(entries)} entries"


def _refusal(entry: bytes) -> str | None:
  """Why `zipfile` refuses one directory entry, or None: the entry read as
  the directory of a zip of its own."""
  try:
    zipfile.ZipFile(io.BytesIO(entry + END.pack(END_SIGNATURE, 0, 0, 1, 1, len(entry), 0, 0)))
  except ZIP_ERRORS as e:
    return f"a damaged entry in its zip's directory ({e or type(e).__name__})"
  return None


def _directory_end(directory: bytes, entries: int, offset: int) -> bytes:
  """A directory at `offset` and its end records, ZIP64 ones included (`zipfile` reads either)."""
  record = offset + len(directory)
  return (directory
          + _ZIP64_END.pack(_ZIP64_END_SIGNATURE, _ZIP64_END.size - 12, 45, 45, 0, 0, entries,
                            entries, len(directory), offset)
          + _ZIP64_LOCATOR.pack(_ZIP64_LOCATOR_SIGNATURE, 0, record, 1)
          + END.pack(END_SIGNATURE, 0, 0, min(entries, 0xFFFF), min(entries, 0xFFFF),
                     min(len(directory), _FULL), min(offset, _FULL), 0))


class Mended(ReadOnlyView):
  """A zip's bytes up to its directory, then another directory and its end
  records (`open_zip`): the members' bytes read where they lie. Closing it
  closes the file under it."""

  def __init__(self, fileobj: File, keep: int, tail: bytes):
    super().__init__(keep + len(tail))
    self._file, self._keep, self._tail = fileobj, keep, tail

  def readinto(self, buffer: Any) -> int:
    n = min(len(buffer), self.size - self._pos)
    if n <= 0:
      return 0
    if self._pos < self._keep:
      self._file.seek(self._pos)
      data = self._file.read(min(n, self._keep - self._pos))
    else:
      data = self._tail[self._pos - self._keep:self._pos - self._keep + n]
    buffer[:len(data)] = data
    self._pos += len(data)
    return len(data)

  def close(self) -> None:
    self._file.close()
    super().close()


class Slice:
  """The bytes of a file from `start` on, as a file (enough for `members`)."""

  def __init__(self, f: Seekable, start: int):
    self._f, self._start = f, start

  def seek(self, offset: int) -> None:
    self._f.seek(self._start + offset)

  def read(self, size: int) -> bytes:
    return self._f.read(size)


class Window(ReadOnlyView):
  """A read-only, seekable view of bytes [start, start + size) of a file: a
  stored member read in place, as `zipfile` cannot (its seek on a member
  re-reads it from the start, which is quadratic for a 600 MB inner zip)."""

  def __init__(self, fileobj: IO[bytes], start: int, size: int):
    super().__init__(size)
    self._file, self._start = fileobj, start

  def readinto(self, buffer: Any) -> int:
    n = min(len(buffer), self.size - self._pos)
    if n <= 0:
      return 0
    self._file.seek(self._start + self._pos)
    data = self._file.read(n)
    buffer[: len(data)] = data
    self._pos += len(data)
    return len(data)

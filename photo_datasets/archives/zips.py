"""The zip format, as far as reading an archive in place needs it.

Python's `zipfile` opens an archive; this module reads the structure itself
where `zipfile` cannot help: checking that a file's end record, ZIP64 records,
central directory and local headers agree (a download cut short or joined out
of order fails that), following local headers from the start of a zip without
its directory (what arrived of a cut download), and reading one member's
bytes at a known offset in a worker process without opening the archive.

Names are decoded by the caller (`decode`): which encodings a corpus uses is
the dataset's business, not the format's.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any, Protocol

from photo_datasets.archives.pieces import ReadOnlyView

# signature, disk, central directory's disk, entries here, entries, directory size, directory offset, comment length
END = struct.Struct("<4s4H2LH")
END_SIGNATURE = b"PK\x05\x06"
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
# signature, version, flags, method, time, date, CRC-32, stored size, size, name length, extra length
LOCAL = struct.Struct("<4s5H3L2H")
LOCAL_SIGNATURE = b"PK\x03\x04"
STORED, DEFLATED = 0, 8
READABLE_METHODS = (STORED, DEFLATED)
ENCRYPTED_FLAG = 0x1
_SIZES_AFTER_DATA_FLAG = 0x8  # Sizes in a data descriptor after the data.

Decode = Callable[[bytes], str]


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
  f.seek(offset)
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


def members(f: Seekable, size: int, decode: Decode, checked: int) -> list[Member] | str:
  """The members of the zip in `f` (`size` bytes) if its end record, central
  directory and (`checked` of) its local headers agree where a zip has them;
  else what is wrong, in words."""
  tail_size = min(size, END.size + 0xFFFF)
  tail = read_at(f, size - tail_size, tail_size)
  at = tail.rfind(END_SIGNATURE)
  while at >= 0 and at + END.size + END.unpack_from(tail, at)[-1] != len(tail):
    at = tail.rfind(END_SIGNATURE, 0, at)
  if at < 0:
    return "no end record at its end"
  end = size - tail_size + at
  _, _, _, _, entries, directory_size, directory_offset, _ = END.unpack_from(tail, at)
  if entries == 0xFFFF or 0xFFFFFFFF in (directory_size, directory_offset):
    if end < _ZIP64_LOCATOR.size + _ZIP64_END.size:
      return "no ZIP64 end record"
    signature, _, record, _ = _ZIP64_LOCATOR.unpack(read_at(f, end - _ZIP64_LOCATOR.size, _ZIP64_LOCATOR.size))
    zip64 = read_at(f, record, _ZIP64_END.size)
    if signature != b"PK\x06\x07" or len(zip64) < _ZIP64_END.size or zip64[:4] != b"PK\x06\x06":
      return "no ZIP64 end record where its locator says"
    _, _, _, _, _, _, _, entries, directory_size, directory_offset = _ZIP64_END.unpack(zip64)
    end = record
  if directory_offset + directory_size != end:
    return "its central directory is not where the end record says"
  try:
    return _directory(f, read_at(f, directory_offset, directory_size), entries, decode, checked)
  except struct.error:
    return "its central directory is cut short"


def nested_problem(f: Seekable, size: int, decode: Decode, checked: int, inner_checked: int) -> str | None:
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


def _directory(f: Seekable, directory: bytes, entries: int, decode: Decode, checked: int) -> list[Member] | str:
  found, pos = [], 0
  for _ in range(entries):
    if directory[pos:pos + 4] != b"PK\x01\x02":
      return "its central directory is not where the end record says"
    *_, stored, usize, name_len, extra_len, comment_len, _, _, _, offset = _CENTRAL.unpack_from(directory, pos)
    start = pos + _CENTRAL.size
    name = decode(directory[start:start + name_len])
    stored, offset = _zip64_fields(directory[start + name_len:start + name_len + extra_len], usize, stored, offset)
    found.append(Member(name, offset, stored))
    pos = start + name_len + extra_len + comment_len
  step = -(-len(found) // checked)
  for member in found[::step]:
    if read_at(f, member.header_offset, 4) != LOCAL_SIGNATURE:
      return f"its directory places {member.name} at byte {member.header_offset}, where no member starts"
  return found


def _zip64_fields(extra: bytes, usize: int, stored: int, offset: int) -> tuple[int, int]:
  """(stored size, header offset), from the ZIP64 extra field where the 32-bit ones are full."""
  pos = 0
  while pos + 4 <= len(extra):
    tag, length = struct.unpack_from("<2H", extra, pos)
    if tag == 1:
      values = iter(struct.unpack_from(f"<{length // 8}Q", extra, pos + 4))
      if usize == 0xFFFFFFFF:
        next(values, 0)
      if stored == 0xFFFFFFFF:
        stored = next(values, stored)
      if offset == 0xFFFFFFFF:
        offset = next(values, offset)
    pos += 4 + length
  return stored, offset


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
    stored, _ = _zip64_fields(read_at(f, pos + LOCAL.size + name_len, extra_len), usize, stored, 0)
    if flags & _SIZES_AFTER_DATA_FLAG and stored == 0:  # Cannot follow.
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


def read_member(path: str, header_offset: int, stored: int, method: int, crc: int) -> bytes:
  """The bytes of the member of the zip file at `path` whose local header is
  at `header_offset` (`stored` bytes as stored, `method` STORED or DEFLATED),
  checked against its CRC-32 as `zipfile` does."""
  with open(path, "rb") as f:
    start = data_start(f, header_offset)
    if start is None:
      raise OSError(f"no zip member at offset {header_offset} of {path}")
    raw = read_at(f, start, stored)
  if len(raw) != stored:
    raise OSError(f"zip member truncated: {len(raw)} of {stored} bytes")
  data = raw if method == STORED else zlib.decompress(raw, -15)
  if zlib.crc32(data) != crc:
    raise OSError("bad CRC-32 of the zip member (a damaged archive)")
  return data


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

"""A tar read in place: its members as byte runs of the tar file, where a cut
tar stops, and where it is damaged.

`tarfile` reads the headers; it stops without a word at the first header it
cannot read past the tar's start. Its members are read header by header
(nothing of their data), so the damage is named, the members after it are
found again where `tarfile` finds a header, and no more than a chunk of the
tar is ever in memory.
"""

from __future__ import annotations

import dataclasses
import os
import tarfile
from typing import IO

from photo_datasets.archives import storage
from photo_datasets.archives.pieces import Extent

_BLOCK = 512
_CHUNK = 1 << 20  # Bytes read at a time past a damaged header.
# `tarfile` reads a long name or a pax header whole: one longer than this is
# a damaged header's size, not a name.
_LARGEST_HEADER = 1 << 20
_MAGIC_AT = 257  # Where a ustar or GNU header has its "ustar" magic.


@dataclasses.dataclass(frozen=True)
class Cut:
  """Where a cut tar stops: in the data of `member` (`arrived` of its `size` bytes), or, with
  `member` None, in the header that follows `after` (the last whole member, None for none)."""

  tar_size: int
  member: str | None = None
  arrived: int = 0
  size: int = 0
  after: str | None = None


@dataclasses.dataclass(frozen=True)
class Damage:
  """Bytes where a header belongs that `tarfile` cannot read (`why`), at byte
  `at`, after the member `after` (None for none); members are found again from
  byte `resumed`, or None where no header follows."""

  at: int
  after: str | None
  why: str
  resumed: int | None

  def __str__(self) -> str:
    where = f"after its member {self.after}" if self.after else "before its first member"
    found = (f"its members are read again from byte {self.resumed:,}" if self.resumed is not None
             else "no member after it can be read")
    return f"an unreadable header at byte {self.at:,}, {where} ({self.why}); {found}"


@dataclasses.dataclass(frozen=True)
class Listing:
  """What `read` found in a tar."""

  members: list[tarfile.TarInfo]
  cut: Cut | None = None
  damage: tuple[Damage, ...] = ()


class _Headers:
  """The tar file as `tarfile` reads it, refusing a read longer than any header's."""

  def __init__(self, f: IO[bytes]):
    self._f = f

  def read(self, size: int = -1) -> bytes:
    if size < 0 or size > _LARGEST_HEADER:
      raise tarfile.HeaderError(f"a header of {size:,} bytes")
    return self._f.read(size)

  def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
    return self._f.seek(offset, whence)

  def tell(self) -> int:
    return self._f.tell()


def read(path: str) -> Listing:
  """The members of the tar at `path` that start in it; where it stops if it
  was cut (in a member's data, or in a header at its end); and where a header
  is damaged, with the members after it found again."""
  tar_size = storage.size(path)
  found: list[tarfile.TarInfo] = []
  damage: list[Damage] = []
  with storage.open_binary(path) as f:
    at = 0
    while True:
      members = _members(f, at)
      found += members
      for member in members:
        if member.offset_data + member.size > tar_size:
          arrived = max(0, tar_size - member.offset_data)
          return Listing(found, Cut(tar_size, member.name, arrived, member.size), tuple(damage))
      end = _end(members[-1]) if members else at
      bad = _nonzero(f, end, tar_size)
      after = found[-1].name if found else None
      if bad is None:  # The end-of-archive zeros, or nothing.
        return Listing(found, None, tuple(damage))
      if tar_size - bad < _BLOCK:  # Part of a header where the tar ends.
        return Listing(found, Cut(tar_size, after=after), tuple(damage))
      resumed = _next_header(f, bad + _BLOCK, tar_size)
      why = _header_error(f, bad) or "a long name or extended header that is damaged"
      damage.append(Damage(bad, after, why, resumed))
      if resumed is None:
        return Listing(found, None, tuple(damage))
      at = resumed


def _members(f: IO[bytes], at: int) -> list[tarfile.TarInfo]:
  """The members whose headers `tarfile` reads from byte `at` on, up to the
  first it cannot read."""
  found: list[tarfile.TarInfo] = []
  f.seek(at)
  try:
    with tarfile.open(fileobj=_Headers(f), mode="r:") as tar:  # type: ignore[call-overload]
      while (member := tar.next()) is not None:
        found.append(member)
  # No header at `at`; the tar ends in the member just read ("unexpected end of
  # data"); or a header `tarfile` does not catch itself, read no further.
  except (tarfile.TarError, EOFError, ValueError, UnicodeError):
    pass
  return found


def _end(member: tarfile.TarInfo) -> int:
  """Where the next header after `member` belongs."""
  return member.offset_data + -(-member.size // _BLOCK) * _BLOCK


def _nonzero(f: IO[bytes], start: int, end: int) -> int | None:
  """The start of the first block from `start` on that is not all zeros, read
  a chunk at a time."""
  at = start
  f.seek(at)
  while at < end:
    chunk = f.read(min(_CHUNK, end - at))
    if not chunk:
      return None
    stripped = chunk.lstrip(b"\0")
    if stripped:
      return at + (len(chunk) - len(stripped)) // _BLOCK * _BLOCK
    at += len(chunk)
  return None


def _next_header(f: IO[bytes], start: int, end: int) -> int | None:
  """The first block from `start` on (in whole blocks) that `tarfile` takes
  for a header: where the "ustar" magic is, read a chunk at a time."""
  at = start
  while at < end:
    f.seek(at)
    chunk = f.read(min(_CHUNK, end - at) + _MAGIC_AT + 5)
    found = chunk.find(b"ustar", _MAGIC_AT)
    while 0 <= found < _CHUNK + _MAGIC_AT:
      block = at + found - _MAGIC_AT
      if block % _BLOCK == 0 and _header_error(f, block) is None:
        return block
      found = chunk.find(b"ustar", found + 1)
    at += _CHUNK
  return None


def _header_error(f: IO[bytes], at: int) -> str | None:
  """What `tarfile` says of the block at `at` as a header; None for a header."""
  f.seek(at)
  try:
    tarfile.TarInfo.frombuf(f.read(_BLOCK), tarfile.ENCODING, "surrogateescape")
  except tarfile.HeaderError as e:
    return str(e) or type(e).__name__
  return None


def extent(path: str, member: tarfile.TarInfo, tar_size: int) -> Extent:
  """Where `member`'s data lies in the tar file at `path`: the bytes that are there, if the
  tar is cut in it."""
  return Extent(path, member.offset_data, max(0, min(member.size, tar_size - member.offset_data)))

"""One file made of pieces: runs of bytes of other files, read as one.

A download may arrive as several files (pieces on disk, members of a tar, or
pieces joined in the wrong order into one file). `PiecedFile` reads such runs
of bytes in the order given as one seekable, read-only file, nothing copied;
`locate` tells where a range of it lies on disk, so that a worker process can
read a photo there itself (`records.Span`) unless the photo straddles two runs.
"""

from __future__ import annotations

import bisect
import dataclasses
import io
from collections.abc import Iterable, Iterator
from typing import Any

from photo_datasets.archives import storage


@dataclasses.dataclass(frozen=True)
class Extent:
  """`size` bytes of the file at `path`, starting at byte `offset`."""

  path: str
  offset: int
  size: int


class ReadOnlyView(io.RawIOBase):
  """A read-only, seekable file of `size` bytes; a subclass says in `readinto` where they lie."""

  def __init__(self, size: int):
    super().__init__()
    self.size, self._pos = size, 0

  def readable(self) -> bool:
    return True

  def seekable(self) -> bool:
    return True

  def tell(self) -> int:
    return self._pos

  def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
    base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
    self._pos = min(max(base + offset, 0), self.size)
    return self._pos


class PiecedFile(ReadOnlyView):
  """The extents, one after the other, as one read-only, seekable file."""

  def __init__(self, extents: list[Extent]):
    self.extents = list(extents)
    self._starts = []
    total = 0
    for extent in self.extents:
      self._starts.append(total)
      total += extent.size
    super().__init__(total)
    self._files: dict[str, io.BufferedReader | io.FileIO] = {}

  def readinto(self, buffer: Any) -> int:
    view, done = memoryview(buffer).cast("B"), 0
    while done < len(view) and self._pos < self.size:
      i = bisect.bisect_right(self._starts, self._pos) - 1
      extent, within = self.extents[i], self._pos - self._starts[i]
      n = min(len(view) - done, extent.size - within)
      f = self._file(extent.path)
      f.seek(extent.offset + within)
      got = f.readinto(view[done:done + n])
      if not got:  # The piece is shorter on disk than when it was listed.
        raise OSError(f"{extent.path} ends before byte {extent.offset + within}")
      done, self._pos = done + got, self._pos + got
    return done

  def _file(self, path: str) -> io.BufferedReader | io.FileIO:
    if path not in self._files:
      self._files[path] = storage.open_binary(path, raw=True)
    return self._files[path]

  def close(self) -> None:
    for f in self._files.values():
      f.close()
    self._files.clear()
    super().close()

  def locate(self, offset: int, size: int) -> tuple[str, int] | None:
    """The file and offset on disk of bytes [offset, offset + size), or None
    where they do not lie in one extent."""
    i = bisect.bisect_right(self._starts, offset) - 1
    if i < 0 or offset + size > self._starts[i] + self.extents[i].size:
      return None
    return self.extents[i].path, self.extents[i].offset + offset - self._starts[i]


def whole_file(path: str, size: int) -> PiecedFile:
  return PiecedFile([Extent(path, 0, size)])


# A file whose pieces are named by their offsets (`<name>.part<offset>`), joined
# in the order a text sort of the names gives: `part10737418240` before
# `part2147483648`, as a shell glob sorts them.


def text_order(size: int, piece_size: int) -> list[int]:
  """The pieces' starting offsets in the order a text sort of their names gives."""
  return sorted(range(0, size, piece_size), key=str)


def joined_in_text_order(path: str, size: int, piece_size: int) -> list[Extent]:
  """Where each piece, in offset order, lies in the file at `path` joined in text order."""
  at, where = 0, {}
  for offset in text_order(size, piece_size):
    where[offset] = at
    at += min(piece_size, size - offset)
  return [Extent(path, where[o], min(piece_size, size - o)) for o in range(0, size, piece_size)]


def piece_sizes(size: int, smallest: int, largest: int) -> Iterator[int]:
  """1 GiB first (the size of the commonest split downloads), then every power
  of two, whole MiB and whole MB from `largest` down to `smallest` that gives
  more than one order (a join of pieces whose names sort as numbers is no mistake)."""
  seen: set[int] = set()
  candidates = [1 << 30,
                *(1 << k for k in range(largest.bit_length() - 1, smallest.bit_length() - 2, -1)),
                *range(largest, smallest - 1, -(1 << 20)),
                *range(largest // 1_000_000 * 1_000_000, smallest, -1_000_000)]
  for piece_size in candidates:
    last = (size - 1) // piece_size * piece_size
    if piece_size in seen or piece_size >= size or len(str(last)) == len(str(piece_size)):
      continue
    seen.add(piece_size)
    yield piece_size


def size_in_words(size: int) -> str:
  """A piece size as people name it: "1 GiB", "64 MB", else in bytes."""
  for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("GB", 10**9), ("MB", 10**6)):
    if size % scale == 0:
      return f"{size // scale} {unit}"
  return f"{size:,} bytes"


def text_order_sizes(size: int, last_end: int, smallest: int = 512,
                     most_pieces: int = 1 << 20) -> list[int]:
  """The piece sizes, smallest first, for which a join in text order of a file
  of `size` bytes ends its last (short) piece at byte `last_end`: the pieces
  after it in text order are whole, so they fill `size - last_end` bytes."""
  after = size - last_end
  if after <= 0:
    return []
  found = []
  for piece_size in _divisors(after):
    count = -(-size // piece_size)
    if piece_size < smallest or count > most_pieces or count < 2:
      continue
    last = str((count - 1) * piece_size)
    if sum(str(k * piece_size) > last for k in range(count)) * piece_size == after:
      found.append(piece_size)
  return found


def _divisors(n: int) -> list[int]:
  small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
  return sorted(set(small + [n // d for d in small]))


def runs(extents: Iterable[Extent]) -> list[tuple[int, int]]:
  """(start, end) of the extents in the file they lie in, in reading order, touching ones
  merged: two piece sizes that give the same runs read a file the same way."""
  merged: list[tuple[int, int]] = []
  for e in extents:
    if merged and merged[-1][1] == e.offset:
      merged[-1] = (merged[-1][0], e.offset + e.size)
    else:
      merged.append((e.offset, e.offset + e.size))
  return merged

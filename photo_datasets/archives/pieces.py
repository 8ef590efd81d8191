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
from typing import Any


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
    self._files: dict[str, io.FileIO] = {}

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

  def _file(self, path: str) -> io.FileIO:
    if path not in self._files:
      self._files[path] = io.FileIO(path, "rb")
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

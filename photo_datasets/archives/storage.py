"""Where a build reads its source: a path of this machine through the os, any
other (`gs://...`, `s3://...`) through etils' `epath`, TFDS's own path layer.

A bucket answers each read with a request, and a zip's directory or a tar's
headers are many small reads, so a bucket's file is read through a buffer of
`_BUFFER` bytes: the reads of one neighbourhood cost one request.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
  from etils import epath

_BUFFER = 1 << 20

PathLike = str | os.PathLike[str]


def is_local(path: PathLike) -> bool:
  """A path of this machine, not a bucket's (`gs://...`)."""
  return "://" not in os.fspath(path)


def absolute(path: PathLike) -> str:
  """A local path made absolute; a bucket's as it is (not a folder under this one)."""
  path = os.fspath(path)
  return os.path.abspath(path) if is_local(path) else path


def _bucket_path(path: PathLike) -> epath.Path:
  from etils import epath  # Only for a bucket: a worker reading local files does without it.

  return epath.Path(path)


class _Ranges(io.RawIOBase):
  """A bucket's file, opened through `epath`, as the raw file `io.BufferedReader` reads."""

  def __init__(self, path: PathLike):
    super().__init__()
    # Some backends open a file only in a `with` (TensorFlow's: a generator's context).
    self._opened = contextlib.ExitStack()
    self._f: IO[bytes] = self._opened.enter_context(_bucket_path(path).open("rb"))

  def readable(self) -> bool:
    return True

  def seekable(self) -> bool:
    return True

  def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
    self._f.seek(offset, whence)  # TensorFlow's GFile returns None.
    return self._f.tell()

  def tell(self) -> int:
    return self._f.tell()

  def readinto(self, buffer: Any) -> int:
    data = self._f.read(len(buffer))
    memoryview(buffer).cast("B")[:len(data)] = data
    return len(data)

  def close(self) -> None:
    self._opened.close()
    super().close()


def open_binary(path: PathLike, *, raw: bool = False) -> io.BufferedReader | io.FileIO:
  """The file at `path`, opened for reading bytes; `raw` unbuffered where it is local."""
  if is_local(path):
    return io.FileIO(path, "rb") if raw else open(path, "rb")  # noqa: SIM115 (the caller's)
  return io.BufferedReader(_Ranges(path), _BUFFER)


def read_bytes(path: PathLike) -> bytes:
  with open_binary(path) as f:
    return f.read()


def size(path: PathLike) -> int:
  return stamp(path)[0]


def stamp(path: PathLike) -> tuple[int, int]:
  """(size, modification time in ns): what tells a file that changed since it was read (a
  bucket's time is in whole seconds)."""
  if is_local(path):
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns
  found = _bucket_path(path).stat()
  return found.length, found.mtime * 10**9


def is_file(path: PathLike) -> bool:
  return os.path.isfile(path) if is_local(path) else bool(_bucket_path(path).is_file())


def listdir(folder: PathLike) -> list[str]:
  if is_local(folder):
    return os.listdir(folder)
  return [p.name for p in _bucket_path(folder).iterdir()]


def walk(root: PathLike) -> Iterator[tuple[str, list[str], list[str]]]:
  """`os.walk` of `root`, top down: sorting a folder's subfolders in place orders them."""
  if is_local(root):
    yield from os.walk(os.fspath(root))
    return
  for folder, dirs, files in _bucket_path(root).walk():
    yield os.fspath(folder), dirs, files


def relative(path: str, root: str) -> str:
  """`path` relative to the folder `root`, "/"-separated; "." for `root` itself."""
  if is_local(root):
    return os.path.relpath(path, root)
  root = root.rstrip("/")
  if path.rstrip("/") == root:
    return "."
  if not path.startswith(root + "/"):
    raise ValueError(f"{path} is not under {root}")
  return path[len(root) + 1:]

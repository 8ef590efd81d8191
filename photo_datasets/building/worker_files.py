"""Files each worker process appends to, in a folder of the build's.

A worker writes what it makes (a converted image, a photo's keypoints, a
serialised record) into its own file and hands the main process where it
lies (`Written`: a path and two numbers) instead of the bytes: the main
process, which coordinates every core, neither receives nor stores them, and
whichever worker needs them next reads them there. Unbuffered: what a worker
wrote is in the file when its result arrives. The folders lie in the build's
`incomplete.*` folder, which TFDS removes when a build fails, and the next
build when it was killed (`disk.remove_leftovers`).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import socket
from typing import BinaryIO

# This process's open files: (process id, folder/stem) -> file.
_OPEN: dict[tuple[int, str], BinaryIO] = {}


@dataclasses.dataclass(frozen=True)
class Written:
  """Bytes a worker wrote: `size` of them at `offset` in `path`."""

  path: str
  offset: int
  size: int

  def read(self) -> bytes:
    with open(self.path, "rb") as file:
      data = os.pread(file.fileno(), self.size, self.offset)
    if len(data) != self.size:
      raise OSError(f"{self.path} ends before the {self.size} bytes at {self.offset}")
    return data


def append(folder: str, stem: str, data: bytes) -> Written:
  """Appends `data` to this process's file `stem` in `folder` (`<stem>-<host>-<process id>`:
  Beam's workers on several machines may share the folder)."""
  key = (os.getpid(), os.path.join(folder, stem))  # A forked worker opens its own.
  if (file := _OPEN.get(key)) is None:
    path = f"{key[1]}-{socket.gethostname()}-{key[0]}"
    file = _OPEN[key] = open(path, "ab", buffering=0)  # noqa: SIM115 (open until `close`)
  offset = file.tell()
  if file.write(data) != len(data):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), file.name)
  return Written(file.name, offset, len(data))


def close(folder: str) -> None:
  """Closes this process's files in `folder` (a worker's close when it ends)."""
  for key in [key for key in _OPEN if key[0] == os.getpid() and os.path.dirname(key[1]) == folder]:
    _OPEN.pop(key).close()

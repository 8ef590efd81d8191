"""Files each worker appends to, a file per process and thread, in a folder of the build's.

A worker writes what it makes (a converted image, a photo's keypoints, a
serialised record) into its own file and hands the main process where it
lies (`Written`: a path and two numbers) instead of the bytes: the main
process, which coordinates every core, neither receives nor stores them, and
whichever worker needs them next reads them there. Unbuffered: what a worker
wrote is in the file when its result arrives. The folders lie in the build's
`incomplete.*` folder, which TFDS removes when a build fails, and the next
build when it was killed (`disk.remove_leftovers`).

Each thread of a process appends to files of its own: Beam's SDK harness runs
several bundles at once on threads of one process, and an offset taken in one
thread would be wrong once another wrote in between. Each file's name ends in
a random part, so no two writers share one, wherever they run: Beam's workers
on several machines may share the folder, and containers on one host (a host
network) share its name and may reuse each other's process ids.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import socket
import threading
import uuid
from typing import BinaryIO

# This process's open files: (process id, thread id, folder/stem) -> file. A thread id may be
# reused once its thread has ended: the file then passes on to one writer at a time still.
_OPEN: dict[tuple[int, int, str], BinaryIO] = {}
_LOCK = threading.Lock()  # Guards `_OPEN`, which `close` reads while other threads append.


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
  """Appends `data` to this thread's file `stem` in `folder`, which it opens on its first call
  (`<stem>-<host>-<process id>-<random hex>`)."""
  key = (os.getpid(), threading.get_ident(), os.path.join(folder, stem))
  with _LOCK:
    file = _OPEN.get(key)
  if file is None:
    path = f"{key[2]}-{socket.gethostname()}-{key[0]}-{uuid.uuid4().hex}"
    file = open(path, "xb", buffering=0)  # noqa: SIM115 (open until `close`)
    with _LOCK:
      _OPEN[key] = file
  offset = file.tell()  # Only this thread writes to the file.
  if file.write(data) != len(data):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), file.name)
  return Written(file.name, offset, len(data))


def close(folder: str) -> None:
  """Closes the files this process's threads opened in `folder`, once none of them appends
  there any more (a worker's close when it ends)."""
  pid = os.getpid()
  with _LOCK:
    files = [_OPEN.pop(key) for key in list(_OPEN)
             if key[0] == pid and os.path.dirname(key[2]) == folder]
  for file in files:
    file.close()


def _forget_in_child() -> None:
  """In a forked child: the parent's files are not this process's (the key's process id keeps
  the child from writing to them), and the lock may have been held by a thread the child
  lacks."""
  global _LOCK
  _LOCK = threading.Lock()
  for file in _OPEN.values():
    file.close()  # The child's copy of the descriptor: the parent's stays open.
  _OPEN.clear()


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_forget_in_child)

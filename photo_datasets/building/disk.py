"""What a build needs of the disk, and what an interrupted one left on it.

* `preflight`: before the conversion starts, the bytes a config will write
  into the data dir (its records; their spill files (`writing`), which live in
  the build's `incomplete.*` folder and give way to the records as they are read;
  the images the scan converted, waiting for generation) against the free
  space there. When they will not fit, the build stops at once with
  `NotEnoughDiskSpace`, which says how much is needed, how much is free, where,
  and what to do. Checking free space first has been an open TODO in TFDS.
* `out_of_space`: when the space runs out anyway, the same words.
* `remove_leftovers`: the `incomplete.*` folders that builds killed before
  TFDS could clean up left in a config's folder (records, spill files),
  removed by the next build of that config, which says what it freed.
* `config_lock`: one build of a config at a time in a data dir; a second one
  waits for the first, saying once who holds the config, then reuses what the
  first built (`exclusive` says what the lock relies on).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import IO

from absl import logging

# Bytes per stored pixel of a sized config's JPEGs (quality 92), with a margin over what
# builds of realistic photos store (docs/building.md#when-things-go-wrong).
BYTES_PER_PIXEL = 0.55
# Protobuf framing, TFRecord headers, TFDS's metadata and the spill files of
# the shards being written (`writing.SHARDS_IN_FLIGHT`): a tenth on top.
OVERHEAD = 1.1
_SLACK = 8 << 20  # TFDS's metadata files, croissant.json.
_LOCK_FILE = ".photo_datasets.lock"


class NotEnoughDiskSpace(OSError):
  """The data dir has no room for the build; the message says what to do.

  Raised by `preflight`, before the build writes its records, when what a config will hold in
  the data dir at once is more than the free space there, and when the disk fills up anyway
  during the build (`out_of_space`). An `OSError` with `errno.ENOSPC`, whose message says how
  much the build needs, how much is free, where, and what to do (`advice`).
  """


class DataDirNotWritable(PermissionError):
  """The data dir cannot be written; the message names the folder and what to do.

  Raised before the build writes anything (`check_writable`), with the `errno` of the write
  that failed (such as `EACCES`, or `EROFS` on a read-only filesystem). The message names the
  folder that cannot be written, the folder the build needs, and what to do.
  """


def check_writable(name: str, folder: str) -> None:
  """Raises `DataDirNotWritable` when `folder` cannot be made or written in,
  tried with an unnamed file in its nearest existing folder: nothing is left."""
  existing = os.path.abspath(folder)
  while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
    existing = os.path.dirname(existing)
  try:
    tempfile.TemporaryFile(dir=existing).close()
  except OSError as e:
    raise DataDirNotWritable(
        e.errno, f"Cannot build {name}: {existing} cannot be written ({e.strerror}), "
        f"and the build needs to write {folder}. Give a data dir you can write to "
        "(--data_dir DIR, or tfds.load(..., data_dir=DIR)), "
        f"or make {existing} writable.") from None


def free_bytes(path: str | os.PathLike[str]) -> int:
  """Free space of the filesystem holding `path` (or the nearest folder above
  it that exists). Tests replace it to impose a size limit."""
  path = os.path.abspath(path)
  while not os.path.exists(path) and os.path.dirname(path) != path:
    path = os.path.dirname(path)
  return shutil.disk_usage(path).free


def stored_bytes(image_size: int | None, photos: int, source_bytes: int) -> int:
  """What a config's records take: the source photos themselves for `full`
  (stored unchanged, or converted to JPEG), else `photos` sized images."""
  if image_size is None:
    return int(source_bytes * OVERHEAD)
  return int(photos * image_size * image_size * BYTES_PER_PIXEL * OVERHEAD)


def needed_bytes(image_size: int | None, photos: int, source_bytes: int, *, converts_in_scan: bool,
                 scan_keeps: int = 0) -> int:
  """The most a build of one config holds in the data dir at once; `scan_keeps`: the bytes
  the scan keeps there until its end (the series keypoints), gone before the records come."""
  records = stored_bytes(image_size, photos, source_bytes)
  # `converted.ConvertedImages`, until generation is done.
  waiting = records if converts_in_scan else 0
  return max(records, scan_keeps) + waiting + _SLACK


def _gb(n: int) -> str:
  return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def advice(name: str, data_dir: str, needed: int, free: int) -> str:
  return (f"Not enough disk space to build {name}: it needs about {_gb(needed)} in {data_dir} "
          f"(its records, and their temporary copies while they are sorted into shards), "
          f"and {_gb(free)} is free there. "
          f"Free some space, build into another folder with --data_dir, or build fewer configs "
          f"(--config 224 needs far less than full).")


def preflight(name: str, data_dir: str, needed: int) -> None:
  """Raises `NotEnoughDiskSpace` when `needed` bytes will not fit in `data_dir`."""
  free = free_bytes(data_dir)
  logging.debug("%s needs about %s in %s; %s free.", name, _gb(needed), data_dir, _gb(free))
  if needed > free:
    raise NotEnoughDiskSpace(errno.ENOSPC, advice(name, data_dir, needed, free))


def is_out_of_space(error: BaseException) -> bool:
  """An error of a full disk: Python's, or TensorFlow's `ResourceExhaustedError`."""
  if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
    return True
  return "No space left on device" in str(error) or "Disk quota exceeded" in str(error)


def out_of_space(name: str, data_dir: str, needed: int) -> NotEnoughDiskSpace:
  return NotEnoughDiskSpace(errno.ENOSPC, "The disk filled up. " + advice(name, data_dir, needed,
                                                                          free_bytes(data_dir)))


def _size(path: str) -> int:
  total = 0
  for folder, _, files in os.walk(path):
    for file in files:
      with contextlib.suppress(OSError):
        total += os.lstat(os.path.join(folder, file)).st_size
  return total


# The lock files this process holds (`exclusive`). A forked worker gets their descriptors too,
# and an `flock` lock lasts while any descriptor of it is open: a worker that outlived a killed
# build by a moment would hold its config.
_HELD: set[int] = set()


def _let_go_in_child() -> None:
  """In a forked child: the held lock files' descriptors pointed at /dev/null (the numbers
  stay valid)."""
  if _HELD:
    null = os.open(os.devnull, os.O_RDONLY)
    for fd in _HELD:
      os.dup2(null, fd)
    os.close(null)
    _HELD.clear()


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_let_go_in_child)


def _holder() -> str:
  return (f"pid {os.getpid()} on {socket.gethostname()}, "
          f"since {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")


@contextlib.contextmanager
def exclusive(path: str, on_wait: Callable[[str], None],
              on_take_over: Callable[[str], None] = lambda holder: None, *,
              remove: bool = False) -> Iterator[bool]:
  """Holds an exclusive lock on the file `path` (made if needed) and writes
  who holds it there; yields True. When another process holds it, calls
  `on_wait` once with what that process wrote (pid, host, since when), then
  waits for it. Yields False without waiting where no lock can be had (the
  file cannot be made, or its filesystem has no locks).

  An `flock` lock is the kernel's: it goes when its process dies, however it
  dies, so the lock of a dead process is taken over at once: `on_take_over`
  is called with what it wrote, which only a holder that never let go leaves.
  On NFS, Linux turns `flock` into a lock held by the server (NLM or NFSv4),
  which also excludes a build on another host; the server frees a crashed
  host's lock when its lease ends (90 s by default for NFSv4). Filesystems
  without locks (some FUSE and Lustre mounts) give ENOLCK or EOPNOTSUPP: there
  nothing waits. With `remove`, the file is removed as the lock is let go."""
  try:
    import fcntl
  except ImportError:  # Not POSIX.
    yield False
    return
  lock, waited = _locked(path, on_wait)
  if lock is None:
    yield False
    return
  with lock:
    lock.seek(0)
    if (left := lock.read().strip()) and not waited:
      on_take_over(left)
    lock.truncate(0)
    lock.write(_holder())
    lock.flush()
    _HELD.add(lock.fileno())
    try:
      yield True
    finally:
      _HELD.discard(lock.fileno())
      with contextlib.suppress(OSError):
        lock.truncate(0)
        if remove:  # While still held: a process waiting on it then locks a new file.
          os.remove(path)
      fcntl.flock(lock, fcntl.LOCK_UN)


def _locked(path: str, on_wait: Callable[[str], None]) -> tuple[IO[str] | None, bool]:
  """The file `path` opened and locked (`exclusive`), once its holder lets go, and whether
  this process waited for one; None for the file where no lock can be had."""
  import fcntl  # Called by `exclusive`, which found it.

  waited = False
  while True:
    try:
      if waited:  # The holder may have removed its folder as it left.
        os.makedirs(os.path.dirname(path), exist_ok=True)
      lock = open(path, "a+")
    except OSError:  # A read-only folder: a copy of a built dataset, which still loads.
      return None, waited
    try:
      fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
      if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
        lock.close()
        logging.warning("Cannot lock %s (%s): builds sharing it are not kept from running at once.",
                        path, e)
        return None, waited
      if not waited:
        lock.seek(0)
        on_wait(lock.read().strip() or "another process")
        waited = True
      fcntl.flock(lock, fcntl.LOCK_EX)
    with contextlib.suppress(OSError):
      if os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino:
        return lock, waited
    # Else the holder removed the file as it left: lock the one there now.
    lock.close()


@contextlib.contextmanager
def config_lock(config_dir: str, on_wait: Callable[[str], None] = lambda holder: None,
                on_take_over: Callable[[str], None] = lambda holder: None, *,
                remove: bool = False) -> Iterator[bool]:
  """Holds the config folder's lock while a build runs (`exclusive`): a second
  build of the config waits for the first, told who holds it through
  `on_wait`. Yields whether this process holds it (False where the folder or
  its filesystem allows no lock). A build that made nothing (it failed before
  TFDS wrote a version folder) leaves no folder and no lock behind."""
  made = [d for d in (os.path.dirname(config_dir), config_dir) if not os.path.isdir(d)]
  try:
    os.makedirs(config_dir, exist_ok=True)
  except OSError:  # A read-only copy of a built dataset: nothing to clean, and it still loads.
    yield False
    return
  lock_path = os.path.join(config_dir, _LOCK_FILE)
  with exclusive(lock_path, on_wait, on_take_over) as held:
    try:
      yield held
    finally:
      if held and made and os.listdir(config_dir) == [_LOCK_FILE]:
        os.remove(lock_path)
        for folder in reversed(made):
          with contextlib.suppress(OSError):  # Not empty: another config was built there meanwhile.
            os.rmdir(folder)


def remove_leftovers(config_dir: str) -> str | None:
  """Removes what interrupted builds left in a config's folder (call with the
  lock held); returns what it says about it, or None when there was nothing."""
  if not os.path.isdir(config_dir):
    return None
  leftovers = sorted(entry.path for entry in os.scandir(config_dir)
                     if entry.is_dir() and entry.name.startswith("incomplete."))
  if not leftovers:
    return None
  freed = 0
  for path in leftovers:
    freed += _size(path)
    shutil.rmtree(path, ignore_errors=True)
  names = ", ".join(os.path.basename(p) for p in leftovers)
  return f"removed what an interrupted build left in {config_dir}: {names} ({_gb(freed)} freed)"


_SCRATCH_PREFIX = "photo_datasets-scratch-"


def scratch_folder(name: str, needed: int, what: str = "its scan keeps") -> str:
  """A new folder of this process's in this machine's temporary folder (`$TMPDIR`), for what a
  build whose data dir is a bucket's keeps on the way (`what`: the scan's series keypoints, the
  writer's serialized examples); the caller removes it. First removes those that builds killed
  before their end left there, then raises `NotEnoughDiskSpace` where `needed` bytes will not
  fit."""
  root = tempfile.gettempdir()
  for entry in os.scandir(root):
    owner = entry.name.removeprefix(_SCRATCH_PREFIX).split("-", 1)[0]
    if entry.name.startswith(_SCRATCH_PREFIX) and owner.isdigit() and not _alive(int(owner)):
      shutil.rmtree(entry.path, ignore_errors=True)
  free = free_bytes(root)
  if needed > free:
    raise NotEnoughDiskSpace(errno.ENOSPC, (
        f"Not enough disk space to build {name}: {what} about {_gb(needed)} in {root}, "
        f"this machine's temporary folder (the data dir is a bucket's), and {_gb(free)} is free "
        "there. Free some space, or set TMPDIR to a folder with room."))
  return tempfile.mkdtemp(prefix=f"{_SCRATCH_PREFIX}{os.getpid()}-", dir=root)


def _alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # Another user's.
    return True
  return True

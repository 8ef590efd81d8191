"""The policy of the pipeline's `cache=`: what it accepts, how much memory a
memory cache may take, and who may fill a disk cache.

A memory cache is refused when its estimate exceeds `MEMORY_SHARE` of the
memory free when it is made (or `$PHOTO_DATASETS_MEMORY_CACHE_MB`). A disk
cache is kept only once an epoch has read it whole (tf.data's rule); its filler
writes an owner file (host and pid) beside tf.data's lockfile, so a fill left
by a killed process is discarded by the next pipeline that opens it, and a live
one is not overwritten.
"""

from __future__ import annotations

import os
import socket

import tensorflow as tf

MEMORY_SHARE = 0.5
MEMORY_LIMIT_ENV = "PHOTO_DATASETS_MEMORY_CACHE_MB"


def check_argument(cache: str | None, *, served: bool) -> None:
  """`cache` is None, 'memory' or a directory, and not asked of a pipeline
  `served` by tf.data service."""
  if cache is None:
    return
  if not isinstance(cache, str) or not cache:
    raise ValueError(f"cache must be None, 'memory' or a directory, got {cache!r}.")
  if served:
    raise ValueError(
        "cache= cannot be used with data_service: every epoch is a new job on the tf.data "
        "service workers, and the dispatcher hands each record file to whichever worker asks "
        "first, so no worker would find its cache filled. Add workers instead, or read "
        "in-process with cache=.")


def memory_limit() -> int:
  """The bytes a memory cache may take: `MEMORY_SHARE` of the memory free now
  (`MemAvailable`), or `PHOTO_DATASETS_MEMORY_CACHE_MB` megabytes."""
  if os.environ.get(MEMORY_LIMIT_ENV):
    return int(float(os.environ[MEMORY_LIMIT_ENV]) * 2**20)
  return int(free_memory() * MEMORY_SHARE)


def free_memory() -> int:
  """Bytes of memory free for a new allocation (Linux's `MemAvailable`, else free pages)."""
  try:
    with open("/proc/meminfo") as meminfo:
      for line in meminfo:
        if line.startswith("MemAvailable:"):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_memory(needed: int, what: str, contents: str) -> None:
  """Refuses a memory cache of `needed` bytes beyond `memory_limit()`, naming
  `what` is cached and its `contents`."""
  limit = memory_limit()
  if needed > limit:
    raise ValueError(
        f"cache='memory' refused: {what} needs about {needed / 2**30:.2f} GiB ({contents}), "
        f"more than the {limit / 2**30:.2f} GiB allowed (half the "
        f"{free_memory() / 2**30:.2f} GiB free, or ${MEMORY_LIMIT_ENV}). Use cache=DIRECTORY "
        "on a local disk, a smaller image_size, or a part of the split.")


def _pid_alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # Someone else's: alive.
    pass
  return True


def claim_disk(prefix: str) -> str:
  """Makes `prefix`'s directory, discards a fill left by a dead process, refuses
  one a live process is filling, and records this process as the filler of a
  cache not yet complete; returns `prefix` for `Dataset.cache`."""
  tf.io.gfile.makedirs(os.path.dirname(prefix))
  owner, lockfile = f"{prefix}.owner", f"{prefix}_0.lockfile"
  if tf.io.gfile.exists(lockfile) and tf.io.gfile.exists(owner):
    host, _, pid = tf.io.gfile.GFile(owner).read().partition(":")
    if host != socket.gethostname() or _pid_alive(int(pid)):
      raise ValueError(f"the disk cache {prefix} is being filled by process {pid} on {host}: "
                       f"wait for it, or give another cache directory (delete {lockfile} if "
                       "that process is gone).")
    for stale in tf.io.gfile.glob(f"{prefix}_0.*"):  # Its lockfile and partial data.
      tf.io.gfile.remove(stale)
  if not tf.io.gfile.exists(f"{prefix}.index"):
    with tf.io.gfile.GFile(owner, "w") as out:
      out.write(f"{socket.gethostname()}:{os.getpid()}")
  return prefix

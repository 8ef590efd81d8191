"""`python -m korean_food repair kfood.zip`: a kfood.zip joined in name order put in order,
in place.

The pieces are moved a chunk at a time: no extra disk, 128 MiB of memory.
Stopped midway, the file is in neither order (the docs say so).
"""

from __future__ import annotations

import os
from typing import IO

from korean_food import download
from photo_datasets.archives import storage, zips
from photo_datasets.archives.pieces import size_in_words

_REPAIR_CHUNK = 64 << 20


def repair(path: str) -> str:
  """Puts a name-order join in offset order in place, a chunk at a time: no
  extra disk, 128 MiB of memory. Stopped midway, the file is in neither order.

  Args:
    path: the kfood.zip to repair: the download's pieces joined in the order a
      text sort of their names gives (`cat kfood.zip.part*`).

  Returns:
    What was done, in words: the file is in order now (with its pieces' count
    and size), or it reads as a zip already and was left as it is.

  Raises:
    DownloadError: the file is a download cut short (`download.examine`).
    OSError: the file cannot be read or written, or lies in a bucket.
  """
  if not storage.is_local(path):
    raise OSError(f"{path} lies in a bucket, whose files cannot be rewritten in place: repair a "
                  "copy on a disk, then upload it again (the build reads it as it is).")
  archive = download.examine(path)
  if archive is None:
    return f"{path} reads as a zip already: nothing to do."
  size, piece_size = archive.size, archive.extents[0].size
  with open(path, "r+b") as f:
    # The last (short) piece goes to the end: rotate it past the full pieces after it.
    last = archive.extents[-1]
    _rotate_left(f, last.offset, size, last.size)
    # Then the full pieces, all one size, are a permutation: swapped into place one by one.
    full = [e.offset if e.offset < last.offset else e.offset - last.size
            for e in archive.extents[:-1]]
    where = {at: i for i, at in enumerate(full)}  # Position -> the piece now there.
    for i in range(len(full)):
      target = i * piece_size
      if full[i] != target:
        other = where[target]
        _swap(f, full[i], target, piece_size)
        where[full[i]], where[target] = other, i
        full[other], full[i] = full[i], target
    f.flush()
    os.fsync(f.fileno())
  download.forget(path)
  return f"{path} is in order: {len(archive.extents)} pieces of {size_in_words(piece_size)}."


def _swap(f: IO[bytes], a: int, b: int, size: int) -> None:
  """Swaps bytes [a, a + size) and [b, b + size), which do not overlap."""
  for done in range(0, size, _REPAIR_CHUNK):
    n = min(_REPAIR_CHUNK, size - done)
    first, second = zips.read_at(f, a + done, n), zips.read_at(f, b + done, n)
    f.seek(a + done)
    f.write(second)
    f.seek(b + done)
    f.write(first)


def _rotate_left(f: IO[bytes], start: int, end: int, shift: int) -> None:
  """Bytes [start, end) rotated left by `shift` (Gries–Mills block swaps)."""
  left, right = shift, end - start - shift
  while left and right:
    if left <= right:
      _swap(f, start, start + right, left)
      right -= left
    else:
      _swap(f, start, start + left, right)
      start, left = start + right, left - right

"""The deterministic train/validation/test rule shared by the builders.

An example's split is a function of the SHA-256 of its source bytes alone: it
never depends on listing order or on which other files exist, so adding or
removing photos moves no other photo, and byte-identical photos always land
in the same split (no test photo is also a training photo). A group of near
copies and series (several shots of one scene, `series`), joined where they
touch, takes the split of its `group_leader` (`scan.group_near_duplicates`).
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Iterable

# (split, share of the buckets); the shares sum to 1.
SPLIT_SHARES = (("train", 0.8), ("validation", 0.1), ("test", 0.1))
SPLIT_NAMES = tuple(name for name, _ in SPLIT_SHARES)


def content_digest(data: bytes) -> str:
  return hashlib.sha256(data).hexdigest()


def split_of(digest: str) -> str:
  """The split of an example whose source bytes have this SHA-256 hex digest."""
  position = int(digest[:16], 16) / 16**16  # Uniform in [0, 1).
  upper = 0.0
  for name, share in SPLIT_SHARES:
    upper += share
    if position < upper:
      return name
  return SPLIT_SHARES[-1][0]


def group_leader(digests: Iterable[str]) -> str:
  """The digest whose split a group of near copies takes: the smallest by its
  last 64 bits. Not simply the smallest digest: `split_of` reads the first 64
  bits, and the smallest of k digests lands in `train` with probability
  1 - 0.2**k (every photo of a benchmark corpus of groups of 5 to 22 near
  copies went to `train`). The last 64 bits are independent of the first, so a
  group's split is as uniform as one photo's."""
  return min(digests, key=lambda digest: (digest[-16:], digest))


def components(count: int, pairs: Iterable[tuple[int, int]], most: int | None = None) -> list[list[int]]:
  """The groups of two or more of `range(count)` that `pairs` join, taken in
  order; with `most`, a pair that would make a group larger is left out. Each
  group sorted, the list by first index: what shares a split."""
  parent = list(range(count))
  size = [1] * count

  def root(i: int) -> int:
    while parent[i] != i:
      parent[i] = parent[parent[i]]
      i = parent[i]
    return i

  for i, j in pairs:
    low, high = sorted((root(i), root(j)))
    if low != high and (most is None or size[low] + size[high] <= most):
      parent[high] = low
      size[low] += size[high]
  members: dict[int, list[int]] = collections.defaultdict(list)
  for i in range(count):
    members[root(i)].append(i)
  return sorted(group for group in members.values() if len(group) > 1)

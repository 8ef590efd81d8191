"""The deterministic train/validation/test rule shared by the builders.

An example's split is a function of the SHA-256 of its source bytes alone: it
never depends on listing order or on which other files exist, so adding or
removing photos moves no other photo, and byte-identical photos always land
in the same split (no test photo is also a training photo). A group of near
copies and series (several shots of one scene, `series`), joined where they
touch, takes the split of its `group_leader` (`scan.group_near_duplicates`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

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
  """The digest whose split a group of near copies takes: the smallest by its last 64 bits.

  Not simply the smallest digest: `split_of` reads the first 64 bits, and the
  smallest of k digests lands in `train` with probability 1 - 0.2**k, which
  would empty `validation` and `test` of a corpus made mostly of copies
  (docs/data-quality.md#near-copies-share-a-split). The last 64 bits are
  independent of the first, so a group's split is as uniform as one photo's.

  Args:
    digests: the SHA-256 hex digests of the group's photos (`content_digest`).

  Returns:
    The leader's digest, one of `digests`: its `split_of` is the group's split.
  """
  return min(digests, key=lambda digest: (digest[-16:], digest))


def components(count: int, pairs: Iterable[tuple[int, int]],
               most: int | None = None) -> list[list[int]]:
  """The groups of two or more of `range(count)` that `pairs` join: what shares
  a split.

  Args:
    count: how many items there are.
    pairs: (i, j) pairs of items that belong together.
    most: if given, the pairs are taken in order and one that would make a group
      larger than `most` is left out.

  Returns:
    The groups, each sorted, the list sorted by first index.
  """
  joined = Components(count)
  if most is None:
    joined.join(np.array(list(pairs), dtype=np.intp).reshape(-1, 2))
  else:
    joined.join_in_order(pairs, most)
  return joined.groups()


class Components:
  """A union-find over `range(count)` whose groups' roots are their smallest
  members. `join` merges many pairs at once (vectorised, for the near copies'
  millions of pairs); `join_in_order` merges one pair at a time, leaving out
  a pair that would make a group too large (the series).

  Args:
    count: how many members, `range(count)`, each a group of its own at first.
  """

  def __init__(self, count: int):
    self._parent = np.arange(count, dtype=np.intp)  # Kept pointing at roots.

  def join(self, pairs: npt.NDArray[np.intp]) -> None:
    """Merges the groups of each row (i, j) of `pairs`: a vectorised union
    that hooks the larger root under the smaller, until no pair is apart."""
    parent, a, b = self._parent, pairs[:, 0], pairs[:, 1]
    while a.size:
      root_a, root_b = parent[a], parent[b]
      apart = root_a != root_b
      a, b, root_a, root_b = a[apart], b[apart], root_a[apart], root_b[apart]
      if not a.size:
        return
      np.minimum.at(parent, np.maximum(root_a, root_b), np.minimum(root_a, root_b))
      self._compress()

  def join_in_order(self, pairs: Iterable[tuple[int, int]], most: int) -> None:
    """Merges the groups of each pair in turn, unless the merged group would
    hold more than `most` members."""
    parent = self._parent.tolist()
    size = np.bincount(self._parent, minlength=len(parent)).tolist()  # At each root.

    def root(i: int) -> int:
      while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
      return i

    for i, j in pairs:
      low, high = sorted((root(i), root(j)))
      if low != high and size[low] + size[high] <= most:
        parent[high] = low
        size[low] += size[high]
    self._parent[:] = parent
    self._compress()

  def groups(self) -> list[list[int]]:
    """The groups of two or more, each sorted, the list by first member."""
    order = np.argsort(self._parent, kind="stable")  # Members ascending within a group.
    bounds = np.flatnonzero(np.diff(self._parent[order])) + 1
    return sorted(group.tolist() for group in np.split(order, bounds) if group.size >= 2)

  def _compress(self) -> None:
    """Points every member at its root (pointer jumping)."""
    parent = self._parent
    while not np.array_equal(grandparent := parent[parent], parent):
      parent[:] = grandparent

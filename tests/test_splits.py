"""The split rule (photo_datasets/photos/splits.py): a photo's split is a function of
the SHA-256 of its bytes alone, 80/10/10."""

from __future__ import annotations

import collections
import hashlib
import pathlib
import random

import numpy as np
import pytest

import flowers_dataset
from photo_datasets import testing
from photo_datasets.photos import splits

SAMPLE = pathlib.Path(flowers_dataset.__file__).parent / "sample" / "flower_photos"


def test_content_digest_is_sha256():
  assert splits.content_digest(b"abc") == hashlib.sha256(b"abc").hexdigest()


@pytest.mark.parametrize("prefix, split", [
    ("0000000000000000", "train"),
    ("cccccccccccc0000", "train"),  # 0.8 - 3e-15 (closer is float rounding).
    ("cccccccccccd0000", "validation"),  # 0.8 + 1e-14.
    ("e000000000000000", "validation"),  # 0.875
    ("e666666666660000", "validation"),  # 0.9 - 3e-15.
    ("e666666666670000", "test"),  # 0.9 + 1e-14.
    ("ffffffffffffffff", "test"),
])
def test_split_boundaries(prefix, split):
  assert splits.split_of(prefix + "0" * 48) == split
  assert splits.split_of(prefix + "f" * 48) == split  # Only the first 16 digits count.


def test_split_is_stable_for_known_photos():
  """Pinned: a change to the rule would move published examples between splits."""
  pinned = {
      "daisy/100080576_f52e8ee070_n.jpg": "train",
      "daisy/144603918_b9de002f60_m.jpg": "validation",
      "daisy/2045022175_ad087f5f60_n.jpg": "test",
      "tulips/15275504998_ca9eb82998.jpg": "test",
      "roses/6347847065_83cf87333b_n.jpg": "validation",
  }
  for name, split in pinned.items():
    assert splits.split_of(splits.content_digest((SAMPLE / name).read_bytes())) == split, name
  counts = testing.split_counts(path.read_bytes() for path in SAMPLE.glob("*/*.jpg"))
  assert counts == {"train": 81, "validation": 12, "test": 7}


def test_split_proportions_are_80_10_10():
  n = 40_000
  counts = {name: 0 for name in splits.SPLIT_NAMES}
  for i in range(n):
    counts[splits.split_of(splits.content_digest(f"photo {i}".encode()))] += 1
  # 4 standard deviations of a binomial: fails only if the rule is off.
  assert abs(counts["train"] / n - 0.8) < 4 * (0.8 * 0.2 / n) ** 0.5
  assert abs(counts["validation"] / n - 0.1) < 4 * (0.1 * 0.9 / n) ** 0.5
  assert abs(counts["test"] / n - 0.1) < 4 * (0.1 * 0.9 / n) ** 0.5


def test_fixtures_drawn_into_their_planned_split():
  """`testing.photos_in_splits`, which the dummy data relies on for its split counts."""
  plan = {"a.jpg": "test", "b.jpg": "validation", "c.jpg": "test", "d.jpg": "train"}
  seeds = []

  def draw(name: str, seed: int) -> bytes:
    seeds.append(seed)
    return f"{name} drawn from seed {seed}".encode()

  files = testing.photos_in_splits(plan, draw, first_seed=10)
  assert list(files) == list(plan)
  assert {name: testing.split_of_bytes(data) for name, data in files.items()} == plan
  assert seeds == list(range(10, 10 + len(seeds)))  # Successive seeds, none drawn twice.
  assert len(set(files.values())) == len(plan)
  with pytest.raises(ValueError, match="a.jpg: unknown split 'dev'"):
    testing.photos_in_splits({"a.jpg": "dev"}, draw)


def test_a_group_of_near_copies_is_split_as_evenly_as_single_photos():
  rng = random.Random(0)
  groups = [[f"{rng.getrandbits(256):064x}" for _ in range(5)] for _ in range(20_000)]
  shares = collections.Counter(splits.split_of(splits.group_leader(group)) for group in groups)
  for name, share in splits.SPLIT_SHARES:
    assert abs(shares[name] / len(groups) - share) < 0.015, shares
  # The smallest digest of five would put nearly every group in train.
  assert sum(splits.split_of(min(group)) == "train" for group in groups) / len(groups) > 0.99


def test_the_group_leader_does_not_depend_on_order():
  group = [splits.content_digest(bytes([i])) for i in range(6)]
  assert splits.group_leader(group) == splits.group_leader(reversed(group)) in group


def _closure(count: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
  """Groups by walking the pairs as a graph: what the union-find must agree with."""
  neighbours = collections.defaultdict(set)
  for i, j in pairs:
    neighbours[i].add(j)
    neighbours[j].add(i)
  seen: set[int] = set()
  found = []
  for start in range(count):
    if start in seen:
      continue
    group, todo = set(), [start]
    while todo:
      if (node := todo.pop()) not in group:
        group.add(node)
        todo += neighbours[node]
    seen |= group
    if len(group) > 1:
      found.append(sorted(group))
  return sorted(found)


def test_components_are_the_groups_the_pairs_join():
  rng = random.Random(0)
  for _ in range(300):
    count = rng.randint(0, 60)
    pairs = [(rng.randrange(count), rng.randrange(count))
             for _ in range(rng.randint(0, 80))] if count else []
    assert splits.components(count, pairs) == _closure(count, pairs)
    # Joined in parts, as the near copies are: the same groups.
    joined = splits.Components(count)
    for start in range(0, len(pairs), 7):
      joined.join(np.array(pairs[start:start + 7], dtype=np.intp).reshape(-1, 2))
    assert joined.groups() == _closure(count, pairs)


def test_a_capped_join_takes_the_pairs_in_order_and_counts_earlier_joins():
  assert splits.components(4, [(0, 1), (1, 2), (2, 3)], most=2) == [[0, 1], [2, 3]]
  assert splits.components(4, [(2, 3), (1, 2), (0, 1)], most=3) == [[1, 2, 3]]
  joined = splits.Components(6)
  joined.join(np.array([[0, 1], [1, 2]], dtype=np.intp))
  joined.join_in_order([(2, 3), (4, 5)], most=3)
  assert joined.groups() == [[0, 1, 2], [4, 5]]

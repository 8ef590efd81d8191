"""Near-duplicate hashing on real photos, and the grouping's correctness.

Every kind of copy in benchmarks/near_duplicate_tuning.py is grouped with its
original, and distinct real photos are not (measured there on 147 photos).
"""

from __future__ import annotations

import importlib.util
import itertools
import pathlib
import sys
from types import ModuleType

import numpy as np
import pytest
from PIL import Image, ImageOps

from photo_datasets.photos import near_duplicates, splits
from photo_datasets.photos.near_duplicates import THRESHOLD, distance, groups

REPO = pathlib.Path(__file__).resolve().parents[1]
FLOWERS = REPO / "flowers_dataset" / "sample" / "flower_photos"


def _tuning() -> ModuleType:
  path = REPO / "benchmarks" / "near_duplicate_tuning.py"
  spec = importlib.util.spec_from_file_location("near_duplicate_tuning", path)
  assert spec is not None and spec.loader is not None
  module = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = module
  spec.loader.exec_module(module)
  return module


tuning = _tuning()
FLOWER_PHOTOS = tuning.photos(FLOWERS)
# The measurements of docs/data-quality.md (benchmarks/near_duplicate_tuning.py, 147 real photos).
# The most bits a copy of each kind is from its original:
MAX_COPY_DISTANCE = {"resized_30": 6, "jpeg_q40": 10, "png": 4, "webp": 6, "bmp": 4,
                     "exif_rotated": 4, "grayscale": 2, "cropped_all_sides": 14,
                     "cropped_one_side": 14, "cropped_two_sides": 14, "cropped_corner": 14,
                     "bordered_all_sides": 24, "bordered_one_side": 24, "bordered_corner": 24}
MAX_COPY_KEY_DISTANCE = 6  # The most bits a copy's 64-bit keys are from its original's.
CLOSEST_DISTINCT = 78  # The fewest bits between two distinct photos.
TWO_SHOTS_DISTANCE = 84  # Between two shots of one bowl, seconds apart: not near copies.


def test_the_thresholds_are_the_documented_ones_with_room_on_both_sides() -> None:
  assert (THRESHOLD, near_duplicates.KEY_THRESHOLD) == (56, 8)
  assert max(MAX_COPY_DISTANCE.values()) + 16 <= THRESHOLD <= CLOSEST_DISTINCT - 16
  assert MAX_COPY_KEY_DISTANCE < near_duplicates.KEY_THRESHOLD


@pytest.mark.parametrize("path", FLOWER_PHOTOS[::10], ids=lambda p: p.name)
def test_every_kind_of_copy_is_grouped_with_its_original(path: pathlib.Path) -> None:
  data = path.read_bytes()
  original = tuning.scan_hashes(data)
  copies = tuning.copy_hashes(data)
  assert sorted(copies) == sorted(MAX_COPY_DISTANCE)
  assert [kind for kind, copy in copies.items() if groups([original, copy]) != [[0, 1]]] == []
  assert {kind: (bits, keys)
          for kind, copy in copies.items() for bits, keys in [distance(original, copy)]
          if bits > MAX_COPY_DISTANCE[kind] or keys > MAX_COPY_KEY_DISTANCE} == {}


def test_distinct_flowers_are_not_grouped() -> None:
  hashes = [tuning.scan_hashes(path.read_bytes()) for path in FLOWER_PHOTOS]
  assert len(hashes) == 100
  assert groups(hashes) == []
  assert min(distance(a, b)[0] for a, b in itertools.combinations(hashes, 2)) >= CLOSEST_DISTINCT


@pytest.mark.real_photos
def test_kfood_photos_have_no_false_merges(real_kfood: pathlib.Path) -> None:
  photos = tuning.photos(real_kfood)
  hashes = [tuning.scan_hashes(path.read_bytes()) for path in photos]
  assert len(hashes) == 47
  assert groups(hashes) == []
  # Two shots of one bowl seconds apart are two photos, not copies: not merged.
  first, second = (hashes[photos.index(real_kfood / name)] for name in tuning.TWO_SHOTS)
  assert distance(first, second)[0] == TWO_SHOTS_DISTANCE
  # The closest pair of docs/data-quality.md: of the 147 originals (10,731 pairs), flowers included.
  every = hashes + [tuning.scan_hashes(path.read_bytes()) for path in FLOWER_PHOTOS]
  assert len(every) == 147 and groups(every) == []
  assert min(distance(a, b)[0] for a, b in itertools.combinations(every, 2)) == CLOSEST_DISTINCT


def test_hash_is_mode_independent() -> None:
  image = ImageOps.exif_transpose(Image.open(FLOWER_PHOTOS[0]))
  value = near_duplicates.photo_hashes(image)
  assert len(value) == near_duplicates.HASH_BYTES * len(near_duplicates.REGIONS)
  for mode in ("L", "RGBA", "P", "CMYK", "I;16", "F"):
    assert groups([value, near_duplicates.photo_hashes(image.convert(mode))]) == [[0, 1]], mode


def test_each_region_hash_is_the_dct_of_its_own_resampling_in_exact_integers() -> None:
  """The regions' products are shared where their rows are, and done in float64 by
  BLAS: each region's hash is still the pHash of the shrunk plane resampled to that
  region alone, computed in int64 (no BLAS, no rounding) on any CPU."""
  dct, side, grid = near_duplicates._DCT, near_duplicates._SIDE, near_duplicates._GRID

  def fixed(shrink: np.ndarray) -> np.ndarray:
    return np.round(dct @ shrink * near_duplicates._FIXED_POINT).astype(np.int64)

  for path in FLOWER_PHOTOS:
    image = ImageOps.exif_transpose(Image.open(path))
    plane = np.asarray(image.convert("L").resize((side, side), Image.Resampling.BILINEAR),
                       dtype=np.int64)
    expected = []
    for left, top, right, bottom in near_duplicates.REGIONS:
      rows = fixed(near_duplicates._bilinear_weights(side * top, side * (1 - bottom), side, grid))
      columns = fixed(
          near_duplicates._bilinear_weights(side * left, side * (1 - right), side, grid))
      coefficients = (rows @ plane @ columns.T).ravel()
      expected.append(np.packbits(coefficients > np.median(coefficients[1:])).tobytes())
    assert near_duplicates.photo_hashes(image) == b"".join(expected), path.name


def _photos(count: int, bases: int, flips: int, seed: int) -> list[bytes]:
  """Random hashes, a part of them near copies of `bases` photos (up to
  `flips` bits off per region), so that many pairs sit near the thresholds."""
  rng = np.random.default_rng(seed)
  size = near_duplicates.HASH_BYTES * 8
  regions = len(near_duplicates.REGIONS)
  centres = rng.integers(0, 2, (bases, regions, size), dtype=np.uint8)
  bits = rng.integers(0, 2, (count, regions, size), dtype=np.uint8)
  near = rng.random(count) < 0.8
  noise = np.zeros((count, regions, size), dtype=np.uint8)
  for i in range(count):
    for r in range(regions):
      noise[i, r, rng.choice(size, rng.integers(0, flips + 1), replace=False)] = 1
  bits[near] = centres[rng.integers(0, bases, near.sum())] ^ noise[near]
  return [row.tobytes() for row in np.packbits(bits, axis=2).reshape(count, -1)]


def _apart(photos: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
  """(photo a, photo b, region of b): bits between the whole of a and that region
  of b, and between their keys. From the hashes' bits as documented (each
  region a 16x16 grid of frequency signs, row by row; the key its top-left
  8x8), with no helper of the module under test."""
  regions = len(near_duplicates.REGIONS)
  bits = np.unpackbits(np.frombuffer(b"".join(photos), np.uint8).reshape(len(photos), regions, -1),
                       axis=2)
  hashes = np.packbits(bits, axis=2)
  keys = np.packbits(
      bits.reshape(len(photos), regions, 16, 16)[:, :, :8, :8].reshape(len(photos), regions, 64),
      axis=2)

  def apart(packed: np.ndarray) -> np.ndarray:
    return np.bitwise_count(packed[:, None, None, 0] ^ packed[None]).sum(axis=3, dtype=np.int64)

  return apart(hashes), apart(keys)


def _brute_force_groups(photos: list[bytes], threshold: int, key_threshold: int) -> list[list[int]]:
  """Every pair compared (`_apart`), grouped transitively."""
  hash_bits, key_bits = _apart(photos)
  near = (hash_bits <= threshold) & (key_bits <= key_threshold)
  linked = near.any(axis=2)
  linked |= linked.T
  parent = list(range(len(photos)))

  def find(x: int) -> int:
    while parent[x] != x:
      x = parent[x]
    return x

  for i, j in zip(*np.nonzero(np.triu(linked, 1)), strict=True):
    a, b = find(int(i)), find(int(j))
    parent[max(a, b)] = min(a, b)
  members: dict[int, list[int]] = {}
  for i in range(len(photos)):
    members.setdefault(find(i), []).append(i)
  return sorted(group for group in members.values() if len(group) >= 2)


@pytest.mark.parametrize(("threshold", "key_threshold", "flips"),
                         [(0, 0, 0), (12, 3, 3), (THRESHOLD, 8, 40)])
def test_groups_agree_with_brute_force(threshold: int, key_threshold: int, flips: int) -> None:
  photos = _photos(300, 40, flips, seed=threshold)
  found = groups(photos, threshold, key_threshold)
  assert found == _brute_force_groups(photos, threshold, key_threshold)
  assert found  # The data has groups to find.
  assert found == groups(photos, threshold, key_threshold)  # Deterministic.


@pytest.mark.parametrize("edge", ["bits", "key"])
def test_a_pair_exactly_at_the_thresholds_is_grouped(edge: str) -> None:
  """Within means at most: a pair that only the last bit of either threshold links is linked."""
  photos = _photos(120, 20, 12, seed=5)
  hash_bits, key_bits = _apart(photos)
  near = (hash_bits >= 4) & (hash_bits <= 30) & (key_bits >= 1) & (key_bits <= 8)
  for a, b, r in zip(*np.nonzero(near), strict=True):
    threshold, key_threshold = int(hash_bits[a, b, r]), int(key_bits[a, b, r])
    below = (threshold - 1, key_threshold) if edge == "bits" else (threshold, key_threshold - 1)
    if not any(a in g and b in g for g in _brute_force_groups(photos, *below)):
      break  # This pair is linked at the thresholds and by nothing else below them.
  else:
    pytest.fail("no pair on the edge in the data")
  found = groups(photos, threshold, key_threshold)
  assert found == _brute_force_groups(photos, threshold, key_threshold)
  assert any(a in group and b in group for group in found)
  assert not any(a in group and b in group for group in groups(photos, *below))


def test_the_multi_index_search_finds_what_comparing_all_pairs_finds() -> None:
  rng = np.random.default_rng(0)
  entries = rng.integers(0, 1 << 63, 20_000, dtype=np.uint64)
  queries = entries[:3000] ^ np.uint64(0b1011)  # Each 3 bits from one entry.
  assert near_duplicates._plan(queries.size, entries.size, 64, 8) is not None
  pairs = {(int(a), int(b))
           for a_chunk, b_chunk in near_duplicates._pairs_within(queries, entries, 8)
           for a, b in zip(a_chunk, b_chunk, strict=True)}
  assert {(i, i) for i in range(3000)} <= pairs
  for a, b in pairs:
    assert int(np.bitwise_count(queries[a] ^ entries[b])) <= 8


def _uniform(bits: list[int]) -> bytes:
  """A photo whose every region hash has exactly `bits` set (from the first)."""
  row = np.zeros(near_duplicates.HASH_BYTES * 8, dtype=np.uint8)
  row[bits] = 1
  return np.packbits(row).tobytes() * len(near_duplicates.REGIONS)


def test_groups_are_transitive_and_sorted() -> None:
  # a-b and b-c 4 bits apart, a-c 8: one group all the same.
  a, b, c, far = (_uniform([]), _uniform([0, 1, 2, 3]), _uniform(list(range(8))),
                  _uniform(list(range(0, 256, 2))))
  assert groups([far, c, a, b, a], threshold=4, key_threshold=4) == [[1, 2, 3, 4]]
  assert groups([a, far], threshold=4) == []
  assert groups([], threshold=4) == []


def test_groups_scale_to_many_identical_photos() -> None:
  blank, other = _uniform([]), _uniform(list(range(0, 256, 2)))
  assert groups([blank] * 50_000 + [other]) == [list(range(50_000))]


def test_groups_rejects_bad_input() -> None:
  with pytest.raises(ValueError):
    groups([b"too short"])
  with pytest.raises(ValueError):
    groups([_uniform([])], threshold=-1)
  with pytest.raises(ValueError, match="part 2 is not one of 2 parts"):
    groups([_uniform([])], part=2, parts=2)


@pytest.mark.parametrize("parts", [2, 3, 7])
def test_the_parts_of_the_search_joined_are_the_whole_search(parts: int) -> None:
  """The scan shares the search out on many workers (`scan._ScanGroups`): every part's groups,
  joined where they share a photo, are the groups of all, identical photos included."""
  photos = _photos(600, 60, 40, seed=11)
  photos += photos[:20] + [_uniform([])] * 3  # Identical hashes: one photo in the search.
  whole = groups(photos)
  pieces = [groups(photos, part=part, parts=parts) for part in range(parts)]
  assert all(pieces) and all(piece != whole for piece in pieces)  # Each finds a share.
  joined = splits.components(len(photos), [(group[0], other) for piece in pieces
                                           for group in piece for other in group[1:]])
  assert joined == whole == _brute_force_groups(photos, THRESHOLD, near_duplicates.KEY_THRESHOLD)


def test_multi_index_and_all_pairs_group_alike(monkeypatch: pytest.MonkeyPatch) -> None:
  photos = _photos(3000, 300, 40, seed=7)
  assert near_duplicates._plan(3000, 3000 * len(near_duplicates.REGIONS), 64,
                               near_duplicates.KEY_THRESHOLD)
  found = groups(photos)
  monkeypatch.setattr(near_duplicates, "_plan", lambda *args: None)
  assert groups(photos) == found
  assert len(found) > 100

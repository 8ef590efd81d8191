"""Near-duplicate photos: perceptual hashes of photos and their crops, grouped by Hamming distance.

A copy of a photo (resized, re-encoded, converted, EXIF-rotated, greyed,
cropped or bordered) must not land in another split than its original.

Each photo gets a 256-bit pHash (the signs, against their median, of the 16x16
lowest 2-D DCT frequencies of a 64x64 greyscale image) of the whole image and
of the 11 crops in `REGIONS`, which leave out `CROP` of some sides. A copy
cropped by up to 5 % per side lines up with one of its original's crops, and a
copy with borders lines up through one of its own: two photos are near copies
when a crop of one is within `THRESHOLD` bits of the whole of the other. Low
frequencies survive resizing, JPEG and format changes, but not a shifted frame,
hence the crops.

The search is sub-quadratic: every hash has a 64-bit key (its 8x8 lowest
frequencies), a multi-index search finds the keys within `KEY_THRESHOLD` bits,
and only those pairs are compared in full. A 64-bit hash alone is too weak for
a large corpus: among 150,000 photos even uniformly random 64-bit hashes would
meet within 11 bits about 570 times, real ones more often
(docs/data-quality.md#near-copies-share-a-split).
benchmarks/near_duplicate_tuning.py measures both thresholds on real photos.
"""

from __future__ import annotations

import itertools
import math
import threading
import weakref
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt
from PIL import Image

from photo_datasets.photos import splits

_GRID = 64  # The greyscale image the DCT sees.
_KEEP = 16  # Lowest frequencies kept per axis.
_KEY_KEEP = 8  # Of those, the lowest per axis that make the key.
HASH_BYTES = _KEEP * _KEEP // 8
CROP = 0.05  # Share of a side a crop leaves out.
# (left, top, right, bottom) shares left out: the whole image first, then every
# combination of sides but three.
REGIONS = (
    (0, 0, 0, 0), (CROP, CROP, CROP, CROP),
    (CROP, 0, 0, 0), (0, CROP, 0, 0), (0, 0, CROP, 0), (0, 0, 0, CROP),
    (CROP, 0, CROP, 0), (0, CROP, 0, CROP),
    (CROP, CROP, 0, 0), (0, CROP, CROP, 0), (0, 0, CROP, CROP), (CROP, 0, 0, CROP),
)
# THRESHOLD sits between the copies of every kind (at most 24 bits from their original) and
# the closest distinct photos (78 bits), with room on both sides; the copies' keys are at most
# 6 of 64 bits from their original's (docs/data-quality.md#near-copies-share-a-split, measured
# by benchmarks/near_duplicate_tuning.py).
THRESHOLD = 56
KEY_THRESHOLD = 8

_INTEGER_MODES = ("I", "I;16", "I;16B", "I;16L", "I;16N", "F")
_MAX_SEGMENT_BITS = 22  # Bucket tables of at most 2**22 entries.
_CHUNK_PAIRS = 1 << 22  # Candidate pairs expanded at once (bounds memory on huge buckets).


def _dct_matrix(size: int, keep: int) -> npt.NDArray[np.float64]:
  """Rows of the (unnormalised) DCT-II basis: scale does not matter to a median test.
  `math.cos`, not NumPy's, whose SIMD kernels differ in the last bit by CPU."""
  return np.array([[math.cos(math.pi * (2 * x + 1) * u / (2 * size)) for x in range(size)]
                   for u in range(keep)])


_DCT = _dct_matrix(_GRID, _KEEP)


# Per thread, the last photo's grey plane while that photo lives: the scan's hashes and
# its series features (`series.describe`) read one conversion of the same pixels.
_LAST_GREY = threading.local()


def grey(image: Image.Image) -> Image.Image:
  """The photo's 8-bit grey plane (`_grey`), converted once for the last photo asked.

  Args:
    image: a decoded photo, in any PIL mode.

  Returns:
    An "L" image: `image` itself when it is one; 16-bit and float photos are
    scaled to their own range first. Asked again for the same photo object
    while it lives, the same grey image.
  """
  last: tuple[weakref.ref[Image.Image], Image.Image] | None = getattr(_LAST_GREY, "last", None)
  if last is not None and last[0]() is image:
    return last[1]
  plane = _grey(image)
  _LAST_GREY.last = weakref.ref(image), plane
  return plane


def _grey(image: Image.Image) -> Image.Image:
  """8-bit greyscale; 16-bit and float images are scaled to their own range first."""
  if image.mode == "L":
    return image
  if image.mode in _INTEGER_MODES:
    pixels = np.asarray(image, dtype=np.float64)
    low, high = float(pixels.min()), float(pixels.max())
    scaled = (pixels - low) * (255.0 / max(high - low, 1e-9))
    return Image.fromarray(scaled.clip(0, 255).astype(np.uint8))
  if image.mode in ("P", "PA") or image.mode.startswith("RGBA"):
    image = image.convert("RGBA")
  return image.convert("L")


def _bilinear_weights(start: float, stop: float, size: int, out: int) -> npt.NDArray[np.float64]:
  """(out, size) weights of PIL's BILINEAR resize of pixels [start, stop) of a
  row of `size` to `out` pixels (its antialiasing filter, `ImagingResample`)."""
  scale = (stop - start) / out
  filter_scale = max(scale, 1.0)
  support = filter_scale
  weights = np.zeros((out, size))
  for i in range(out):
    centre = start + (i + 0.5) * scale
    low, high = max(int(centre - support + 0.5), 0), min(int(centre + support + 0.5), size)
    x = np.arange(low, high)
    w = np.clip(1.0 - np.abs((x - centre + 0.5) / filter_scale), 0.0, None)
    weights[i, low:high] = w / w.sum()
  return weights


_SIDE = 2 * _GRID  # The shrunk image the regions are resampled from.
# Per region: the DCT rows times the resampling of its rows (top, bottom), and
# of its columns (left, right), so a region's coefficients are two small products.
# Both are whole numbers (`_FIXED_POINT`), and so are the pixels: every product and
# partial sum is an integer below 2**53, exact in float64 whichever BLAS kernel or
# order of summing a CPU uses, and the median test cannot flip a bit by a rounding.
# The regions share 4 row ranges: each is transformed once (`_ROW_RANGES`), then
# picked for its regions (`_RANGE_OF`). One product per range, not one for all:
# OpenBLAS runs larger products on every core, against the scan's other workers.
_ROW_SPANS = sorted({(top, bottom) for _, top, _, bottom in REGIONS})
_FIXED_POINT = 2.0**15
_ROW_RANGES = np.stack([
    np.round(_DCT @ _bilinear_weights(_SIDE * top, _SIDE * (1 - bottom), _SIDE, _GRID)
             * _FIXED_POINT) for top, bottom in _ROW_SPANS])
_RANGE_OF = np.array([_ROW_SPANS.index((top, bottom)) for _, top, _, bottom in REGIONS])
_COLUMNS_T = np.stack([
    np.round(_DCT @ _bilinear_weights(_SIDE * left, _SIDE * (1 - right), _SIDE, _GRID)
             * _FIXED_POINT).T for left, _, right, _ in REGIONS])


def photo_hashes(image: Image.Image) -> bytes:
  """The hashes of the upright image's `REGIONS`, `HASH_BYTES` each, concatenated."""
  # Shrunk once; each region is then resampled to the 64×64 grid and
  # transformed by two small products (the DCT of PIL's bilinear resize of the region).
  grey_plane = np.asarray(grey(image).resize((_SIDE, _SIDE), Image.Resampling.BILINEAR),
                          dtype=np.float64)
  coefficients = ((_ROW_RANGES @ grey_plane)[_RANGE_OF] @ _COLUMNS_T).reshape(len(REGIONS), -1)
  # The DC term (brightness) is left out of the median, as in pHash.
  bits = coefficients > np.median(coefficients[:, 1:], axis=1, keepdims=True)
  return np.packbits(bits, axis=1).tobytes()


def _words(photos: Sequence[bytes]) -> npt.NDArray[np.uint64]:
  """(photo, region, word) array of the hashes."""
  size = HASH_BYTES * len(REGIONS)
  if any(len(hashes) != size for hashes in photos):
    raise ValueError(f"each photo's hashes must be {size} bytes (photo_hashes)")
  return np.frombuffer(b"".join(photos), dtype=">u8").astype(np.uint64).reshape(
      len(photos), len(REGIONS), HASH_BYTES // 8)


def _keys(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
  """The 64-bit key of every hash: the first byte of each of its first 8 rows of frequencies."""
  as_bytes = words.astype(">u8").view(np.uint8).reshape(*words.shape[:2], HASH_BYTES)
  row_bytes = _KEEP // 8
  key_bytes = np.ascontiguousarray(as_bytes[:, :, : _KEY_KEEP * row_bytes : row_bytes])
  return key_bytes.view(">u8").astype(np.uint64).reshape(words.shape[:2])


def distance(a: bytes, b: bytes) -> tuple[int, int]:
  """Distance between two photos' hashes, and between the keys of the same
  pair: the closest pair of a region of one and the whole of the other."""
  words = _words([a, b])
  keys = _keys(words)
  across = np.bitwise_count(
      np.concatenate([words[0] ^ words[1, 0], words[1] ^ words[0, 0]])).sum(axis=1)
  across_keys = np.bitwise_count(np.concatenate([keys[0] ^ keys[1, 0], keys[1] ^ keys[0, 0]]))
  closest = int(np.argmin(across))
  return int(across[closest]), int(across_keys[closest])


def _plan(queries: int, entries: int, bits: int, threshold: int) -> tuple[int, int] | None:
  """(segments, radius) of the cheapest multi-index search, or None where
  comparing all pairs is cheaper.

  Pigeonhole: a pair within `threshold` is within `radius` on at least one of
  `segments` disjoint segments when segments * (radius + 1) > threshold. Long
  segments probed within a small radius keep the buckets nearly empty.
  """
  best: tuple[float, int, int] | None = None
  for segments in range(1, min(threshold + 1, bits) + 1):
    longest = -(-bits // segments)
    if longest > _MAX_SEGMENT_BITS:
      continue
    radius = -(-(threshold + 1) // segments) - 1
    probes = sum(math.comb(longest, k) for k in range(radius + 1))
    cost = segments * (probes * queries * (1 + entries / 2.0 ** (bits // segments))
                       + 2.0 ** longest)
    if best is None or cost < best[0]:
      best = (cost, segments, radius)
  if best is None or best[0] >= queries * entries:
    return None
  return best[1], best[2]


def _probes(bits: int, radius: int) -> list[int]:
  """Every `bits`-bit mask of at most `radius` set bits."""
  return [sum(1 << bit for bit in chosen)
          for k in range(radius + 1) for chosen in itertools.combinations(range(bits), k)]


def _pairs_within(queries: npt.NDArray[np.uint64], entries: npt.NDArray[np.uint64],
                  threshold: int) -> Iterator[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]]:
  """Chunks of (query index, entry index) pairs whose keys are within
  `threshold` bits; a pair may come more than once."""
  bits = 64
  plan = _plan(queries.size, entries.size, bits, threshold)
  if plan is None:
    rows = max(1, _CHUNK_PAIRS // max(entries.size, 1))
    for start in range(0, queries.size, rows):
      grid = np.meshgrid(np.arange(start, min(queries.size, start + rows)), np.arange(entries.size),
                         indexing="ij")
      a, b = grid[0].ravel(), grid[1].ravel()
      close = np.bitwise_count(queries[a] ^ entries[b]) <= threshold
      yield a[close], b[close]
    return
  segments, radius = plan
  query_indices = np.arange(queries.size, dtype=np.intp)
  shift = 0
  for segment in range(segments):
    width = bits // segments + (1 if segment < bits % segments else 0)
    mask = np.uint64((1 << width) - 1)
    query_keys = ((queries >> np.uint64(shift)) & mask).astype(np.intp)
    entry_keys = ((entries >> np.uint64(shift)) & mask).astype(np.intp)
    shift += width
    order = np.argsort(entry_keys, kind="stable").astype(np.intp)
    starts = np.zeros((1 << width) + 1, dtype=np.intp)
    np.cumsum(np.bincount(entry_keys, minlength=1 << width), out=starts[1:])
    for probe in _probes(width, radius):
      wanted = query_keys ^ probe
      first, sizes = starts[wanted], starts[wanted + 1] - starts[wanted]
      # Chunks of queries whose buckets hold at most ~_CHUNK_PAIRS entries.
      ends = np.cumsum(sizes)
      cuts = np.searchsorted(
          ends, np.arange(_CHUNK_PAIRS, int(ends[-1]) if ends.size else 0, _CHUNK_PAIRS))
      for chunk in np.split(query_indices, cuts):
        size = sizes[chunk]
        total = int(size.sum())
        if not total:
          continue
        a = np.repeat(chunk, size)
        b = order[np.repeat(first[chunk] - (np.cumsum(size) - size), size)
                  + np.arange(total, dtype=np.intp)]
        close = np.bitwise_count(queries[a] ^ entries[b]) <= threshold
        yield a[close], b[close]


def groups(photos: Sequence[bytes], threshold: int = THRESHOLD,
           key_threshold: int = KEY_THRESHOLD, *, part: int = 0,
           parts: int = 1) -> list[list[int]]:
  """Indices of `photos` (each given by its `photo_hashes`) grouped
  transitively when a region of one is within `threshold` bits of the whole
  of the other (and their keys within `key_threshold`).

  The search can be shared out: with `parts`, only the wholes of one part of
  the photos are searched for among every photo's regions, and the groups
  are those that part's links make. The groups of every part, joined where
  they share a photo (`splits.components`), are the groups of all.

  Args:
    photos: each photo's `photo_hashes`.
    threshold: the most bits a region of one photo's hash may be from the
      whole of the other's.
    key_threshold: the most bits their 64-bit keys may be apart.
    part: which part, from 0.
    parts: how many parts the search is shared out in.

  Returns:
    The groups of two or more, as indices into `photos`: each sorted, and the
    list sorted by first index, so the result depends on nothing but the
    hashes (and the part).

  Raises:
    ValueError: a threshold is negative, the part is not one of `parts`, or a
      photo's hashes are not `HASH_BYTES` for each of `REGIONS`.
  """
  if threshold < 0 or key_threshold < 0:
    raise ValueError(f"thresholds must be >= 0, not {threshold} and {key_threshold}")
  if not 0 <= part < parts:
    raise ValueError(f"part {part} is not one of {parts} parts")
  if not photos:
    return []
  words = _words(photos)
  # Identical hashes (blank or byte-identical images) are one photo here, so
  # a bucket never fills up with copies of the same photo; each stands for all.
  flat = words.reshape(len(photos), -1)
  distinct, which = np.unique(flat, axis=0, return_inverse=True)
  which = which.reshape(-1)
  first = np.unique(which, return_index=True)[1]  # A distinct hash's first photo.
  words = distinct.reshape(-1, *words.shape[1:])
  regions = words.shape[1]
  keys = _keys(words)
  joined = splits.Components(len(photos))
  if part == 0:
    copies = np.flatnonzero(first[which] != np.arange(len(photos)))
    joined.join(np.stack([first[which[copies]], copies], axis=1))
  # Every `parts`-th distinct hash from `part`: the parts cost alike.
  searched = np.arange(part, len(words), parts)
  # Wholes against every region: a region of one photo near the whole of another.
  for query, entry in _pairs_within(keys[searched, 0], keys.ravel(), key_threshold):
    whole = searched[query]
    other, region = np.divmod(entry, regions)
    bits = np.bitwise_count(words[whole, 0] ^ words[other, region]).sum(axis=1)
    linked = (bits <= threshold) & (whole != other)
    joined.join(np.stack([first[whole[linked]], first[other[linked]]], axis=1))
  return joined.groups()

"""Series: several shots of one scene (one pot, one plate, one table), close in a class's natural order.

A blog post that shows one dish in several shots (another angle, a tighter
crop, the next cooking stage) gives a corpus of web photos several photos
collected one after the other; they are not copies, so `near_duplicates`
does not group them, yet a test photo from such a series measures memory of a
scene seen in training. A builder that knows its photos' order gives each
photo a position (`PhotoBuilder._series_order`: korean_food the
`Img_XXX_YYYY` number); each photo is compared with the next `WINDOW` photos
of its class in that order, never with all of them, and two photos are one
series when their colour histograms overlap by `THRESHOLD` or more. Series are
joined transitively, the closest links first, up to `MAX_SERIES` photos, and
share one split with their near copies (`scan.group_near_duplicates`).

The descriptor is a joint hue, saturation and value histogram of the photo
shrunk to 48 × 48 (12 × 4 × 4 bins, and 4 value bins for grey pixels), made
from the scan's own decode: it ignores where things are, so it survives crops,
another angle, a new ingredient on top and re-encodes; the overlap
(histogram intersection, 1 for equal histograms) of two shots of one pot is
high because the pot, the table and the light are the same. Local features
with geometric verification (ORB, RANSAC homography) were measured too and
separated series from look-alikes worse on these food photos at several
times the cost; see docs/splits.md and benchmarks/series_tuning.py for the
measurements on the real photos.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
from PIL import Image

from photo_datasets.photos import splits

_SIDE = 48  # The photo is shrunk to this square before its pixels are counted.
_HUES, _SATURATIONS, _VALUES = 12, 4, 4
BINS = _HUES * _SATURATIONS * _VALUES + _VALUES  # The last _VALUES bins hold the grey pixels.
FEATURE_BYTES = 2 * BINS  # uint16 counts of _SIDE² pixels.
# Shots of one scene overlap by 0.70 or more, different pots of one dish by
# 0.68 or less (benchmarks/series_tuning.py on the real photos).
THRESHOLD = 0.70
WINDOW = 4  # Each photo is compared with the next WINDOW photos of its class.
# A series grows by its closest links first and stops at this many photos: one
# blog post's shots of a dish, not a chain of look-alikes drifting through a class.
MAX_SERIES = 20


def colour_histogram(image: Image.Image) -> bytes:
  """The photo's `BINS` pixel counts (uint16, little-endian), of its upright RGB pixels."""
  small = image.convert("RGB").resize((_SIDE, _SIDE), Image.Resampling.BOX, reducing_gap=2.0).convert("HSV")
  hsv = np.asarray(small, dtype=np.int32)
  hue = hsv[..., 0] * _HUES // 256
  saturation = hsv[..., 1] * _SATURATIONS // 256
  value = hsv[..., 2] * _VALUES // 256
  bins = np.where(saturation == 0, _HUES * _SATURATIONS * _VALUES + value,
                  (hue * _SATURATIONS + saturation) * _VALUES + value)
  return np.bincount(bins.ravel(), minlength=BINS).astype("<u2").tobytes()


def _shares(features: Sequence[bytes]) -> npt.NDArray[np.float64]:
  if any(len(f) != FEATURE_BYTES for f in features):
    raise ValueError(f"each photo's features must be {FEATURE_BYTES} bytes (colour_histogram)")
  counts = np.frombuffer(b"".join(features), dtype="<u2").reshape(len(features), BINS).astype(np.float64)
  shares: npt.NDArray[np.float64] = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
  return shares


def overlap(a: bytes, b: bytes) -> float:
  """Histogram intersection of two photos' `colour_histogram`s: 1 when equal, 0 when disjoint."""
  shares = _shares([a, b])
  return float(np.minimum(shares[0], shares[1]).sum())


def _scored_links(names: Sequence[str], features: Sequence[bytes], position: Callable[[str], int | None],
                  folder: Callable[[str], str], threshold: float, window: int) -> list[tuple[float, int, int]]:
  by_folder: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
  for index, name in enumerate(names):
    if (where := position(name)) is not None:
      by_folder[folder(name)].append((where, index))
  shares = _shares(features) if names else np.zeros((0, BINS))
  found = []
  for members in by_folder.values():
    order = np.array([index for _, index in sorted(members)], dtype=np.intp)
    for step in range(1, window + 1):
      a, b = order[:-step], order[step:]
      overlaps = np.minimum(shares[a], shares[b]).sum(axis=1)
      close = overlaps >= threshold
      found += [(value, min(i, j), max(i, j)) for value, i, j in
                zip(overlaps[close].tolist(), a[close].tolist(), b[close].tolist(), strict=True)]
  return found


def links(names: Sequence[str], features: Sequence[bytes], position: Callable[[str], int | None],
          folder: Callable[[str], str], threshold: float = THRESHOLD,
          window: int = WINDOW) -> list[tuple[int, int]]:
  """Pairs (i, j) of indices of `names` that look like shots of one series:
  in one `folder`, at most `window` apart in `position` order (photos without
  a position take part in no series), histograms overlapping by `threshold`."""
  return sorted((i, j) for _, i, j in _scored_links(names, features, position, folder, threshold, window))


def groups(names: Sequence[str], features: Sequence[bytes], position: Callable[[str], int | None],
           folder: Callable[[str], str], threshold: float = THRESHOLD, window: int = WINDOW,
           most: int = MAX_SERIES) -> list[list[int]]:
  """The series among `names`: their `links` joined, the closest first, into
  groups of at most `most` photos (a link that would make a larger one is
  left out). Only groups of two or more; each sorted, the list by first index."""
  # Closest first; ties by index, so the groups depend on nothing but the photos.
  scored = sorted(_scored_links(names, features, position, folder, threshold, window),
                  key=lambda link: (-link[0], link[1], link[2]))
  return splits.components(len(names), [(i, j) for _, i, j in scored], most)

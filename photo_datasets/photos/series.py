"""Series: several shots of one scene (one pot, one plate, one table), close in a class's natural order.

A blog post that shows one dish in several shots (another angle, a tighter
crop, the next cooking stage) gives a corpus of web photos several photos
collected one after the other; they are not copies, so `near_duplicates`
does not group them, yet a test photo from such a series measures memory of a
scene seen in training. A builder that knows its photos' order gives each
photo a position (`PhotoBuilder._series_order`: korean_food the
`Img_XXX_YYYY` number); each photo is compared with the next `WINDOW` photos
of its class in that order, never with all of them. Series are joined
transitively, the closest links first, up to `MAX_SERIES` photos, and share
one split with their near copies (`scan.group_near_duplicates`).

Two photos are one series when their colour histograms overlap by `SURE` or
more, or by `BAND` or more and their keypoints fit one geometry (`joined`).
The histogram (hue, saturation and value of the photo shrunk to 48 × 48)
ignores where things are, so it survives crops, another angle and a new
ingredient on top; but another cook's plate of the same dish can share its
colours as much as a second shot of one plate. Keypoints tell them apart: ORB
corners of the grey photo, matched and fitted by RANSAC to one similarity
(`inliers`), find the same pieces at another scale and place (a close-up of
the plate) and none on another plate. They are matched only for the pairs of
the window whose colours fall in the band, so the cost stays bounded. Both
come from the scan's own decode (`describe`). docs/splits.md and
benchmarks/series_tuning.py have the measurements on the real photos.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Iterable, Sequence

import cv2
import numpy as np
import numpy.typing as npt
from PIL import Image

from photo_datasets.photos import splits

_SIDE = 48  # The photo is shrunk to this square before its pixels are counted.
_HUES, _SATURATIONS, _VALUES = 12, 4, 4
BINS = _HUES * _SATURATIONS * _VALUES + _VALUES  # The last _VALUES bins hold the grey pixels.
HISTOGRAM_BYTES = 2 * BINS  # uint16 counts of _SIDE² pixels.
# Colour alone joins shots of one scene that overlap by SURE or more; a pair of
# the window that overlaps by BAND or more, but less than SURE, joins only when
# MIN_INLIERS of its keypoints fit one similarity (benchmarks/series_tuning.py).
SURE = 0.78
BAND = 0.40
MIN_INLIERS = 8
WINDOW = 4  # Each photo is compared with the next WINDOW photos of its class.
# A series grows by its closest links first and stops at this many photos: one
# blog post's shots of a dish, not a chain of look-alikes drifting through a class.
MAX_SERIES = 20

_KEYPOINT_SIDE = 320  # The longer side of the grey photo the keypoints are found on.
_KEYPOINTS = 300  # At most, the strongest.
_LEVELS = 5  # Of its scale pyramid,
_SCALE_STEP = 1.4  # this far apart.
_CORNER_CONTRAST = 20  # FAST's threshold, of 255: a higher one finds fewer corners, sooner.
# One keypoint: x and y in 1/8 px (uint16) and its 256-bit ORB descriptor.
_KEYPOINT = np.dtype([("x", "<u2"), ("y", "<u2"), ("descriptor", "u1", 32)])
_RATIO = 0.8  # Lowe's ratio test: the best match clearly better than the second.
_INLIER_PX = 3.0  # RANSAC's reprojection threshold, in pixels of the keypoint photo.
# A fit must keep the scale of a zoom, not squash the photo to a point, and its
# inliers must spread over the photo, not sit on one repeated texture.
_SCALES = (0.25, 4.0)
_SPREAD_PX = 8.0


@functools.cache
def _orb() -> cv2.ORB:
  cv2.setNumThreads(1)  # The scan runs a worker per core; OpenCV's own threads would only contend.
  return cv2.ORB.create(nfeatures=_KEYPOINTS, scaleFactor=_SCALE_STEP, nlevels=_LEVELS, edgeThreshold=15,
                        patchSize=15, fastThreshold=_CORNER_CONTRAST, scoreType=cv2.ORB_FAST_SCORE)


def _histogram(rgb: Image.Image) -> bytes:
  small = rgb.resize((_SIDE, _SIDE), Image.Resampling.BOX, reducing_gap=2.0).convert("HSV")
  hsv = np.asarray(small, dtype=np.int32)
  hue = hsv[..., 0] * _HUES // 256
  saturation = hsv[..., 1] * _SATURATIONS // 256
  value = hsv[..., 2] * _VALUES // 256
  bins = np.where(saturation == 0, _HUES * _SATURATIONS * _VALUES + value,
                  (hue * _SATURATIONS + saturation) * _VALUES + value)
  return np.bincount(bins.ravel(), minlength=BINS).astype("<u2").tobytes()


def colour_histogram(image: Image.Image) -> bytes:
  """The photo's `BINS` pixel counts (uint16, little-endian), of its upright RGB pixels."""
  return _histogram(image if image.mode == "RGB" else image.convert("RGB"))


def describe(image: Image.Image) -> bytes:
  """The photo's series features, from the scan's decode: its `colour_histogram`
  (`HISTOGRAM_BYTES`), then up to `_KEYPOINTS` ORB keypoints of the grey photo
  shrunk to `_KEYPOINT_SIDE` (36 bytes each)."""
  grey = np.asarray(image.convert("L"))
  height, width = grey.shape
  scale = min(1.0, _KEYPOINT_SIDE / max(width, height))
  if scale < 1:  # Bilinear, as ORB's own pyramid: a third of the cost of an area average.
    grey = cv2.resize(grey, (max(1, round(width * scale)), max(1, round(height * scale))),
                      interpolation=cv2.INTER_LINEAR)
  found, descriptors = _orb().detectAndCompute(grey, None)
  keypoints = np.zeros(len(found), dtype=_KEYPOINT)
  if found:
    where = np.round(np.array([k.pt for k in found]) * 8)
    keypoints["x"], keypoints["y"], keypoints["descriptor"] = where[:, 0], where[:, 1], descriptors
  return colour_histogram(image) + keypoints.tobytes()


def _shares(features: Sequence[bytes]) -> npt.NDArray[np.float64]:
  if any(len(f) < HISTOGRAM_BYTES or (len(f) - HISTOGRAM_BYTES) % _KEYPOINT.itemsize for f in features):
    raise ValueError(f"each photo's features must be {HISTOGRAM_BYTES} bytes and keypoints (describe)")
  counts = np.frombuffer(b"".join(f[:HISTOGRAM_BYTES] for f in features), dtype="<u2").reshape(
      len(features), BINS).astype(np.float64)
  shares: npt.NDArray[np.float64] = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
  return shares


def overlap(a: bytes, b: bytes) -> float:
  """Histogram intersection of two photos' colour histograms: 1 when equal, 0 when disjoint."""
  shares = _shares([a, b])
  return float(np.minimum(shares[0], shares[1]).sum())


def _keypoints(features: bytes) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.uint8]]:
  keypoints = np.frombuffer(features, dtype=_KEYPOINT, offset=HISTOGRAM_BYTES)
  where = np.stack([keypoints["x"], keypoints["y"]], axis=1).astype(np.float32) / np.float32(8)
  return where, np.ascontiguousarray(keypoints["descriptor"])


def inliers(a: bytes, b: bytes) -> int:
  """How many keypoints of two photos' features fit one similarity (shift,
  rotation, scale) by RANSAC: many for two shots of one plate, even at another
  zoom, few for two plates that only share their colours."""
  (where_a, descriptors_a), (where_b, descriptors_b) = _keypoints(a), _keypoints(b)
  if len(where_a) < 3 or len(where_b) < 3:
    return 0
  pairs = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(descriptors_a, descriptors_b, k=2)
  good = [m[0] for m in pairs if len(m) == 2 and m[0].distance < _RATIO * m[1].distance]
  if len(good) < 3:
    return 0
  points_a = where_a[[m.queryIdx for m in good]]
  points_b = where_b[[m.trainIdx for m in good]]
  cv2.setRNGSeed(0)  # RANSAC's samples: the same photos, the same count.
  fit, mask = cv2.estimateAffinePartial2D(points_a, points_b, method=cv2.RANSAC,
                                          ransacReprojThreshold=_INLIER_PX, maxIters=500, refineIters=0)
  if fit is None:
    return 0
  kept = mask.ravel().astype(bool)
  scale = float(np.hypot(fit[0, 0], fit[1, 0]))
  spread = min(points_a[kept].std(axis=0).min(), points_b[kept].std(axis=0).min())
  return int(kept.sum()) if _SCALES[0] <= scale <= _SCALES[1] and spread >= _SPREAD_PX else 0


def joined(a: bytes, b: bytes, sure: float = SURE, band: float = BAND, min_inliers: int = MIN_INLIERS) -> bool:
  """Whether two photos' features (`describe`) look like shots of one scene:
  colours overlapping by `sure`, or by `band` and `min_inliers` keypoints in one geometry."""
  colours = overlap(a, b)
  return colours >= sure or (colours >= band and inliers(a, b) >= min_inliers)


def pair_inliers(pair: tuple[bytes, bytes]) -> int:
  """`inliers` of a pair of features, for a `PairMap`."""
  cv2.setNumThreads(1)  # One worker per core already.
  return inliers(*pair)


# Maps `pair_inliers` over pairs of features, in order: `map` by default, a
# pool of worker processes in the scan (the matching is most of the grouping's work).
PairMap = Callable[[Callable[[tuple[bytes, bytes]], int], Iterable[tuple[bytes, bytes]]], Iterable[int]]


def _scored_links(names: Sequence[str], features: Sequence[bytes], position: Callable[[str], int | None],
                  folder: Callable[[str], str], sure: float, band: float, min_inliers: int,
                  window: int, pair_map: PairMap) -> list[tuple[float, int, int]]:
  by_folder: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
  for index, name in enumerate(names):
    if (where := position(name)) is not None:
      by_folder[folder(name)].append((where, index))
  shares = _shares(features) if names else np.zeros((0, BINS))
  found: list[tuple[float, int, int]] = []
  in_band: list[tuple[float, int, int]] = []
  for members in by_folder.values():
    order = np.array([index for _, index in sorted(members)], dtype=np.intp)
    for step in range(1, window + 1):
      a, b = order[:-step], order[step:]
      overlaps = np.minimum(shares[a], shares[b]).sum(axis=1)
      for value, i, j in zip(overlaps.tolist(), a.tolist(), b.tolist(), strict=True):
        if value >= band:  # Colour decides outside the band; keypoints are matched only inside it.
          (found if value >= sure else in_band).append((value, min(i, j), max(i, j)))
  counts = pair_map(pair_inliers, ((features[i], features[j]) for _, i, j in in_band))
  return found + [link for link, count in zip(in_band, counts, strict=True) if count >= min_inliers]


def links(names: Sequence[str], features: Sequence[bytes], position: Callable[[str], int | None],
          folder: Callable[[str], str], sure: float = SURE, band: float = BAND, min_inliers: int = MIN_INLIERS,
          window: int = WINDOW, pair_map: PairMap = map) -> list[tuple[int, int]]:
  """Pairs (i, j) of indices of `names` that look like shots of one series:
  in one `folder`, at most `window` apart in `position` order (photos without
  a position take part in no series), histograms overlapping by `sure`, or by
  `band` and `min_inliers` keypoints in one geometry (`describe`, `inliers`)."""
  return sorted((i, j) for _, i, j in
                _scored_links(names, features, position, folder, sure, band, min_inliers, window, pair_map))


def groups(names: Sequence[str], features: Sequence[bytes], position: Callable[[str], int | None],
           folder: Callable[[str], str], sure: float = SURE, band: float = BAND,
           min_inliers: int = MIN_INLIERS, window: int = WINDOW, most: int = MAX_SERIES,
           pair_map: PairMap = map) -> list[list[int]]:
  """The series among `names`: their `links` joined, the closest first, into
  groups of at most `most` photos (a link that would make a larger one is
  left out). Only groups of two or more; each sorted, the list by first index."""
  # Closest first; ties by index, so the groups depend on nothing but the photos.
  scored = sorted(_scored_links(names, features, position, folder, sure, band, min_inliers, window, pair_map),
                  key=lambda link: (-link[0], link[1], link[2]))
  return splits.components(len(names), [(i, j) for _, i, j in scored], most)

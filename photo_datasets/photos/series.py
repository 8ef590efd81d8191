"""Series: several shots of one scene (a pot, a plate, a table), close in a class's natural order.

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
more, or by less and enough of their keypoints fit one geometry: `CLOSE_INLIERS`
from `CLOSE`, `MIN_INLIERS` from `BAND` (`Rule`, `joined`): the closer the
colours, the less geometry it takes.
The histogram (hue, saturation and value of a sample of the photo's pixels
shrunk to 48 × 48) ignores where things are, so it survives crops, another
angle and a new ingredient on top; but another cook's plate of the same dish
can share its colours as much as a second shot of one plate. Keypoints tell
them apart: ORB corners of the grey photo, matched (each one's nearest
descriptors, from every distance faiss counts) and fitted by RANSAC to one
similarity, or to a homography where the similarity maps part of the scene
(`inliers`), find the same pieces at another scale and place (a close-up of
the plate) and none on another plate.
They are matched only for the pairs of the window that colour does not join
alone, so the cost stays bounded, in runs of neighbours sent to the scan's
workers (`MatchRun`). Both come from the
scan's own decode (`describe`: the keypoints from the grey plane its near-copy
hashes converted); a scan keeps the keypoints in files (its workers') until the
series are found (`FeatureFile`). docs/splits.md and
benchmarks/series_tuning.py have the measurements on the real photos.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import math
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import BinaryIO

import cv2
import numpy as np
import numpy.typing as npt
from PIL import Image

# faiss's loader tells, at INFO, each of its CPU builds it tries and why one did not load:
# in `tfds build`'s log (absl shows INFO), lines that read like errors about nothing.
logging.getLogger("faiss.loader").setLevel(logging.WARNING)
import faiss  # noqa: E402  # After its loader's logger is quietened.

from photo_datasets.photos import near_duplicates, splits  # noqa: E402

_SIDE = 48  # The photo is shrunk to this square before its pixels are counted,
_SAMPLE_SIDE = 128  # from a sample of its pixels this many on its longer side.
_HUES, _SATURATIONS, _VALUES = 12, 4, 4
BINS = _HUES * _SATURATIONS * _VALUES + _VALUES  # The last _VALUES bins hold the grey pixels.
HISTOGRAM_BYTES = 2 * BINS  # uint16 counts of _SIDE² pixels.
# Colour alone joins shots of one scene that overlap by SURE or more; a pair of
# the window that overlaps less joins when enough of its keypoints fit one change
# of viewpoint: CLOSE_INLIERS from CLOSE, MIN_INLIERS from BAND, STRONG_INLIERS
# below it, whatever the colours: a lamp or a window changes a plate's colours,
# not its geometry (benchmarks/series_tuning.py, docs/splits.md). Colour only
# makes a pair cheaper: a sure join, or fewer inliers asked where it agrees.
SURE = 0.78
CLOSE = 0.70
CLOSE_INLIERS = 5
BAND = 0.40
MIN_INLIERS = 8
STRONG_INLIERS = 10
WINDOW = 4  # Each photo is compared with the next WINDOW photos of its class.
# A series grows by its closest links first and stops at this many photos: one
# blog post's shots of a dish, not a chain of look-alikes drifting through a class.
MAX_SERIES = 20

# ORB's settings: _KEYPOINT_SIDE, _KEYPOINTS, _LEVELS and _CORNER_CONTRAST are, of the settings
# compared side by side, the only ones that join every close-up (docs/splits.md#cost).
# The keypoints are found on the grey photo shrunk to _KEYPOINT_SIDE on its longer side, but to
# at least _KEYPOINT_SHORT_SIDE on its shorter side: on a strip 96 px high (a collage of shots side
# by side) ORB's pyramid and 15 px borders leave nothing to match a close-up with. Its longer side
# stays at most _KEYPOINT_LONGEST (a banner's cost, and x, y in 1/8 px fit uint16).
_KEYPOINT_SIDE = 288
_KEYPOINT_SHORT_SIDE = 128
_KEYPOINT_LONGEST = 896
_KEYPOINTS = 250  # The strongest (ORB shares them out among its scales, and may keep a few more).
# ORB's scale pyramid: _LEVELS scales, _SCALE_STEP apart (1 to 1.96: a close-up of 30 % of a
# photo is 1.83 times larger).
_LEVELS = 3
_SCALE_STEP = 1.4
_CORNER_CONTRAST = 25  # FAST's threshold, of 255: a higher one finds fewer corners, sooner.
# One keypoint: x and y in 1/8 px (uint16) and its 256-bit ORB descriptor.
_KEYPOINT = np.dtype([("x", "<u2"), ("y", "<u2"), ("descriptor", "u1", 32)])
KEYPOINT_BYTES = _KEYPOINT.itemsize
# About what a photo's keypoints take (ORB may keep a few more).
KEYPOINTS_BYTES = _KEYPOINTS * KEYPOINT_BYTES
_RATIO = 0.8  # Lowe's ratio test: the best match clearly better than the second.
_INLIER_PX = 3.0  # RANSAC's reprojection threshold, in pixels of the keypoint photo.
# A fit must keep the scale of a zoom, not squash the photo to a point, and its
# inliers must spread over the photos, not sit on one repeated texture: the
# geometric mean of their spreads in the two (a zoom shrinks the spread in the
# wider shot by its scale; the smaller spread alone held that against close-ups).
_SCALES = (0.25, 4.0)
_SPREAD_PX = 8.0
# A second shot's tilt: the homography may stretch one way at most this much more than the other
# (a keystone of 30 % stretches by 1.4), and the depth across the inliers vary by at most this
# ratio.
_STRETCH = 2.0
_DEPTH_RATIO = 1.6
_MODEL_POINTS = 4  # A homography's own sample fits exactly: only inliers beyond it are evidence.
# A tilted second shot still maps part of the plate by a similarity: the homography is fitted only
# where the similarity's RANSAC agreed on this many matches, its 2-point sample included.
_TILT_CONSENSUS = 4
_ITERATIONS = 500  # Each fit's most RANSAC samples.
# Both fits' confidence. A similarity's RANSAC draws the samples that find `least` inliers among a
# pair's matches with this probability, no more: a pair of two plates, whose few chance inliers
# never reach its need, costs that many samples, not `_ITERATIONS` (`_similarity_samples`).
_CONFIDENCE = 0.999


@dataclasses.dataclass(frozen=True)
class Rule:
  """When two photos are one series: their colours overlap by `sure`, or by
  `close` and `close_inliers` keypoints fit one change of viewpoint, or by
  `band` and `min_inliers` keypoints do, or `strong_inliers` do whatever the
  colours.

  Attributes:
    sure: the colour overlap (histogram intersection, 0 to 1) from which two
      photos are one series on colour alone.
    close: the overlap from which `close_inliers` keypoints join them.
    close_inliers: the inliers a pair needs from `close` up to `sure`.
    band: the overlap from which `min_inliers` keypoints join them.
    min_inliers: the inliers a pair needs from `band` up to `close`.
    strong_inliers: the inliers a pair needs below `band`; None joins no such
      pair.
  """

  sure: float = SURE
  close: float = CLOSE
  close_inliers: int = CLOSE_INLIERS
  band: float = BAND
  min_inliers: int = MIN_INLIERS
  strong_inliers: int | None = STRONG_INLIERS  # None: below `band`, never (version 1.5.0's rule).

  def inliers_needed(self, colours: float) -> int | None:
    """The inliers a pair whose colours overlap by `colours` needs: 0 from `sure`, None for
    never."""
    if colours >= self.sure:
      return 0
    if colours >= self.close:
      return self.close_inliers
    return self.min_inliers if colours >= self.band else self.strong_inliers


RULE = Rule()


# An ORB per thread: Beam's SDK harness scans on several threads of one process, and OpenCV
# does not promise that one detector object may run on two threads at once.
_ORBS = threading.local()


def _orb() -> cv2.ORB:
  orb: cv2.ORB | None = getattr(_ORBS, "orb", None)
  if orb is None:
    cv2.setNumThreads(1)  # A worker per core already: OpenCV's own threads would only contend.
    orb = _ORBS.orb = cv2.ORB.create(nfeatures=_KEYPOINTS, scaleFactor=_SCALE_STEP,
                                     nlevels=_LEVELS, edgeThreshold=15, patchSize=15,
                                     fastThreshold=_CORNER_CONTRAST, scoreType=cv2.ORB_FAST_SCORE)
  return orb


def _histogram(rgb: Image.Image) -> bytes:
  # Every pixel averaged is the cost of a full pass over the photo; a sample of about _SAMPLE_SIDE²
  # pixels, averaged in blocks, counts the same colours.
  width, height = rgb.size
  scale = _SAMPLE_SIDE / max(width, height)
  if scale < 1:
    rgb = rgb.resize((max(1, round(width * scale)), max(1, round(height * scale))),
                     Image.Resampling.NEAREST)
  small = rgb.resize((_SIDE, _SIDE), Image.Resampling.BOX).convert("HSV")
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
  """The photo's series features, from the scan's decode.

  Its `colour_histogram` (`HISTOGRAM_BYTES`), then about `_KEYPOINTS` ORB
  keypoints of the grey photo shrunk to `_KEYPOINT_SIDE` on its longer side,
  or `_KEYPOINT_SHORT_SIDE` on its shorter side where that is larger, never
  past `_KEYPOINT_LONGEST` (`KEYPOINT_BYTES` each).

  Args:
    image: the upright decoded photo, in any PIL mode.

  Returns:
    The features as one `bytes`: the histogram, then the keypoints; `overlap`,
    `inliers`, `joined` and `groups` read them.
  """
  # The scan's hashes converted these pixels already.
  grey = np.asarray(near_duplicates.grey(image))
  height, width = grey.shape
  longer, shorter = max(width, height), min(width, height)
  scale = min(1.0, max(_KEYPOINT_SIDE / longer, _KEYPOINT_SHORT_SIDE / shorter),
              _KEYPOINT_LONGEST / longer)
  if scale < 1:  # Bilinear, as ORB's own pyramid; OpenCV's bit-exact one, the same on any CPU.
    grey = cv2.resize(grey, (max(1, round(width * scale)), max(1, round(height * scale))),
                      interpolation=cv2.INTER_LINEAR_EXACT)
  found, descriptors = _orb().detectAndCompute(grey, None)
  keypoints = np.zeros(len(found), dtype=_KEYPOINT)
  if found:
    where = np.round(np.asarray(cv2.KeyPoint.convert(found), np.float32) * 8)
    keypoints["x"], keypoints["y"], keypoints["descriptor"] = where[:, 0], where[:, 1], descriptors
  return colour_histogram(image) + keypoints.tobytes()


def _check(features: bytes) -> bytes:
  if len(features) < HISTOGRAM_BYTES or (len(features) - HISTOGRAM_BYTES) % KEYPOINT_BYTES:
    raise ValueError(f"each photo's features must be {HISTOGRAM_BYTES} bytes and keypoints "
                     "(describe)")
  return features


class FeatureFile(Sequence[bytes]):
  """Photos' features (`describe`) as a scan collects them: the histograms in
  memory, the keypoints (nearly all of the bytes) in files, read back only for
  the pairs that are matched: in the files the scan's workers wrote them into
  (`add_written`), or in an unnamed temporary file of this one (`add`).
  Indexed in the order added, then as `reorder` puts them. A worker forked
  from this process reads them itself (`RunMatcher`)."""

  def __init__(self) -> None:
    self._file: BinaryIO | None = None  # Made by the first `add`.
    self.histograms: list[bytes] = []
    # Where each photo's keypoints are: the file's path ("" for this one's own), start, length.
    self._spans: list[tuple[str, int, int]] = []
    self._size = 0
    self._read: dict[str, int] = {}  # Descriptors of the files read, by path.

  def add(self, features: bytes) -> None:
    if self._file is None:
      # Unbuffered: see the class.
      self._file = tempfile.TemporaryFile(prefix="series-keypoints-", buffering=0)
    keypoints = _check(features)[HISTOGRAM_BYTES:]
    if os.pwrite(self._file.fileno(), keypoints, self._size) != len(keypoints):
      raise OSError(f"short write to the temporary file {self._file.name}")
    self.histograms.append(features[:HISTOGRAM_BYTES])
    self._spans.append(("", self._size, len(keypoints)))
    self._size += len(keypoints)

  def add_written(self, histogram: bytes, path: str, start: int, length: int) -> None:
    """A photo's features whose keypoints lie in `path`: `length` bytes from `start`."""
    if len(histogram) != HISTOGRAM_BYTES or length % KEYPOINT_BYTES:
      raise ValueError("a histogram (HISTOGRAM_BYTES) and whole keypoints (describe)")
    self.histograms.append(histogram)
    self._spans.append((path, start, length))

  def reorder(self, order: Sequence[int]) -> None:
    """Photo `order[i]` becomes photo i."""
    self.histograms = [self.histograms[i] for i in order]
    self._spans = [self._spans[i] for i in order]

  def __len__(self) -> int:
    return len(self.histograms)

  def __getitem__(self, index):  # type: ignore[no-untyped-def]  # Indices only: no slices.
    path, start, length = self._spans[index]
    if path:
      if (descriptor := self._read.get(path)) is None:
        descriptor = self._read[path] = os.open(path, os.O_RDONLY)
    else:
      assert self._file is not None
      descriptor = self._file.fileno()
    keypoints = os.pread(descriptor, length, start)
    if len(keypoints) != length:
      raise OSError(f"{path or 'the temporary file'} ends before the keypoints at {start}")
    return self.histograms[index] + keypoints

  def __iter__(self) -> Iterator[bytes]:
    return (self[i] for i in range(len(self)))

  def __reduce__(self) -> tuple[type, tuple[list[bytes]]]:
    return list, (list(self),)  # A worker that is not forked (no fork on macOS) gets the bytes.

  def close(self) -> None:
    for descriptor in self._read.values():
      os.close(descriptor)
    self._read.clear()
    if self._file is not None:
      self._file.close()


def _counts(features: Sequence[bytes]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
  """The photos' histograms, (photo, bin), and their pixel counts, never 0."""
  heads = (features.histograms if isinstance(features, FeatureFile)
           else [_check(f)[:HISTOGRAM_BYTES] for f in features])
  counts = np.frombuffer(b"".join(heads), dtype="<u2").reshape(
      len(features), BINS).astype(np.int64)
  return counts, np.maximum(counts.sum(axis=1), 1)


def _overlaps(counts: npt.NDArray[np.int64], totals: npt.NDArray[np.int64],
              first: npt.NDArray[np.intp], second: npt.NDArray[np.intp]) -> list[float]:
  """Histogram intersections of the photos `first` and `second`, pair by pair: summed in
  integers and divided once, so that no CPU's summing order moves one across a threshold."""
  a, b = totals[first], totals[second]
  shared = np.minimum(counts[first] * b[:, None], counts[second] * a[:, None]).sum(axis=1)
  quotients: list[float] = (shared / (a * b)).tolist()
  return quotients


def overlap(a: bytes, b: bytes) -> float:
  """Histogram intersection of two photos' colour histograms: 1 when equal, 0 when disjoint."""
  counts, totals = _counts([a, b])
  return _overlaps(counts, totals, np.array([0]), np.array([1]))[0]


_Keypoints = tuple[npt.NDArray[np.float32], npt.NDArray[np.uint8]]


def _keypoints(features: bytes) -> _Keypoints:
  """Where the keypoints are, in px, and their descriptors, a row of 32 bytes each."""
  keypoints = np.frombuffer(features, dtype=_KEYPOINT, offset=HISTOGRAM_BYTES)
  where = np.stack([keypoints["x"], keypoints["y"]], axis=1).astype(np.float32) / np.float32(8)
  return where, np.ascontiguousarray(keypoints["descriptor"])


def _ratio_matches(a: npt.NDArray[np.uint8],
                   b: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.intp], ...]:
  """Keypoints of a whose nearest descriptor of b (Hamming distance) is clearly nearer than
  the second (Lowe's ratio test), and that nearest: indices into a and into b. The distances
  of all pairs are most of a match's work: faiss counts them in compiled code, every one (its
  k-nearest search, which keeps a heap a row, costs more than the count and numpy's two minima).
  Where the two nearest tie, the test fails whichever is taken first, so the matches are exact."""
  # A worker per core already; on every thread (the setting is per thread), so that no OpenMP
  # threads exist when a process forks workers.
  faiss.omp_set_num_threads(1)
  a, b = np.ascontiguousarray(a, np.uint8), np.ascontiguousarray(b, np.uint8)
  distances = np.empty((len(a), len(b)), np.int32)  # faiss's hamdis_t.
  faiss.hammings(  # type: ignore[attr-defined]  # Missing from faiss's own stubs.
      faiss.swig_ptr(a), faiss.swig_ptr(b), len(a), len(b), a.shape[1], faiss.swig_ptr(distances))
  rows = np.arange(len(a))
  nearest = distances.argmin(axis=1)
  first = distances[rows, nearest]
  distances[rows, nearest] = np.iinfo(np.int32).max  # The second nearest: the next minimum.
  good = np.flatnonzero(first < _RATIO * distances.min(axis=1))
  return good, nearest[good]


def _plausible(fit: npt.NDArray[np.float64], points_a: npt.NDArray[np.float32],
               points_b: npt.NDArray[np.float32]) -> bool:
  """Whether a homography of `points_a` onto `points_b` (its inliers) is a change of viewpoint
  of one scene: another cook's plate gives a few chance inliers that a homography, free to
  stretch and bend, can fit, and these guards turn them away."""
  fit = fit / fit[2, 2]
  x, y = points_a.mean(axis=0)
  depth = fit[2, 0] * x + fit[2, 1] * y + 1
  # Its local linear part at the inliers' centre: a zoom, a turn, a tilt.
  local = (fit[:2, :2] - np.outer(fit[:2, :2] @ (x, y) + fit[:2, 2], fit[2, :2]) / depth) / depth
  determinant = float(np.linalg.det(local))
  if determinant <= 0:  # A mirror or a fold: no camera does that.
    return False
  stretch = np.linalg.svd(local, compute_uv=False)
  if not _SCALES[0] <= determinant**0.5 <= _SCALES[1] or stretch[0] > _STRETCH * stretch[1]:
    return False
  corners = np.array([(u, v) for u in (points_a[:, 0].min(), points_a[:, 0].max())
                      for v in (points_a[:, 1].min(), points_a[:, 1].max())])
  depths = corners @ fit[2, :2] + 1  # A plausible tilt changes depth across the inliers a little.
  if depths.min() <= 0 or depths.max() > _DEPTH_RATIO * depths.min():
    return False
  spread = float(points_a.std(axis=0).min() * points_b.std(axis=0).min()) ** 0.5
  return bool(spread >= _SPREAD_PX)


def _similarity_samples(matches: int, least: int) -> int:
  """The 2-point samples that hold, with probability `_CONFIDENCE`, one of inliers alone where
  `least` of `matches` are a similarity's inliers; at most `_ITERATIONS`."""
  if least < 2 or matches < 2:
    return _ITERATIONS
  all_inliers = least * (least - 1) / (matches * (matches - 1))  # One sample's chance.
  if all_inliers >= 1:
    return 1
  return min(_ITERATIONS, math.ceil(math.log(1 - _CONFIDENCE) / math.log1p(-all_inliers)))


def _similarity(points_a: npt.NDArray[np.float32], points_b: npt.NDArray[np.float32],
                least: int = 0) -> tuple[int, int]:
  """RANSAC's consensus for one similarity, its 2-point sample included, and the similarity's
  inliers: 0 where its scale or their spread is implausible, or where they are 3 or more but
  fewer than `least`: no guard would bring them to it. (Counts below 3 keep their guards:
  `inliers` reports them.) Its samples are those that find `least` inliers
  (`_similarity_samples`)."""
  cv2.setRNGSeed(0)  # RANSAC's samples: the same photos, the same count.
  fit, mask = cv2.estimateAffinePartial2D(
      points_a, points_b, method=cv2.RANSAC, ransacReprojThreshold=_INLIER_PX,
      maxIters=_similarity_samples(len(points_a), least), refineIters=0)
  if fit is None:
    return 0, 0
  kept = mask.ravel().astype(bool)
  consensus = int(kept.sum())
  if 3 <= consensus < least:
    return consensus, 0
  scale = float(np.hypot(fit[0, 0], fit[1, 0]))
  spread = float(points_a[kept].std(axis=0).min() * points_b[kept].std(axis=0).min()) ** 0.5
  plausible = _SCALES[0] <= scale <= _SCALES[1] and spread >= _SPREAD_PX
  return consensus, consensus if plausible else 0


def _homography(points_a: npt.NDArray[np.float32], points_b: npt.NDArray[np.float32],
                least: int) -> int:
  """The homography's inliers, 0 where they are its own sample alone, fewer than `least` or
  implausible: its guards only for a count that would decide."""
  cv2.setRNGSeed(0)  # USAC's samples too: the same photos, the same count.
  # USAC_FAST: MAGSAC's decisions on the shared photos' pairs, at less of its cost
  # (docs/splits.md#cost).
  fit, mask = cv2.findHomography(points_a, points_b, cv2.USAC_FAST, _INLIER_PX,
                                 maxIters=_ITERATIONS, confidence=_CONFIDENCE)
  if fit is None or mask is None:
    return 0
  kept = mask.ravel().astype(bool)
  count = int(kept.sum())
  if count <= _MODEL_POINTS or count < least:
    return 0
  return count if _plausible(np.asarray(fit, np.float64), points_a[kept], points_b[kept]) else 0


def _fit(a: _Keypoints, b: _Keypoints, least: int) -> int:
  """The inliers of the better of two models of a second shot: a similarity (a zoom or a turn, which
  its 2-point samples find on few matches, where a homography's 4 can settle on a wrong fit) and a
  homography (a tilt: the plate seen from higher or from a side, which a similarity cannot map),
  fitted only where the similarity's RANSAC agreed on `_TILT_CONSENSUS` matches.

  Each step runs only where it can still bring the count to `least`, the need it is compared with:
  no fit on fewer ratio matches, the similarity's samples those that find `least` inliers, no
  homography where the similarity reaches it, and no guards for a model's count short of it.
  Whether the count reaches `least` is what every step would give; a count from 3 below it may
  read 0 (for `least` 3, every count is as every step would give)."""
  (where_a, descriptors_a), (where_b, descriptors_b) = a, b
  if len(where_a) < 3 or len(where_b) < 3:
    return 0
  good, nearest = _ratio_matches(descriptors_a, descriptors_b)
  if len(good) < max(least, 3):  # Too few matches to make `least` inliers: no geometry to fit.
    return 0
  points_a, points_b = where_a[good], where_b[nearest]
  consensus, similar = _similarity(points_a, points_b, least)
  # Enough already, too few for a homography, or no part of the scene that a similarity maps.
  if similar >= least or len(good) <= _MODEL_POINTS or consensus < _TILT_CONSENSUS:
    return similar
  return max(similar, _homography(points_a, points_b, least))


def inliers(a: bytes, b: bytes, least: int = 3) -> int:
  """How many keypoints of two photos' features fit one change of viewpoint (`_fit`): many for
  two shots of one plate, even at another zoom, angle or light, few for two plates that only
  share their colours. 0 when fewer than `least` keypoints match at all (they could not make
  `least` inliers); a count from 3 below `least` may read 0 too."""
  return _fit(_keypoints(a), _keypoints(b), least)


def joined(a: bytes, b: bytes, rule: Rule = RULE) -> bool:
  """Whether two photos' features (`describe`) look like shots of one scene by `rule`."""
  needed = rule.inliers_needed(overlap(a, b))
  return needed is not None and (needed == 0 or inliers(a, b, needed) >= needed)


@dataclasses.dataclass(frozen=True)
class MatchRun:
  """Pairs of a run of neighbours whose keypoints are matched: `photos` holds
  the run's photos (indices into the features), `pairs` (i, j, inliers needed)
  with i and j indices into `photos`, so each photo is read once a run."""

  photos: list[int]
  pairs: list[tuple[int, int, int]]


@dataclasses.dataclass(frozen=True)
class RunMatcher:
  """`inliers` of each pair of a `MatchRun`, in order: the task of a `PairMap`.

  A worker reads the run's features itself (from a `FeatureFile`, through the
  files its process was forked with), so the process that maps sends indices,
  not keypoints.

  Attributes:
    features: every photo's features (`describe`), indexed as a run's `photos`.
  """

  features: Sequence[bytes]

  def __call__(self, run: MatchRun) -> list[int]:
    cv2.setNumThreads(1)  # One worker per core already.
    keypoints = [_keypoints(self.features[i]) for i in run.photos]
    return [_fit(keypoints[i], keypoints[j], needed) for i, j, needed in run.pairs]


def unmatched(run: MatchRun) -> list[int]:
  """No inliers for any pair of the run (its worker died)."""
  return [0] * len(run.pairs)


# Maps a `RunMatcher` over runs, in order: `map` by default, a pool of worker
# processes in the scan (the matching is most of the grouping's work).
PairMap = Callable[[Callable[[MatchRun], list[int]], Iterable[MatchRun]], Iterable[list[int]]]
_RUN = 32  # Photos whose window pairs (`_RUN` × window) make one `MatchRun`.


def _runs(to_match: Sequence[tuple[float, int, int, int]], window: int) -> Iterator[MatchRun]:
  """`to_match`'s pairs (value, i, j, needed; by class, then by first photo)
  in runs of about `_RUN` photos' pairs."""
  for start in range(0, len(to_match), _RUN * window):
    local: dict[int, int] = {}
    pairs = [(local.setdefault(i, len(local)), local.setdefault(j, len(local)), needed)
             for _, i, j, needed in to_match[start:start + _RUN * window]]
    yield MatchRun(list(local), pairs)


def scored_links(names: Sequence[str], features: Sequence[bytes],
                 position: Callable[[str], int | None], folder: Callable[[str], str],
                 rule: Rule = RULE, window: int = WINDOW,
                 pair_map: PairMap = map) -> list[tuple[float, int, int]]:
  """The pairs of `names` that look like shots of one series, as (colour
  overlap, i, j) with i < j: in one `folder`, at most `window` apart in
  `position` order (photos without a position take part in no series), joined
  by `rule` (`describe`, `inliers`); the runs of pairs to match are mapped by
  `pair_map`."""
  by_folder: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
  for index, name in enumerate(names):
    if (where := position(name)) is not None:
      by_folder[folder(name)].append((where, index))
  histograms, pixels = _counts(features)
  found: list[tuple[float, int, int]] = []
  # By class, then by first photo: neighbours share a run.
  to_match: list[tuple[float, int, int, int]] = []
  for members in by_folder.values():
    order = np.array([index for _, index in sorted(members)], dtype=np.intp)
    overlaps = [_overlaps(histograms, pixels, order[:-step], order[step:])
                for step in range(1, window + 1)]
    for k, i in enumerate(order.tolist()):
      for step in range(1, min(window, len(order) - 1 - k) + 1):
        value, j = overlaps[step - 1][k], int(order[k + step])
        # Colour joins the surest pairs; geometry decides the rest.
        needed = rule.inliers_needed(value)
        if needed == 0:
          found.append((value, min(i, j), max(i, j)))
        elif needed is not None:
          to_match.append((value, min(i, j), max(i, j), needed))
  counts = (count for run in pair_map(RunMatcher(features), _runs(to_match, window))
            for count in run)
  return found + [(value, i, j)
                  for (value, i, j, needed), count in zip(to_match, counts, strict=True)
                  if count >= needed]


def groups(names: Sequence[str], features: Sequence[bytes], position: Callable[[str], int | None],
           folder: Callable[[str], str], rule: Rule = RULE, window: int = WINDOW,
           most: int = MAX_SERIES, pair_map: PairMap = map) -> list[list[int]]:
  """The series among `names`: their `scored_links` joined, the closest first.

  Args:
    names: the photos' file names.
    features: each photo's features (`describe`), in the order of `names`: a
      sequence of bytes or a `FeatureFile`.
    position: a name's place in its class's natural order, or None for a photo
      in no series (`PhotoBuilder._series_order`).
    folder: a name's class folder: photos of different folders are never
      compared.
    rule: when two photos are one series.
    window: each photo is compared with the next `window` photos of its folder.
    most: the most photos of a series: a link that would make a larger one is
      left out.
    pair_map: maps a `RunMatcher` over the runs of pairs whose keypoints are
      matched, in order (`map`, or a pool of worker processes).

  Returns:
    The groups of two or more, as indices into `names`: each sorted, the list
    by first index.
  """
  # Closest first; ties by index, so the groups depend on nothing but the photos.
  scored = sorted(scored_links(names, features, position, folder, rule, window, pair_map),
                  key=lambda link: (-link[0], link[1], link[2]))
  return splits.components(len(names), [(i, j) for _, i, j in scored], most)

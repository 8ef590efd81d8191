"""Quality flags: photos too dark, too light, nearly empty, blurry, oddly shaped
or sized, or grey, found in the scan from the pixels it decodes anyway.

A flag is information for the person looking at the build (the report's page
and `quality.csv`): nothing is removed or changed by it.

`measure` runs in the scan's workers on the upright RGB pixels of
`images.decode_and_inspect` (JPEGs at reduced DCT scale, 224 to 447 px on the
short side; other formats at full size), so no photo is decoded twice and the
conversion does nothing more. It returns the photo's `scores` and the
`moments` of its pixels (for `build_stats.channel_stats`: the train split's
per-channel mean and standard deviation). Two flags need only the source's
size: `odd_aspect_ratio`, and `odd_size`, which compares a photo with the
corpus's median, so both are decided after the scan from each photo's upright
source width and height (`flags_of(scores, width, height, median_size)`;
`build_stats.flag_rows` makes the report's rows).

Every score follows CleanVision's convention (cleanlab/cleanvision, Apache-2.0,
`issue_managers/image_property.py`): a number in [0, 1], lower is worse, and a
photo is flagged when its score is below `THRESHOLDS[flag]`. The definitions
and thresholds, checked on the 47 AIHub photos in ../shared/realdata/kfood and
the 100 tf_flowers photos (tests/test_quality.py asserts what each flag marks
there; their scores: docs/data-quality.md#quality-flags):

* `dark`: the 99th percentile of the pixels' perceived brightness,
  sqrt(0.241 R² + 0.691 G² + 0.068 B²) / 255, below 0.32 (CleanVision's formula
  and threshold: even the brightest 1 % of the pixels are dim).
* `light`: 1 minus the 5th percentile of the same brightness, below 0.05
  (CleanVision's: even the darkest 5 % of the pixels are nearly white).
* `low_information`: the entropy in bits of the 768-bin RGB histogram (PIL's
  `Image.entropy`, as CleanVision) times 0.1, below 0.3 (CleanVision's
  normalising factor and threshold; a flat photo scores 0).
* `blurry`: CleanVision measures the spread of PIL's FIND_EDGES on a greyscale
  copy 64 px on its long side, where a blur of 2 px at the training size
  (224 px on the short side) hardly shows. Here: the standard deviation of
  the 4-neighbour Laplacian of a greyscale sample 128 px on its long side,
  divided by the standard deviation of that sample (so a dark or faint but
  sharp photo is not blurry), as 1 - exp(-ratio); flagged below 0.26 (a ratio
  of 0.3). A flat photo scores 1: it is `low_information`, not blurry.
* `grayscale`: CleanVision flags a photo stored greyscale (mode "L", or three
  equal channels); a grey photo stored as a colour JPEG has channels that
  differ by JPEG's chroma noise. Here: the 99th percentile over the pixels of
  max(R, G, B) - min(R, G, B), / 255, below 10 / 255. A greyscale source scores
  0. The percentile lets a coloured mark on
  under 1 % of a grey photo pass, and a colour subject on black is not grey.
  (A flat black or white photo is grey too.)
* `odd_aspect_ratio`: min(w / h, h / w) of the upright source below 0.35
  (CleanVision's): strips wider than about 3 : 1, of which the square configs
  keep a third.
* `odd_size`: the photo's side, sqrt(w × h), against the median side of all the
  scan's photos: min(side / median, median / side), below 0.1 (CleanVision's
  ratio of 10 either way, from its median-based version; it has since moved to
  an interquartile rule).

The pixel scores read nearest-neighbour samples of the scan's pixels (a subset
of them, never averages, which would hide blur): 128 px on the long side for
the Laplacian, 96 px for the rest, as one pass over all the scan's pixels
would cost the whole budget (docs/data-quality.md#quality-flags has the cost,
measured by `benchmarks/quality_cost.py`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image

# Display order.
FLAGS: tuple[str, ...] = (
    "dark", "light", "low_information", "blurry", "odd_aspect_ratio", "odd_size", "grayscale")
# The flags `scores` gives; the other two come from the source's size (`flags_of`).
PIXEL_FLAGS: tuple[str, ...] = ("dark", "light", "low_information", "blurry", "grayscale")
# A photo is flagged when its score (in [0, 1], lower is worse) is below these.
THRESHOLDS: dict[str, float] = {
    "dark": 0.32,
    "light": 0.05,
    "low_information": 0.3,
    "blurry": 1 - math.exp(-0.3),  # 0.259: a Laplacian of 0.3 times the contrast.
    "grayscale": 10 / 255,
    "odd_aspect_ratio": 0.35,
    "odd_size": 0.1,
}
# What each flag's score is, for the page and the CSV.
DESCRIPTIONS: dict[str, str] = {
    "dark": "99th percentile of perceived brightness",
    "light": "1 - 5th percentile of perceived brightness",
    "low_information": "entropy of the RGB histogram / 10 bits",
    "blurry": "1 - exp(-std of the Laplacian / std of the pixels), 128-px greyscale",
    "grayscale": "99th percentile of max - min channel / 255",
    "odd_aspect_ratio": "short side / long side",
    "odd_size": "min(side / median side, median side / side), side = sqrt(width * height)",
}

# One pass over all the scan's pixels (224-447 px on the short side, more for a
# PNG) would cost more than the whole budget: the scores read samples of them.
_BLUR_SIDE = 128  # Long side of the greyscale sample the Laplacian sees (about 12,000 pixels).
_SAMPLE_SIDE = 96  # Long side of the colour sample the other scores see (about 7,000 pixels).
_DECIMALS = 4  # Scores are kept to this many decimals (the saved scan, the report).
_WEIGHTS = np.array([0.241, 0.691, 0.068])  # CleanVision's perceived brightness.


def measure(pixels: np.ndarray | Image.Image) -> tuple[dict[str, float], tuple[float, ...]]:
  """Scores one photo for the quality flags: the scan's per-photo work.

  Args:
    pixels: the photo's upright RGB pixels, a uint8 (H, W, 3) array or a PIL
      image (an RGB one is read as it is, no copy; another mode is converted).

  Returns:
    (scores, moments): `scores` maps each of `PIXEL_FLAGS` to its score in
    [0, 1], lower is worse (flagged below `THRESHOLDS`); `moments` are the
    mean R, G, B and mean R², G², B² of a sample of the pixels, on 0-255 (for
    `build_stats.channel_stats`). Every number is rounded to 4 decimals.
  """
  image = (pixels if isinstance(pixels, Image.Image)
           else Image.fromarray(np.asarray(pixels, np.uint8), "RGB"))
  if image.mode != "RGB":
    image = image.convert("RGB")
  larger = image.resize(_fit(image.size, _BLUR_SIDE), Image.Resampling.NEAREST)
  sample = larger.resize(_fit(larger.size, _SAMPLE_SIDE), Image.Resampling.NEAREST)
  levels = np.asarray(sample)
  # Float64: float32 sums of squares drift in the fifth digit.
  rgb = levels.reshape(-1, 3).astype(np.float64)
  share = np.full(len(rgb), 1 / len(rgb))  # Means as products: numpy's axis-0 mean is slow.
  means = share @ rgb
  rgb *= rgb
  squares = share @ rgb
  # Quantiles from 256-level histograms: to 1/255, cheaper than a partial sort.
  brightness = rgb @ _WEIGHTS
  np.sqrt(brightness, out=brightness)
  dim, bright = _quantiles(np.bincount(brightness.astype(np.uint8), minlength=256), 0.05, 0.99)
  red, green, blue = levels[..., 0], levels[..., 1], levels[..., 2]
  spread = np.maximum(np.maximum(red, green), blue)
  spread -= np.minimum(np.minimum(red, green), blue)  # max - min per pixel, in uint8.
  _, colour = _quantiles(np.bincount(spread.ravel(), minlength=256), 0.0, 0.99)
  entropy = sample.entropy()  # Of the 768-bin RGB histogram, in C.

  scores = {
      "dark": bright / 255,
      "light": 1.0 - dim / 255,
      "low_information": min(entropy / 10, 1.0),
      "blurry": _sharpness(np.asarray(larger.convert("L"), dtype=np.float32)),
      "grayscale": float(colour) / 255,
  }
  return ({k: round(v, _DECIMALS) for k, v in scores.items()},
          tuple(round(float(v), _DECIMALS) for v in (*means, *squares)))


def _quantiles(histogram: npt.NDArray[Any], low: float, high: float) -> tuple[float, float]:
  """The `low` and `high` quantiles (lower order statistics) of the values whose
  256-level `histogram` is given."""
  cumulative = np.cumsum(histogram)
  total = cumulative[-1]
  at_low, at_high = np.searchsorted(cumulative, (low * total, high * total))
  return float(at_low), float(at_high)


def _fit(size: tuple[int, int], side: int) -> tuple[int, int]:
  """`size` shrunk so that its long side is at most `side` (never enlarged)."""
  width, height = size
  scale = min(side / max(width, height), 1.0)
  return max(round(width * scale), 1), max(round(height * scale), 1)


def _sharpness(grey: npt.NDArray[np.float32]) -> float:
  """1 - exp(-std(Laplacian) / std(pixels)) of the greyscale sample; 1 where
  there is nothing to measure (a flat photo, or one under 3 px on a side)."""
  if min(grey.shape) < 3:
    return 1.0
  contrast = _variance(grey)
  if contrast < 1.0:  # Flat (a standard deviation under 1 level): low information, not blur.
    return 1.0
  laplacian = 4 * grey[1:-1, 1:-1]
  for neighbour in (grey[:-2, 1:-1], grey[2:, 1:-1], grey[1:-1, :-2], grey[1:-1, 2:]):
    laplacian -= neighbour
  return 1.0 - math.exp(-math.sqrt(_variance(laplacian) / contrast))


def _variance(values: npt.NDArray[np.float32]) -> float:
  flat = values.ravel()
  mean = float(flat.mean())
  return max(float(np.dot(flat, flat)) / flat.size - mean * mean, 0.0)


def side(width: int, height: int) -> float:
  """The size odd_size compares: sqrt(width × height)."""
  return math.sqrt(width * height)


def median_size(sizes: Iterable[tuple[int, int]]) -> float:
  """The median `side` of (width, height) pairs; 0 for none."""
  sides = [side(w, h) for w, h in sizes]
  return statistics.median(sides) if sides else 0.0


def flags_of(photo_scores: dict[str, float], width: int, height: int,
             median: float) -> list[tuple[str, float]]:
  """The (flag, score) pairs of one photo, in `FLAGS` order: its pixel scores,
  and the aspect ratio and size scores of its upright source `width` × `height`
  against the corpus's `median` side (`median_size`; 0 leaves odd_size out)."""
  all_scores = dict(photo_scores)
  all_scores["odd_aspect_ratio"] = min(width / height, height / width) if width and height else 0.0
  if median > 0:
    ratio = side(width, height) / median
    all_scores["odd_size"] = min(ratio, 1 / ratio) if ratio > 0 else 0.0
  return [(flag, round(all_scores[flag], _DECIMALS)) for flag in FLAGS
          if flag in all_scores and all_scores[flag] < THRESHOLDS[flag]]

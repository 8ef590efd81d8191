"""The statistics a build keeps in `builder.info.metadata`, for training code and the report page.

Read them with `tfds.builder(name, data_dir=...).info.metadata`:

* `class_counts`: split -> examples per label id (a list as long as the label's names; 0 where
  none).
* `class_weights`: per label id, inverse frequency in the train split, Keras-style:
  `n_train / (n_present * count)`, where `n_present` is the number of classes with at least one
  train example, so the weights average to 1 over the train examples (scikit-learn's "balanced").
  0 for a class with no train example. Pass `dict(enumerate(weights))` as Keras's `class_weight`.
* `channel_mean`, `channel_std`: the train split's per-channel (R, G, B) mean and standard
  deviation on 0–255, from the scan's decode of each photo (`channel_stats`); absent where
  the scan did not record them.
* `crop_boxes`: per label id, the photos with a crop box (all splits).
* `source_images`: what the source photos were: `formats` and `modes` (PIL's names) -> photos,
  `orientations` (EXIF tag, "1" upright) -> photos, `conversions` ("PNG RGBA", ...) -> photos
  that were not stored as they came, and `long_side`: a histogram of the longer side in pixels
  (`edges`, `counts`; bin i holds edges[i] <= side < edges[i+1], the last bin is open).
* `source`: where the source was (the builder adds it). How long the build took is on the report
  page only: the metadata depends on the source alone, so two builds of it have the same.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from photo_datasets.photos import quality
from photo_datasets.photos.records import Photo

CLASS_WEIGHTS_FORMULA = ("n_train / (n_present * count_train), "
                         "n_present = classes with a train example; "
                         "0 for a class absent from train")
# Edges of the long-side histogram, in pixels (powers of two: sizes of web photos spread over
# decades).
LONG_SIDE_EDGES = (0, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


def class_counts(photos_by_split: Mapping[str, Iterable[Photo]],
                 class_names: Sequence[str]) -> dict[str, list[int]]:
  """Counts the examples per label id in each split (`class_counts` in the metadata).

  Args:
    photos_by_split: split name -> the photos stored in it.
    class_names: the label's names, by label id; a photo's folder is its class name.

  Returns:
    Split name -> a list as long as `class_names`: the photos of each label id.
    A photo whose folder is no class name is not counted.
  """
  index = {name: i for i, name in enumerate(class_names)}
  counts = {}
  for split, photos in photos_by_split.items():
    row = [0] * len(class_names)
    for photo in photos:
      if (label := index.get(photo.folder)) is not None:
        row[label] += 1
    counts[split] = row
  return counts


def class_weights(train_counts: Sequence[int]) -> list[float]:
  """Inverse-frequency weights per label id (`class_weights` in the metadata).

  Args:
    train_counts: the train split's examples per label id.

  Returns:
    One weight per label id, `CLASS_WEIGHTS_FORMULA` rounded to 6 decimals:
    they average to 1 over the train examples; 0.0 for a class with none.
    Pass `dict(enumerate(weights))` as Keras's `class_weight`.
  """
  present = sum(1 for n in train_counts if n)
  total = sum(train_counts)
  return [round(total / (present * n), 6) if n else 0.0 for n in train_counts]


def crop_boxes(photos: Iterable[Photo], class_names: Sequence[str]) -> list[int]:
  """Counts the photos with a crop box per label id (`crop_boxes` in the metadata).

  Args:
    photos: the photos of every split.
    class_names: the label's names, by label id.

  Returns:
    A list as long as `class_names`; a photo whose folder is no class name is
    not counted.
  """
  index = {name: i for i, name in enumerate(class_names)}
  counts = [0] * len(class_names)
  for photo in photos:
    if photo.box is not None and (label := index.get(photo.folder)) is not None:
      counts[label] += 1
  return counts


def source_images(photos: Iterable[Photo]) -> dict[str, Any]:
  """Describes the source photos as they came (`source_images` in the metadata).

  Args:
    photos: the photos of every split, with the scan's `check` of each.

  Returns:
    Plain JSON data: `formats`, `modes` and `conversions` (those not an RGB
    JPEG, "PNG RGBA", ...) -> photos, most first; `orientations` (EXIF tag)
    -> photos; `long_side`: the histogram of the longer side in pixels,
    `{"edges": LONG_SIDE_EDGES, "counts": [...]}`.
  """
  formats: collections.Counter[str] = collections.Counter()
  modes: collections.Counter[str] = collections.Counter()
  orientations: collections.Counter[str] = collections.Counter()
  conversions: collections.Counter[str] = collections.Counter()
  long_side = [0] * len(LONG_SIDE_EDGES)
  for photo in photos:
    check = photo.check
    formats[check.format] += 1
    modes[check.mode] += 1
    orientations[str(check.orientation)] += 1
    if not (check.format == "JPEG" and check.mode == "RGB"):
      conversions[f"{check.format} {check.mode}"] += 1
    side = max(check.width, check.height)
    long_side[sum(1 for edge in LONG_SIDE_EDGES[1:] if side >= edge)] += 1
  return {"formats": dict(formats.most_common()), "modes": dict(modes.most_common()),
          "orientations": dict(sorted(orientations.items(), key=lambda kv: int(kv[0]))),
          "conversions": dict(conversions.most_common()),
          "long_side": {"edges": list(LONG_SIDE_EDGES), "counts": long_side}}


def metadata(photos_by_split: Mapping[str, Sequence[Photo]],
             class_names: Sequence[str]) -> dict[str, Any]:
  """The statistics of the built photos (the examples of each split) as plain JSON data.

  Args:
    photos_by_split: split name -> the photos stored in it.
    class_names: the label's names, by label id.

  Returns:
    The keys this module's docstring lists, for `builder.info.metadata`:
    `class_counts`, `class_weights` (and `class_weights_formula`),
    `crop_boxes`, `source_images`, and `channel_mean` and `channel_std` where
    the train photos have the scan's moments.
  """
  counts = class_counts(photos_by_split, class_names)
  every = [photo for photos in photos_by_split.values() for photo in photos]
  stats: dict[str, Any] = {
      "class_counts": counts,
      "class_weights": class_weights(counts.get("train", [0] * len(class_names))),
      "class_weights_formula": CLASS_WEIGHTS_FORMULA,
      "crop_boxes": crop_boxes(every, class_names),
      "source_images": source_images(every),
  }
  mean, std = channel_stats(photos_by_split.get("train", []))
  if mean:
    stats["channel_mean"], stats["channel_std"] = mean, std
  return stats


def flag_rows(photos: Sequence[Photo]) -> list[dict[str, Any]]:
  """`BuildReport.quality_flags`: a row {file_name, split, label, flag, score}
  per flag of each photo, in `FLAGS` order, worst (lowest score) first within
  a flag, then by file name. odd_size compares with the median of `photos`.
  Then `PADDED`: each JPEG kept despite padding (`images.jpeg_padding`), its
  score the bytes of padding, most first."""
  median = quality.median_size((p.check.width, p.check.height) for p in photos)
  rows: list[dict[str, Any]] = [
      {"file_name": p.file_name, "split": p.split, "label": p.folder, "flag": flag, "score": score}
      for p in photos
      for flag, score in quality.flags_of(p.quality, p.check.width, p.check.height, median)]
  order = {flag: i for i, flag in enumerate(quality.FLAGS)}
  padded: list[dict[str, Any]] = [
      {"file_name": p.file_name, "split": p.split, "label": p.folder, "flag": PADDED,
       "score": p.check.padding}
      for p in photos if p.check.padding]
  return (sorted(rows, key=lambda r: (order[r["flag"]], r["score"], r["file_name"]))
          + sorted(padded, key=lambda r: (-r["score"], r["file_name"])))


# The flag of a JPEG kept despite padding libjpeg warned of: a user may filter on it in quality.csv.
PADDED = "padded_jpeg"


def channel_stats(photos: Iterable[Photo], split: str = "train") -> tuple[list[float], list[float]]:
  """The per-channel (R, G, B) mean and standard deviation on 0-255 of the
  pixels of the photos of `split`, each photo weighing the same (as each
  becomes one image of the same size in training), from their scan pixels'
  `moments` (the whole upright photo, before any crop).

  Args:
    photos: photos of any split; those of `split` with six moments count.
    split: the split whose photos count.

  Returns:
    (mean, std): two lists of 3 floats rounded to 3 decimals, `channel_mean`
    and `channel_std` in the metadata; ([], []) for no such photo.
  """
  rows = [p.moments for p in photos if p.split == split and len(p.moments) == 6]
  if not rows:
    return [], []
  mean: npt.NDArray[np.float64] = np.mean(np.asarray(rows, dtype=np.float64), axis=0)
  variance = np.maximum(mean[3:] - mean[:3] ** 2, 0.0)
  return [round(float(v), 3) for v in mean[:3]], [round(float(v), 3) for v in np.sqrt(variance)]

"""The image maps: the stored JPEGs of a built config decoded into
`image_size` squares (a sized config's image at a reduced DCT scale where it
can; on `full`, only the pixels of a training crop or an evaluation centre
square), and this input pipeline's decoded images cached.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from photo_datasets.reading import augmentation, records
from photo_datasets.reading import cache as cache_policy

AUTOTUNE = tf.data.AUTOTUNE
_DCT_RATIOS = (1, 2, 4, 8)  # The scales libjpeg decodes at directly.


class Reader(records.SplitRecords):
  """One built config read for the pipeline: examples, and the image maps."""

  def cached(self, cache: str,
             decode: Callable[[dict[str, Any]], tuple[tf.Tensor, tf.Tensor]]) -> tf.data.Dataset:
    """This pipeline's part, in stored order, `decode`d and cached in memory or under the
    directory `cache`."""
    ds = self.records(shuffle_files=False).map(lambda record: decode(self.parse(record)),
                                               num_parallel_calls=AUTOTUNE)
    needed = self.examples() * (self.size * self.size * 3 + 64)  # Pixels, and a label and headers.
    if cache == "memory":
      cache_policy.check_memory(
          needed, f"{self.builder.name}/{self.builder.builder_config.name} split {self.split!r}",
          f"{self.examples():,} images of {self.size}x{self.size}x3 uint8")
      return ds.cache()
    return ds.cache(self._cache_prefix(cache, decode))

  def _cache_prefix(self, directory: str, decode: Callable[..., Any]) -> str:
    """The files' prefix in `directory`, named for what they hold; a fill
    left by a killed process (its lockfile) is discarded."""
    config = self.builder.builder_config.name
    _, pipelines, index, _ = self._part()
    # Training and evaluation apart: Keras validates while training's iterator, which may still
    # hold its lock, lives.
    what = "evaluation" if decode == self.centred else "training"
    part = f"_part{index}of{pipelines}" if pipelines > 1 else ""
    split = re.sub(r"[^A-Za-z0-9]+", "_", self.split).strip("_")
    prefix = os.path.join(directory, f"{self.builder.name}_{config}_{self.builder.version}_{split}_"
                                     f"{what}{self.size}{part}")
    return cache_policy.claim_disk(prefix)

  def _box(self, example: dict[str, Any]) -> tf.Tensor:
    """The crop box (ymin, xmin, ymax, xmax), or the whole photo."""
    if not self.has_box:
      return tf.constant([0.0, 0.0, 1.0, 1.0])
    return tf.where(example["has_bbox"], example["bbox"], tf.constant([0.0, 0.0, 1.0, 1.0]))

  def _resized(self, image: tf.Tensor, *, antialias: bool = True) -> tf.Tensor:
    resized = tf.image.resize(image, (self.size, self.size), antialias=antialias)
    return tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)

  def _decode_window(self, encoded: tf.Tensor, window: tf.Tensor) -> tf.Tensor:
    """Decodes only `window` of a stored JPEG, at the smallest DCT scale (1/1,
    1/2, 1/4, 1/8) that still leaves `self.size` pixels on its shorter side,
    then resizes it to the square: decoding fewer pixels is the big saving,
    and a resize of less than 2 times needs no antialiasing."""
    shorter = tf.minimum(window[2], window[3])
    steps = tf.reduce_sum(tf.cast(shorter >= self.size * tf.constant(_DCT_RATIOS[1:]), tf.int32))
    image = tf.switch_case(steps, [_window_decoder(encoded, window, ratio)
                                   for ratio in _DCT_RATIOS])
    return self._resized(image, antialias=False)

  def cropped(self, example: dict[str, Any],
              seeds: tf.Tensor | None) -> tuple[tf.Tensor, tf.Tensor]:
    """Training on `full`: a random crop containing the box."""
    if seeds is None:  # The crop's sampler takes seeds only.
      seeds = tf.random.uniform([2], maxval=augmentation.SEEDS, dtype=tf.int64)
    encoded = example["image"]
    has_box = example["has_bbox"] if self.has_box else tf.constant(False)
    window = augmentation.random_crop_window(tf.io.extract_jpeg_shape(encoded),
                                             self._box(example), has_box, seeds)
    return (tf.ensure_shape(self._decode_window(encoded, window), (self.size, self.size, 3)),
            example["label"])

  def augmented_batch(self, records: tf.Tensor,
                      seeds: tf.Tensor | None) -> tuple[tf.Tensor, tf.Tensor]:
    """Training images from a batch of serialized examples, parsed together,
    each then decoded (on `full`, cropped with its row of `seeds`) in this one
    call: tf.data's own cost of an element of a map, about 35 us
    (docs/reading.md#where-the-224-training-paths-time-goes), is paid once a
    batch."""
    examples = self.parse_batch(records)
    if seeds is not None:
      examples["seeds"] = seeds
    image_spec = tf.TensorSpec((self.size, self.size, 3), tf.uint8)
    if self.stored_size is None:
      images = tf.map_fn(lambda example: self.cropped(example, example.get("seeds"))[0], examples,
                         fn_output_signature=image_spec)
    else:
      images = tf.map_fn(lambda example: self.decoded(example)[0], examples,
                         fn_output_signature=image_spec)
    return images, examples["label"]

  def decoded(self, example: dict[str, Any]) -> tuple[tf.Tensor, tf.Tensor]:
    """A sized config's stored image (resized if asked)."""
    # Smaller than stored: libjpeg decodes at 1/2, 1/4 or 1/8 of the size
    # directly, in less than half the time of a full decode and resize, and
    # closer to an area downscale (docs/performance.md#reading-from-photo-files-to-batches).
    assert self.stored_size is not None
    scaled = {r: -(-self.stored_size // r) for r in _DCT_RATIOS}  # libjpeg rounds up.
    ratio = max(r for r in _DCT_RATIOS if scaled[r] >= self.size)
    image = tf.io.decode_jpeg(example["image"], channels=3, ratio=ratio)
    if scaled[ratio] != self.size:
      image = self._resized(image)
    return tf.ensure_shape(image, (self.size, self.size, 3)), example["label"]

  def centred(self, example: dict[str, Any]) -> tuple[tf.Tensor, tf.Tensor]:
    """Evaluation: the centre square of the crop box (or photo), resized."""
    if self.stored_size is not None:
      return self.decoded(example)
    encoded = example["image"]
    window = augmentation.centre_window(tf.io.extract_jpeg_shape(encoded), self._box(example))
    return (tf.ensure_shape(self._decode_window(encoded, window), (self.size, self.size, 3)),
            example["label"])


def _window_decoder(encoded: tf.Tensor, window: tf.Tensor,
                    ratio: int) -> Callable[[], tf.Tensor]:
  """A branch of `_decode_window`'s switch: `window` of the JPEG decoded at 1/`ratio`."""
  def decode() -> tf.Tensor:
    scaled = tf.stack([window[0] // ratio, window[1] // ratio,
                       tf.maximum(window[2] // ratio, 1), tf.maximum(window[3] // ratio, 1)])
    return tf.io.decode_and_crop_jpeg(encoded, scaled, channels=3, ratio=ratio)
  return decode

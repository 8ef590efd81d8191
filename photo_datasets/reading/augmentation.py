"""Training's augmentation and the seeds it draws from: the Inception-style
random crop window of a `full` photo (and evaluation's centre square, its
fixed counterpart), in pixels of the stored JPEG; the flip of a whole batch,
mirrored by OpenCV in the batch's own buffer; the stateless seeds of both.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import tensorflow as tf

AUTOTUNE = tf.data.AUTOTUNE
# Inception-style crops: the share of the photo's area and the aspect ratios
# a training crop may take.
CROP_AREA = (0.08, 1.0)
CROP_ASPECT = (3 / 4, 4 / 3)
# A photo without a crop box: any crop covering this much of it will do.
MIN_COVERED_WITHOUT_BOX = 0.1
CROP_ATTEMPTS = 10
SEEDS = 2**62


def random_crop_window(shape: tf.Tensor, box: tf.Tensor, has_box: tf.Tensor,
                       seed: tf.Tensor) -> tf.Tensor:
  """An Inception-style crop `[top, left, height, width]` in pixels of an
  image of `shape` (height, width, channels): the whole relative `box`
  (ymin, xmin, ymax, xmax) inside it when `has_box`, else any crop covering a
  tenth of the image. Falls back to the whole image when no sample fits."""
  covered = tf.where(has_box, 1.0, MIN_COVERED_WITHOUT_BOX)
  begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
      shape, bounding_boxes=tf.reshape(box, (1, 1, 4)), seed=seed, min_object_covered=covered,
      aspect_ratio_range=CROP_ASPECT, area_range=CROP_AREA, max_attempts=CROP_ATTEMPTS,
      use_image_if_no_bounding_boxes=True)
  return tf.stack([begin[0], begin[1], size[0], size[1]])


def centre_window(shape: tf.Tensor, box: tf.Tensor) -> tf.Tensor:
  """The centre square of the relative `box`, as `[top, left, side, side]` in
  pixels of an image of `shape`."""
  height_width = tf.cast(shape[:2], tf.float32)
  top, left = box[0] * height_width[0], box[1] * height_width[1]
  height, width = (box[2] - box[0]) * height_width[0], (box[3] - box[1]) * height_width[1]
  side = tf.maximum(tf.floor(tf.minimum(height, width)), 1.0)
  top = tf.minimum(tf.floor(top + (height - side) / 2), height_width[0] - side)
  left = tf.minimum(tf.floor(left + (width - side) / 2), height_width[1] - side)
  return tf.cast(tf.stack([top, left, side, side]), tf.int32)


def crop_seeds(count: tf.Tensor, drawn: tf.Tensor) -> tf.Tensor:
  """A seed pair for each of a batch's `count` crops, from the batch's one draw."""
  return tf.random.stateless_uniform([count, 2], seed=seed_pair(drawn), maxval=SEEDS,
                                     dtype=tf.int64)


def seed_pair(drawn: tf.Tensor, stream: int = 0) -> tf.Tensor:
  return tf.stack([drawn, tf.constant(stream, tf.int64)])


def mirror_draws(shape: Any, seeds: tf.Tensor | None) -> tf.Tensor:
  """Whether to mirror each image: true with probability 1/2, stateless draws
  from `seeds`, or, without seeds, draws of the op's own generator."""
  draws = (tf.random.uniform(shape) if seeds is None
           else tf.random.stateless_uniform(shape, seed=seeds))
  return draws < 0.5


def flipped_batches(ds: tf.data.Dataset, seed: int | tf.Tensor | None,
                    deterministic: bool) -> tf.data.Dataset:
  """The batches of `ds` with each image mirrored left to right with
  probability 1/2: one draw for a whole batch (with a seed, from a
  `Dataset.random` of its own, one int64 a batch), the mirroring by OpenCV in
  the batch's own buffer. A map of its own per image costs more than the
  flip (docs/reading.md)."""
  if seed is None:
    return ds.map(
        lambda images, labels: mirror(images, labels, mirror_draws(tf.shape(labels), None)),
        num_parallel_calls=AUTOTUNE, deterministic=deterministic)
  seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
  return tf.data.Dataset.zip(ds, seeds).map(
      lambda batch, drawn: mirror(
          batch[0], batch[1], mirror_draws(tf.shape(batch[1]), seed_pair(drawn, stream=1))),
      num_parallel_calls=AUTOTUNE, deterministic=deterministic)


def mirror(images: tf.Tensor, labels: tf.Tensor,
           mirrored: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
  flipped = tf.numpy_function(_mirror_in_place, [images, mirrored], tf.uint8, stateful=False)
  return tf.ensure_shape(flipped, images.shape), labels


def _mirror_in_place(images: np.ndarray, mirrored: np.ndarray) -> np.ndarray:
  # OpenCV's flip, in the batch's own buffer, which nothing else holds: about 6 us an image
  # against tf.reverse's 80 to 180 us, which moves uint8 pixels one byte at a time
  # (docs/reading.md#where-the-224-training-paths-time-goes).
  if not images.flags.writeable:
    images = images.copy()
  for index in np.flatnonzero(mirrored):
    cv2.flip(images[index], 1, dst=images[index])
  return images

"""Training's batches from shuffled records (or cached images): in this
process, a batch parsed and decoded in one map call, a call per usable core,
then flipped by OpenCV; on a tf.data service's workers, which run no Python,
an example decoded and mirrored by `tf.reverse` in a map call of its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from photo_datasets.reading import augmentation, decoding

AUTOTUNE = tf.data.AUTOTUNE


def local_training_batches(reader: decoding.Reader, ds: tf.data.Dataset, batch: int,
                           seed: int | tf.Tensor | None, deterministic: bool, flip: bool, *,
                           decode: bool) -> tf.data.Dataset:
  """`training_dataset`'s batches in this process, from shuffled records (or
  cached images, `decode=False`)."""
  ds = ds.batch(batch, drop_remainder=True)
  if decode:
    # Decoded a batch at a time, a batch per usable core at once: AUTOTUNE runs
    # fewer and leaves a core idle
    # (docs/reading.md#where-the-224-training-paths-time-goes). `full`'s crops
    # draw their seeds a batch at a time too.
    if seed is None or reader.stored_size is not None:
      ds = ds.map(lambda records: reader.augmented_batch(records, None),
                  num_parallel_calls=usable_cores(), deterministic=deterministic)
    else:
      seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
      ds = tf.data.Dataset.zip(ds, seeds).map(
          lambda records, drawn: reader.augmented_batch(
              records, augmentation.crop_seeds(tf.shape(records)[0], drawn)),
          num_parallel_calls=usable_cores(), deterministic=deterministic)
  # The flip is a step of its own, a batch at a time, by OpenCV.
  return augmentation.flipped_batches(ds, seed, deterministic) if flip else ds


def served_training_batches(reader: decoding.Reader, ds: tf.data.Dataset, batch: int,
                            seed: int | tf.Tensor | None, deterministic: bool,
                            flip: bool) -> tf.data.Dataset:
  """`training_dataset`'s batches on a tf.data service's workers, which run no
  Python: each example decoded, and mirrored by `tf.reverse`, in a map of its
  own; each worker keeps its remainder and the trainer regroups the batches."""
  augmented = _served_augmentation(reader, flip)
  if seed is None or not (flip or reader.stored_size is None):
    # Unseeded (or drawing nothing), the random ops draw from the op's own
    # generator: no seeds to make or zip.
    ds = ds.map(lambda record: augmented(record, None), num_parallel_calls=AUTOTUNE,
                deterministic=deterministic)
  else:
    # Seeds repeatable whatever the parallelism, different every epoch: one
    # random int64 per example (the stateless ops' seed pair is it and a constant).
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
    ds = tf.data.Dataset.zip(ds, seeds).map(
        lambda record, drawn: augmented(record, augmentation.seed_pair(drawn)),
        num_parallel_calls=AUTOTUNE, deterministic=deterministic)
  return ds.batch(batch, drop_remainder=False)


def _served_augmentation(
    reader: decoding.Reader, flip: bool,
) -> Callable[[tf.Tensor, tf.Tensor | None], tuple[tf.Tensor, tf.Tensor]]:
  """A serialized example to its training image and label, in TensorFlow's ops
  alone: decoded (on `full`, cropped with `seeds`), then mirrored if drawn."""
  augment: Callable[[dict[str, Any], tf.Tensor | None], tuple[tf.Tensor, tf.Tensor]]
  augment = (reader.cropped if reader.stored_size is None
             else lambda example, _: reader.decoded(example))

  def augmented(record: tf.Tensor, seeds: tf.Tensor | None) -> tuple[tf.Tensor, tf.Tensor]:
    image, label = augment(reader.parse(record), seeds)
    if flip:  # Its draw apart from the crop's, which takes `seeds` as they are.
      mirrored = augmentation.mirror_draws([], None if seeds is None else tf.reverse(seeds, [0]))
      image = tf.cond(mirrored, lambda: tf.reverse(image, [1]), lambda: image)
    return image, label

  return augmented


def usable_cores() -> int:
  return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

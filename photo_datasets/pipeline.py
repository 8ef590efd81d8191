"""The input pipeline from a prepared dataset to `model.fit`."""

from __future__ import annotations

import tensorflow as tf
import tensorflow_datasets as tfds


def training_dataset(
    name: str,
    *,
    split: str = "train",
    batch_size: int = 64,
    data_dir: str | None = None,
    shuffle_buffer: int = 2048,
    seed: int | None = None,
) -> tf.data.Dataset:
  """Shuffled, batched, prefetched `(image, label)` pairs for `model.fit`.

  `tfds.load(..., batch_size=...)` alone yields every epoch in the same
  order: TFDS fixes the example order inside each shard when it writes. This
  reads shards in a shuffled order, shuffles examples in a buffer, then
  batches (dropping nothing) and prefetches.

  Args:
    name: a dataset with fixed-size images, e.g. `"korean_food/224"` or
      `"flowers_dataset/224"` (the `full` configs have images of many sizes,
      which cannot be batched as they are).
    split: any TFDS split expression, e.g. `"train"` or `"train[:10%]"`.
    batch_size: examples per batch, >= 1.
    data_dir: where the dataset was built; TFDS's default when None.
    shuffle_buffer: examples held for shuffling; 0 keeps the stored order.
    seed: makes the shuffling repeatable.

  Returns:
    A `tf.data.Dataset` of `(uint8 images (B, H, W, 3), int64 labels (B,))`.

  Raises:
    ValueError: on a bad `batch_size` or `shuffle_buffer`, or when the images
      of `name` have no fixed size.
  """
  if batch_size < 1:
    raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
  if shuffle_buffer < 0:
    raise ValueError(f"shuffle_buffer must be >= 0, got {shuffle_buffer}.")
  builder = tfds.builder(name, data_dir=data_dir)
  image_shape = builder.info.features["image"].shape
  if None in image_shape:
    raise ValueError(
        f"{name} has images of varying size {image_shape}; use a sized config "
        f"such as '{builder.name}/224'.")
  ds = builder.as_dataset(
      split=split,
      shuffle_files=shuffle_buffer > 0,
      as_supervised=True,
      read_config=tfds.ReadConfig(shuffle_seed=seed),
  )
  if shuffle_buffer:
    ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
  return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)

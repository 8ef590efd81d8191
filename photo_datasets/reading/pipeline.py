"""The input pipeline from a prepared dataset to `model.fit`: training and evaluation.

Both functions read a built config's record files where TFDS's own split
info says they are (`file_instructions`: any split expression, such as
`train[:10%]`), parse only the features they use, decode the stored JPEGs
themselves, and hand Keras batched
`(uint8 images (B, S, S, 3), int64 labels (B,))`. Pixels stay uint8 until the
model: `rescaling_layer()` turns them into floats on the accelerator, so the
pipeline moves 4 times fewer bytes than float images.

* Sized configs (`korean_food/224`) are read as stored; training adds random
  horizontal flips (`flip=False` leaves them to the model, on the
  accelerator). An `image_size` other than the stored size resizes; half the
  stored size or less is decoded at a reduced DCT scale (1/2, 1/4, 1/8).
* `full` configs are read with a fused decode and crop
  (`tf.io.decode_and_crop_jpeg`: only the crop's pixels are decoded, at the
  smallest DCT scale that still gives `image_size` pixels).
  Training samples an Inception-style random crop (8 % to 100 % of the area,
  aspect 3/4 to 4/3) that contains the whole crop box when the photo has one
  (`korean_food`'s `bbox`), flips it and resizes it to `image_size`.
  Evaluation takes the crop box (or the whole photo), the centre square of it,
  and resizes.

The tf.data choices, in one place:
* the record files are read in a shuffled order (training only), interleaved
  as TFDS does (16 files, 16 records each), then the serialized examples are
  shuffled in a buffer, not decoded images;
* each example is parsed for the image and the label only (and, on `full`,
  the crop box), in the map that decodes it: TFDS's reader parses every
  feature in a map of its own. Training batches the serialized examples
  first and parses and decodes a whole batch in one map call
  (`tf.io.parse_example`, then each image in a `tf.map_fn`), a call per
  usable core at once: tf.data's cost per element of a map is paid once a
  batch. Evaluation, and training on a tf.data service's workers, decode
  one example a call (`num_parallel_calls=AUTOTUNE`);
* with a seed, the random ops are stateless, their seeds from a zipped
  `Dataset.random` (repeatable, each epoch new; one int64 a batch, or an
  example on a tf.data service); without one they draw from their own
  generator, which costs less;
* the flip is a step of its own after the batch: one draw for the batch's
  images, and OpenCV mirrors those drawn in the batch's own buffer (a
  `tf.reverse` moves a uint8 image a byte at a time, up to 30 times slower:
  docs/reading.md#where-the-224-training-paths-time-goes). Under a tf.data
  service, whose workers run no Python, each image is mirrored in the map by
  `tf.reverse`;
* the maps run in any order (`deterministic=False`) for shuffled training
  without a seed, in order otherwise; evaluation keeps the stored order and
  drops nothing;
* nothing is cached unless asked (TFDS's automatic cache is off). With
  `cache="memory"` or `cache=DIR`, the deterministic part is cached: a sized
  config's decoded images (at `image_size`), read once in stored order, then
  shuffled (`shuffle_buffer` decoded examples) and flipped anew every epoch;
  `full`'s evaluation crops. `full`'s training crops differ every epoch, so
  its training refuses a cache (docs/reading.md says why). A memory cache is
  refused when its estimate exceeds half the free memory; a disk cache is kept
  only once an epoch has read it whole (tf.data's rule), and a fill killed
  with its process is discarded by the next pipeline that opens it;
* training batches drop the remainder, so every batch has the same shape;
* prefetch last (`AUTOTUNE`).

The datasets feed Keras 3 on any backend: with `KERAS_BACKEND=jax` or `torch`,
`model.fit` converts the batches to the backend's arrays, and TensorFlow is kept
off the GPUs so the model has their memory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import cv2
import keras
import numpy as np
import tensorflow as tf

from photo_datasets.photos import images
from photo_datasets.reading import arguments, built
from photo_datasets.reading import cache as cache_policy
from photo_datasets.reading import data_service as service
from photo_datasets.reading.layers import rescaling_layer as rescaling_layer  # This module's API.

AUTOTUNE = tf.data.AUTOTUNE
# Inception-style crops: the share of the photo's area and the aspect ratios
# a training crop may take.
CROP_AREA = (0.08, 1.0)
CROP_ASPECT = (3 / 4, 4 / 3)
# A photo without a crop box: any crop covering this much of it will do.
MIN_COVERED_WITHOUT_BOX = 0.1
CROP_ATTEMPTS = 10
_DCT_RATIOS = (1, 2, 4, 8)  # The scales libjpeg decodes at directly.
_SEEDS = 2**62
_INTERLEAVE_FILES, _INTERLEAVE_RECORDS = 16, 16


def training_dataset(
    name: str,
    *,
    split: str = "train",
    batch_size: int = 64,
    image_size: int | None = None,
    data_dir: str | None = None,
    shuffle_buffer: int = 2048,
    seed: int | None = None,
    input_context: tf.distribute.InputContext | None = None,
    data_service: str | service.Service | None = None,
    cache: str | None = None,
    flip: bool = True,
) -> tf.data.Dataset:
  """Shuffled, augmented, batched, prefetched `(images, labels)` for `model.fit`.

  Args:
    name: a built config, e.g. `"korean_food/224"` or `"flowers_dataset/full"`.
    split: any TFDS split expression, e.g. `"train"` or `"train[:10%]"`.
    batch_size: the global batch size, >= 1. With `input_context`, each
      worker's batches hold its share (`get_per_replica_batch_size`).
    image_size: the side S of the square images; default the stored size.
      Required for `full` configs.
    data_dir: where the dataset was built; TFDS's default when None.
    shuffle_buffer: encoded examples held for shuffling, >= 0; 0 keeps the
      stored order of the examples in each file (files are still read in a
      shuffled order, crops and flips still random).
    seed: makes the example order and the augmentation repeatable (and the
      parallel decoding ordered); each epoch still differs from the last.
    input_context: from `tf.distribute.Strategy.distribute_datasets_from_function`;
      each input pipeline gets a disjoint part of the examples.
    data_service: `"grpc://HOST:PORT"` of a tf.data service dispatcher (or a
      `data_service.Service`, for its compression and watchdog): the reading,
      decoding and augmentation run on its workers
      (`photo_datasets.reading.data_service`), which stream the batches here.
    cache: `None` (read and decode every epoch), `"memory"`, or a directory
      for a disk cache (a local disk): the decoded images of a sized config
      are kept after the first epoch, which must be read whole; later epochs
      are still shuffled (in a buffer of `shuffle_buffer` decoded examples)
      and flipped anew. Refused for `full` (crops differ every epoch), with
      `data_service`, and for a memory cache larger than half the free memory.
    flip: mirror each image left to right with probability 1/2. False leaves
      the images unmirrored, for a model that mirrors them on the accelerator
      (`keras.layers.RandomFlip("horizontal")` after `rescaling_layer()`, as
      `photo_datasets.commands.models` does): on the CPU the flip costs a few percent
      of an uncached image and a fifth to a third of a cached one
      (docs/reading.md#where-the-224-training-paths-time-goes).

  Returns:
    A `tf.data.Dataset` of `(uint8 images (B, S, S, 3), int64 labels (B,))`,
    every batch of the same shape (the last, incomplete batch is dropped).

  Raises:
    ValueError: on a bad argument, naming it.
  """
  _check_counts(batch_size=batch_size, shuffle_buffer=shuffle_buffer)
  cache_policy.check_argument(cache, served=data_service is not None)
  reader = _Reader(name, split, data_dir, image_size, input_context,
                   served=data_service is not None)
  batch = reader.batch_size(batch_size)
  if cache is not None and reader.stored_size is None:
    raise ValueError(
        f"cache= is for sized configs and evaluation: {name}'s training crops are drawn anew "
        f"every epoch, so only the stored JPEGs would repeat, and their decoding is the cost "
        f"(docs/reading.md). Train from a sized config with cache= "
        f"(e.g. '{reader.builder.name}/{image_size or 224}'), or without cache.")
  decoded = reader.cached(cache, reader.decoded) if cache is not None else None
  _check_batch_fits(reader, batch)

  def batches(seed: int | tf.Tensor | None) -> tf.data.Dataset:
    ds = reader.records(shuffle_files=True, seed=seed) if decoded is None else decoded
    if shuffle_buffer:
      ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    deterministic = seed is not None or not shuffle_buffer
    if data_service is not None:
      return _served_training_batches(reader, ds, batch, seed, deterministic, flip)
    return _local_training_batches(reader, ds, batch, seed, deterministic, flip,
                                   decode=decoded is None)

  if data_service is None:
    return batches(seed).prefetch(AUTOTUNE)
  # The service starts the pipeline afresh on its workers every epoch: a seeded
  # one is made anew each epoch, from a seed of its own drawn from `seed`.
  served = batches if seed is not None else batches(None)
  return _served(served, data_service, reader, training=True, seed=seed,
                 batch_size=batch).prefetch(AUTOTUNE)


def _local_training_batches(reader: _Reader, ds: tf.data.Dataset, batch: int,
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
                  num_parallel_calls=_usable_cores(), deterministic=deterministic)
    else:
      seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
      ds = tf.data.Dataset.zip(ds, seeds).map(
          lambda records, drawn: reader.augmented_batch(
              records, _crop_seeds(tf.shape(records)[0], drawn)),
          num_parallel_calls=_usable_cores(), deterministic=deterministic)
  # The flip is a step of its own, a batch at a time, by OpenCV.
  return _flipped_batches(ds, seed, deterministic) if flip else ds


def _served_training_batches(reader: _Reader, ds: tf.data.Dataset, batch: int,
                             seed: int | tf.Tensor | None, deterministic: bool,
                             flip: bool) -> tf.data.Dataset:
  """`training_dataset`'s batches on a tf.data service's workers, which run no
  Python: each example decoded, and mirrored by `tf.reverse`, in a map of its
  own; each worker keeps its remainder and the trainer regroups the batches."""
  augment: Callable[[dict[str, Any], tf.Tensor | None], tuple[tf.Tensor, tf.Tensor]]
  augment = (reader.cropped if reader.stored_size is None
             else lambda example, _: reader.decoded(example))

  def augmented(record: tf.Tensor, seeds: tf.Tensor | None) -> tuple[tf.Tensor, tf.Tensor]:
    image, label = augment(reader.parse(record), seeds)
    if flip:  # Its draw apart from the crop's, which takes `seeds` as they are.
      mirrored = _mirrored([], None if seeds is None else tf.reverse(seeds, [0]))
      image = tf.cond(mirrored, lambda: tf.reverse(image, [1]), lambda: image)
    return image, label

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
        lambda record, drawn: augmented(record, _seed_pair(drawn)),
        num_parallel_calls=AUTOTUNE, deterministic=deterministic)
  return ds.batch(batch, drop_remainder=False)


def evaluation_dataset(
    name: str,
    *,
    split: str = "validation",
    batch_size: int = 64,
    image_size: int | None = None,
    data_dir: str | None = None,
    input_context: tf.distribute.InputContext | None = None,
    data_service: str | service.Service | None = None,
    cache: str | None = None,
) -> tf.data.Dataset:
  """Batched, prefetched `(images, labels)` for `model.evaluate` and validation.

  No randomness: examples in stored order, each photo (or its crop box, for
  `full`) centre-cropped to a square and resized to `image_size`. Nothing is
  dropped: the last batch may be smaller.

  Args:
    name: a built config, e.g. `"korean_food/224"` or `"flowers_dataset/full"`.
    split: any TFDS split expression, e.g. `"validation"` or `"test[:50%]"`.
    batch_size: the global batch size, >= 1. With `input_context`, each
      worker's batches hold its share (`get_per_replica_batch_size`).
    image_size: the side S of the square images; default the stored size.
      Required for `full` configs.
    data_dir: where the dataset was built; TFDS's default when None.
    input_context: from `tf.distribute.Strategy.distribute_datasets_from_function`;
      each input pipeline gets a disjoint part of the examples.
    data_service: `"grpc://HOST:PORT"` of a tf.data service dispatcher (or a
      `data_service.Service`, for its compression and watchdog): the reading
      and decoding run on its workers (`photo_datasets.reading.data_service`), which
      stream the batches here.
    cache: `None` (read and decode every time), `"memory"`, or a directory
      for a disk cache (a local disk): the images are kept as they are
      batched once a first pass has read them whole, for `full` too (its
      evaluation crops are fixed). Refused with `data_service`, and for a
      memory cache larger than half the free memory.

  Returns:
    A `tf.data.Dataset` of `(uint8 images (B, S, S, 3), int64 labels (B,))`,
    in stored order; the last batch may hold fewer than B.

  Raises:
    ValueError: on a bad argument, naming it.
  """
  _check_counts(batch_size=batch_size, shuffle_buffer=0)
  cache_policy.check_argument(cache, served=data_service is not None)
  reader = _Reader(name, split, data_dir, image_size, input_context,
                   served=data_service is not None)
  if cache is not None:
    ds = reader.cached(cache, reader.centred)
  else:
    ds = reader.records(shuffle_files=False).map(
        lambda record: reader.centred(reader.parse(record)), num_parallel_calls=AUTOTUNE)
  batch = reader.batch_size(batch_size)
  ds = ds.batch(batch)
  return _served(ds, data_service, reader, training=False, seed=None,
                 batch_size=batch).prefetch(AUTOTUNE)


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


def _served(ds: tf.data.Dataset | Callable[[tf.Tensor], tf.data.Dataset],
            data_service: str | service.Service | None, reader: _Reader, *, training: bool,
            seed: int | None, batch_size: int) -> tf.data.Dataset:
  """`ds` (or the epochs `ds(epoch_seed)`) as it comes from the tf.data service at
  `data_service`."""
  if data_service is None:
    assert isinstance(ds, tf.data.Dataset)
    return ds
  served = service.distribute(ds, data_service, training=training, seed=seed,
                              batch_size=batch_size)
  if reader.input_context is not None:
    return served
  # The batches of an epoch in-process, so Keras knows every epoch's steps.
  examples = reader.builder.info.splits[reader.split].num_examples
  batches = examples // batch_size if training else -(-examples // batch_size)
  return served.apply(tf.data.experimental.assert_cardinality(batches))


def _check_counts(*, batch_size: int, shuffle_buffer: int) -> None:
  arguments.whole_number(batch_size, "batch_size", arguments.POSITIVE)
  arguments.whole_number(shuffle_buffer, "shuffle_buffer", arguments.NON_NEGATIVE)


def _usable_cores() -> int:
  return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _crop_seeds(count: tf.Tensor, drawn: tf.Tensor) -> tf.Tensor:
  """A seed pair for each of a batch's `count` crops, from the batch's one draw."""
  return tf.random.stateless_uniform([count, 2], seed=_seed_pair(drawn), maxval=_SEEDS,
                                     dtype=tf.int64)


def _seed_pair(drawn: tf.Tensor, stream: int = 0) -> tf.Tensor:
  return tf.stack([drawn, tf.constant(stream, tf.int64)])


def _mirrored(shape: Any, seeds: tf.Tensor | None) -> tf.Tensor:
  """Whether to mirror each image: true with probability 1/2, stateless draws
  from `seeds`, or, without seeds, draws of the op's own generator."""
  draws = (tf.random.uniform(shape) if seeds is None
           else tf.random.stateless_uniform(shape, seed=seeds))
  return draws < 0.5


def _flipped_batches(ds: tf.data.Dataset, seed: int | tf.Tensor | None,
                     deterministic: bool) -> tf.data.Dataset:
  """The batches of `ds` with each image mirrored left to right with
  probability 1/2: one draw for a whole batch (with a seed, from a
  `Dataset.random` of its own, one int64 a batch), the mirroring by OpenCV in
  the batch's own buffer. A map of its own per image costs more than the
  flip (docs/reading.md)."""
  if seed is None:
    return ds.map(lambda images, labels: _mirror(images, labels, _mirrored(tf.shape(labels), None)),
                  num_parallel_calls=AUTOTUNE, deterministic=deterministic)
  seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
  return tf.data.Dataset.zip(ds, seeds).map(
      lambda batch, drawn: _mirror(
          batch[0], batch[1], _mirrored(tf.shape(batch[1]), _seed_pair(drawn, stream=1))),
      num_parallel_calls=AUTOTUNE, deterministic=deterministic)


def _mirror(images: tf.Tensor, labels: tf.Tensor,
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


def _check_batch_fits(reader: _Reader, batch: int) -> None:
  """A training batch larger than the examples of its input pipeline would yield no batch at
  all, as the last, incomplete one is dropped: an error, not a batch size quietly changed
  (`photo_datasets.commands.train` caps it)."""
  examples = reader.builder.info.splits[reader.split].num_examples
  pipelines = reader.input_context.num_input_pipelines if reader.input_context else 1
  if examples < batch * pipelines:
    each = f" for each of {pipelines} input pipelines" if pipelines > 1 else ""
    raise ValueError(
        f"batch_size {batch}{each} is larger than the {examples} examples of {reader.builder.name}/"
        f"{reader.builder.builder_config.name} split {reader.split!r}: training would get no "
        "batch (the last, incomplete one is dropped). Give a batch_size of at most "
        f"{examples // pipelines}, or a larger split.")


def _leave_accelerators_to_keras() -> None:
  """With Keras on JAX or PyTorch, tf.data only feeds it (Keras converts the
  batches): keep TensorFlow off the GPUs, where it would reserve their memory."""
  if keras.config.backend() == "tensorflow":
    return
  try:
    tf.config.set_visible_devices([], "GPU")
  except RuntimeError:  # TensorFlow already uses them: too late to change.
    pass


class _Reader:
  """One built config read for the pipeline: examples, and the image maps."""

  def __init__(self, name: str, split: str, data_dir: str | None, image_size: int | None,
               input_context: tf.distribute.InputContext | None, *, served: bool = False):
    _leave_accelerators_to_keras()
    self.builder = built.open_built(name, data_dir)
    stored = self.builder.info.features["image"].shape[0]
    if image_size is None and stored is None:
      raise ValueError(
          f"{name} stores images at their source size: give image_size (e.g. image_size=224), "
          f"or use a sized config such as '{self.builder.name}/224'.")
    if image_size is not None:
      arguments.whole_number(image_size, "image_size", images.SQUARE_SIZES)
    self.split, self.served = split, served
    self.stored_size: int | None = stored
    self.size: int = image_size or stored
    self.input_context = input_context
    self.has_box = "bbox" in self.builder.info.features
    # tf.train.Example holds integers and booleans as int64: parsed so, then cast.
    serialized = self.builder.info.features.get_serialized_info()
    # Only `full`'s crops read the box.
    keys = (("image", "label", "bbox", "has_bbox") if self.has_box and stored is None
            else ("image", "label"))
    self._dtypes = {key: serialized[key].tf_dtype for key in keys}
    self._spec = {
        key: tf.io.FixedLenFeature(serialized[key].shape,
                                   tf.int64 if dtype.is_integer or dtype.is_bool else dtype)
        for key, dtype in self._dtypes.items()}

  def batch_size(self, global_batch_size: int) -> int:
    if self.input_context is None:
      return global_batch_size
    per_worker: int = self.input_context.get_per_replica_batch_size(global_batch_size)
    return per_worker

  def _part(self) -> tuple[list[Any], int, int, bool]:
    """(file instructions, pipelines, this pipeline's index, whole files each) of this
    pipeline's part."""
    instructions = list(self.builder.info.splits[self.split].file_instructions)
    context = self.input_context
    pipelines, index = ((context.num_input_pipelines, context.input_pipeline_id) if context
                        else (1, 0))
    by_file = pipelines > 1 and len(instructions) >= pipelines
    if by_file:
      instructions = instructions[index::pipelines]
    return instructions, pipelines, index, by_file

  def examples(self) -> int:
    """How many examples this input pipeline reads of the split."""
    instructions, pipelines, index, by_file = self._part()
    total = sum(i.take for i in instructions)
    return total if by_file or pipelines == 1 else len(range(index, total, pipelines))

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

  def records(self, *, shuffle_files: bool, seed: int | tf.Tensor | None = None) -> tf.data.Dataset:
    """The serialized examples of this input pipeline's part of the split.

    Read from the split's files as TFDS lists them (`file_instructions`:
    file, skip, take), interleaved as TFDS interleaves them, so evaluation
    sees `tfds.load`'s order. Each pipeline of an `input_context` reads
    whole files when there are at least as many as pipelines, else every
    n-th example."""
    instructions, pipelines, index, by_file = self._part()
    files = tf.data.Dataset.from_tensor_slices((
        [i.filename for i in instructions],
        tf.constant([i.skip for i in instructions], tf.int64),
        tf.constant([i.take for i in instructions], tf.int64)))
    if shuffle_files:
      files = files.shuffle(len(instructions), seed=seed, reshuffle_each_iteration=True)
    # TFDS's reader: 16 files at once, 16 records from each in turn (1 file at
    # once for a dataset stored in order).
    cycle = 1 if self.builder.info.disable_shuffling else _INTERLEAVE_FILES
    ds = files.interleave(
        lambda filename, skip, take: tf.data.TFRecordDataset(filename).skip(skip).take(take),
        cycle_length=cycle, block_length=_INTERLEAVE_RECORDS,
        num_parallel_calls=AUTOTUNE, deterministic=not shuffle_files or seed is not None)
    if not self.served:  # A tf.data service worker reads only the files it is given.
      # Known, so Keras knows the steps of an epoch (as with TFDS).
      ds = ds.apply(tf.data.experimental.assert_cardinality(sum(i.take for i in instructions)))
    if pipelines > 1 and not by_file:
      ds = ds.shard(pipelines, index)
    return ds

  def parse(self, record: tf.Tensor) -> dict[str, tf.Tensor]:
    """The features the maps use, and only those, of one serialized example."""
    example = tf.io.parse_single_example(record, self._spec)
    return {key: tf.cast(value, self._dtypes[key]) if value.dtype != self._dtypes[key] else value
            for key, value in example.items()}

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

    def decode_at(ratio: int) -> Any:
      def decode() -> tf.Tensor:
        scaled = tf.stack([window[0] // ratio, window[1] // ratio,
                           tf.maximum(window[2] // ratio, 1), tf.maximum(window[3] // ratio, 1)])
        return tf.io.decode_and_crop_jpeg(encoded, scaled, channels=3, ratio=ratio)
      return decode

    image = tf.switch_case(steps, [decode_at(ratio) for ratio in _DCT_RATIOS])
    return self._resized(image, antialias=False)

  def cropped(self, example: dict[str, Any],
              seeds: tf.Tensor | None) -> tuple[tf.Tensor, tf.Tensor]:
    """Training on `full`: a random crop containing the box."""
    if seeds is None:  # The crop's sampler takes seeds only.
      seeds = tf.random.uniform([2], maxval=_SEEDS, dtype=tf.int64)
    encoded = example["image"]
    has_box = example["has_bbox"] if self.has_box else tf.constant(False)
    window = random_crop_window(tf.io.extract_jpeg_shape(encoded), self._box(example), has_box,
                                seeds)
    return (tf.ensure_shape(self._decode_window(encoded, window), (self.size, self.size, 3)),
            example["label"])

  def augmented_batch(self, records: tf.Tensor,
                      seeds: tf.Tensor | None) -> tuple[tf.Tensor, tf.Tensor]:
    """Training images from a batch of serialized examples, parsed together,
    each then decoded (on `full`, cropped with its row of `seeds`) in this one
    call: tf.data's own cost of an element of a map, about 35 us
    (docs/reading.md#where-the-224-training-paths-time-goes), is paid once a
    batch."""
    examples = {key: tf.cast(value, self._dtypes[key])
                for key, value in tf.io.parse_example(records, self._spec).items()}
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
    window = centre_window(tf.io.extract_jpeg_shape(encoded), self._box(example))
    return (tf.ensure_shape(self._decode_window(encoded, window), (self.size, self.size, 3)),
            example["label"])

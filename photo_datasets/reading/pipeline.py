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
  `tf.reverse` moves a uint8 image a byte at a time:
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

from collections.abc import Callable

import tensorflow as tf

from photo_datasets.reading import arguments, batches, decoding
from photo_datasets.reading import cache as cache_policy
from photo_datasets.reading import data_service as service

# This module's API, as before the pipeline's parts moved to modules of their own.
from photo_datasets.reading.augmentation import CROP_AREA as CROP_AREA
from photo_datasets.reading.augmentation import CROP_ASPECT as CROP_ASPECT
from photo_datasets.reading.augmentation import CROP_ATTEMPTS as CROP_ATTEMPTS
from photo_datasets.reading.augmentation import MIN_COVERED_WITHOUT_BOX as MIN_COVERED_WITHOUT_BOX
from photo_datasets.reading.augmentation import centre_window as centre_window
from photo_datasets.reading.augmentation import random_crop_window as random_crop_window
from photo_datasets.reading.layers import rescaling_layer as rescaling_layer

AUTOTUNE = tf.data.AUTOTUNE


def training_dataset(
    name: str, *, split: str = "train", batch_size: int = 64, image_size: int | None = None,
    data_dir: str | None = None, shuffle_buffer: int = 2048, seed: int | None = None,
    input_context: tf.distribute.InputContext | None = None,
    data_service: str | service.Service | None = None, cache: str | None = None,
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
  served = data_service is not None
  _check_counts(batch_size=batch_size, shuffle_buffer=shuffle_buffer)
  cache_policy.check_argument(cache, served=served)
  reader = decoding.Reader(name, split, data_dir, image_size, input_context, served=served)
  batch = reader.batch_size(batch_size)
  decoded = _cached_training_images(reader, cache, name, image_size)
  _check_batch_fits(reader, batch)
  return _training_epochs(reader, decoded, batch, seed=seed, shuffle_buffer=shuffle_buffer,
                          flip=flip, data_service=data_service).prefetch(AUTOTUNE)


def _cached_training_images(reader: decoding.Reader, cache: str | None, name: str,
                            image_size: int | None) -> tf.data.Dataset | None:
  """A sized config's decoded images, cached as `cache` asks; None without a
  cache. `full`'s training refuses one."""
  if cache is not None and reader.stored_size is None:
    raise ValueError(
        f"cache= is for sized configs and evaluation: {name}'s training crops are drawn anew "
        f"every epoch, so only the stored JPEGs would repeat, and their decoding is the cost "
        f"(docs/reading.md). Train from a sized config with cache= "
        f"(e.g. '{reader.builder.name}/{image_size or 224}'), or without cache.")
  return reader.cached(cache, reader.decoded) if cache is not None else None


def _training_epochs(reader: decoding.Reader, decoded: tf.data.Dataset | None, batch: int, *,
                     seed: int | None, shuffle_buffer: int, flip: bool,
                     data_service: str | service.Service | None) -> tf.data.Dataset:
  """The training batches, every epoch: from shuffled records (or the cached
  images `decoded`), made here or on the tf.data service at `data_service`."""

  def epoch(seed: int | tf.Tensor | None) -> tf.data.Dataset:
    ds = reader.records(shuffle_files=True, seed=seed) if decoded is None else decoded
    if shuffle_buffer:
      ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    deterministic = seed is not None or not shuffle_buffer
    if data_service is not None:
      return batches.served_training_batches(reader, ds, batch, seed, deterministic, flip)
    return batches.local_training_batches(reader, ds, batch, seed, deterministic, flip,
                                          decode=decoded is None)

  if data_service is None:
    return epoch(seed)
  # The service starts the pipeline afresh on its workers every epoch: a seeded
  # one is made anew each epoch, from a seed of its own drawn from `seed`.
  served = epoch if seed is not None else epoch(None)
  return _served(served, data_service, reader, training=True, seed=seed, batch_size=batch)


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
  reader = decoding.Reader(name, split, data_dir, image_size, input_context,
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


def _served(ds: tf.data.Dataset | Callable[[tf.Tensor], tf.data.Dataset],
            data_service: str | service.Service | None, reader: decoding.Reader, *, training: bool,
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
  steps = examples // batch_size if training else -(-examples // batch_size)
  return served.apply(tf.data.experimental.assert_cardinality(steps))


def _check_counts(*, batch_size: int, shuffle_buffer: int) -> None:
  arguments.whole_number(batch_size, "batch_size", arguments.POSITIVE)
  arguments.whole_number(shuffle_buffer, "shuffle_buffer", arguments.NON_NEGATIVE)


def _check_batch_fits(reader: decoding.Reader, batch: int) -> None:
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

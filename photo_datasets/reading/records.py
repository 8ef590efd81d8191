"""A built config's split as one input pipeline reads it: its part of the
record files, interleaved in TFDS's order, and of each serialized example the
features the image maps use, parsed.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from photo_datasets.photos import images
from photo_datasets.reading import arguments, built

AUTOTUNE = tf.data.AUTOTUNE
_INTERLEAVE_FILES, _INTERLEAVE_RECORDS = 16, 16


class SplitRecords:
  """One built config's split read for the pipeline: this input pipeline's part
  of its examples, serialized, and the features the image maps use."""

  def __init__(self, name: str, split: str, data_dir: str | None, image_size: int | None,
               input_context: tf.distribute.InputContext | None, *, served: bool = False):
    _leave_accelerators_to_keras()
    self.builder = built.open_built(name, data_dir)
    stored = self.builder.info.features["image"].shape[0]
    _check_image_size(name, self.builder.name, image_size, stored)
    self.split, self.served = split, served
    self.stored_size: int | None = stored
    self.size: int = image_size or stored
    self.input_context = input_context
    self.has_box = "bbox" in self.builder.info.features
    self._dtypes, self._spec = self._parsed_features()

  def _parsed_features(self) -> tuple[dict[str, Any], dict[str, Any]]:
    """The dtype of each feature the maps use, and the spec that parses it."""
    # tf.train.Example holds integers and booleans as int64: parsed so, then cast.
    serialized = self.builder.info.features.get_serialized_info()
    # Only `full`'s crops read the box.
    keys = (("image", "label", "bbox", "has_bbox") if self.has_box and self.stored_size is None
            else ("image", "label"))
    dtypes = {key: serialized[key].tf_dtype for key in keys}
    spec = {
        key: tf.io.FixedLenFeature(serialized[key].shape,
                                   tf.int64 if dtype.is_integer or dtype.is_bool else dtype)
        for key, dtype in dtypes.items()}
    return dtypes, spec

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

  def records(self, *, shuffle_files: bool, seed: int | tf.Tensor | None = None) -> tf.data.Dataset:
    """The serialized examples of this input pipeline's part of the split.

    Read from the split's files as TFDS lists them (`file_instructions`:
    file, skip, take), interleaved as TFDS interleaves them, so evaluation
    sees `tfds.load`'s order. Each pipeline of an `input_context` reads
    whole files when there are at least as many as pipelines, else every
    n-th example."""
    instructions, pipelines, index, by_file = self._part()
    files = _file_slices(instructions, shuffle_files=shuffle_files, seed=seed)
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

  def parse_batch(self, records: tf.Tensor) -> dict[str, tf.Tensor]:
    """The features the maps use of a batch of serialized examples, parsed together."""
    return {key: tf.cast(value, self._dtypes[key])
            for key, value in tf.io.parse_example(records, self._spec).items()}


def _check_image_size(name: str, dataset: str, image_size: int | None,
                      stored: int | None) -> None:
  """ValueError where a config stored at the source size gets no `image_size`, or
  where `image_size` is not a size the pipeline makes."""
  if image_size is None and stored is None:
    raise ValueError(
        f"{name} stores images at their source size: give image_size (e.g. image_size=224), "
        f"or use a sized config such as '{dataset}/224'.")
  if image_size is not None:
    arguments.whole_number(image_size, "image_size", images.SQUARE_SIZES)


def _file_slices(instructions: list[Any], *, shuffle_files: bool,
                 seed: int | tf.Tensor | None) -> tf.data.Dataset:
  """Each file instruction's (filename, skip, take), in a shuffled order when
  `shuffle_files`."""
  files = tf.data.Dataset.from_tensor_slices((
      [i.filename for i in instructions],
      tf.constant([i.skip for i in instructions], tf.int64),
      tf.constant([i.take for i in instructions], tf.int64)))
  if shuffle_files:
    files = files.shuffle(len(instructions), seed=seed, reshuffle_each_iteration=True)
  return files


def _leave_accelerators_to_keras() -> None:
  """With Keras on JAX or PyTorch, tf.data only feeds it (Keras converts the
  batches): keep TensorFlow off the GPUs, where it would reserve their memory."""
  if keras.config.backend() == "tensorflow":
    return
  try:
    tf.config.set_visible_devices([], "GPU")
  except RuntimeError:  # TensorFlow already uses them: too late to change.
    pass

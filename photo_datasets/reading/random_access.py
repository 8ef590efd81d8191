"""Random access to a built config: an ArrayRecord copy beside its TFRecords, two loaders over it.

  python -m photo_datasets random_access NAME [--data_dir DIR]   # e.g. korean_food/224

`add_array_record` runs TFDS's own `tfds convert_format` on a built config, in
place: every TFRecord shard gets an ArrayRecord twin in the same folder, and
`dataset_info.json` lists `array_record` as an alternative format. TFRecord
stays the config's format, so `tfds.load` and `pipeline.training_dataset` read
what they read before, while `tfds.data_source` reads the ArrayRecord files:
any example by index, the same stored bytes. TFDS 4.9.10 forgets the
alternative format of configs defined in code (`224`, `full`);
`PhotoBuilder.__init__` restores it (`configs.restore_alternative_file_formats`).

Decoded images are the stored JPEGs decoded by libjpeg's accurate DCT (PIL),
which is `tf.io.decode_jpeg(..., dct_method="INTEGER_ACCURATE")`; `tfds.load`
decodes with TensorFlow's default fast DCT, so its pixels may differ by a few
levels. The stored bytes are identical.

Two loaders without TensorFlow in the loop, for sized configs (every image of
one size), each yielding `(uint8 images (B, S, S, 3), int64 labels (B,))`:

* `torch_loader`: a `torch.utils.data.DataLoader` (shuffling, batching,
  `num_workers` worker processes).
* `grain_dataset`: a Grain pipeline, `MapDataset.source(...).shuffle(seed)
  .repeat(epochs).map(decode).batch(...)`, with `mp_prefetch` worker processes.

PyTorch and Grain are optional: each is imported only by its function. Both
start worker processes with `spawn`; each decodes with PIL and opens its own
ArrayRecord readers (the data source is pickled without them). This module
imports no TensorFlow, but a spawned worker runs the top-level imports of the
program's main module again: a script that imports TensorFlow at its top pays
that import in every worker, once.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import glob
import io
import os
import random
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import tensorflow_datasets as tfds

from photo_datasets import tfds_private
from photo_datasets.reading import built

ARRAY_RECORD = "array_record"

Example = tuple[npt.NDArray[np.uint8], np.int64]


def add_array_record(name: str, data_dir: str | os.PathLike[str] | None = None) -> str:
  """Adds an ArrayRecord copy to the built config `name`, with TFDS's `convert_format`.

  Does nothing where the copy is complete; converts missing shards only.
  A rebuild (`--overwrite`) removes the copy: run this again after it.

  Args:
    name: a built config, e.g. `"korean_food/224"`.
    data_dir: where it was built; None for TFDS's default.

  Returns:
    The config's version folder, which then holds the ArrayRecord files.

  Raises:
    ValueError: the config is not built in `data_dir` (`built.NotBuiltError`).
    PermissionError: its folder cannot be written (a read-only data dir).
    RuntimeError: TFDS did not register the copy.
  """
  name, data_dir = dataclasses.astuple(built.locate(name, data_dir))
  builder = built.open_built(name, data_dir)
  version_dir: str = os.fspath(builder.data_dir)
  if not os.access(version_dir, os.W_OK):  # TFDS would fail deep in its writer, twice.
    raise PermissionError(errno.EACCES, f"cannot add an ArrayRecord copy to {name}: its folder "
                          "cannot be written, and the copy goes beside its records. Copy the "
                          "folder into a data dir you can write and run this there", version_dir)
  registered = has_array_record(name, data_dir)  # Then TFDS converts the missing shards only.
  if not registered:
    _remove_array_record_files(version_dir)  # A stopped or failed conversion's.
  try:
    tfds_private.convert_to_file_format(version_dir, ARRAY_RECORD)  # `tfds convert_format`.
  except BaseException:
    if not registered:
      _remove_array_record_files(version_dir)
    raise
  if not has_array_record(name, data_dir):
    _remove_array_record_files(version_dir)
    raise RuntimeError(f"TFDS converted {version_dir} but did not register {ARRAY_RECORD} in "
                       "its dataset_info.json; its files are removed. Run `tfds convert_format "
                       f"--dataset_version_dir {version_dir} --out_file_format {ARRAY_RECORD}` "
                       "to see TFDS's own messages.")
  return version_dir


def _remove_array_record_files(version_dir: str) -> None:
  for path in glob.glob(os.path.join(glob.escape(version_dir), f"*.{ARRAY_RECORD}-*")):
    os.remove(path)


def has_array_record(name: str, data_dir: str | os.PathLike[str] | None = None) -> bool:
  """Whether the built config `name` has ArrayRecord files that TFDS knows of."""
  name, data_dir = dataclasses.astuple(built.locate(name, data_dir))
  builder = tfds.builder(name, data_dir=data_dir)
  if not builder.is_prepared():
    return False
  proto = builder.info.as_proto
  return bool(proto.file_format == ARRAY_RECORD or ARRAY_RECORD in proto.alternative_file_formats)


def data_source(name: str, *, split: str, data_dir: str | os.PathLike[str] | None = None,
                decoders: dict[str, Any] | None = None) -> Any:
  """`tfds.data_source(name, split=split, data_dir=data_dir)`, with a clear
  error where the ArrayRecord copy is missing.

  Args:
    name: a built config with an ArrayRecord copy (`add_array_record`), e.g.
      `"korean_food/224"`.
    split: a TFDS split expression, e.g. `"train"` or `"test[:50%]"`.
    data_dir: where the config was built; TFDS's default when None.
    decoders: TFDS decoders by feature, e.g. `{"image": tfds.decode.SkipDecoding()}`
      to get the JPEG bytes.

  Returns:
    TFDS's `ArrayRecordDataSource`: `len()`, and examples by index as dicts of
    numpy values (images decoded, unless `decoders` says otherwise).

  Raises:
    ValueError: the config is not built, or has no ArrayRecord copy.
  """
  name, data_dir = dataclasses.astuple(built.locate(name, data_dir))
  if not has_array_record(name, data_dir):
    raise ValueError(f"{name} has no ArrayRecord copy: run "
                     f"photo_datasets.random_access.add_array_record ({name!r}, data_dir) once "
                     "after building it.")
  return tfds.data_source(name, split=split, data_dir=data_dir, decoders=decoders)


def sized_source(name: str, *, split: str, data_dir: str | os.PathLike[str] | None = None) -> Any:
  """The data source of a sized config with images left encoded, for `decoded`.

  Raises:
    ValueError: as `data_source`, or the config stores images at their source size.
  """
  source = data_source(name, split=split, data_dir=data_dir,
                       decoders={"image": tfds.decode.SkipDecoding()})
  if source.dataset_info.features["image"].shape[0] is None:
    raise ValueError(f"{name} stores images at their source size, and a batch needs one size: "
                     f"use a sized config such as '{name.split('/')[0]}/224'.")
  return source


def decoded(example: dict[str, Any]) -> Example:
  """`(uint8 image (H, W, 3), int64 label)` of an example of `sized_source`.

  PIL decodes, whatever is installed: TFDS's own numpy decoding takes OpenCV
  where present, a different decoder from one machine to the next.
  """
  from PIL import Image

  with Image.open(io.BytesIO(example["image"])) as image:
    # Writable: torch.as_tensor warns otherwise.
    return np.array(image.convert("RGB")), np.int64(example["label"])


class DecodedExamples:
  """`decoded` examples of `sized_source` by index: a map-style dataset for PyTorch."""

  def __init__(self, name: str, *, split: str, data_dir: str | os.PathLike[str] | None = None):
    self._source: Any = sized_source(name, split=split, data_dir=data_dir)

  def __len__(self) -> int:
    return len(self._source)

  def __getitem__(self, index: int) -> Example:
    return decoded(self._source[index])


def torch_loader(
    name: str,
    *,
    split: str = "train",
    data_dir: str | os.PathLike[str] | None = None,
    batch_size: int = 64,
    shuffle: bool = True,
    seed: int | None = None,
    num_workers: int = 0,
    drop_last: bool = True,
) -> Any:
  """A `torch.utils.data.DataLoader` of `(uint8 images (B, S, S, 3), int64 labels (B,))`.

  Args:
    name: a sized config with an ArrayRecord copy (`add_array_record`).
    split: the split to read, e.g. `"train"`.
    data_dir: where it was built; None for TFDS's default.
    batch_size: examples per batch.
    shuffle: a new order every epoch; `seed` makes the orders repeatable.
    seed: of the shuffle; None leaves it to torch's global generator.
    num_workers: decoding processes, kept between epochs; 0 decodes in this
      process. They are spawned, not forked: a child forked from a process that
      has read ArrayRecord files crashes when it reads them (array_record 0.8.6).
    drop_last: leave out the last, incomplete batch (as `pipeline.training_dataset`).

  Returns:
    The `DataLoader`: each iteration is one epoch of torch tensor batches.

  Raises:
    ValueError: the config is not built, has no ArrayRecord copy, or stores
      images at their source size.
    ImportError: PyTorch is not installed (the package's `torch` extra).
  """
  import torch  # An optional dependency.

  # Any: not a torch Dataset subclass.
  examples: Any = DecodedExamples(name, split=split, data_dir=data_dir)
  generator = None if seed is None else torch.Generator().manual_seed(seed)
  return torch.utils.data.DataLoader(
      examples, batch_size=batch_size, shuffle=shuffle, generator=generator,
      num_workers=num_workers, persistent_workers=num_workers > 0, drop_last=drop_last,
      multiprocessing_context="spawn" if num_workers else None)


def grain_dataset(
    name: str,
    *,
    split: str = "train",
    data_dir: str | os.PathLike[str] | None = None,
    batch_size: int = 64,
    seed: int | None = None,
    num_epochs: int | None = 1,
    num_workers: int = 0,
    drop_remainder: bool = True,
) -> Any:
  """A Grain `IterDataset` of `(uint8 images (B, S, S, 3), int64 labels (B,))` numpy batches.

  Args:
    name: a sized config with an ArrayRecord copy (`add_array_record`).
    split: the split to read, e.g. `"train"`.
    data_dir: where it was built; None for TFDS's default.
    batch_size: examples per batch.
    seed: of the shuffle; each epoch is shuffled anew. None draws one.
    num_epochs: epochs in one pass; None repeats forever (keep one iterator:
      each new iterator starts the worker processes again).
    num_workers: processes (`mp_prefetch`), each making whole batches; 0 works
      in this process. Their batches arrive in shared memory: close the
      iterator after use (`it.close()`).
    drop_remainder: leave out the last, incomplete batch of the pass (batches
      run on across epochs).

  Returns:
    The `IterDataset`; `iter()` of it yields the pass's batches.

  Raises:
    ValueError: the config is not built, has no ArrayRecord copy, or stores
      images at their source size.
    ImportError: Grain is not installed (the package's `grain` extra).
  """
  import grain  # An optional dependency.

  seed = random.randrange(2**32) if seed is None else seed
  # Pickled to each worker: readers reopen there.
  source = sized_source(name, split=split, data_dir=data_dir)
  ds = grain.MapDataset.source(source).shuffle(seed=seed).repeat(num_epochs)
  ds = ds.map(decoded).batch(batch_size, drop_remainder=drop_remainder)
  # One thread and two batches per process: Grain's default (16 threads, 500 batches
  # prefetched) holds gigabytes of images per worker.
  iter_ds = ds.to_iter_dataset(grain.ReadOptions(num_threads=1, prefetch_buffer_size=2))
  if num_workers:
    _parse_absl_flags()
    iter_ds = iter_ds.mp_prefetch(
        grain.multiprocessing.MultiprocessingOptions(num_workers=num_workers))
  return iter_ds


def _parse_absl_flags() -> None:
  """Grain 0.2.18's `mp_prefetch` reads an absl flag, which fails where JAX is
  installed and the program did not parse absl flags (google/grain#1355)."""
  from absl import flags

  if not flags.FLAGS.is_parsed():
    flags.FLAGS.mark_as_parsed()


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("name", help="a built config, e.g. korean_food/224")
  parser.add_argument("--data_dir", help="where it was built (TFDS's default when absent)")
  args = parser.parse_args(argv)
  try:
    folder = add_array_record(args.name, args.data_dir)
  except (built.NotBuiltError, OSError) as e:
    sys.exit(f"error: {e}")  # Not a misuse of the arguments: no usage text.
  print(f"{args.name}: ArrayRecord copy in {folder}; tfds.load still reads the TFRecords.")


if __name__ == "__main__":
  main()

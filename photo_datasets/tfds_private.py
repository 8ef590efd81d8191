"""Every private name of tensorflow-datasets that the package uses, in one place.

TFDS extends a builder through its documented hooks (`_info`,
`_split_generators`, `_generate_examples`) and its public API (`tfds.*`). The
package needs a little more: to write a split's records on its own workers
exactly as TFDS's writer would, to cut a Beam build's shards where that writer
cuts them, to count record files per split, to serialise deterministically,
to check a download against the registered checksums, and to add an
ArrayRecord copy. Each private name it needs is named here once,
with what it is for; no other module of the package imports from inside
`tensorflow_datasets` or touches a private TFDS attribute.

TFDS may change any of these in any release, so `setup.py` pins
`TFDS_VERSION`, and `tests/test_tfds_private.py` checks the shape of each name
against the installed TFDS and that no other module names a private one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from etils import epath
from tensorflow_datasets.core import example_serializer, hashing, shuffle, writer
from tensorflow_datasets.core.download import checksums, download_manager, resource
from tensorflow_datasets.core.utils import py_utils, shard_utils, tqdm_utils

# mlcroissant, imported when first used (as TFDS imports it), for `catalog.croissant`.
from tensorflow_datasets.core.utils.lazy_imports_utils import mlcroissant as mlcroissant

# The tensorflow-datasets release these names were checked against (setup.py pins it).
TFDS_VERSION = "4.9.10"

# The private methods of `tfds.core.GeneratorBasedBuilder` that `PhotoBuilder`
# overrides, besides the documented hooks, and what for.
BUILDER_OVERRIDES = {
    "_create_builder_config": "a name that is no config gets the valid forms",
    "_checksums_path": "the registered checksums live in the package's checksums/",
    "_download_and_prepare": "chooses the executor and adds the fingerprint after the records",
    "_generate_splits": "the records written by the package's workers",
    "_example_writer": "TFRecord files written without TensorFlow (`tfrecord_files`)",
    "_log_download_bytes": "no 'Unknown size' line before a build looks for its source",
    "_process_pipeline_result": "the photos Beam's workers skipped",
}

# The private attributes of a builder that the functions below read.
BUILDER_ATTRIBUTES = ("_data_dir_root", "_original_state", "_get_filename_template",
                      "_example_writer")

# What `building.writing` writes with, as TFDS's `Writer` does: the example key's
# hash, its bucket, the shard boundaries and the check for a repeated key.
Hasher = hashing.Hasher
ShardConfig = shard_utils.ShardConfig
get_bucket_number = shuffle.get_bucket_number
get_shard_boundaries = shard_utils.get_shard_boundaries
DuplicatedKeysError = shuffle.DuplicatedKeysError

# TFDS's progress bar, which `tfds.disable_progress_bar()` turns off.
progress_bar = tqdm_utils.tqdm

# The decorator of TFDS's class properties, such as `_checksums_path`.
classproperty = py_utils.classproperty

# The registered checksums of a download and the name TFDS saves it under.
load_url_infos = checksums.load_url_infos
download_file_name = resource.get_dl_fname
NonMatchingChecksumError = download_manager.NonMatchingChecksumError


def data_dir_root(builder: Any) -> epath.Path:
  """The data dir the builder was given (its `data_dir` is the config's folder in it)."""
  return epath.Path(builder._data_dir_root)


def keep_init_argument(builder: Any, name: str, value: Any) -> None:
  """Records a builder's own `__init__` argument where TFDS keeps those it
  re-creates a pickled builder from."""
  builder._original_state[name] = value


def filename_template(builder: Any, split: str) -> Any:
  """The `tfds.core.ShardedFileTemplate` of a split's record files."""
  return builder._get_filename_template(split)


def final_file_name(name: str) -> str:
  """The name of the file TFDS's writer writes under `name` until it is whole
  (`py_utils.incomplete_files`: "incomplete.<32 hex digits>.<name>"), then renames."""
  return name.split(".", 2)[2] if py_utils.is_incomplete_file(epath.Path(name)) else name


def example_writer(builder: Any) -> Any:
  """The config's `tfds.core.ExampleWriter` (its file format)."""
  return builder._example_writer()


def write_record_index(path: str, record_keys: Sequence[Any]) -> None:
  """Writes the index of a shard whose format has one (ArrayRecord), as TFDS's writer does."""
  writer._write_index_file(writer._get_index_path(path), record_keys)


def serialize_examples_with(serializer: type[Any]) -> None:
  """Makes TFDS's own writers (`Writer`, `BeamWriter`) serialise with `serializer`,
  a subclass of `tfds.core.ExampleSerializer`: they look it up by name when they
  write a split."""
  example_serializer.ExampleSerializer = serializer


class BeamWriter(writer.BeamWriter):  # type: ignore[misc]
  """TFDS's `BeamWriter`, the steps of its `write_from_pcollection` under names of
  their own, for a subclass that builds its own graph from them (`building.beam_writing`)."""

  def serialize(self, key_example: tuple[Any, Any]) -> tuple[Any, bytes]:
    """(key, encoded example) -> (hashed key, record), serialised by the split's serializer."""
    return self._serialize_example(key_example)  # type: ignore[no-any-return]

  def number_of_shards(self, num_examples: int, total_size: int) -> int:
    """The split's count of record files (its `ShardConfig`: the package's `sharding`
    policy, or `--num_shards`); TFDS's error for a split without examples."""
    return self._number_of_shards(  # type: ignore[no-any-return]
        self._check_num_examples(num_examples), total_size)

  def write_shard(self, shard: tuple[int, Any], num_shards: int) -> Any:
    """Writes (shard id, its (hashed key, record) pairs), in key order, as the split's
    file `shard id`-of-`num_shards`, every shard holding records; returns its shard info."""
    return self._write_final_shard(shard, range(num_shards))

  def store_split_info(self, shard_infos: Sequence[Any]) -> None:
    """Keeps the split's shard lengths and size where `finalize` reads them back."""
    self._store_split_info(shard_infos)


def write_beam_splits_with(beam_writer: type[BeamWriter]) -> None:
  """Makes TFDS's Beam builds write each split with `beam_writer`, a subclass of
  `BeamWriter`: `SplitBuilder` looks `writer.BeamWriter` up by name when it writes one."""
  writer.BeamWriter = beam_writer


def convert_to_file_format(version_dir: str, file_format: str) -> None:
  """`tfds convert_format` on one built config's version folder, beside its
  records, raising what fails (one worker: with more, TFDS 4.9.10 converts in a
  thread pool and drops the exceptions)."""
  from tensorflow_datasets.scripts.cli import convert_format_utils  # Imports Beam lazily.

  absl_logger = logging.getLogger("absl")
  absl_logger.addFilter(_unfilled_shard_count_warning)
  try:
    convert_format_utils.convert_dataset(out_dir=None, out_file_format=file_format,
                                         dataset_version_dir=[version_dir], num_workers=1,
                                         fail_on_error=True)
  finally:
    absl_logger.removeFilter(_unfilled_shard_count_warning)


def _unfilled_shard_count_warning(record: logging.LogRecord) -> bool:
  """False for TFDS 4.9.10's warning after a conversion that compares every split's
  shards with each split's and leaves its `%d` unfilled: it fires for any build
  of more than one split, the conversion complete."""
  return not str(record.msg).startswith("Amount of converted shards calculated during")

"""TFDS's private names: all in `photo_datasets.tfds_private`, each shaped as read.

A new tensorflow-datasets release may change any of them: these tests fail
then, naming the one to read again, instead of a build failing deep in TFDS.
"""

from __future__ import annotations

import ast
import inspect
import pathlib
import re
import textwrap

import pytest
import tensorflow_datasets as tfds
from tensorflow_datasets.core import (
  dataset_builder,
  example_serializer,
  hashing,
  shuffle,
  split_builder,
)
from tensorflow_datasets.core import writer as tfds_writer
from tensorflow_datasets.core.utils import shard_utils

import flowers_dataset
from photo_datasets import tfds_private
from photo_datasets.building import builder, reproducible

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("photo_datasets", "korean_food", "flowers_dataset")
ADAPTER = REPO / "photo_datasets" / "tfds_private.py"
# The builder hooks TFDS documents (and its own `_info`): not private.
DOCUMENTED_HOOKS = {"_info", "_split_generators", "_generate_examples"}


def _tfds_private_names() -> set[str]:
  """The private methods and attributes of TFDS's builders: their classes'
  names and the `self._name` attributes their code sets (`_data_dir_root`,
  `_original_state`, ...)."""
  names = set(dir(tfds.core.GeneratorBasedBuilder))
  for cls in tfds.core.GeneratorBasedBuilder.__mro__:
    if cls.__module__.startswith("tensorflow_datasets."):
      for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(cls)))):
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name) and node.value.id == "self"):
          names.add(node.attr)
  return {name for name in names if name.startswith("_") and not name.startswith("__")}


BUILDER_PRIVATE = _tfds_private_names() - DOCUMENTED_HOOKS


def _params(function: object) -> list[str]:
  return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


def _package_files() -> list[pathlib.Path]:
  return sorted(path for package in PACKAGES for path in (REPO / package).rglob("*.py")
                if "sample" not in path.parts and "dummy_data" not in path.parts)


def _private_uses(path: pathlib.Path) -> list[str]:
  """What `path` names inside TFDS: imports from within `tensorflow_datasets`,
  `tfds.core.<module>.…` chains, and private builder methods and attributes."""
  found = []
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensorflow_datasets"):
      found.append(f"{where} from {node.module} import ...")
    elif isinstance(node, ast.Import):
      found += [f"{where} import {alias.name}" for alias in node.names
                if alias.name.startswith("tensorflow_datasets.")]
    elif isinstance(node, ast.Attribute):
      chain = ast.unparse(node)
      if re.match(r"tfds\.core\.[a-z_]+\.", chain):
        found.append(f"{where} {chain}")
      elif node.attr in BUILDER_PRIVATE:
        found.append(f"{where} .{node.attr}")
    elif isinstance(node, ast.FunctionDef) and node.name in BUILDER_PRIVATE:
      found.append(f"{where} def {node.name}")
  return found


def test_the_pin_is_the_installed_version_and_setup_pys():
  assert tfds.__version__ == tfds_private.TFDS_VERSION, (
      "tensorflow-datasets is not the version photo_datasets/tfds_private.py was read against: "
      "read each name there again")
  assert f'"tensorflow-datasets=={tfds_private.TFDS_VERSION}"' in (REPO / "setup.py").read_text()


def test_no_other_module_names_a_private_part_of_tfds():
  """Outside the adapter, only the builder methods it lists as overridden."""
  allowed = {f".{name}" for name in tfds_private.BUILDER_OVERRIDES}
  allowed |= {f"def {name}" for name in tfds_private.BUILDER_OVERRIDES}
  uses = [use for path in _package_files() if path != ADAPTER for use in _private_uses(path)
          if use.split(" ", 1)[1] not in allowed]
  assert uses == [], "name these in photo_datasets/tfds_private.py instead"


def test_the_adapter_lists_every_private_name_it_and_the_builders_use():
  """A test of the test: the scan above finds the names the adapter holds."""
  in_adapter = " ".join(_private_uses(ADAPTER))
  for name in tfds_private.BUILDER_ATTRIBUTES:
    assert f".{name}" in in_adapter
  in_builder = {use.split(" ", 1)[1]
                for use in _private_uses(REPO / "photo_datasets" / "building" / "builder.py")}
  # `PhotoBuilder` defines each override; what else it names of TFDS's is one of them.
  assert {use for use in in_builder if use.startswith("def ")} == {
      f"def {name}" for name in tfds_private.BUILDER_OVERRIDES}
  assert {use for use in in_builder if not use.startswith("def ")} <= {
      f".{name}" for name in tfds_private.BUILDER_OVERRIDES}


def test_the_overridden_builder_methods_are_shaped_as_ours():
  for name in tfds_private.BUILDER_OVERRIDES:
    tfds_method = inspect.getattr_static(tfds.core.GeneratorBasedBuilder, name)
    ours = inspect.getattr_static(builder.PhotoBuilder, name)
    assert type(ours) is type(tfds_method), name
    if callable(tfds_method):
      assert _params(ours) == _params(tfds_method), name


def test_the_builder_attributes_work_on_a_builder(tmp_path):
  made = flowers_dataset.Builder(data_dir=tmp_path, workers=1)
  assert tfds_private.data_dir_root(made) == tmp_path
  tfds_private.keep_init_argument(made, "workers", 1)
  assert made._original_state["workers"] == 1
  template = tfds_private.filename_template(made, "train")
  assert isinstance(template, tfds.core.ShardedFileTemplate)
  assert template.split == "train" and template.dataset_name == "flowers_dataset"
  assert isinstance(tfds_private.example_writer(made), tfds.core.ExampleWriter)
  assert _params(dataset_builder.GeneratorBasedBuilder._get_filename_template) == ["self",
                                                                                   "split_name"]
  assert _params(dataset_builder.GeneratorBasedBuilder._example_writer) == ["self"]


def test_the_writer_internals_are_shaped_as_read():
  """What `building.writing` copies from TFDS's writer: keys hashed with the
  split's name, records in hash order, cut into shards by count."""
  assert _params(tfds_writer._write_index_file) == ["sharded_index_path", "record_keys"]
  assert _params(tfds_writer._get_index_path) == ["path"]
  assert _params(tfds_writer.ExampleWriter.write) == ["self", "path", "examples"]
  assert tfds_private.get_bucket_number is shuffle.get_bucket_number
  assert _params(shuffle.get_bucket_number) == ["hkey", "num_buckets", "max_hkey"]
  assert issubclass(tfds_private.DuplicatedKeysError, Exception)
  assert _params(hashing.Hasher) == ["salt"]
  assert isinstance(tfds_private.Hasher("train").hash_key("a"), int)
  assert _params(shard_utils.get_shard_boundaries) == ["num_examples", "number_of_shards"]
  assert _params(shard_utils.ShardConfig.get_number_shards)[:3] == ["self", "total_size",
                                                                    "num_examples"]
  assert _params(tfds.core.SplitInfo)[:4] == ["name", "shard_lengths", "num_bytes",
                                              "filename_template"]
  build_source = inspect.getsource(split_builder.SplitBuilder._build_from_generator)
  assert "hash_salt=split_name" in build_source and "encode_example(example)" in build_source
  assert "sorted(self._mem_buffer)" in inspect.getsource(shuffle.Shuffler._iter_mem)
  assert ("get_shard_boundaries(num_examples, num_shards)"
          in inspect.getsource(tfds_writer._get_shard_specs))


def test_tfds_writers_look_their_serializer_up_by_name():
  """`tfds_private.serialize_examples_with` works because TFDS's writers read
  `example_serializer.ExampleSerializer` when they write a split."""
  for build_split in (split_builder.SplitBuilder._build_from_generator,
                      split_builder.SplitBuilder._build_from_pcollection):
    assert "example_serializer.ExampleSerializer(" in inspect.getsource(build_split)
  tfds_serializer = reproducible.DeterministicExampleSerializer.__bases__[0]
  assert "SerializeToString()" in inspect.getsource(tfds_serializer.serialize_example)
  assert _params(tfds_serializer.get_tf_example) == ["self", "example"]
  assert _params(example_serializer.ExampleSerializer) == ["example_specs"]


def test_the_download_and_conversion_helpers_are_shaped_as_read():
  assert _params(tfds_private.load_url_infos) == ["path"]
  assert _params(tfds_private.download_file_name) == ["url", "checksum"]
  assert issubclass(tfds_private.NonMatchingChecksumError, Exception)
  from tensorflow_datasets.scripts.cli import convert_format_utils

  params = _params(convert_format_utils.convert_dataset)
  for name in ("out_dir", "out_file_format", "dataset_version_dir", "num_workers",
               "fail_on_error"):
    assert name in params
  assert callable(tfds_private.progress_bar)
  assert callable(tfds_private.classproperty)


@pytest.mark.parametrize("name", sorted(tfds_private.BUILDER_OVERRIDES))
def test_each_override_is_an_attribute_of_tfds_builders(name):
  assert name in BUILDER_PRIVATE

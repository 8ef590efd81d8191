"""`photo_datasets.reading.random_access`: the ArrayRecord copy of a built config, and
the PyTorch and Grain loaders over it (skipped where those are not installed)."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import korean_food
from photo_datasets.building import configs
from photo_datasets.reading import pipeline, random_access
from photo_datasets.testing import build

SAMPLE_DIR = pathlib.Path(korean_food.__file__).parent / "sample"
NAME = "korean_food/224"  # A config defined in code: the one TFDS 4.9.10 trips on.
SPLITS = ("train", "validation", "test")
TRAIN_SIZE = 33  # The sample's train split.


@pytest.fixture(scope="module")
def data_dir(samples, tmp_path_factory) -> str:
  # Gets ArrayRecord files.
  data_dir = samples.copy(tmp_path_factory.mktemp("random_access") / "data", NAME)
  random_access.add_array_record(NAME, data_dir)
  return str(data_dir)


def _version_dir(data_dir: str) -> pathlib.Path:
  return pathlib.Path(tfds.builder(NAME, data_dir=data_dir).data_dir)


def _digest(image: np.ndarray) -> str:
  return hashlib.sha1(np.ascontiguousarray(image).tobytes()).hexdigest()


def test_each_tfrecord_shard_gets_an_array_record_twin_and_tfrecord_stays_the_format(data_dir):
  folder = _version_dir(data_dir)
  tfrecords = sorted(p.name for p in folder.glob("*.tfrecord-*"))
  assert tfrecords and sorted(p.name for p in folder.glob("*.array_record-*")) == [
      name.replace(".tfrecord-", ".array_record-") for name in tfrecords]
  info = json.loads((folder / "dataset_info.json").read_text())
  assert info["fileFormat"] == "tfrecord" and info["alternativeFileFormats"] == ["array_record"]

  builder = tfds.builder(NAME, data_dir=data_dir)
  assert builder.info.file_format == tfds.core.FileFormat.TFRECORD
  assert all(".tfrecord-" in str(path) for path in builder.info.splits["train"].filepaths)
  assert sum(1 for _ in tfds.load(NAME, split="train", data_dir=data_dir)) == TRAIN_SIZE
  images, labels = next(iter(pipeline.training_dataset(NAME, batch_size=8, data_dir=data_dir)))
  assert images.shape == (8, 224, 224, 3) and labels.shape == (8,)


def test_adding_it_again_changes_nothing(data_dir):
  folder = _version_dir(data_dir)
  before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
  assert random_access.add_array_record(NAME, data_dir) == str(folder)
  assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before


@pytest.mark.parametrize("split", SPLITS)
def test_data_source_gives_what_tfds_load_gives(data_dir, split):
  source = random_access.data_source(NAME, split=split, data_dir=data_dir)
  raw = random_access.data_source(NAME, split=split, data_dir=data_dir,
                                  decoders={"image": tfds.decode.SkipDecoding()})
  loaded = {ex["file_name"]: ex for ex in tfds.as_numpy(tfds.load(
      NAME, split=split, data_dir=data_dir, decoders={"image": tfds.decode.SkipDecoding()}))}
  decoded_by_tf = {ex["file_name"]: ex["image"]
                   for ex in tfds.as_numpy(tfds.load(NAME, split=split, data_dir=data_dir))}
  assert len(source) == len(loaded) > 0
  for index in range(len(source)):
    example, stored = source[index], raw[index]
    expected = loaded[example["file_name"]]
    assert set(example) == set(expected)
    for key in expected:
      if key != "image":
        assert example[key] == expected[key], key
    assert stored["image"] == expected["image"]  # The stored JPEG, byte for byte.
    # Pixels: libjpeg's accurate DCT; tfds.load's TensorFlow decode uses the fast one.
    accurate = tf.io.decode_jpeg(expected["image"], channels=3,
                                 dct_method="INTEGER_ACCURATE").numpy()
    np.testing.assert_array_equal(example["image"], accurate)
    difference = np.abs(example["image"].astype(int) - decoded_by_tf[example["file_name"]])
    # On the sample: at most 5, 1.7 on average.
    assert difference.max() <= 8 and difference.mean() < 2


def test_a_split_expression_and_the_examples_by_index(data_dir):
  source = random_access.data_source(NAME, split="train[:10]+test", data_dir=data_dir)
  train = random_access.data_source(NAME, split="train", data_dir=data_dir)
  assert len(source) == 14
  assert source[3]["file_name"] == train[3]["file_name"]


def test_restored_info_lists_the_copy(data_dir):
  """What PhotoBuilder does for the plain `tfds.data_source` on configs defined in code."""
  builder = tfds.builder(NAME, data_dir=data_dir)
  configs.restore_alternative_file_formats(builder.info)
  configs.restore_alternative_file_formats(builder.info)  # Twice: no duplicate.
  assert builder.info.alternative_file_formats == [tfds.core.FileFormat.ARRAY_RECORD]
  assert len(builder.as_data_source(split="train")) == TRAIN_SIZE


def test_plain_tfds_data_source(data_dir):
  assert len(tfds.data_source(NAME, split="train", data_dir=data_dir)) == TRAIN_SIZE


def _run_read_only(folder: pathlib.Path, command: list[str]) -> subprocess.CompletedProcess[str]:
  """`command` run with `folder` read-only: mounted so in a mount namespace of its own for root
  (whom permissions do not stop), its permissions taken away otherwise."""
  if os.geteuid() != 0:
    subprocess.run(["chmod", "-R", "a-w", os.fspath(folder)], check=True)
    try:
      return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    finally:
      subprocess.run(["chmod", "-R", "u+w", os.fspath(folder)], check=True)
  if not shutil.which("unshare"):
    pytest.skip("root without unshare: no read-only folder to test with")
  mount = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'
  done = subprocess.run(["unshare", "-m", "sh", "-c", mount, os.fspath(folder), *command],
                        capture_output=True, text=True, timeout=300, check=False)
  if "mount:" in done.stderr or "unshare:" in done.stderr:
    pytest.skip(f"no read-only mount here: {done.stderr.strip()[:200]}")
  return done


def test_a_read_only_data_dir_is_refused_in_one_line(samples, tmp_path):
  data_dir = samples.copy(tmp_path / "data", NAME)
  done = _run_read_only(data_dir, [sys.executable, "-m", "photo_datasets", "random_access", NAME,
                                   "--data_dir", os.fspath(data_dir)])
  assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
  last = done.stderr.strip().splitlines()[-1]
  assert last.startswith(f"error: [Errno 13] cannot add an ArrayRecord copy to {NAME}: its folder "
                         "cannot be written"), last
  assert last.endswith(f"'{_version_dir(os.fspath(data_dir))}'")
  assert not list(_version_dir(os.fspath(data_dir)).glob("*array_record*"))


def test_a_relative_data_dir_and_a_stopped_conversions_files(samples, tmp_path, monkeypatch,
                                                              capsys):
  """The command as a newcomer types it: a relative data dir, where a stopped run left an
  unregistered ArrayRecord file; TFDS's warnings with their numbers left out stay quiet."""
  data_dir = samples.copy(tmp_path / "runs" / "ra", NAME)
  leftover = _version_dir(data_dir) / "korean_food-train.array_record-00000-of-00001"
  leftover.write_bytes(b"the first bytes of a conversion that was stopped")
  monkeypatch.chdir(tmp_path)
  capsys.readouterr()  # The build's lines, where this test built the sample.
  random_access.main([NAME, "--data_dir", os.path.join("runs", "ra")])
  out, err = capsys.readouterr()
  assert out.startswith(f"{NAME}: ArrayRecord copy in {_version_dir(data_dir)};"), out
  assert "%d" not in err and "%s" not in err
  source = random_access.data_source(NAME, split="train", data_dir=os.path.join("runs", "ra"))
  assert len(source) == TRAIN_SIZE and source[TRAIN_SIZE - 1]["image"].shape == (224, 224, 3)


def test_a_config_without_the_copy_is_refused(tmp_path):
  with pytest.raises(ValueError, match="not built"):
    random_access.add_array_record("korean_food/16", tmp_path)
  build("korean_food/16", tmp_path, SAMPLE_DIR)
  assert not random_access.has_array_record("korean_food/16", tmp_path)
  with pytest.raises(ValueError, match="add_array_record"):
    random_access.data_source("korean_food/16", split="train", data_dir=tmp_path)


def _stored_digests(data_dir: str) -> list[str]:
  source = random_access.sized_source(NAME, split="train", data_dir=data_dir)
  return [_digest(random_access.decoded(source[i])[0]) for i in range(len(source))]


def _check_batches(batches: list[tuple[np.ndarray, np.ndarray]], batch_size: int) -> None:
  for images, labels in batches[:-1]:
    assert images.dtype == np.uint8 and images.shape == (batch_size, 224, 224, 3)
    assert labels.dtype == np.int64 and labels.shape == (batch_size,)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_torch_loader_epochs_hold_every_example_once_in_new_orders(data_dir, num_workers):
  torch = pytest.importorskip("torch")
  loader = random_access.torch_loader(NAME, data_dir=data_dir, batch_size=8, seed=0,
                                      num_workers=num_workers, drop_last=False)
  images, labels = next(iter(loader))
  assert images.dtype == torch.uint8 and tuple(images.shape) == (8, 224, 224, 3)
  assert labels.dtype == torch.int64 and tuple(labels.shape) == (8,)
  stored = _stored_digests(data_dir)
  epochs = []
  for _ in range(2):
    batches = [(images.numpy(), labels.numpy()) for images, labels in loader]
    _check_batches(batches, 8)
    epochs.append([_digest(image) for images, _ in batches for image in images])
  assert sorted(epochs[0]) == sorted(epochs[1]) == sorted(stored)
  assert stored != epochs[0] != epochs[1]


def test_breaking_out_of_the_torch_loader_ends_quietly(data_dir, tmp_path):
  """A program that leaves its worker processes mid-epoch (a break, or the iterator kept until
  the interpreter exits) ends with its own output only: no DataLoader-worker traceback."""
  pytest.importorskip("torch")
  script = tmp_path / "early_break.py"  # A file, not stdin: spawned workers import the main module.
  script.write_text(textwrap.dedent(f"""
      from photo_datasets.reading import random_access
      if __name__ == "__main__":
        loader = random_access.torch_loader({NAME!r}, data_dir={data_dir!r},
                                            batch_size=1, num_workers=2)
        for images, labels in loader:
          break
        kept = iter(loader)
        next(kept)
        print("done")
      """))
  done = subprocess.run([sys.executable, os.fspath(script)], capture_output=True, text=True,
                        timeout=300, check=False)
  assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-3000:]
  assert ("Traceback" not in done.stderr
          and "DataLoader worker" not in done.stderr), done.stderr[-3000:]


def test_torch_loader_drops_the_incomplete_batch_by_default(data_dir):
  pytest.importorskip("torch")
  loader = random_access.torch_loader(NAME, data_dir=data_dir, batch_size=8)
  assert [len(labels) for _, labels in loader] == [8] * (TRAIN_SIZE // 8)


def test_full_configs_are_refused_by_the_loaders(samples, tmp_path):
  data_dir = samples.copy(tmp_path / "data", "korean_food/full")
  random_access.add_array_record("korean_food/full", data_dir)
  with pytest.raises(ValueError, match="source size"):
    random_access.sized_source("korean_food/full", split="train", data_dir=data_dir)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_grain_dataset_epochs_hold_every_example_once_in_new_orders(data_dir, num_workers):
  pytest.importorskip("grain")
  ds = random_access.grain_dataset(NAME, data_dir=data_dir, batch_size=8, seed=0, num_epochs=2,
                                   num_workers=num_workers, drop_remainder=False)
  iterator = iter(ds)
  try:
    batches = [(np.array(images), np.array(labels)) for images, labels in iterator]
  finally:
    if hasattr(iterator, "close"):
      iterator.close()
  _check_batches(batches, 8)
  digests = [_digest(image) for images, _ in batches for image in images]
  stored = _stored_digests(data_dir)
  first, second = digests[:TRAIN_SIZE], digests[TRAIN_SIZE:]
  assert sorted(first) == sorted(second) == sorted(stored)
  assert stored != first != second

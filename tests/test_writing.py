"""Records written by the worker processes (photo_datasets/building/writing.py):
the same files, byte for byte, as TFDS's own writer in the main process (the
private parts of tensorflow-datasets it relies on: tests/test_tfds_private.py)."""

from __future__ import annotations

import filecmp
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow_datasets as tfds

import flowers_dataset
import korean_food
from photo_datasets.building import builder, sharding, tfrecord_files, writing

SOURCES = {
    "flowers_dataset": pathlib.Path(flowers_dataset.__file__).parent / "sample",
    "korean_food": pathlib.Path(korean_food.__file__).parent / "sample",
}


def _build(data_dir: pathlib.Path, name: str, monkeypatch: pytest.MonkeyPatch, *, in_workers: bool,
           **download: object) -> tfds.core.DatasetBuilder:
  monkeypatch.setattr(builder.PhotoBuilder, "WRITE_IN_WORKERS", in_workers)
  made = tfds.builder(name, data_dir=os.fspath(data_dir), workers=2)
  made.download_and_prepare(download_config=tfds.download.DownloadConfig(
      manual_dir=os.fspath(SOURCES[name.split("/")[0]]), **download))  # type: ignore[arg-type]
  return made


def _page(path: str, data_dir: pathlib.Path) -> str:
  """The report page, less what names its data dir and the build's time."""
  text = open(path, encoding="utf-8").read().replace(os.fspath(data_dir), "DATA_DIR")
  return re.sub(r"[\d.]+ s \(scan and conversion\)", "",
                re.sub(r"Written [\d-]+ [\d:]+ UTC", "", text))


def _assert_same_files(ours: tfds.core.DatasetBuilder,
                       theirs: tfds.core.DatasetBuilder) -> list[str]:
  names = sorted(os.listdir(ours.data_dir))
  assert names == sorted(os.listdir(theirs.data_dir))
  assert not [n for n in names if "spill" in n]
  for name in names:
    mine, tfds_own = os.path.join(ours.data_dir, name), os.path.join(theirs.data_dir, name)
    if name == "report.html":
      assert _page(mine, pathlib.Path(ours.data_dir).parents[2]) == \
          _page(tfds_own, pathlib.Path(theirs.data_dir).parents[2])
    else:
      assert filecmp.cmp(mine, tfds_own, shallow=False), name
  return names


@pytest.mark.parametrize("name", ["korean_food/64", "korean_food/full", "flowers_dataset/full"])
def test_the_workers_write_what_tfds_writes(tmp_path, monkeypatch, name):
  # Several shards a split, cut where TFDS cuts.
  monkeypatch.setattr(sharding, "EXAMPLES_PER_FILE", 7)
  ours = _build(tmp_path / "ours", name, monkeypatch, in_workers=True)
  theirs = _build(tmp_path / "tfds", name, monkeypatch, in_workers=False)
  names = _assert_same_files(ours, theirs)
  assert ours.info.splits["train"].num_shards >= 3
  assert sum(".tfrecord-" in n for n in names) == sum(
      s.num_shards for s in ours.info.splits.values())
  for split in ours.info.splits:
    assert [(os.path.basename(f.filename), f.skip, f.take, f.examples_in_shard)
            for f in ours.info.splits[split].file_instructions] == [
        (os.path.basename(f.filename), f.skip, f.take, f.examples_in_shard)
        for f in theirs.info.splits[split].file_instructions]


@pytest.mark.parametrize(("name", "made_in_the_scan"),
                         [("korean_food/64", True), ("korean_food/full", False)])
def test_a_sized_configs_scan_makes_the_records(tmp_path, monkeypatch, name, made_in_the_scan):
  """A sized config's scan converts every photo here and makes its record: the writer's first
  pass serialises none (in this process, with one worker); `full`'s scan converts none."""
  serialised = []
  serialise = writing._Serialize.__call__

  def counted(self, item):  # type: ignore[no-untyped-def]
    serialised.append(item[0])
    return serialise(self, item)

  monkeypatch.setattr(writing._Serialize, "__call__", counted)
  monkeypatch.setattr(builder.PhotoBuilder, "WRITE_IN_WORKERS", True)
  made = tfds.builder(name, data_dir=os.fspath(tmp_path), workers=1)
  made.download_and_prepare(download_config=tfds.download.DownloadConfig(
      manual_dir=os.fspath(SOURCES["korean_food"])))
  examples = sum(split.num_examples for split in made.info.splits.values())
  assert examples > 0
  assert len(serialised) == (0 if made_in_the_scan else examples)


def test_num_shards_is_honoured_as_tfds_honours_it(tmp_path, monkeypatch):
  ours = _build(tmp_path / "ours", "flowers_dataset/32", monkeypatch, in_workers=True, num_shards=5)
  theirs = _build(tmp_path / "tfds", "flowers_dataset/32", monkeypatch, in_workers=False,
                  num_shards=5)
  _assert_same_files(ours, theirs)
  assert {split: info.num_shards for split, info in ours.info.splits.items()} == \
      dict.fromkeys(ours.info.splits, 5)


# A build slowed down while its workers write the record files: the records lie in the spill
# files (`full`) or in the scan's files (a sized config, whose scan made them).
_SLOW_BUILD = """
import sys, time
import flowers_dataset
from photo_datasets import testing
from photo_datasets.building import tfrecord_files
real = tfrecord_files.write
def slow(path, records):
  print("WRITING", flush=True)
  time.sleep(0.5)
  return real(path, records)
tfrecord_files.write = slow
testing.build(sys.argv[3], sys.argv[1], sys.argv[2], workers=2)
"""


@pytest.mark.parametrize("name", ["flowers_dataset/64", "flowers_dataset/full"])
def test_ctrl_c_while_the_workers_write_leaves_nothing(tmp_path, name):
  data_dir = tmp_path / "data"
  build = subprocess.Popen([sys.executable, "-c", _SLOW_BUILD, str(data_dir),
                            str(SOURCES["flowers_dataset"]), name],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           start_new_session=True)
  try:
    assert build.stdout is not None
    assert any("WRITING" in line for line in build.stdout), "the build never wrote a record file"
    os.killpg(build.pid, signal.SIGINT)  # As a terminal sends Ctrl-C: to the build and its workers.
    assert build.wait(timeout=60) != 0
  finally:
    build.kill()
    build.wait()
  deadline = time.monotonic() + 10
  while time.monotonic() < deadline:
    try:
      os.killpg(build.pid, 0)
    except ProcessLookupError:
      break
    time.sleep(0.2)
  else:
    pytest.fail("a worker outlived the interrupted build")
  left = [p.relative_to(data_dir) for p in data_dir.rglob("*")]
  assert not [p for p in left if "incomplete." in str(p) or "spill" in str(p)
              or "converted." in str(p) or ".tfrecord" in str(p)], left


def test_tfrecord_files_are_tensorflows_bytes(tmp_path):
  """Records of every size a CRC and a length field meet (none, one byte, across 64 KiB), written
  without TensorFlow: TensorFlow's own writer's bytes, read back by `tf.data`."""
  import tensorflow as tf

  rng = np.random.default_rng(7)
  records = [b"", b"\x00", *(rng.bytes(n) for n in (1, 7, 255, 65_537, 300_000))]
  tfrecord_files.write(tmp_path / "ours.tfrecord", records)
  with tf.io.TFRecordWriter(os.fspath(tmp_path / "tf.tfrecord")) as writer:
    for record in records:
      writer.write(record)
  assert (tmp_path / "ours.tfrecord").read_bytes() == (tmp_path / "tf.tfrecord").read_bytes()
  read = [r.numpy() for r in tf.data.TFRecordDataset(os.fspath(tmp_path / "ours.tfrecord"))]
  assert read == records


# What a worker that writes a split imports.
_WORKER_MODULES = """
import sys
import flowers_dataset
from photo_datasets import testing
from photo_datasets.building import writing
real = writing._WriteShard.__call__
def noted(self, shard):
  done = real(self, shard)
  print("TF IN WORKER" if "tensorflow" in sys.modules else "NO TF IN WORKER", flush=True)
  return done
writing._WriteShard.__call__ = noted
testing.build("flowers_dataset/32", sys.argv[1], sys.argv[2], workers=2)
"""


def test_the_workers_write_shards_without_tensorflow(tmp_path):
  done = subprocess.run([sys.executable, "-c", _WORKER_MODULES, os.fspath(tmp_path / "data"),
                         os.fspath(SOURCES["flowers_dataset"])], capture_output=True, text=True,
                        timeout=600, env={**os.environ, "PHOTO_DATASETS_START_METHOD": "fork",
                                          "TF_CPP_MIN_LOG_LEVEL": "2"})
  assert done.returncode == 0, done.stderr[-3000:]
  said = done.stdout.splitlines()
  assert "NO TF IN WORKER" in said and "TF IN WORKER" not in said

"""What a build needs of the disk and what an interrupted build leaves on it
(photo_datasets/disk.py): the space checked before the conversion, a disk
that fills up anyway, and the leftovers of a killed build removed by the next."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import time
import uuid

import pytest

import flowers_dataset
from photo_datasets.build import disk
from photo_datasets.testing import build, read_examples

FLOWERS = pathlib.Path(flowers_dataset.__file__).parent / "sample"


def _config_dir(data_dir: pathlib.Path, name: str) -> pathlib.Path:
  return data_dir / name.replace("/", os.sep)


def test_a_data_dir_too_small_stops_the_build_before_the_conversion(tmp_path, monkeypatch):
  monkeypatch.setattr(disk, "free_bytes", lambda path: 3_000_000)  # 3 MB free; the sample's full needs ~6.
  start = time.monotonic()
  with pytest.raises(disk.NotEnoughDiskSpace) as raised:
    build("flowers_dataset/full", tmp_path / "data", FLOWERS)
  assert time.monotonic() - start < 30
  message = str(raised.value)
  assert "Not enough disk space to build flowers_dataset/full: it needs about" in message
  assert f"in {tmp_path / 'data'}" in message and "3 MB is free there" in message
  assert "--data_dir" in message and "--config 224" in message
  # Nothing half-built is left, and nothing was scanned (no saved scan).
  assert not list(_config_dir(tmp_path / "data", "flowers_dataset/full").glob("*/*.tfrecord*"))
  assert not list(_config_dir(tmp_path / "data", "flowers_dataset/full").glob("incomplete.*"))
  assert not list((tmp_path / "data").rglob("scans/*.json"))


def test_the_estimate_is_close_to_what_a_build_writes(tmp_path):
  for config in ("224", "full"):
    builder = build(f"flowers_dataset/{config}", tmp_path / "data", FLOWERS)
    written = sum(p.stat().st_size for p in pathlib.Path(builder.data_dir).glob("*.tfrecord*"))
    photos = sum(split.num_examples for split in builder.info.splits.values())
    source = sum(p.stat().st_size for p in (FLOWERS / "flower_photos").glob("*/*.jpg"))
    estimate = disk.stored_bytes(builder.builder_config.image_size, photos, source)
    assert written <= estimate <= 1.6 * written, config


def _tmpfs(path: pathlib.Path, size: str) -> pathlib.Path:
  path.mkdir()
  if not sys.platform.startswith("linux") or subprocess.run(
      ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True).returncode:
    pytest.skip("cannot mount a small filesystem here (needs Linux and root)")
  return path


def test_a_disk_that_fills_up_anyway_ends_the_build_in_the_same_words(tmp_path, monkeypatch):
  data_dir = _tmpfs(tmp_path / "small", "2m")  # The sample's full config needs ~6 MB.
  try:
    monkeypatch.setattr(disk, "free_bytes", lambda path: 10**12)  # The check is fooled: the disk fills up.
    with pytest.raises(disk.NotEnoughDiskSpace) as raised:
      build("flowers_dataset/full", data_dir, FLOWERS, download_dir=tmp_path / "downloads")
    assert str(raised.value).startswith("[Errno 28] The disk filled up. Not enough disk space to build "
                                        "flowers_dataset/full: it needs about")
    assert not list(data_dir.rglob("*.tfrecord*"))  # Nothing half-built is left behind.
  finally:
    subprocess.run(["umount", str(data_dir)], check=True)


# A build killed (SIGKILL) in the middle of writing its train split.
_KILLED_BUILD = """
import sys, time
import flowers_dataset
from photo_datasets.build import generation
from photo_datasets import testing
real, made = generation.ExampleMaker.with_image, []
def slow(self, photo, image):
  made.append(1)
  if len(made) == 30:
    print("WRITING", flush=True)
    time.sleep(600)
  return real(self, photo, image)
generation.ExampleMaker.with_image = slow
testing.build("flowers_dataset/64", sys.argv[1], sys.argv[2], workers=2)
"""


def test_the_next_build_removes_and_reports_what_a_killed_build_left(tmp_path, capsys):
  data_dir = tmp_path / "data"
  killed = subprocess.Popen([sys.executable, "-c", _KILLED_BUILD, str(data_dir), str(FLOWERS)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
  try:
    assert killed.stdout is not None
    assert any("WRITING" in line for line in killed.stdout), "the build never reached its train split"
  finally:
    killed.kill()
    killed.wait()
  config_dir = _config_dir(data_dir, "flowers_dataset/64")
  (leftover,) = config_dir.glob("incomplete.*")
  (leftover / "bucket_0_000.tmp").write_bytes(os.urandom(2_000_000))  # As TFDS's shuffle spills (> 1 GB).

  rebuilt = build("flowers_dataset/64", data_dir, FLOWERS, workers=2)

  said = capsys.readouterr().out
  assert f"flowers_dataset/64: removed what an interrupted build left in {config_dir}: {leftover.name} (2 MB freed)" \
      in said
  assert not list(config_dir.glob("incomplete.*"))
  clean = build("flowers_dataset/64", tmp_path / "clean", FLOWERS, workers=2)
  assert read_examples(rebuilt) == read_examples(clean)


def test_leftovers_of_a_build_still_running_are_left_alone(tmp_path):
  config_dir = tmp_path / "flowers_dataset" / "64"
  running = config_dir / f"incomplete.{uuid.uuid4().hex[:6]}_1.0.0"
  running.mkdir(parents=True)
  with disk.config_lock(os.fspath(config_dir)) as first:
    with disk.config_lock(os.fspath(config_dir)) as second:
      assert first and not second  # A second build of the config does not get the lock ...
  assert running.exists()  # ... and so removes nothing; with the lock, the folder goes.
  with disk.config_lock(os.fspath(config_dir)) as held:
    assert held and disk.remove_leftovers(os.fspath(config_dir)).endswith("(0 MB freed)")
  assert not running.exists()
  shutil.rmtree(config_dir)


def test_a_config_folder_that_cannot_be_written_only_skips_the_cleanup(tmp_path):
  (tmp_path / "not_a_folder").write_text("")
  with disk.config_lock(os.fspath(tmp_path / "not_a_folder" / "64")) as held:
    assert not held  # As for a read-only copy of a built dataset: it still loads.

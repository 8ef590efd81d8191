"""The corpus walk runs once per source: every later config reuses its result."""

from __future__ import annotations

import os
import pathlib
import shutil

import tensorflow_datasets as tfds

import korean_food  # noqa: F401  (registers the builder)
from photo_datasets import images

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"


def _build(config, manual_dir, data_dir):
  # One worker: every decode happens in this process, where the test counts them.
  builder = tfds.builder("korean_food", config=config, data_dir=os.fspath(data_dir), workers=1)
  builder.download_and_prepare(
      download_config=tfds.download.DownloadConfig(manual_dir=os.fspath(manual_dir)))
  return builder


def test_later_configs_reuse_the_scan_until_the_source_changes(tmp_path, monkeypatch):
  manual_dir = tmp_path / "manual"
  shutil.copytree(SAMPLE, manual_dir)
  inspected = []
  real_inspect = images.inspect_image
  monkeypatch.setattr(images, "inspect_image",
                      lambda data: inspected.append(len(data)) or real_inspect(data))

  first = _build("224", manual_dir, tmp_path / "data")
  scanned = len(inspected)
  assert scanned > 30

  second = _build("full", manual_dir, tmp_path / "data")
  assert len(inspected) == scanned  # No file decoded again for the scan.
  assert dict(second.info.metadata) == dict(first.info.metadata)
  assert ({s: i.num_examples for s, i in second.info.splits.items()}
          == {s: i.num_examples for s, i in first.info.splits.items()})

  os.utime(manual_dir / "kfood.zip", ns=(1, 1))  # The source changed: scan again.
  _build("96", manual_dir, tmp_path / "data")
  assert len(inspected) == 2 * scanned


def test_scan_is_never_written_into_the_manual_dir(tmp_path):
  manual_dir = tmp_path / "manual"
  shutil.copytree(SAMPLE, manual_dir)
  def files():  # TFDS itself adds an empty `extracted/` folder to a download dir.
    return sorted(p.relative_to(manual_dir) for p in manual_dir.rglob("*") if p.is_file())

  before = files()
  builder = tfds.builder("korean_food", config="64", data_dir=os.fspath(tmp_path / "data"))
  # As in TFDS's test harness: downloads and manual data in one folder.
  builder.download_and_prepare(
      download_dir=os.fspath(manual_dir),
      download_config=tfds.download.DownloadConfig(manual_dir=os.fspath(manual_dir)))
  assert builder.info.splits["train"].num_examples > 0
  assert files() == before

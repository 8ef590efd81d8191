"""A failure while converting one already validated image never stops a build."""

from __future__ import annotations

import os
import pathlib
import shutil

import tensorflow_datasets as tfds

import flowers_dataset
from photo_datasets import images

SAMPLE = pathlib.Path(flowers_dataset.__file__).parent / "sample" / "flower_photos"


def test_conversion_failure_skips_that_photo_and_is_reported(tmp_path, monkeypatch):
  manual = tmp_path / "manual" / "flower_photos"
  for label in ("daisy", "roses"):
    shutil.copytree(SAMPLE / label, manual / label)
  victim = "roses/" + sorted(os.listdir(manual / "roses"))[0]
  real_encode = images.encode_image

  def encode_failing_on_victim(data, check, **kwargs):
    if data == (manual.parent / "flower_photos" / victim).read_bytes():
      raise OSError("simulated decoder failure")
    return real_encode(data, check, **kwargs)

  monkeypatch.setattr(images, "encode_image", encode_failing_on_victim)
  builder = tfds.builder("flowers_dataset", config="224", data_dir=os.fspath(tmp_path / "data"))
  builder.download_and_prepare(
      download_config=tfds.download.DownloadConfig(manual_dir=os.fspath(tmp_path / "manual")))

  assert {"file_name": victim, "reason": "conversion failed: simulated decoder failure"} in (
      builder.info.metadata["skipped_files"])
  stored = {ex["file_name"].decode() for split in builder.info.splits
            for ex in tfds.as_numpy(builder.as_dataset(split=split))}
  assert victim not in stored
  assert len(stored) == 39

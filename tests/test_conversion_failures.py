"""A failure while converting one already validated photo never stops a build:
that photo is skipped and reported. (Under Beam: test_beam.py; a worker process
killed while converting: test_workers.py.)"""

from __future__ import annotations

import pathlib
import shutil

import flowers_dataset
from photo_datasets.photos import images
from photo_datasets.testing import build, read_examples

SAMPLE = pathlib.Path(flowers_dataset.__file__).parent / "sample" / "flower_photos"


def test_conversion_failure_skips_that_photo_and_is_reported(tmp_path, monkeypatch):
  manual = tmp_path / "manual" / "flower_photos"
  for label in ("daisy", "roses"):
    shutil.copytree(SAMPLE / label, manual / label)
  victim = "roses/" + sorted(path.name for path in (manual / "roses").iterdir())[0]
  victim_bytes = (manual / victim).read_bytes()
  real_encode = images.encode_image

  def encode_failing_on_victim(data, check, **kwargs):
    if data == victim_bytes:
      raise OSError("simulated decoder failure")
    return real_encode(data, check, **kwargs)

  monkeypatch.setattr(images, "encode_image", encode_failing_on_victim)
  builder = build("flowers_dataset/224", tmp_path / "data", tmp_path / "manual")

  assert {"file_name": victim, "reason": "conversion failed: simulated decoder failure"} in (
      builder.info.metadata["skipped_files"])
  stored = read_examples(builder)
  assert victim not in stored
  assert len(stored) == 39

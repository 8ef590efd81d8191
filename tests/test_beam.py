"""With Beam options the builders run as a Beam pipeline and give the same dataset."""

from __future__ import annotations

import logging
import os
import pathlib

import apache_beam as beam
import tensorflow_datasets as tfds

import korean_food
from photo_datasets import images

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"


def _examples(builder) -> dict[str, tuple]:
  found = {}
  for split in builder.info.splits:
    ds = builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()})
    for ex in tfds.as_numpy(ds):
      found[ex["file_name"].decode()] = (split, ex["label"], ex["image"])
  return found


def test_beam_build_equals_the_single_process_build(tmp_path, caplog):
  caplog.set_level(logging.INFO)
  built, beam_writer_logs = {}, {}
  for mode, options in [("single", None),
                        ("beam", beam.options.pipeline_options.PipelineOptions(["--runner=DirectRunner"]))]:
    builder = tfds.builder("korean_food", config="64", data_dir=os.fspath(tmp_path / mode))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=os.fspath(SAMPLE), beam_options=options))
    built[mode] = builder
    beam_writer_logs[mode] = sum("using BeamWriter" in r.getMessage() for r in caplog.records)
    caplog.clear()

  assert beam_writer_logs == {"single": 0, "beam": 3}  # One per split.
  single, with_beam = _examples(built["single"]), _examples(built["beam"])
  assert len(single) == 40
  assert with_beam.keys() == single.keys()
  for name, (split, label, image) in single.items():
    assert with_beam[name][:2] == (split, label), name
    assert with_beam[name][2] == image, name
  assert (dict(built["beam"].info.metadata)["skipped_files"]
          == dict(built["single"].info.metadata)["skipped_files"])


def test_a_conversion_failure_is_reported_as_in_a_local_build(tmp_path, monkeypatch):
  victim = "구이/갈비구이/Img_000_0001.jpg"
  real_encode = images.encode_image
  victim_bytes = []

  def fail_on_victim(data, check, **kwargs):
    if data in victim_bytes:
      raise OSError("simulated decoder failure")
    return real_encode(data, check, **kwargs)

  local = tfds.builder("korean_food", config="64", data_dir=os.fspath(tmp_path / "local"))
  beam_build = tfds.builder("korean_food", config="64", data_dir=os.fspath(tmp_path / "beam"))
  for source in korean_food.corpus.walk(SAMPLE):
    if "/".join(source[0].parts[-3:]) == victim:
      victim_bytes.append(source[1]())
  assert victim_bytes
  monkeypatch.setattr(images, "encode_image", fail_on_victim)
  for builder, options in [(local, None), (beam_build, ["--runner=DirectRunner"])]:
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=os.fspath(SAMPLE),
        beam_options=options and beam.options.pipeline_options.PipelineOptions(options)))

  expected = {"file_name": victim, "reason": "conversion failed: simulated decoder failure"}
  assert expected in local.info.metadata["skipped_files"]
  assert dict(beam_build.info.metadata) == dict(local.info.metadata)
  assert _examples(beam_build).keys() == _examples(local).keys()
  assert victim not in _examples(beam_build)
  assert not list(pathlib.Path(beam_build.data_dir).glob("*skipped*"))  # Nothing left over.

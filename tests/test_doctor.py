"""`python -m photo_datasets doctor`: what limits training, on the bundled flower photos."""

from __future__ import annotations

import json
import os
import pathlib

import keras
import pytest

import flowers_dataset
from photo_datasets.commands import doctor
from photo_datasets.testing import build

SAMPLE = pathlib.Path(flowers_dataset.__file__).parent / "sample"
NAME, SIZE, CLASSES = "flowers_dataset/64", 64, 5


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> str:
  data_dir = tmp_path_factory.mktemp("doctor")
  build(NAME, data_dir, SAMPLE)  # 81 train photos
  return os.fspath(data_dir)


def _saved(path: pathlib.Path, convolutions: int) -> str:
  """A uint8 classifier with `convolutions` full-resolution 64-filter layers:
  none is the fastest model there is, a few are slow on purpose on a CPU."""
  inputs = keras.Input((SIZE, SIZE, 3), dtype="uint8")
  x = keras.layers.Rescaling(1 / 255)(inputs)
  for _ in range(convolutions):
    x = keras.layers.Conv2D(64, 3, padding="same", activation="relu")(x)
  x = keras.layers.GlobalAveragePooling2D()(x)
  model = keras.Model(inputs, keras.layers.Dense(CLASSES, activation="softmax")(x))
  model.compile("adam", "sparse_categorical_crossentropy")
  model.save(path)
  return os.fspath(path)


def test_a_model_slow_on_purpose_is_called_the_limit(data_dir, tmp_path, capsys):
  report = doctor.main([NAME, "--data_dir", data_dir, "--batch_size", "16", "--seconds", "0.5",
                        "--model", _saved(tmp_path / "slow.keras", convolutions=3), "--json"])
  out, err = capsys.readouterr()
  assert json.loads(out) == report
  assert report["bound"] == "model" and report["factor"] > 5 and report["remedy"] == "none"
  assert report["verdict"].startswith("Model-bound")
  assert [row["key"] for row in report["rows"]] == [
      "decode_limit", "training", "training_model_flips", "training_cached", "evaluation", "model"]
  assert all(row["images_per_second"] > 0 for row in report["rows"])
  # Each input row's CPU per image; the model's steps are timed on the device, not per CPU.
  assert all(row["cpu_us_per_image"] > 0 for row in report["rows"][:-1])
  assert report["rows"][-1]["cpu_us_per_image"] is None
  assert err.count("measuring") == 6  # a progress line per measurement


def test_a_fast_model_is_input_bound_and_told_the_remedy(data_dir, tmp_path, capsys):
  # The config named by its folder, as every tool takes it.
  folder = os.path.join(data_dir, *NAME.split("/"))
  report = doctor.main([folder, "--batch_size", "64", "--seconds", "0.5",
                        "--model", _saved(tmp_path / "fast.keras", convolutions=0)])
  out, _ = capsys.readouterr()
  assert "accelerator" not in out  # None here: no row or remedy speaks of one.
  assert report["bound"] == "input" and report["factor"] > 1.1
  assert report["remedy"] in ("cache", "workers")
  assert report["workers"] == -(-report["rows"][-1]["images_per_second"]
                                // report["rows"][1]["images_per_second"])
  # The table: one row per measurement, then the verdict.
  assert "training_dataset, cache='memory'" in out and out.rstrip().endswith(report["verdict"])
  cpu = {row["key"]: row["cpu_us_per_image"] for row in report["rows"]}
  assert (f"Per image, CPU of all cores: the decode limit {cpu['decode_limit']:,.0f} us; "
          f"training_dataset {cpu['training']:,.0f} us") in out
  assert f"{cpu['training_model_flips']:,.0f} us with flip=False (the flip: " in out
  assert report["verdict"].startswith("Input-bound")


def test_the_verdict_names_the_remedy_that_fits():
  common = {"limit_rate": 2000.0, "sized": True, "name": "korean_food/224", "size": 224,
            "stored": 224}
  cache = doctor.verdict(input_rate=1800, model_rate=9000, cached_rate=20000, fits=True, **common)
  assert (cache["bound"], cache["remedy"], cache["factor"]) == ("input", "cache", 5.0)
  assert "10.0 times the decode limit" in cache["verdict"]
  too_big = doctor.verdict(input_rate=1800, model_rate=9000, cached_rate=None, fits=False, **common)
  assert too_big["remedy"] == "workers" and too_big["workers"] == 5
  assert "does not fit in half the free memory" in too_big["verdict"]
  full = doctor.verdict(input_rate=600, model_rate=9000, cached_rate=None, fits=True, **{
      **common, "sized": False, "name": "korean_food/full", "stored": None})
  assert full["workers"] == 15 and "korean_food/224" in full["verdict"]
  assert doctor.verdict(input_rate=1800, model_rate=1900, cached_rate=None, fits=True,
                        **common)["bound"] == "matched"


def test_bad_requests_are_named(data_dir, capsys):
  with pytest.raises(SystemExit,
                     match="--model must be one of small, mobilenet_v3_small or an existing "
                           "PATH.keras"):
    doctor.main([NAME, "--data_dir", data_dir, "--model", "huge"])
  with pytest.raises(SystemExit, match="has no split 'tain'"):
    doctor.main([NAME, "--data_dir", data_dir, "--split", "tain"])


def test_a_batch_larger_than_the_split_is_lowered_as_train_does(data_dir, tmp_path, capsys):
  report = doctor.main([NAME, "--data_dir", data_dir, "--split", "validation", "--seconds", "0.2",
                        "--model", _saved(tmp_path / "fast.keras", convolutions=0), "--json"])
  examples = report["split_examples"]
  assert examples < 64 and report["batch_size"] == examples
  assert report["model_batch_size"] == 64  # The model is timed at the batch it trains on.
  assert (f"note: --batch_size 64 is more than the {examples} examples of 'validation': "
          f"the input is read in batches of {examples}, as train does; the model is timed at 64."
          in capsys.readouterr().err)


def test_a_split_expression_is_measured_with_a_caveat_for_its_size(data_dir, tmp_path, capsys):
  report = doctor.main([NAME, "--data_dir", data_dir, "--split", "train[:24]", "--batch_size", "8",
                        "--seconds", "0.2",
                        "--model", _saved(tmp_path / "fast.keras", convolutions=0)])
  out, _ = capsys.readouterr()
  assert report["split"] == "train[:24]" and report["split_examples"] == 24
  # The decode limit reads that part of the records.
  assert report["rows"][0]["images_per_second"] > 0
  caveat = ("Caveat: 'train[:24]' holds 24 examples, fewer than 10 batches of 8: each "
            "measurement reads it again and again, so the differences between the rows are "
            "within their noise.")
  assert caveat in report["caveat"] and caveat in out


def test_a_large_enough_split_has_no_caveat_and_noise_is_not_a_cost(data_dir, tmp_path, capsys):
  report = doctor.main([NAME, "--data_dir", data_dir, "--batch_size", "8", "--seconds", "0.2",
                        "--model", _saved(tmp_path / "fast.keras", convolutions=0), "--json"])
  assert report["split_examples"] >= 80 and report["caveat"] is None
  rows = [{"key": "decode_limit", "cpu_us_per_image": 900.0},
          {"key": "training", "cpu_us_per_image": 850.0},
          {"key": "training_model_flips", "cpu_us_per_image": 937.0}]
  (said,) = doctor.costs(rows)
  assert "training_dataset 850 us (-50 us, within the noise: reading" in said
  assert "(the flip: -87 us, within the noise)" in said


def test_the_device_named_says_when_no_gpu_was_seen():
  import tensorflow as tf
  named = doctor.device()
  if tf.config.list_logical_devices("GPU"):
    assert named.startswith("TensorFlow GPU /device:GPU:0")
  else:
    assert named.startswith("TensorFlow CPU (no GPU seen; ")

"""`python -m photo_datasets train`: one epoch on each bundled sample, and what it leaves behind.

Accuracies are not asserted: one epoch on a few dozen photos says nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import shutil
import types

import keras
import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import flowers_dataset
import korean_food
from photo_datasets.commands import train
from photo_datasets.reading import pipeline
from photo_datasets.testing import build, split_of_bytes

FLOWERS_SAMPLE = pathlib.Path(flowers_dataset.__file__).parent / "sample"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

@pytest.fixture(scope="module")
def data_dir(samples) -> str:
  return samples.build("korean_food/64", "flowers_dataset/full")


@pytest.fixture(scope="module")
def korean_food_run(data_dir: str,
                    tmp_path_factory: pytest.TempPathFactory) -> tuple[train.TrainResult, str]:
  """The command line, in-process: the result and what it printed."""
  out_dir = tmp_path_factory.mktemp("korean_food_out")
  printed = io.StringIO()
  with contextlib.redirect_stdout(printed):
    result = train.main(["korean_food/64", "--data_dir", data_dir, "--out_dir", os.fspath(out_dir),
                         "--epochs", "1", "--batch_size", "8", "--seed", "0", "--quiet"])
  return result, printed.getvalue()


@pytest.fixture(scope="module")
def flowers_run(data_dir: str, tmp_path_factory: pytest.TempPathFactory) -> train.TrainResult:
  return train.train("flowers_dataset/full", data_dir=data_dir,
                     out_dir=tmp_path_factory.mktemp("flowers_out"),
                     image_size=64, epochs=1, batch_size=16, seed=0, verbose=0)


@pytest.fixture(scope="module")
def train_only_data_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
  """flowers_dataset/64 built from a dozen photos of the train split: no validation, no test."""
  root = tmp_path_factory.mktemp("train_only")
  for label in ("daisy", "roses"):
    chosen = [path for path in sorted((FLOWERS_SAMPLE / "flower_photos" / label).glob("*.jpg"))
              if split_of_bytes(path.read_bytes()) == "train"][:6]
    (root / "manual" / "flower_photos" / label).mkdir(parents=True)
    for path in chosen:
      shutil.copy(path, root / "manual" / "flower_photos" / label / path.name)
  build("flowers_dataset/64", root / "data", root / "manual")
  return os.fspath(root / "data")


def _check_model(path: pathlib.Path, image_size: int, num_classes: int) -> None:
  model = keras.saving.load_model(path)
  probabilities = model.predict(np.zeros((2, image_size, image_size, 3), np.uint8), verbose=0)
  assert probabilities.shape == (2, num_classes)
  assert probabilities.dtype == np.float32
  np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-4)


def _check_history(path: pathlib.Path, *, validation: bool, test: bool) -> dict:
  history = json.loads(path.read_text(encoding="utf-8"))
  expected = {"loss", "accuracy"} | ({"val_loss", "val_accuracy"} if validation else set())
  assert set(history["history"]) == expected
  assert all(len(values) == 1 for values in history["history"].values())
  # Its figure: test_training_speed_leaves_out_the_first_batch_only.
  assert history["train_images_per_second"] > 0
  assert len(history["epoch_train_images_per_second"]) == 1
  assert history["settings"]["epochs"] == 1
  if test:
    assert set(history["test"]) == {"loss", "accuracy"}
  else:
    assert history["test"] is None
  return history


def _check_png(path: pathlib.Path) -> None:
  assert path.read_bytes().startswith(PNG_SIGNATURE)
  with Image.open(path) as image:
    image.verify()


def test_korean_food_writes_model_history_curves_and_classes(korean_food_run):
  result, _ = korean_food_run
  assert {p.name for p in result.out_dir.iterdir()} == {
      "model.keras", "history.json", "history.png", "classes.json"}
  _check_model(result.model_path, 64, 150)
  history = _check_history(result.history_path, validation=True, test=True)
  assert history["settings"]["image_size"] == 64 and history["settings"]["batch_size"] == 8
  assert history["skipped_splits"] == []
  _check_png(result.plot_path)


def test_the_test_metrics_are_the_saved_models_on_the_test_split(korean_food_run, data_dir):
  result, _ = korean_food_run
  model = keras.saving.load_model(result.model_path)

  def scores(split: str) -> dict[str, float]:
    return model.evaluate(pipeline.evaluation_dataset("korean_food/64", split=split, batch_size=8,
                                                      data_dir=data_dir),
                          return_dict=True, verbose=0)

  history = json.loads(result.history_path.read_text(encoding="utf-8"))
  test, validation = scores("test"), scores("validation")
  assert history["test"] == result.test == pytest.approx(test, rel=1e-5)
  assert history["history"]["val_loss"][-1] == pytest.approx(validation["loss"], rel=1e-5)
  # So the two cannot be confused.
  assert validation["loss"] != pytest.approx(test["loss"], rel=1e-3)
  # The sample's train split, full batches only.
  assert history["train_images_per_epoch"] == 33 // 8 * 8


def test_training_speed_leaves_out_the_first_batch_only(monkeypatch):
  # Epoch 1: a 5 s first batch, two of 1 s; epoch 2: two.
  ticks = iter([0.0, 5.0, 6.0, 7.0, 10.0, 11.0, 12.0])
  monkeypatch.setattr(train, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
  speed = train._Speed(batch_size=8)
  for epoch, batches in enumerate((3, 2)):
    speed.on_epoch_begin(epoch)
    for batch in range(batches):
      speed.on_train_batch_end(batch)
    speed.on_epoch_end(epoch)
  assert speed.rates() == [24 / 7, 16 / 2]
  assert speed.images_per_second() == 4 * 8 / 4  # 4 batches in 4 s once the first is left out.
  assert speed.images_per_epoch() == 16


def test_korean_food_classes_have_korean_and_english_names(korean_food_run):
  result, _ = korean_food_run
  classes = json.loads(result.classes_path.read_text(encoding="utf-8"))
  assert classes == {str(c.index): {"name": c.name, "description": c.english_name}
                     for c in korean_food.food_classes()}
  assert classes["0"]["name"] == "갈비구이"  # Stored as UTF-8, not escaped.
  assert "갈비구이" in result.classes_path.read_text(encoding="utf-8")


def test_the_command_prints_speed_accuracies_and_where_files_went(korean_food_run):
  result, printed = korean_food_run
  assert "images/s" in printed
  assert "final accuracy: train" in printed and "validation" in printed and "test" in printed
  assert str(result.out_dir) in printed


def test_flowers_full_trains_at_the_size_asked(flowers_run):
  _check_model(flowers_run.model_path, 64, 5)
  _check_history(flowers_run.history_path, validation=True, test=True)
  _check_png(flowers_run.plot_path)
  classes = json.loads(flowers_run.classes_path.read_text(encoding="utf-8"))
  assert classes == {str(i): {"name": name} for i, name in enumerate(
      ["dandelion", "daisy", "tulips", "sunflowers", "roses"])}


def test_a_full_config_without_image_size_is_a_usage_error_naming_the_option(
    data_dir, tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    train.main(["flowers_dataset/full", "--data_dir", data_dir,
                "--out_dir", os.fspath(tmp_path / "out")])
  assert exit_info.value.code == 2
  assert "--image_size" in capsys.readouterr().err
  assert not (tmp_path / "out").exists()
  with pytest.raises(train.TrainError, match="--image_size"):
    train.train("flowers_dataset/full", data_dir=data_dir, out_dir=tmp_path / "out")


def test_an_unbuilt_config_is_named_without_the_usage_text(data_dir, tmp_path):
  with pytest.raises(SystemExit) as exit_info:
    train.main(["flowers_dataset/96", "--data_dir", data_dir,
                "--out_dir", os.fspath(tmp_path / "out")])
  message = str(exit_info.value.code)
  assert (message.startswith("error: flowers_dataset/96 is not built in ")
          and "usage:" not in message)


def test_splits_the_build_left_out_are_skipped_with_a_note(train_only_data_dir, tmp_path, capsys):
  result = train.train("flowers_dataset/64", data_dir=train_only_data_dir, out_dir=tmp_path,
                       epochs=1, batch_size=4, seed=0, verbose=0)
  printed = capsys.readouterr().out
  assert "no validation split" in printed and "no test split" in printed
  assert result.skipped_splits == ("validation", "test") and result.test is None
  history = _check_history(result.history_path, validation=False, test=False)
  assert history["skipped_splits"] == ["validation", "test"]
  _check_png(result.plot_path)


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")),
                    reason="checks the CPU-only choice")
def test_mixed_precision_auto_stays_float32_without_a_gpu(korean_food_run):
  result, _ = korean_food_run
  assert train.dtype_policy("auto") == "float32"
  assert result.dtype_policy == "float32"
  assert json.loads(result.history_path.read_text())["settings"]["dtype_policy"] == "float32"
  assert keras.saving.load_model(result.model_path).layers[-2].compute_dtype == "float32"


def test_mixed_precision_on_and_off():
  assert train.dtype_policy("on") == "mixed_float16"
  assert train.dtype_policy("off") == "float32"


@pytest.mark.parametrize("kind", train.MODELS)
def test_under_mixed_precision_the_output_stays_float32(kind, tmp_path):
  before = keras.mixed_precision.global_policy().name
  with train.global_dtype_policy("mixed_float16"):
    model = train.build_model(kind, num_classes=7, image_size=64)
  assert keras.mixed_precision.global_policy().name == before  # Restored for the caller.
  assert model.get_layer("logits").compute_dtype == "float16"
  assert model.get_layer("probabilities").compute_dtype == "float32"
  assert model.input.dtype == "uint8"
  model.save(tmp_path / "model.keras")
  _check_model(tmp_path / "model.keras", 64, 7)


def test_default_out_dir_is_named_after_the_config():
  assert train.default_out_dir("korean_food/224") == pathlib.Path("train_out") / "korean_food_224"


@pytest.mark.parametrize("kind", train.MODELS)
def test_a_model_that_flips_mirrors_some_training_images_and_no_inference_image(kind, tmp_path):
  model = train.build_model(kind, num_classes=7, image_size=32, flip=True)
  images = np.random.default_rng(0).integers(0, 256, (16, 32, 32, 3), dtype=np.uint8)
  flip = model.get_layer("flip")
  seen = keras.ops.convert_to_numpy(flip(images, training=True))
  mirrored = [np.array_equal(s, i[:, ::-1]) for s, i in zip(seen, images, strict=True)]
  assert all(m or np.array_equal(s, i) for m, s, i in zip(mirrored, seen, images, strict=True))
  assert 0 < sum(mirrored) < 16
  np.testing.assert_array_equal(keras.ops.convert_to_numpy(flip(images, training=False)), images)
  model.save(tmp_path / "model.keras")  # Saved and loaded with its flip layer.
  _check_model(tmp_path / "model.keras", 32, 7)

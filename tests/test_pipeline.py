"""`photo_datasets.pipeline.training_dataset`: what `model.fit` receives."""

from __future__ import annotations

import os
import pathlib
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import flowers_dataset
from photo_datasets import pipeline
from photo_datasets.testing import build

SAMPLE = pathlib.Path(flowers_dataset.__file__).parent / "sample" / "flower_photos"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  root = tmp_path_factory.mktemp("pipeline")
  for label in ("daisy", "tulips", "roses"):
    shutil.copytree(SAMPLE / label, root / "manual" / "flower_photos" / label)
  for config in ("64", "full"):
    build(f"flowers_dataset/{config}", root / "data", root / "manual")
  return os.fspath(root / "data")


def _epoch_labels(ds) -> list[int]:
  return [int(label) for _, labels in ds for label in labels.numpy()]


def test_batches_are_uint8_images_and_int64_labels(data_dir):
  ds = pipeline.training_dataset("flowers_dataset/64", batch_size=16, data_dir=data_dir)
  images, labels = next(iter(ds))
  assert images.dtype == tf.uint8 and images.shape == (16, 64, 64, 3)
  assert labels.dtype == tf.int64 and labels.shape == (16,)


def test_every_epoch_holds_every_example_in_a_new_order(data_dir):
  ds = pipeline.training_dataset("flowers_dataset/64", batch_size=8, data_dir=data_dir, seed=1)
  train_size = tfds.builder("flowers_dataset/64", data_dir=data_dir).info.splits["train"].num_examples
  first, second = _epoch_labels(ds), _epoch_labels(ds)
  assert len(first) == len(second) == train_size
  assert sorted(first) == sorted(second)
  assert first != second


def test_shuffle_buffer_zero_keeps_the_stored_order(data_dir):
  ds = pipeline.training_dataset("flowers_dataset/64", batch_size=8, data_dir=data_dir,
                                 shuffle_buffer=0)
  stored = tfds.load("flowers_dataset/64", split="train", data_dir=data_dir, as_supervised=True)
  assert _epoch_labels(ds) == [int(label) for _, label in stored]


def test_model_fit_takes_it_as_it_is(data_dir):
  ds = pipeline.training_dataset("flowers_dataset/64", batch_size=8, data_dir=data_dir, seed=0)
  model = keras.Sequential([
      keras.Input((64, 64, 3), dtype="uint8"),
      keras.layers.Rescaling(1 / 255),
      keras.layers.GlobalAveragePooling2D(),
      keras.layers.Dense(5),
  ])
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  history = model.fit(ds, epochs=1, verbose=0)
  assert np.isfinite(history.history["loss"][0])


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_size": 0}, "batch_size must be >= 1, got 0"),
    ({"shuffle_buffer": -1}, "shuffle_buffer must be >= 0, got -1"),
])
def test_bad_arguments_are_named(data_dir, kwargs, message):
  with pytest.raises(ValueError, match=message):
    pipeline.training_dataset("flowers_dataset/64", data_dir=data_dir, **kwargs)


def test_full_config_is_refused_with_the_sized_alternative(data_dir):
  with pytest.raises(ValueError, match="flowers_dataset/224"):
    pipeline.training_dataset("flowers_dataset/full", data_dir=data_dir)

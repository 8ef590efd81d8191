"""`photo_datasets.reading.pipeline.training_dataset`: what `model.fit` receives."""

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
import korean_food
from photo_datasets.reading import augmentation, pipeline
from photo_datasets.reading import cache as cache_policy
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


def _as_stored(ds, stored: list[bytes]) -> list[bytes]:
  """Each image of an epoch as stored: itself, or its mirror image where the pipeline flipped it."""
  known = set(stored)
  return [image.tobytes() if image.tobytes() in known else image[:, ::-1].tobytes()
          for images, _ in ds for image in images.numpy()]


def _stored_images(data_dir: str) -> list[bytes]:
  return [image.numpy().tobytes() for image, _ in tfds.load("flowers_dataset/64", split="train",
                                                            data_dir=data_dir, as_supervised=True)]


def test_every_epoch_holds_every_example_in_a_new_order(data_dir):
  ds = pipeline.training_dataset("flowers_dataset/64", batch_size=8, data_dir=data_dir, seed=1)
  stored = _stored_images(data_dir)
  train_size = (tfds.builder("flowers_dataset/64", data_dir=data_dir)
                .info.splits["train"].num_examples)
  first, second = _as_stored(ds, stored), _as_stored(ds, stored)
  assert len(first) == len(second) == train_size // 8 * 8  # The incomplete last batch is dropped.
  assert len(set(first)) == len(first) and set(first) <= set(stored) and set(second) <= set(stored)
  assert first != second


def test_shuffle_buffer_zero_keeps_the_stored_order(data_dir):
  ds = pipeline.training_dataset("flowers_dataset/64", batch_size=8, data_dir=data_dir,
                                 shuffle_buffer=0)
  stored = _stored_images(data_dir)
  assert _as_stored(ds, stored) == stored[:len(stored) // 8 * 8]


def test_model_fit_takes_it_as_it_is(data_dir):
  ds = pipeline.training_dataset("flowers_dataset/64", batch_size=8, data_dir=data_dir, seed=0)
  model = keras.Sequential([
      keras.Input((64, 64, 3), dtype="uint8"),
      keras.layers.Rescaling(1 / 255),
      keras.layers.GlobalAveragePooling2D(),
      keras.layers.Dense(5),
  ])
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  keras.utils.set_random_seed(0)
  losses = model.fit(ds, epochs=3, verbose=0).history["loss"]
  assert abs(losses[0] - np.log(5)) < 0.5  # Untrained, 5 outputs: about ln 5 ...
  assert losses[2] < losses[0]  # ... and lower once trained.


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


# ---------------------------------------------------------------------------
# Both configs of korean_food (crop boxes), evaluation, workers, scaling.

KFOOD_SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"


@pytest.fixture(scope="module")
def kfood_dir(samples) -> str:
  return samples.build("korean_food/64", "korean_food/full")


def _images(ds) -> list[bytes]:
  return [image.tobytes() for images, _ in ds for image in images.numpy()]


@pytest.mark.parametrize("name, image_size", [
    ("korean_food/64", None), ("korean_food/64", 48), ("korean_food/full", 96)])
def test_training_and_evaluation_batches_have_fixed_uint8_shapes(kfood_dir, name, image_size):
  size = image_size or 64
  train = pipeline.training_dataset(name, batch_size=8, image_size=image_size, data_dir=kfood_dir,
                                    seed=3)
  assert train.element_spec[0].shape.as_list() == [8, size, size, 3]
  for images, labels in train:
    assert images.dtype == tf.uint8 and images.shape == (8, size, size, 3)
    assert labels.dtype == tf.int64 and labels.shape == (8,)
  evaluation = pipeline.evaluation_dataset(name, split="train", batch_size=8, image_size=image_size,
                                           data_dir=kfood_dir)
  sizes = [int(images.shape[0]) for images, _ in evaluation]
  assert sum(sizes) == 33 and sizes[-1] == 33 % 8  # nothing dropped
  assert evaluation.element_spec[0].shape.as_list() == [None, size, size, 3]


def test_a_seed_repeats_the_epochs_exactly_and_another_seed_differs(kfood_dir):
  def epochs(seed):
    ds = pipeline.training_dataset("korean_food/full", batch_size=8, image_size=64,
                                   data_dir=kfood_dir, seed=seed)
    return _images(ds), _images(ds)

  first, second = epochs(7)
  assert epochs(7) == (first, second)
  assert first != second  # each epoch reshuffles and crops anew
  assert epochs(8)[0] != first


def test_evaluation_is_the_stored_order_every_time(kfood_dir):
  ds = pipeline.evaluation_dataset("korean_food/64", split="train", batch_size=8,
                                   data_dir=kfood_dir)
  stored = tfds.load("korean_food/64", split="train", data_dir=kfood_dir, as_supervised=True)
  assert _epoch_labels(ds) == [int(label) for _, label in stored]
  assert _images(ds) == _images(ds)
  assert _images(ds) == [image.numpy().tobytes() for image, _ in stored]


def test_evaluation_of_full_is_the_centre_square_of_the_crop_box(kfood_dir):
  builder = tfds.builder("korean_food/full", data_dir=kfood_dir)
  examples = list(tfds.as_numpy(builder.as_dataset(split="train")))
  boxed = [ex for ex in examples if ex["has_bbox"]]
  assert boxed
  ds = pipeline.evaluation_dataset("korean_food/full", split="train", batch_size=64, image_size=32,
                                   data_dir=kfood_dir)
  (images, _), = list(ds)
  for example, image in zip(examples, images.numpy(), strict=True):
    pixels = example["image"]
    height, width = pixels.shape[:2]
    ymin, xmin, ymax, xmax = example["bbox"] if example["has_bbox"] else (0, 0, 1, 1)
    box = pixels[int(ymin * height):int(np.ceil(ymax * height)),
                 int(xmin * width):int(np.ceil(xmax * width))]
    side = min(box.shape[:2])
    top, left = (box.shape[0] - side) // 2, (box.shape[1] - side) // 2
    expected = tf.image.resize(box[top:top + side, left:left + side], (32, 32),
                               antialias=True).numpy()
    assert np.abs(image.astype(float) - expected).mean() < 8, example["file_name"]


def test_random_crops_stay_inside_the_image_and_contain_the_box():
  shape = tf.constant([300, 400, 3])
  box = tf.constant([0.3, 0.4, 0.6, 0.7])  # pixels: rows 90..180, columns 160..280
  sizes = set()
  for seed in range(200):
    window = pipeline.random_crop_window(shape, box, tf.constant(True), tf.constant([seed, 1]))
    top, left, height, width = window.numpy()
    assert top >= 0 and left >= 0 and top + height <= 300 and left + width <= 400
    assert top <= 90 and left <= 160 and top + height >= 180 and left + width >= 280, (
        top, left, height, width)
    sizes.add((height, width))
  assert len(sizes) > 20  # really random
  for seed in range(50):  # without a box: any crop, inside the image
    top, left, height, width = pipeline.random_crop_window(
        shape, box, tf.constant(False), tf.constant([seed, 2])).numpy()
    assert top >= 0 and left >= 0 and top + height <= 300 and left + width <= 400


@pytest.mark.parametrize("num_shards", [1, 2])
def test_two_workers_get_disjoint_parts_that_cover_the_split(tmp_path, num_shards):
  """One file: every other example each; two files: one whole file each."""
  data_dir = tmp_path / "data"
  builder = tfds.builder("korean_food/64", data_dir=os.fspath(data_dir))
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
      manual_dir=os.fspath(KFOOD_SAMPLE), num_shards=num_shards))
  everything = sorted(_images(pipeline.evaluation_dataset(
      "korean_food/64", split="train", batch_size=4, data_dir=os.fspath(data_dir))))
  parts, trained = [], []
  for worker in range(2):
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=worker,
                                         num_replicas_in_sync=2)
    evaluation = pipeline.evaluation_dataset("korean_food/64", split="train", batch_size=4,
                                             data_dir=os.fspath(data_dir), input_context=context)
    parts.append(_images(evaluation))
    training = pipeline.training_dataset("korean_food/64", batch_size=4,
                                         data_dir=os.fspath(data_dir), input_context=context,
                                         seed=worker)
    assert next(iter(training))[0].shape == (2, 64, 64, 3)  # its share of the global batch
    known = set(everything)
    trained.append([image.tobytes() if image.tobytes() in known else image[:, ::-1].tobytes()
                    for images, _ in training for image in images.numpy()])
  assert parts[0] and parts[1]
  assert not set(parts[0]) & set(parts[1])
  assert sorted(parts[0] + parts[1]) == everything
  # Training reads the same share as evaluation, each example once, less the incomplete last batch.
  for part, epoch in zip(parts, trained, strict=True):
    assert len(set(epoch)) == len(epoch) == len(part) // 2 * 2 and set(epoch) <= set(part)


def test_rescaling_layer_maps_uint8_to_the_range_asked():
  pixels = tf.constant([[0, 51, 255]], tf.uint8)
  np.testing.assert_allclose(pipeline.rescaling_layer()(pixels).numpy(), [[0.0, 0.2, 1.0]],
                             atol=1e-6)
  np.testing.assert_allclose(pipeline.rescaling_layer((-1, 1))(pixels).numpy(), [[-1.0, -0.6, 1.0]],
                             atol=1e-6)
  with pytest.raises(ValueError,
                     match=r"value_range must be \(low, high\) with high > low, got \(1, 0\)"):
    pipeline.rescaling_layer((1, 0))


@pytest.mark.parametrize("call, message", [
    (lambda d: pipeline.evaluation_dataset("korean_food/full", data_dir=d), "give image_size"),
    (lambda d: pipeline.training_dataset("korean_food/64", image_size=8, data_dir=d),
     "image_size must be an integer from 16 to 4096, got 8"),
    (lambda d: pipeline.evaluation_dataset("korean_food/64", batch_size=0, data_dir=d),
     "batch_size must be >= 1, got 0"),
])
def test_more_bad_arguments_are_named(kfood_dir, call, message):
  with pytest.raises(ValueError, match=message):
    call(kfood_dir)


def test_sized_training_images_are_the_stored_ones_some_mirrored(kfood_dir):
  stored = [image.numpy() for image, _ in tfds.load("korean_food/64", split="train",
                                                    data_dir=kfood_dir, as_supervised=True)]
  ds = pipeline.training_dataset("korean_food/64", batch_size=11, data_dir=kfood_dir,
                                 shuffle_buffer=0, seed=5)
  seen = [image for images, _ in ds for image in images.numpy()]
  assert len(seen) == 33
  mirrored = [not np.array_equal(s, o) for s, o in zip(seen, stored, strict=True)]
  for image, original, flipped in zip(seen, stored, mirrored, strict=True):
    np.testing.assert_array_equal(image, original[:, ::-1] if flipped else original)
  assert 0 < sum(mirrored) < 33


@pytest.mark.parametrize("cache", [None, "memory"])
@pytest.mark.parametrize("seed", [None, 3])
def test_without_flips_training_images_are_exactly_the_stored_ones(kfood_dir, cache, seed):
  stored = sorted(image.numpy().tobytes() for image, _ in tfds.load(
      "korean_food/64", split="train", data_dir=kfood_dir, as_supervised=True))
  ds = pipeline.training_dataset("korean_food/64", batch_size=1, data_dir=kfood_dir, seed=seed,
                                 cache=cache, flip=False)
  epochs = [[image.tobytes() for images, _ in tfds.as_numpy(ds) for image in images]
            for _ in range(2)]
  assert sorted(epochs[0]) == sorted(epochs[1]) == stored  # none mirrored, each once
  assert epochs[0] != epochs[1]  # still shuffled anew every epoch
  if seed is not None:
    again = pipeline.training_dataset("korean_food/64", batch_size=1, data_dir=kfood_dir,
                                      seed=seed, cache=cache, flip=False)
    assert [image.tobytes() for images, _ in tfds.as_numpy(again) for image in images] == epochs[0]


def test_full_training_crops_without_flips_repeat_with_their_seed(kfood_dir):
  def epoch(flip: bool) -> list[np.ndarray]:
    ds = pipeline.training_dataset("korean_food/full", batch_size=4, image_size=64,
                                   data_dir=kfood_dir, seed=4, shuffle_buffer=0, flip=flip)
    return [image for images, _ in tfds.as_numpy(ds) for image in images]

  flipped, unflipped = epoch(True), epoch(False)
  assert [i.tobytes() for i in epoch(False)] == [i.tobytes() for i in unflipped]
  # The same crops, mirrored or not: only the flip is left out.
  assert all(np.array_equal(a, b) or np.array_equal(a, b[:, ::-1])
             for a, b in zip(flipped, unflipped, strict=True))
  assert any(not np.array_equal(a, b) for a, b in zip(flipped, unflipped, strict=True))


@pytest.fixture(scope="module")
def three_files_dir(tmp_path_factory):
  """flowers_dataset/64 of three classes in 3 record files per split."""
  root = tmp_path_factory.mktemp("three_files")
  for label in ("daisy", "tulips", "roses"):
    shutil.copytree(SAMPLE / label, root / "manual" / "flower_photos" / label)
  builder = tfds.builder("flowers_dataset/64", data_dir=os.fspath(root / "data"))
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
      manual_dir=os.fspath(root / "manual"), num_shards=3))
  return os.fspath(root / "data")


def _images(ds) -> list[bytes]:
  return [image.tobytes() for images, _ in tfds.as_numpy(ds) for image in images]


@pytest.mark.parametrize("split",
                         ["train", "train[:10%]", "train[25%:60%]", "validation+test", "all"])
def test_split_expressions_read_the_examples_tfds_reads_in_its_order(three_files_dir, split):
  stored = tfds.load("flowers_dataset/64", split=split, data_dir=three_files_dir, batch_size=5,
                     as_supervised=True)
  evaluation = pipeline.evaluation_dataset("flowers_dataset/64", split=split, batch_size=5,
                                           data_dir=three_files_dir)
  assert _images(evaluation) == _images(stored)
  training = pipeline.training_dataset("flowers_dataset/64", split=split, batch_size=1,
                                       data_dir=three_files_dir)
  # Unseeded: any order and flips, every example once.
  seen = [image for images, _ in tfds.as_numpy(training) for image in images]
  as_stored = sorted(image.tobytes() if image.tobytes() in set(_images(stored))
                     else image[:, ::-1].tobytes() for image in seen)
  assert as_stored == sorted(_images(stored))
  assert training.cardinality() == len(seen)  # Keras knows the steps of an epoch.


def test_half_the_stored_size_is_decoded_at_reduced_dct_scale(data_dir):
  stored = [image for image, _ in tfds.as_numpy(tfds.load(
      "flowers_dataset/64", split="validation", data_dir=data_dir, as_supervised=True,
      decoders={"image": tfds.decode.SkipDecoding()}))]
  halves = [image for images, _ in tfds.as_numpy(pipeline.evaluation_dataset(
      "flowers_dataset/64", split="validation", image_size=32, data_dir=data_dir))
      for image in images]
  assert [image.shape for image in halves] == [(32, 32, 3)] * len(stored)
  for encoded, half in zip(stored, halves, strict=True):
    np.testing.assert_array_equal(half, tf.io.decode_jpeg(encoded, channels=3, ratio=2).numpy())
    area = tf.image.resize(tf.io.decode_jpeg(encoded, channels=3), (32, 32), method="area").numpy()
    assert np.mean((half - area) ** 2) < 10 ** (-30 / 10) * 255**2  # PSNR above 30 dB.


def test_a_config_not_built_is_named(tmp_path):
  with pytest.raises(ValueError, match=r"flowers_dataset/64 is not built .*Build it first:\n"
                     r"  tfds build flowers_dataset --imports flowers_dataset "
                     r"--config 64 --data_dir "):
    pipeline.training_dataset("flowers_dataset/64", data_dir=os.fspath(tmp_path))


# ---------------------------------------------------------------------------
# cache=: the decoded images kept after the first epoch.


def _cache_files(directory) -> list[str]:
  return sorted(path.name for path in pathlib.Path(directory).iterdir())


@pytest.mark.parametrize("name, image_size", [("korean_food/64", None), ("korean_food/64", 32),
                                              ("korean_food/full", 48)])
def test_cached_evaluation_equals_uncached_in_memory_and_on_disk(kfood_dir, tmp_path, name,
                                                                 image_size):
  def evaluation(cache):
    return pipeline.evaluation_dataset(name, split="train", batch_size=8, image_size=image_size,
                                       data_dir=kfood_dir, cache=cache)

  uncached = _images(evaluation(None))
  labels = _epoch_labels(evaluation(None))
  for cache in ("memory", os.fspath(tmp_path / "cache")):
    ds = evaluation(cache)
    assert _images(ds) == uncached and _images(ds) == uncached  # the filling epoch, then the cache
    assert _epoch_labels(ds) == labels
  assert any(file.endswith(".index") for file in _cache_files(tmp_path / "cache"))


@pytest.mark.parametrize("cache", ["memory", "disk"])
def test_cached_training_epochs_are_shuffled_and_flipped_anew(kfood_dir, tmp_path, cache):
  directory = os.fspath(tmp_path / "cache")
  ds = pipeline.training_dataset("korean_food/64", batch_size=4, data_dir=kfood_dir, seed=2,
                                 cache="memory" if cache == "memory" else directory)
  stored = {image.numpy().tobytes(): image.numpy() for image, _ in tfds.load(
      "korean_food/64", split="train", data_dir=kfood_dir, as_supervised=True)}
  epochs = [[image for images, _ in tfds.as_numpy(ds) for image in images] for _ in range(3)]
  assert len(epochs[0]) == 32  # 33 examples, the incomplete batch dropped
  for seen in epochs:
    for image in seen:  # each the stored image, or its mirror
      assert image.tobytes() in stored or image[:, ::-1].tobytes() in stored
  as_bytes = [[image.tobytes() for image in seen] for seen in epochs]
  assert as_bytes[0] != as_bytes[1] != as_bytes[2]
  # The same seed repeats the epochs, from the cache as on the filling run.
  again = pipeline.training_dataset("korean_food/64", batch_size=4, data_dir=kfood_dir, seed=2,
                                    cache="memory" if cache == "memory" else directory)
  assert [image.tobytes() for images, _ in tfds.as_numpy(again) for image in images] == as_bytes[0]


def test_a_memory_cache_larger_than_the_limit_is_refused_saying_both_sizes(kfood_dir, monkeypatch):
  monkeypatch.setenv(cache_policy.MEMORY_LIMIT_ENV, "0.1")  # 33 images of 64x64x3 need 0.39 MiB.
  for make in (pipeline.training_dataset, pipeline.evaluation_dataset):
    with pytest.raises(ValueError, match=r"cache='memory' refused: .* needs about 0\.00 GiB "
                                         r"\(33 images of 64x64x3 uint8\), "
                                         r"more than the 0\.00 GiB allowed"):
      make("korean_food/64", split="train", data_dir=kfood_dir, cache="memory")
  monkeypatch.setenv(cache_policy.MEMORY_LIMIT_ENV, "1")
  assert len(_images(pipeline.evaluation_dataset("korean_food/64", split="train",
                                                 data_dir=kfood_dir, cache="memory"))) == 33
  monkeypatch.delenv(cache_policy.MEMORY_LIMIT_ENV)
  assert 0 < cache_policy.memory_limit() <= cache_policy.free_memory()


def test_a_disk_cache_survives_an_epoch_cut_short(kfood_dir, tmp_path):
  directory = os.fspath(tmp_path / "cache")
  expected = _images(pipeline.evaluation_dataset("korean_food/64", split="train",
                                                 data_dir=kfood_dir))
  # No shuffle buffer, so the first batch does not read the whole split ahead.
  ds = pipeline.training_dataset("korean_food/64", batch_size=1, data_dir=kfood_dir,
                                 cache=directory, shuffle_buffer=0)
  iterator = iter(ds)
  next(iterator)
  del iterator  # tf.data discards the partial fill
  assert not any(".index" in file or ".lockfile" in file for file in _cache_files(directory))
  seen = [image for images, _ in tfds.as_numpy(ds) for image in images]
  assert len(seen) == 33 and all(i.tobytes() in expected or i[:, ::-1].tobytes() in expected
                                 for i in seen)
  assert any(file.endswith(".index") for file in _cache_files(directory))
  # A new pipeline reads the files: every image once, in stored order (no shuffle buffer), some
  # mirrored.
  again = pipeline.training_dataset("korean_food/64", batch_size=1, data_dir=kfood_dir,
                                    cache=directory, shuffle_buffer=0, seed=1)
  read = [image for images, _ in tfds.as_numpy(again) for image in images]
  assert len(read) == 33
  assert all(i.tobytes() == e or i[:, ::-1].tobytes() == e
             for i, e in zip(read, expected, strict=True))


def test_model_fit_trains_and_validates_on_disk_caches_of_one_split(kfood_dir, tmp_path):
  directory = os.fspath(tmp_path / "cache")
  train = pipeline.training_dataset("korean_food/64", batch_size=8, data_dir=kfood_dir, seed=0,
                                    cache=directory)
  validation = pipeline.evaluation_dataset("korean_food/64", split="train", batch_size=8,
                                           data_dir=kfood_dir, cache=directory)
  model = keras.Sequential([keras.Input((64, 64, 3), dtype="uint8"),
                            keras.layers.Rescaling(1 / 255),
                            keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(150)])
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  history = model.fit(train, validation_data=validation, epochs=2, verbose=0)
  assert len(history.history["val_loss"]) == 2 and np.isfinite(history.history["loss"]).all()
  # one each, both complete
  assert sum(file.endswith(".index") for file in _cache_files(directory)) == 2


def test_a_disk_cache_fill_killed_with_its_process_is_discarded(kfood_dir, tmp_path):
  directory = os.fspath(tmp_path / "cache")
  fill_and_die = (
      "import os, signal, korean_food\n"
      "from photo_datasets.reading import pipeline\n"
      "ds = pipeline.evaluation_dataset('korean_food/64', split='train', batch_size=2, "
      f"data_dir={kfood_dir!r}, cache={directory!r})\n"
      "it = iter(ds); next(it); next(it)\n"
      "os.kill(os.getpid(), signal.SIGKILL)\n")
  import subprocess
  import sys
  run = subprocess.run([sys.executable, "-c", fill_and_die], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
  assert run.returncode == -9, run.stderr[-2000:]
  assert any(file.endswith(".lockfile") for file in _cache_files(directory))  # what tf.data left
  expected = _images(pipeline.evaluation_dataset("korean_food/64", split="train",
                                                 data_dir=kfood_dir))
  ds = pipeline.evaluation_dataset("korean_food/64", split="train", data_dir=kfood_dir,
                                   cache=directory)
  assert _images(ds) == expected and _images(ds) == expected
  assert not any(file.endswith(".lockfile") or "tempstate" in file
                 for file in _cache_files(directory))


def test_each_input_pipeline_caches_its_own_part(kfood_dir, tmp_path):
  directory = os.fspath(tmp_path / "cache")
  parts = []
  for worker in range(2):
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=worker,
                                         num_replicas_in_sync=2)
    ds = pipeline.evaluation_dataset("korean_food/64", split="train", batch_size=4,
                                     data_dir=kfood_dir, input_context=context, cache=directory)
    parts.append(_images(ds))
    assert _images(ds) == parts[-1]
  everything = _images(pipeline.evaluation_dataset("korean_food/64", split="train",
                                                   data_dir=kfood_dir))
  assert sorted(parts[0] + parts[1]) == sorted(everything) and not set(parts[0]) & set(parts[1])
  assert sum(file.endswith(".index") for file in _cache_files(directory)) == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"name": "korean_food/full", "image_size": 64, "cache": "memory"},
     r"training crops are drawn anew every epoch.*'korean_food/64'"),
    ({"name": "korean_food/64", "cache": "memory", "data_service": "grpc://localhost:5050"},
     "cache= cannot be used with data_service"),
    ({"name": "korean_food/64", "cache": ""}, "cache must be None, 'memory' or a directory"),
])
def test_caches_that_cannot_work_are_refused_saying_why(kfood_dir, kwargs, message):
  with pytest.raises(ValueError, match=message):
    pipeline.training_dataset(data_dir=kfood_dir, **kwargs)


def test_cached_epochs_are_the_uncached_ones_flips_included(kfood_dir):
  # In stored order (one record file, no shuffle buffer), the same seed gives the same flips with
  # and without a cache, epoch after epoch: mirroring a batch in place never touches the cached
  # images.
  def epochs(cache: str | None) -> list[list[bytes]]:
    ds = pipeline.training_dataset("korean_food/64", batch_size=4, data_dir=kfood_dir, seed=3,
                                   shuffle_buffer=0, cache=cache)
    return [[image.tobytes() for images, _ in tfds.as_numpy(ds) for image in images]
            for _ in range(4)]

  uncached, cached = epochs(None), epochs("memory")
  assert cached == uncached
  stored = _images(pipeline.evaluation_dataset("korean_food/64", split="train", data_dir=kfood_dir))
  mirrored = [[image != original for image, original in zip(epoch, stored, strict=False)]
              for epoch in cached]
  assert all(0 < sum(flags) < len(flags) for flags in mirrored)
  assert mirrored[0] != mirrored[1]  # New flips every epoch.


def test_a_batch_is_mirrored_in_place_where_drawn():
  images = np.random.default_rng(0).integers(0, 256, (5, 7, 9, 3), dtype=np.uint8)
  mirrored = np.array([True, False, True, True, False])
  expected = np.where(mirrored[:, None, None, None], images[:, :, ::-1], images)
  flipped, labels = augmentation.mirror(tf.constant(images), tf.range(5), tf.constant(mirrored))
  np.testing.assert_array_equal(flipped.numpy(), expected)
  np.testing.assert_array_equal(labels.numpy(), np.arange(5))

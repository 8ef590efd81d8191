"""Input-pipeline throughput: images per second that reach `model.fit`, side by side.

  python benchmarks/loader.py [--photos DIR_OR_ZIP] [--images 2000] [--batch_size 64] [--repeats 3]
      [--loaders KEY ... | --targets] [--keras] [--shards] [--workdir DIR]
      [--json out.json] [--png out.png]

On the same photos, in one run, every loader delivers batches of 224x224
uint8 images with their labels; the consumer does nothing but count them:

1. a Python generator (PIL open, RGB, bilinear resize) through
   `tf.data.Dataset.from_generator`, batched;
2. file paths, `tf.io.read_file` + `tf.io.decode_image` + `tf.image.resize` in
   a parallel map (AUTOTUNE), batched, prefetched;
3. `keras.utils.image_dataset_from_directory(image_size=(224, 224))`, cast to uint8;
4. `tfds.load("korean_food/full")` (TFDS decodes), each photo resized, batched;
5. `tfds.load("korean_food/224", batch_size=..., as_supervised=True)`;
6. `photo_datasets.reading.pipeline.training_dataset` on `korean_food/full` with
   `image_size=224` (fused decode and random crop) and on `korean_food/224`,
   each without and with a seed; `evaluation_dataset` on `224`; training at
   112 from `224` (decoded at DCT scale 1/2, batches of 112x112); training on
   `224` with `flip=False` (the model flips), uncached and cached; with
   `--shards`, the same photos built into one record file per split beside
   the shard policy's files; training on `224` with `cache="memory"` (also seeded) and
   with a disk cache (`<workdir>/cache`, emptied first), and evaluation with
   `cache="memory"`: their warm-up is the whole first epoch, which fills the
   cache, so the timed epochs are those after the first;
7. the limit: the `224` records read raw (`TFRecordDataset`, only image and
   label parsed), `decode_jpeg` in a parallel map, batched: `doctor.decode_limit`,
   the limit `python -m photo_datasets.doctor` measures;
8. without TensorFlow, over the ArrayRecord copy of `224`
   (`photo_datasets.reading.random_access`; made after the build where a row runs):
   `torch_loader` (a PyTorch DataLoader, shuffled) and `grain_dataset` (a
   Grain pipeline, shuffled, one iterator kept across epochs), each with one
   spawned worker process per usable core, decoding with PIL. A row is left
   out where its package (torch, grain) is not installed.

Photos come from `--photos` (a folder or a zip in any layout `korean_food`
reads; at most `--images` of them) or from `benchmarks/benchmark_corpus.py`
(cached in the workdir): distinct mosaics of the real photos in
../shared/realdata at AIHub's sizes and qualities, or generated pictures where
that folder is absent (or with `--generated`); the table names which. Those that
decode (with PIL and with TensorFlow) are copied into `<workdir>/files/<class>/`,
which loaders 1-3 read and from which `korean_food/224` and `full` are built
for 4-7 (crop files are copied too). TFDS's automatic cache is off wherever
TFDS reads, so every epoch reads the records.

`--loaders` keeps the rows whose key starts with one of its words (the limit
always runs), `--targets` the rows the targets below the table compare;
`--keras` reads each tf.data loader as `model.fit` does on the backend of
`KERAS_BACKEND` (on JAX, Keras's conversion of every batch and
`jax.device_put`).

Each loader makes a warm-up pass over a few batches (which starts the worker
processes of 8), then `--repeats` timed epochs; the loaders take turns epoch
by epoch, so a change in the machine's load touches them all alike. The median
epoch counts; a target compares two loaders round by round (the median of
the rounds' ratios), so a round the machine slowed counts for both. Each
epoch's CPU time (this process, every thread, and for 8 its worker
processes) is kept too: images per CPU-second move less than images/s when
other work shares the machine. Output: a table (with the machine and its load
average before and after), a JSON file and a PNG bar chart.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import io
import itertools
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_datasets as tfds  # noqa: E402
from PIL import Image  # noqa: E402

import korean_food  # noqa: E402,F401  (registers the builder)
from korean_food import corpus  # noqa: E402
from korean_food.listing import CROP_FILE  # noqa: E402
from photo_datasets import testing  # noqa: E402
from photo_datasets.commands import doctor  # noqa: E402
from photo_datasets.reading import pipeline, random_access  # noqa: E402

import benchmark_corpus  # noqa: E402
import harness  # noqa: E402  (benchmarks/harness.py)

SIZE = 224
SPLIT = "all"  # Every photo, as loaders 1-3 read every file.
AUTOTUNE = tf.data.AUTOTUNE
WARMUP_BATCHES = 3
# What `image_dataset_from_directory` reads.
KERAS_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif")
NO_AUTOCACHE = tfds.ReadConfig(try_autocache=False)
WORKERS = len(os.sched_getaffinity(0))  # Worker processes of the loaders in 8.

# key -> label, in table order. Ratios are to BASELINE and LIMIT.
LOADERS = {
    "1_pil_generator": "1 Python generator, PIL decode+resize (from_generator)",
    "2_tf_files_map": "2 files: read_file+decode_image+resize, parallel map",
    "3_keras_directory": "3 keras image_dataset_from_directory (+ cast uint8)",
    "4_tfds_full_resize": "4 tfds.load full (TFDS decodes) + resize per photo",
    "5_tfds_224": "5 tfds.load 224, batch_size, as_supervised",
    "6_pipeline_full": "6 pipeline.training_dataset full, image_size=224",
    "6_pipeline_full_seed": "6 pipeline.training_dataset full, image_size=224, seed=0",
    "6_pipeline_224": "6 pipeline.training_dataset 224",
    "6_pipeline_224_seed": "6 pipeline.training_dataset 224, seed=0",
    "6_pipeline_224_model_flips": "6 pipeline.training_dataset 224, flip=False (the model flips)",
    "6_evaluation_224": "6 pipeline.evaluation_dataset 224",
    "6_pipeline_112": "6 pipeline.training_dataset 224, image_size=112 (DCT 1/2)",
    "6_pipeline_224_cache_memory":
        "6 pipeline.training_dataset 224, cache='memory' (after epoch 1)",
    "6_pipeline_224_cache_memory_seed":
        "6 pipeline.training_dataset 224, cache='memory', seed=0 (after epoch 1)",
    "6_pipeline_224_cache_memory_model_flips":
        "6 pipeline.training_dataset 224, cache='memory', flip=False (after epoch 1)",
    "6_pipeline_224_cache_disk": "6 pipeline.training_dataset 224, cache=DIR (after epoch 1)",
    "6_evaluation_224_cache_memory":
        "6 pipeline.evaluation_dataset 224, cache='memory' (after epoch 1)",
    "6_pipeline_224_one_file": "6 pipeline.training_dataset 224, 1 file per split",
    "6_evaluation_224_one_file": "6 pipeline.evaluation_dataset 224, 1 file per split",
    "7_limit_224_decode": "7 limit: raw 224 records, parallel decode_jpeg",
    "8_torch_224": f"8 torch DataLoader over data_source 224, {WORKERS} workers",
    "8_grain_224": f"8 Grain over data_source 224, {WORKERS} worker processes",
}
# Rows that need a package beyond the project's own: key -> package.
OPTIONAL = {"8_torch_224": "torch", "8_grain_224": "grain"}
# The `224` build with one record file per split (--shards): `<data dir>` + this.
ONE_FILE = "_one_file"
SHARD_ROWS = ("6_pipeline_224_one_file", "6_evaluation_224_one_file")
# Loaders whose warm-up is a whole epoch: it fills their cache.
FILL_FIRST = ("6_pipeline_224_cache_memory", "6_pipeline_224_cache_memory_seed",
              "6_pipeline_224_cache_memory_model_flips", "6_pipeline_224_cache_disk",
              "6_evaluation_224_cache_memory")
# Loaders of smaller images: key -> side.
SIDES = {"6_pipeline_112": SIZE // 2}
# Loaders with worker processes, whose CPU time counts as theirs.
WITH_WORKERS = ("8_torch_224", "8_grain_224")
BASELINE, LIMIT = "1_pil_generator", "7_limit_224_decode"
# (description, loader, factor, reference): holds when rate(loader) >= factor * rate(reference).
TARGETS = (
    ("(6 on 224) >= 0.95 x (7)", "6_pipeline_224", 0.95, LIMIT),
    ("(6 on 224, seed) >= 0.95 x (7)", "6_pipeline_224_seed", 0.95, LIMIT),
    ("(6 on 224, flip=False) >= 0.95 x (7)", "6_pipeline_224_model_flips", 0.95, LIMIT),
    ("(6 evaluation 224) >= 0.95 x (7)", "6_evaluation_224", 0.95, LIMIT),
    ("(6 on 224, cache='memory') >= 5 x (7)", "6_pipeline_224_cache_memory", 5.0, LIMIT),
    ("(6 on 224, cache='memory', seed) >= 5 x (7)", "6_pipeline_224_cache_memory_seed", 5.0, LIMIT),
    ("(6 on 224, cache='memory', flip=False) >= 5 x (7)",
     "6_pipeline_224_cache_memory_model_flips", 5.0, LIMIT),
    ("(6 on 224, cache=DIR) >= 4 x (7)", "6_pipeline_224_cache_disk", 4.0, LIMIT),
    ("(6 on full) >= 1.3 x (4)", "6_pipeline_full", 1.3, "4_tfds_full_resize"),
    ("(5) >= 6 x (3)", "5_tfds_224", 6.0, "3_keras_directory"),
    ("(5) >= 30 x (1)", "5_tfds_224", 30.0, BASELINE),
)


def _source_root(photos: str, workdir: str) -> str:
  """A folder `corpus.walk` reads: `photos` itself, or one holding a link to the zip."""
  if os.path.isdir(photos):
    return photos
  if not os.path.isfile(photos):
    raise SystemExit(f"--photos {photos}: no such folder or file")
  root = os.path.join(workdir, "source")
  shutil.rmtree(root, ignore_errors=True)
  os.makedirs(root)
  os.symlink(os.path.abspath(photos), os.path.join(root, os.path.basename(photos)))
  return root


def _decodes(data: bytes) -> bool:
  """Whether both PIL (loader 1) and TensorFlow (loaders 2-3) decode it."""
  try:
    with Image.open(io.BytesIO(data)) as image:
      image.convert("RGB")
    tf.io.decode_image(data, channels=3, expand_animations=False)
  except Exception:
    return False
  return True


def _candidates(root: str, limit: int) -> Iterator[tuple[str, str, bytes]]:
  """(class folder, file name, bytes) of up to `limit` images, and every crop file."""
  taken = 0
  for file, read in corpus.walk(root):
    if (len(file.parts) < 2 or file.bad_archive or "__MACOSX" in file.parts
        or file.name.startswith(".")):
      continue
    if file.name.lower() == CROP_FILE:
      yield file.parts[-2], file.name, read()
    elif taken < limit and file.name.lower().endswith(KERAS_SUFFIXES):
      taken += 1
      yield file.parts[-2], file.name, read()


def extract(root: str, files_dir: str, limit: int) -> int:
  """Copies up to `limit` photos that decode into `files_dir/<class>/`; how many."""
  shutil.rmtree(files_dir, ignore_errors=True)
  kept = skipped = 0
  workers = len(os.sched_getaffinity(0))
  with concurrent.futures.ThreadPoolExecutor(workers) as pool:
    pending: list[tuple[str, str, bytes, concurrent.futures.Future[bool]]] = []

    def flush() -> None:
      nonlocal kept, skipped
      for folder, name, data, ok in pending:
        if not ok.result():
          skipped += 1
          continue
        target = os.path.join(files_dir, folder, name)
        stem, suffix = os.path.splitext(target)
        copy = 1
        while os.path.exists(target):  # The same name in two places of the source.
          target, copy = f"{stem}_{copy}{suffix}", copy + 1
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
          out.write(data)
        kept += name.lower() != CROP_FILE
      pending.clear()

    for folder, name, data in _candidates(root, limit):
      if name.lower() == CROP_FILE:
        ok: concurrent.futures.Future[bool] = concurrent.futures.Future()
        ok.set_result(True)
      else:
        ok = pool.submit(_decodes, data)
      pending.append((folder, name, data, ok))
      if len(pending) >= 64:
        flush()
    flush()
  if skipped:
    print(f"left out {skipped} files that PIL or TensorFlow cannot decode")
  return kept


def image_files(files_dir: str) -> tuple[list[str], list[int], list[str]]:
  """(paths, labels, class names): labels index the sorted class folders, as Keras does."""
  class_names = sorted(os.listdir(files_dir))
  paths, labels = [], []
  for label, name in enumerate(class_names):
    for file in sorted(os.listdir(os.path.join(files_dir, name))):
      if file.lower().endswith(KERAS_SUFFIXES):
        paths.append(os.path.join(files_dir, name, file))
        labels.append(label)
  return paths, labels, class_names


def available(key: str) -> bool:
  """Whether the loader `key` can run here (its optional package is installed)."""
  return key not in OPTIONAL or importlib.util.find_spec(OPTIONAL[key]) is not None


def build_configs(files_dir: str, data_dir: str, array_record: bool,
                  one_file: bool = False) -> dict[str, float]:
  """Builds korean_food/224 and full from the tree, 224's ArrayRecord copy
  if asked, and 224 in one file per split into `<data_dir>_one_file` if
  asked; step -> seconds."""
  shutil.rmtree(data_dir, ignore_errors=True)
  shutil.rmtree(data_dir + ONE_FILE, ignore_errors=True)
  seconds = {}
  tfds.disable_progress_bar()
  for config in ("224", "full"):
    start = time.perf_counter()
    testing.build(f"korean_food/{config}", data_dir, files_dir)
    seconds[config] = time.perf_counter() - start
  if array_record:
    start = time.perf_counter()
    random_access.add_array_record(f"korean_food/{SIZE}", data_dir)
    seconds[f"{SIZE} ArrayRecord copy"] = time.perf_counter() - start
  if one_file:
    start = time.perf_counter()
    builder = tfds.builder(f"korean_food/{SIZE}", data_dir=data_dir + ONE_FILE)
    builder.download_and_prepare(  # The scan of the first build is reused.
        download_dir=os.path.join(data_dir, "downloads"),
        download_config=tfds.download.DownloadConfig(manual_dir=files_dir, num_shards=1))
    seconds[f"{SIZE} in one file per split"] = time.perf_counter() - start
  return seconds


# ---------------------------------------------------------------------------
# The loaders: each a function making a fresh dataset of (uint8 images, labels).


def _to_uint8(image: tf.Tensor) -> tf.Tensor:
  return tf.cast(tf.clip_by_value(tf.round(image), 0, 255), tf.uint8)


def _resized(image: tf.Tensor) -> tf.Tensor:
  return _to_uint8(tf.image.resize(image, (SIZE, SIZE)))


def pil_generator(paths: Sequence[str], labels: Sequence[int], batch_size: int) -> tf.data.Dataset:
  def photos() -> Iterator[tuple[np.ndarray, int]]:
    for path, label in zip(paths, labels, strict=True):
      with Image.open(path) as image:
        yield np.asarray(image.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)), label

  ds = tf.data.Dataset.from_generator(photos, output_signature=(
      tf.TensorSpec((SIZE, SIZE, 3), tf.uint8), tf.TensorSpec((), tf.int64)))
  return ds.batch(batch_size).prefetch(AUTOTUNE)


def tf_files_map(paths: Sequence[str], labels: Sequence[int], batch_size: int) -> tf.data.Dataset:
  def load(path: tf.Tensor, label: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    image = tf.io.decode_image(tf.io.read_file(path), channels=3, expand_animations=False)
    return _resized(image), label

  ds = tf.data.Dataset.from_tensor_slices((list(paths), tf.constant(labels, tf.int64)))
  return ds.map(load, num_parallel_calls=AUTOTUNE).batch(batch_size).prefetch(AUTOTUNE)


def keras_directory(files_dir: str, batch_size: int) -> tf.data.Dataset:
  ds = keras.utils.image_dataset_from_directory(
      files_dir, image_size=(SIZE, SIZE), batch_size=batch_size, verbose=False)
  return ds.map(lambda images, labels: (_to_uint8(images), labels), num_parallel_calls=AUTOTUNE)


def tfds_full_resize(data_dir: str, batch_size: int) -> tf.data.Dataset:
  ds = tfds.load("korean_food/full", split=SPLIT, data_dir=data_dir, as_supervised=True,
                 read_config=NO_AUTOCACHE, download=False)
  ds = ds.map(lambda image, label: (_resized(image), label), num_parallel_calls=AUTOTUNE)
  return ds.batch(batch_size).prefetch(AUTOTUNE)


def tfds_224(data_dir: str, batch_size: int) -> tf.data.Dataset:
  return tfds.load(f"korean_food/{SIZE}", split=SPLIT, data_dir=data_dir, batch_size=batch_size,
                   as_supervised=True, read_config=NO_AUTOCACHE, download=False)


class GrainEpochs:
  """Epochs of `steps` batches from one endless Grain iterator, made on first
  use: a new iterator would start the worker processes again."""

  def __init__(self, ds: Any, steps: int):
    self._ds, self._steps = ds, steps
    self._iterator: Any = None

  def __iter__(self) -> Iterator[Any]:
    if self._iterator is None:
      self._iterator = iter(self._ds)
    return itertools.islice(self._iterator, self._steps)

  def close(self) -> None:
    if self._iterator is not None and hasattr(self._iterator, "close"):
      self._iterator.close()


class AsKerasReadsIt:
  """A tf.data loader read as `model.fit` reads it on the Keras backend in use
  (`KERAS_BACKEND`): the dataset itself on TensorFlow; on JAX, Keras's
  conversion of each batch to NumPy and `jax.device_put`; on PyTorch, to tensors."""

  def __init__(self, ds: tf.data.Dataset):
    from keras.src.trainers.data_adapters.tf_dataset_adapter import TFDatasetAdapter
    self._adapter, self._backend = TFDatasetAdapter(ds), keras.config.backend()

  def __iter__(self) -> Iterator[Any]:
    if self._backend == "jax":
      import jax
      return (jax.device_put(batch) for batch in self._adapter.get_jax_iterator())
    if self._backend == "torch":
      return iter(self._adapter.get_torch_dataloader())
    return iter(self._adapter.get_tf_dataset())


def torch_224(data_dir: str, batch_size: int) -> Any:
  return random_access.torch_loader(f"korean_food/{SIZE}", split=SPLIT, data_dir=data_dir,
                                    batch_size=batch_size, num_workers=WORKERS)


def grain_224(data_dir: str, batch_size: int) -> GrainEpochs:
  name = f"korean_food/{SIZE}"
  ds = random_access.grain_dataset(name, split=SPLIT, data_dir=data_dir, batch_size=batch_size,
                                   num_epochs=None, num_workers=WORKERS)
  examples = len(random_access.data_source(name, split=SPLIT, data_dir=data_dir))
  return GrainEpochs(ds, examples // batch_size)


def loaders(files_dir: str, data_dir: str, batch_size: int, chosen: Sequence[str] = (),
            through_keras: bool = False, one_file: bool = False,
            exact: bool = False) -> dict[str, Callable[[], Any]]:
  """Makers of the loaders that can run here, those whose key starts with one
  of `chosen` (is one of them if `exact`; all when empty) and the limit."""
  paths, labels, _ = image_files(files_dir)
  makers: dict[str, Callable[[], Any]] = {
      "1_pil_generator": lambda: pil_generator(paths, labels, batch_size),
      "2_tf_files_map": lambda: tf_files_map(paths, labels, batch_size),
      "3_keras_directory": lambda: keras_directory(files_dir, batch_size),
      "4_tfds_full_resize": lambda: tfds_full_resize(data_dir, batch_size),
      "5_tfds_224": lambda: tfds_224(data_dir, batch_size),
      "6_pipeline_full": lambda: pipeline.training_dataset(
          "korean_food/full", split=SPLIT, batch_size=batch_size, image_size=SIZE,
          data_dir=data_dir),
      "6_pipeline_full_seed": lambda: pipeline.training_dataset(
          "korean_food/full", split=SPLIT, batch_size=batch_size, image_size=SIZE,
          data_dir=data_dir, seed=0),
      "6_pipeline_224": lambda: pipeline.training_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir),
      "6_pipeline_224_seed": lambda: pipeline.training_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir, seed=0),
      "6_pipeline_224_model_flips": lambda: pipeline.training_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir, flip=False),
      "6_evaluation_224": lambda: pipeline.evaluation_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir),
      "6_pipeline_112": lambda: pipeline.training_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir,
          image_size=SIZE // 2),
      "6_pipeline_224_cache_memory": lambda: pipeline.training_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir,
          cache="memory"),
      "6_pipeline_224_cache_memory_seed": lambda: pipeline.training_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir,
          cache="memory", seed=0),
      "6_pipeline_224_cache_memory_model_flips": lambda: pipeline.training_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir,
          cache="memory", flip=False),
      "6_pipeline_224_cache_disk": lambda: pipeline.training_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir,
          cache=_emptied(data_dir + "_cache")),
      "6_evaluation_224_cache_memory": lambda: pipeline.evaluation_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir,
          cache="memory"),
      "7_limit_224_decode": lambda: doctor.decode_limit(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir),
      "6_pipeline_224_one_file": lambda: pipeline.training_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir + ONE_FILE),
      "6_evaluation_224_one_file": lambda: pipeline.evaluation_dataset(
          f"korean_food/{SIZE}", split=SPLIT, batch_size=batch_size, data_dir=data_dir + ONE_FILE),
      "8_torch_224": lambda: torch_224(data_dir, batch_size),
      "8_grain_224": lambda: grain_224(data_dir, batch_size),
  }
  picked = {key: make for key, make in makers.items()
            if available(key) and (one_file or key not in SHARD_ROWS)
            and (not chosen or key == LIMIT or any(
                key == prefix or key.startswith(prefix) and not exact for prefix in chosen))}
  if through_keras:
    picked = {key: _through_keras(make) if key not in OPTIONAL else make
              for key, make in picked.items()}
  return picked


def _emptied(directory: str) -> str:
  shutil.rmtree(directory, ignore_errors=True)
  return directory


def _through_keras(make: Callable[[], Any]) -> Callable[[], Any]:
  return lambda: AsKerasReadsIt(make())


# ---------------------------------------------------------------------------
# Timing.


def _dtype_name(tensor: Any) -> str:
  """"uint8" of a TensorFlow, NumPy or PyTorch uint8 array."""
  return str(getattr(tensor.dtype, "name", tensor.dtype)).removeprefix("torch.")


def epoch(ds: Any, batches: int | None = None, workers: bool = False,
          side: int = SIZE) -> tuple[int, float, float]:
  """(images, seconds, CPU seconds of this process, and of its worker
  processes if `workers`) of one pass, iterator start included; checks the batches."""
  start, cpu_start, seen = time.perf_counter(), harness.cpu_seconds(children=workers), 0
  if batches is None:
    passed = ds
  else:
    passed = ds.take(batches) if isinstance(ds, tf.data.Dataset) else itertools.islice(ds, batches)
  for images, labels in passed:
    if _dtype_name(images) != "uint8" or tuple(images.shape[1:]) != (side, side, 3):
      raise AssertionError(f"batch of {images.dtype} {images.shape}, "
                           f"not uint8 (B, {side}, {side}, 3)")
    if labels.shape[0] != images.shape[0]:
      raise AssertionError(f"{labels.shape[0]} labels for {images.shape[0]} images")
    seen += int(images.shape[0])
  return seen, time.perf_counter() - start, harness.cpu_seconds(children=workers) - cpu_start


def measure(makers: dict[str, Callable[[], Any]], repeats: int) -> dict[str, dict[str, Any]]:
  datasets = {key: make() for key, make in makers.items()}
  for key, ds in datasets.items():
    print(f"warm-up {key}", flush=True)
    epoch(ds, None if key in FILL_FIRST else WARMUP_BATCHES, side=SIDES.get(key, SIZE))
  results: dict[str, dict[str, Any]] = {
      key: {"images": 0, "seconds": [], "cpu_seconds": [], "rates": []} for key in datasets}
  for repeat in range(repeats):
    for key, ds in datasets.items():  # In turns: drifting load touches every loader.
      images, seconds, cpu = epoch(ds, workers=key in WITH_WORKERS, side=SIDES.get(key, SIZE))
      result = results[key]
      result["images"] = images
      result["seconds"].append(round(seconds, 4))
      result["cpu_seconds"].append(round(cpu, 4))
      result["rates"].append(round(images / seconds, 1))
      print(f"epoch {repeat + 1}/{repeats} {key}: {images} images, "
            f"{images / seconds:,.0f} images/s, {images / cpu:,.0f} per CPU-second", flush=True)
  for result in results.values():
    result["median"] = statistics.median(result["rates"])
    # What one core delivers: less sensitive than images/s to other work on the machine.
    result["per_cpu_second"] = round(result["images"] / statistics.median(result["cpu_seconds"]), 1)
  for ds in datasets.values():
    if isinstance(ds, GrainEpochs):
      ds.close()  # Stops its worker processes.
  return results


# ---------------------------------------------------------------------------
# Report.


def targets(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
  out = []
  for description, key, factor, reference in TARGETS:
    if key not in results or reference not in results:
      continue
    # Paired: each round's ratio (the two loaders ran one after the other), then the median round.
    ratio = statistics.median(rate / ref for rate, ref in zip(
        results[key]["rates"], results[reference]["rates"], strict=True))
    out.append({"target": description, "ratio": round(ratio, 3), "needed": factor,
                "holds": ratio >= factor})
  return out


def table(report: dict[str, Any]) -> str:
  rows = report["loaders"]
  base, limit = rows[BASELINE]["median"] if BASELINE in rows else None, rows[LIMIT]["median"]
  m = report["machine"]
  lines = [
      f"{report['photos']} photos ({report['source']}), batch {report['batch_size']}, "
      f"{report['repeats']} timed epochs per loader (median), "
      f"read as {report.get('read_as', 'tf.data iteration')}",
      f"machine: {m['cores_usable']} cores usable ({m['cores_in_machine']} in the machine), "
      f"{m['cpu_model']}, {m.get('memory_gb', '?')} GB; TF {m['tensorflow']}, "
      f"TFDS {m['tensorflow_datasets']}, Keras {m['keras']}, Pillow {m['pillow']}",
      f"load average (1, 5, 15 min) before {report['load_before']}, after {report['load_after']}",
      "",
      f"{'loader':58} {'images':>7} {'images/s':>9} {'x (1)':>7} {'x (7)':>6} {'/CPU-s':>7}  "
      "epochs, images/s",
  ]
  for key, label in report["labels"].items():
    row = rows[key]
    spread = ", ".join(f"{rate:,.0f}" for rate in row["rates"])
    to_base = f"{row['median'] / base:7.2f}" if base else f"{'-':>7}"
    lines.append(f"{label:58} {row['images']:7d} {row['median']:9,.0f} {to_base} "
                 f"{row['median'] / limit:6.2f} {row['per_cpu_second']:7,.0f}  {spread}")
  lines.append("(/CPU-s: images per CPU-second of this process, and of its worker processes for 8, "
               "median epoch; other work on the machine moves it less than images/s)")
  lines.append("")
  for target in report["targets"]:
    verdict = "holds" if target["holds"] else "MISSED"
    lines.append(f"target {target['target']:38} {target['ratio']:6.2f} "
                 f"(>= {target['needed']}): {verdict}")
  return "\n".join(lines)


def chart(report: dict[str, Any], path: str) -> None:
  import matplotlib
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt

  rows = report["loaders"]
  keys = list(report["labels"])
  labels = list(report["labels"].values())[::-1]
  rates = [rows[key]["median"] for key in keys][::-1]
  colours = ["tab:grey" if key[0] in "123" else "tab:orange" if key[0] in "45" else
             "tab:green" if key[0] == "6" else "tab:purple" if key[0] == "8" else "tab:blue"
             for key in keys][::-1]
  figure, axes = plt.subplots(figsize=(11, 5.5))
  bars = axes.barh(labels, rates, color=colours)
  axes.bar_label(bars, labels=[f"{rate:,.0f}" for rate in rates], padding=3)
  axes.axvline(rows[LIMIT]["median"], color="tab:blue", linestyle="--", linewidth=1)
  axes.set_xlabel(f"images/s, batched {SIZE}x{SIZE} uint8 (median of {report['repeats']} epochs)")
  axes.set_xlim(0, max(rates) * 1.18)
  m = report["machine"]
  axes.set_title(f"{report['photos']} photos, batch {report['batch_size']}; "
                 f"{m['cores_usable']} cores, {m['cpu_model']}", fontsize=10)
  figure.tight_layout()
  figure.savefig(path, dpi=110)
  plt.close(figure)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--photos", help="a folder or zip in any korean_food layout; default: made "
                      "from the real photos in ../shared/realdata (generated where absent)")
  parser.add_argument("--generated", action="store_true",
                      help="use the generated fallback pictures even where the real photos are "
                      "present")
  parser.add_argument("--images", type=int, default=2000,
                      help="photos to generate, or the most to take from --photos")
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--repeats", type=int, default=3, help="timed epochs per loader")
  parser.add_argument("--loaders", nargs="+", default=[], metavar="KEY",
                      help="only the loaders whose key starts with one of these "
                      "(e.g. 5 6_pipeline_224 7); "
                      f"the limit always runs. Keys: {', '.join(LOADERS)}")
  parser.add_argument("--targets", action="store_true",
                      help="only the loaders the targets compare "
                      "(what docs/performance.md's goals quote)")
  parser.add_argument("--keras", action="store_true",
                      help="read each tf.data loader as model.fit does on the backend of "
                      "KERAS_BACKEND (on JAX: Keras's conversion of every batch, "
                      "then jax.device_put)")
  parser.add_argument("--shards", action="store_true",
                      help="also build 224 in one record file per split and read it beside the "
                      "shard policy's files (rows '1 file per split')")
  parser.add_argument("--workdir", default="/tmp/photo_datasets_loader_bench")
  parser.add_argument("--json",
                      help="write the results here (default <workdir>/loader_benchmark.json)")
  parser.add_argument("--png",
                      help="write the bar chart here (default <workdir>/loader_benchmark.png)")
  args = parser.parse_args(argv)
  if args.images < 1 or args.batch_size < 1 or args.repeats < 1:
    parser.error("--images, --batch_size and --repeats must be >= 1")
  workdir = os.path.abspath(args.workdir)
  os.makedirs(workdir, exist_ok=True)
  json_path = args.json or os.path.join(workdir, "loader_benchmark.json")
  png_path = args.png or os.path.join(workdir, "loader_benchmark.png")

  load_before = harness.load_average()
  if args.photos:
    source, corpus = _source_root(args.photos, workdir), f"--photos {args.photos}"
  else:
    source, corpus = harness.made_corpus(workdir, args.images,
                                         None if args.generated else benchmark_corpus.REALDATA)
  files_dir, data_dir = os.path.join(workdir, "files"), os.path.join(workdir, "data")
  count = extract(source, files_dir, args.images)
  if not count:
    raise SystemExit(f"no photo that decodes in {args.photos}")
  targeted = sorted({key for _, key, _, reference in TARGETS for key in (key, reference)})
  chosen = targeted if args.targets else args.loaders
  makers = loaders(files_dir, data_dir, args.batch_size, chosen, through_keras=args.keras,
                   one_file=args.shards, exact=args.targets)
  print(f"{count} photos in {files_dir}; building korean_food/{SIZE} and full ...", flush=True)
  build_seconds = build_configs(files_dir, data_dir,
                                array_record=any(key[0] == "8" for key in makers),
                                one_file=args.shards)

  results = measure(makers, args.repeats)
  base, limit = (results[BASELINE]["median"] if BASELINE in results else None,
                 results[LIMIT]["median"])
  for result in results.values():
    result["ratio_to_1"] = round(result["median"] / base, 3) if base else None
    result["ratio_to_7"] = round(result["median"] / limit, 3)
  report = {
      "command": " ".join([os.path.basename(sys.argv[0]) if argv is None else "loader_benchmark.py",
                           *(sys.argv[1:] if argv is None else argv)]),
      "machine": harness.machine(),
      "source": f"{corpus} in {source}",
      "photos": count,
      "batch_size": args.batch_size,
      "repeats": args.repeats,
      "read_as": (f"model.fit on Keras's {keras.config.backend()} backend" if args.keras
                  else "tf.data iteration"),
      "build_seconds": {config: round(s, 2) for config, s in build_seconds.items()},
      "load_before": load_before,
      "load_after": harness.load_average(),
      "labels": {key: label for key, label in LOADERS.items() if key in results},
      "loaders": results,
  }
  report["targets"] = targets(results)
  print("\n" + table(report))
  with open(json_path, "w") as out:
    json.dump(report, out, indent=2, ensure_ascii=False)
  chart(report, png_path)
  print(f"\nwrote {json_path} and {png_path}")
  return report


if __name__ == "__main__":
  main()

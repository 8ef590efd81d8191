"""Per image, where the 224 training path's time goes, stage by stage, against the decode limit.

  python benchmarks/reading_profile.py [--data_dir DIR] [--images 1000] [--repeats 3]
      [--workdir DIR] [--json F]

On a built `korean_food/224` (`--data_dir`, or one built from `--images`
benchmark photos in the workdir), one run times in turns, each for whole
epochs, batched 64 and prefetched as the pipeline is:

* the decode limit (`doctor.decode_limit`: raw records, image and label
  parsed, `decode_jpeg` in a parallel map);
* the training path built up one stage at a time, as `pipeline.training_dataset`
  builds it: the record files interleaved, the shuffle of serialized
  examples, the parse and the decode of each example in a map (as a tf.data
  service's workers read, with their flip of each image by `tf.reverse`),
  or instead of a batch in a map (as `training_dataset` reads), the flip of
  each batch; then `training_dataset` itself, without and with a seed;
* the memory cache's later epochs built up the same way: the cached images
  alone, their shuffle; then `training_dataset(cache="memory")`, which adds
  the flip, without and with a seed;
* both `training_dataset` rows again with `flip=False` (the model mirrors the
  images on the accelerator instead).

Each row: wall and CPU microseconds per image (CPU of every thread of this
process), medians of `--repeats` epochs, and its images/s against the limit.
A stage's cost is its row less the row above it.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import korean_food  # noqa: E402,F401  (registers the builder)
from photo_datasets.commands import doctor  # noqa: E402
from photo_datasets.reading import augmentation, batches, decoding, pipeline  # noqa: E402

import harness  # noqa: E402

NAME, SPLIT, BATCH = "korean_food/224", "all", 64
AUTOTUNE = tf.data.AUTOTUNE


def stages(data_dir: str) -> dict[str, Callable[[], tf.data.Dataset]]:
  """Label -> maker of an epoch's batches, the training path built up stage by stage."""
  reader = decoding.Reader(NAME, SPLIT, data_dir, None, None)

  def batched(ds: tf.data.Dataset) -> tf.data.Dataset:
    return ds.batch(BATCH, drop_remainder=True).prefetch(AUTOTUNE)

  def records() -> tf.data.Dataset:
    return reader.records(shuffle_files=True)

  def shuffled() -> tf.data.Dataset:
    return records().shuffle(2048)

  def mapped(function: Callable[[tf.Tensor], Any]) -> Callable[[], tf.data.Dataset]:
    return lambda: batched(shuffled().map(function, num_parallel_calls=AUTOTUNE,
                                          deterministic=False))

  def decoded_batches() -> tf.data.Dataset:
    return shuffled().batch(BATCH, drop_remainder=True).map(
        lambda records: reader.augmented_batch(records, None),
        num_parallel_calls=batches.usable_cores(), deterministic=False)

  def mirrored_alone(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    image, label = reader.decoded(reader.parse(record))
    return (tf.cond(tf.random.uniform([]) < 0.5, lambda: tf.reverse(image, [1]), lambda: image),
            label)

  def cached_images() -> tf.data.Dataset:
    ds = reader.cached("memory", reader.decoded)
    for _ in ds:  # The epoch that fills it.
      pass
    return ds

  def cache_stage(shuffle: bool) -> Callable[[], tf.data.Dataset]:
    def make() -> tf.data.Dataset:
      ds = cached_images()
      return batched(ds.shuffle(2048) if shuffle else ds)
    return make

  def memory_cache(seed: int | None, flip: bool = True) -> Callable[[], tf.data.Dataset]:
    def make() -> tf.data.Dataset:
      ds = pipeline.training_dataset(NAME, split=SPLIT, batch_size=BATCH, data_dir=data_dir,
                                     seed=seed, cache="memory", flip=flip)
      for _ in ds:  # The epoch that fills the cache.
        pass
      return ds
    return make

  return {
      "decode limit: raw records, parse image+label, decode_jpeg": lambda: doctor.decode_limit(
          NAME, split=SPLIT, batch_size=BATCH, data_dir=data_dir),
      "records: 16 files interleaved, shuffled file order": lambda: batched(records()),
      "+ shuffle of the serialized examples (2048)": lambda: batched(shuffled()),
      "+ parse, one example a map call": mapped(reader.parse),
      "+ decode_jpeg, one example a map call":
          mapped(lambda record: reader.decoded(reader.parse(record))),
      "  or + tf.reverse of each image, in the map (the tf.data service's flip)":
          mapped(mirrored_alone),
      "  or + batch, then parse and decode a batch a map call, a call per core":
          lambda: decoded_batches().prefetch(AUTOTUNE),
      "+ flip of each batch (OpenCV, in place; half the images mirrored)":
          lambda: augmentation.flipped_batches(decoded_batches(), None,
                                            deterministic=False).prefetch(AUTOTUNE),
      "training_dataset(224)": lambda: pipeline.training_dataset(
          NAME, split=SPLIT, batch_size=BATCH, data_dir=data_dir),
      "training_dataset(224, seed=0)": lambda: pipeline.training_dataset(
          NAME, split=SPLIT, batch_size=BATCH, data_dir=data_dir, seed=0),
      "training_dataset(224, flip=False): the model flips": lambda: pipeline.training_dataset(
          NAME, split=SPLIT, batch_size=BATCH, data_dir=data_dir, flip=False),
      "cache: the cached decoded images alone": cache_stage(shuffle=False),
      "cache: + shuffle (2048 decoded)": cache_stage(shuffle=True),
      "training_dataset(224, cache='memory'), epochs after the first": memory_cache(None),
      "training_dataset(224, cache='memory', seed=0), after the first": memory_cache(0),
      "training_dataset(224, cache='memory', flip=False), after the first":
          memory_cache(None, flip=False),
  }


def epoch(ds: tf.data.Dataset) -> dict[str, float]:
  start, cpu, images = time.perf_counter(), harness.cpu_seconds(), 0
  for batch in ds:  # (images, labels), or what a stage gives (examples, features).
    images += int(tf.nest.flatten(batch)[0].shape[0])
  return {"images": images, "seconds": time.perf_counter() - start,
          "cpu_seconds": harness.cpu_seconds() - cpu}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--data_dir",
                      help="where korean_food/224 is built; default: built from --images photos")
  parser.add_argument("--images", type=int, default=1000)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--workdir", default="/tmp/photo_datasets_reading_profile")
  parser.add_argument("--json", help="default <workdir>/reading_profile.json")
  args = parser.parse_args(argv)
  load_before = harness.load_average()
  data_dir, corpus = args.data_dir, f"--data_dir {args.data_dir}"
  if data_dir is None:
    source, corpus = harness.made_corpus(args.workdir, args.images)
    data_dir, _ = harness.built(NAME, source, args.workdir)
  made = stages(data_dir)
  datasets = {label: make() for label, make in made.items()}
  for ds in datasets.values():  # Warm-up: traces and starts the threads.
    for _ in ds.take(3):
      pass
  results = harness.in_turns({label: (lambda ds=ds: epoch(ds)) for label, ds in datasets.items()},
                             args.repeats,
                             say=lambda key, repeat, figures: print(
                                 f"{repeat + 1}/{args.repeats} {key}: "
                                 f"{figures['images'] / figures['seconds']:,.0f} images/s",
                                 flush=True))
  limit = next(iter(results.values()))
  limit_rate = limit["median_images"] / limit["median_seconds"]
  print(f"\n{NAME} split {SPLIT!r} ({corpus}), batch {BATCH}, median of {args.repeats} epochs; "
        f"load average before {load_before}, after {harness.load_average()}; "
        f"{len(os.sched_getaffinity(0))} cores usable")
  print(f"{'stage':64} {'wall us':>8} {'CPU us':>7} {'images/s':>9} {'x limit':>8}")
  rows = {}
  for label, result in results.items():
    images = result["median_images"]
    wall, cpu = result["median_seconds"] * 1e6 / images, result["median_cpu_seconds"] * 1e6 / images
    rate = images / result["median_seconds"]
    rows[label] = {"wall_us": round(wall, 1), "cpu_us": round(cpu, 1),
                   "images_per_second": round(rate), "x_limit": round(rate / limit_rate, 3)}
    print(f"{label:64} {wall:8.0f} {cpu:7.0f} {rate:9,.0f} {rate / limit_rate:8.2f}")
  report = {"corpus": corpus, "data_dir": data_dir, "machine": harness.machine(),
            "load_before": load_before, "rows": rows, "epochs": results}
  harness.write_json(report, args.json or os.path.join(args.workdir, "reading_profile.json"))
  return report


if __name__ == "__main__":
  main()

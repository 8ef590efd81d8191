"""Where the fused `full` path's time goes, against `tfds.load` + resize: CPU ms/photo on one core.

  python benchmarks/full_path_profile.py DATA_DIR [--name korean_food/full] [--split all]
      [--size 224] [--photos 300]

Reads the first `--photos` records of a built `full` config and times, each
stage alone, in a single-threaded tf.data pipeline (one core, CPU seconds
counted, so other work on the machine moves it little):

* what `tfds.load` + resize does: `decode_jpeg` of the whole photo, then
  `tf.image.resize` to the square;
* what `pipeline.training_dataset(..., image_size=S)` does: the header's
  shape, the random crop window, `decode_and_crop_jpeg` of the window at the
  DCT scale the pipeline picks, the resize (and flip); and, to see what each
  part buys, the same window decoded at full scale, and the whole photo at
  the DCT scale.

Prints a table and the DCT scales the crops were decoded at.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import korean_food  # noqa: E402,F401  (registers the builder)
from photo_datasets.reading import decoding, pipeline  # noqa: E402

REPEATS = 3


def _one_core(ds: tf.data.Dataset) -> tf.data.Dataset:
  options = tf.data.Options()
  options.threading.private_threadpool_size = 1
  options.autotune.enabled = False
  return ds.with_options(options)


def cpu_ms_per_photo(examples: list[dict[str, Any]],
                     stage: Callable[[dict[str, Any]], Any]) -> float:
  """Median over `REPEATS` passes of CPU milliseconds per photo of `stage`, one photo at a time."""
  ds = _one_core(tf.data.Dataset.from_tensor_slices(
      {key: tf.stack([example[key] for example in examples]) for key in examples[0]}).map(stage))
  for _ in ds.take(2):  # Traces.
    pass
  passes = []
  for _ in range(REPEATS):
    start = time.process_time()
    for _ in ds:
      pass
    passes.append((time.process_time() - start) * 1000 / len(examples))
  return statistics.median(passes)


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("data_dir")
  parser.add_argument("--name", default="korean_food/full")
  parser.add_argument("--split", default="all")
  parser.add_argument("--size", type=int, default=224)
  parser.add_argument("--photos", type=int, default=300)
  args = parser.parse_args(argv)
  reader = decoding.Reader(args.name, args.split, args.data_dir, args.size, None)
  examples = [reader.parse(record)
              for record in reader.records(shuffle_files=False).take(args.photos)]
  size = args.size

  def window(example: dict[str, Any], index: int = 0) -> tf.Tensor:
    has_box = example["has_bbox"] if reader.has_box else tf.constant(False)
    seed = tf.stack([tf.cast(example["label"], tf.int64), tf.constant(index, tf.int64)])
    return pipeline.random_crop_window(tf.io.extract_jpeg_shape(example["image"]),
                                       reader._box(example), has_box, seed)  # noqa: SLF001

  def ratio_of(shorter: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(tf.cast(shorter >= size * tf.constant([2, 4, 8]), tf.int32))

  def at_scale(encoded: tf.Tensor, crop: tf.Tensor, steps: tf.Tensor) -> tf.Tensor:
    def decode(ratio: int) -> Callable[[], tf.Tensor]:
      return lambda: tf.io.decode_and_crop_jpeg(encoded, tf.stack([
          crop[0] // ratio, crop[1] // ratio,
          tf.maximum(crop[2] // ratio, 1), tf.maximum(crop[3] // ratio, 1)]),
          channels=3, ratio=ratio)
    return tf.switch_case(steps, [decode(r) for r in (1, 2, 4, 8)])

  def fused(encoded: tf.Tensor, crop: tf.Tensor) -> tf.Tensor:
    return at_scale(encoded, crop, ratio_of(tf.minimum(crop[2], crop[3])))

  def whole_at_scale(example: dict[str, Any]) -> tf.Tensor:
    shape = tf.io.extract_jpeg_shape(example["image"])
    steps = ratio_of(tf.minimum(shape[0], shape[1]))
    return tf.switch_case(steps,
                          [lambda r=r: tf.io.decode_jpeg(example["image"], channels=3, ratio=r)
                           for r in (1, 2, 4, 8)])

  # Each includes the read of the parsed example.
  stages: dict[str, Callable[[dict[str, Any]], Any]] = {
      "tfds.load: decode_jpeg whole photo": lambda ex: tf.io.decode_jpeg(ex["image"], channels=3),
      "tfds.load + resize (row 4)": lambda ex: tf.image.resize(
          tf.io.decode_jpeg(ex["image"], channels=3), (size, size)),
      "header shape + random crop window": window,
      "decode_and_crop_jpeg of the window, full scale": lambda ex: tf.io.decode_and_crop_jpeg(
          ex["image"], window(ex), channels=3),
      "decode_and_crop_jpeg of the window, DCT scale (fused)": lambda ex: fused(
          ex["image"], window(ex)),
      "decode_jpeg whole photo at its DCT scale": whole_at_scale,
      "pipeline training map (window, fused decode, resize, flip)": lambda ex: reader.cropped(
          ex, tf.stack([tf.cast(ex["label"], tf.int64), tf.constant(0, tf.int64)])),
  }
  sides = [min(int(s) for s in tf.io.extract_jpeg_shape(ex["image"])[:2]) for ex in examples]
  scales = collections.Counter(2 ** int(ratio_of(tf.minimum(w[2], w[3]))) for w in (
      window(ex).numpy() for ex in examples))
  print(f"{args.name} {args.split}: {len(examples)} photos, "
        f"shorter side median {statistics.median(sides):.0f} px "
        f"({min(sides)}-{max(sides)}); crops decoded at DCT scale 1/n, n: "
        + ", ".join(f"{n}: {count}" for n, count in sorted(scales.items())))
  results = {label: cpu_ms_per_photo(examples, stage) for label, stage in stages.items()}
  reference = results["tfds.load + resize (row 4)"]
  print(f"{'stage (one core)':62} {'CPU ms/photo':>12} {'/ row 4':>8}")
  for label, ms in results.items():
    print(f"{label:62} {ms:12.2f} {ms / reference:8.2f}")


if __name__ == "__main__":
  main()

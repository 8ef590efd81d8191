"""What limits training on this machine: the input pipeline, or the model.

  python -m photo_datasets doctor NAME [--data_dir DIR] [--split train]
      [--model small|mobilenet_v3_small|PATH.keras] [--batch_size 64]
      [--image_size S] [--seconds 2] [--json]

Measures, one after the other and each for about `--seconds`:

* the decode limit: the split's stored JPEGs read raw (only image and label
  parsed) and decoded (`decode_jpeg`) in a parallel map, batched: what this
  machine's cores can decode, nothing else done;
* `pipeline.training_dataset` as it is, and with `cache="memory"` after the
  epoch that fills it (on a part of the split that it reads in about
  `--seconds`: the rate of the epochs after the first);
* `pipeline.evaluation_dataset`;
* the model's training steps on synthetic uint8 batches of the same shape,
  already on the device Keras computes on (any backend), so no input at all.

Each input row gives its wall and CPU microseconds per image (CPU of every
thread of this process), and a line sums them up: the decode, what training
adds to it, what the memory cache leaves. Then one verdict: which side
limits training, by what factor, and the remedy that fits: `cache="memory"`
when the whole split fits in half the free memory and the cache reads fast
enough; else how many tf.data service workers of this machine's input rate
the model needs (`photo_datasets.reading.data_service`); or a smaller stored size.
The table and verdict go to stdout (`--json`: one JSON object), a progress
line per measurement to stderr.

A split (or split expression, `--split test[:2]`) of fewer than
`SMALL_SPLIT_BATCHES` batches gets a caveat: read again and again, its rows
differ by noise; a negative difference is called noise, not a cost.

The two sides are measured apart: where the model also runs on these CPUs,
they share the cores during training, and training is slower than either.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from photo_datasets.commands.models import MODELS, build_model  # noqa: E402
from photo_datasets.reading import built, cache, pipeline  # noqa: E402

SECONDS = 2.0  # Per measurement, by default.
WARMUP_BATCHES = 2
# The model must outrun the input by this much to call training input-bound
# (and the reverse): closer than that, the two are matched.
MARGIN = 1.1
# A split of fewer batches than this is read again and again within one measurement: its restarts
# dominate, and the differences between the rows are noise, not costs.
SMALL_SPLIT_BATCHES = 10


@dataclasses.dataclass
class Row:
  """One measurement: images per second, or why it was not made."""

  key: str
  label: str
  images_per_second: float | None = None
  note: str = ""
  cpu_us_per_image: float | None = None  # CPU of every thread of this process; None for the model.


def decode_limit(name: str, *, split: str, batch_size: int,
                 data_dir: str | None) -> tf.data.Dataset:
  """The split's stored JPEGs read raw and decoded in a parallel map, batched: nothing else."""
  builder = built.open_built(name, data_dir)
  spec = {"image": tf.io.FixedLenFeature([], tf.string),
          "label": tf.io.FixedLenFeature([], tf.int64)}

  def decode(record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    example = tf.io.parse_single_example(record, spec)
    return tf.io.decode_jpeg(example["image"], channels=3), example["label"]

  # The records of `split`, or of a split expression (`train[:10%]`): each file's part of it.
  parts = builder.info.splits[split].file_instructions
  ds = tf.data.Dataset.from_tensor_slices((
      [i.filename for i in parts], tf.constant([i.skip for i in parts], tf.int64),
      tf.constant([i.take for i in parts], tf.int64)))
  ds = ds.interleave(lambda path, skip, take: tf.data.TFRecordDataset(path).skip(skip).take(take),
                     cycle_length=tf.data.AUTOTUNE, num_parallel_calls=tf.data.AUTOTUNE,
                     deterministic=False)
  ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
  # Photos of any size: batches of their shapes.
  if builder.info.features["image"].shape[0] is None:
    ds = ds.map(lambda image, label: (tf.shape(image), label))
  return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def rate(batches: Iterable[Any], seconds: float) -> tuple[float, float]:
  """(images per second, CPU microseconds per image of every thread of this
  process) of `batches` (first dimension), read for about `seconds` after
  `WARMUP_BATCHES` (and at least 3 batches)."""
  iterator = iter(batches)
  for _ in range(WARMUP_BATCHES):
    next(iterator)
  start, cpu_start, images, count = time.perf_counter(), time.process_time(), 0, 0
  while count < 3 or time.perf_counter() - start < seconds:
    images += int(next(iterator)[0].shape[0])
    count += 1
  return images / (time.perf_counter() - start), (time.process_time() - cpu_start) * 1e6 / images


def model_rate(model: keras.Model, batch_size: int, image_size: int, num_classes: int,
               seconds: float) -> float:
  """Images per second of `model`'s training steps on one synthetic uint8
  batch already on the device: the model alone, without any input."""
  rng = np.random.default_rng(0)
  images = keras.ops.convert_to_tensor(
      rng.integers(0, 256, (batch_size, image_size, image_size, 3), np.uint8))
  labels = keras.ops.convert_to_tensor(rng.integers(0, num_classes, (batch_size,)))
  for _ in range(WARMUP_BATCHES):  # Compiles the step.
    model.train_on_batch(images, labels)
  start, steps = time.perf_counter(), 0
  while steps < 3 or time.perf_counter() - start < seconds:
    loss = model.train_on_batch(images, labels)
    steps += 1
  float(np.asarray(loss if not isinstance(loss, list) else loss[0]))  # The last step has finished.
  return steps * batch_size / (time.perf_counter() - start)


def load_model(model: str, num_classes: int, image_size: int) -> keras.Model:
  """One of `models.MODELS`, built for the dataset with the dtype policy
  `photo_datasets.commands.train` would use here (mixed precision on a GPU), or a saved
  `.keras` model taking uint8 (B, S, S, 3); compiled for sparse labels if it is not."""
  if model in MODELS:
    # Its dtype policy, so the doctor measures what training runs.
    from photo_datasets.commands import train
    with train.global_dtype_policy(train.dtype_policy("auto")):
      built = build_model(model, num_classes, image_size)
  elif model.endswith(".keras") and os.path.isfile(model):
    built = keras.saving.load_model(model)
    shape = tuple(built.input_shape[1:])
    if shape != (image_size, image_size, 3):
      raise ValueError(f"{model} takes inputs of shape {shape}, the pipeline gives "
                       f"({image_size}, {image_size}, 3): give --image_size {shape[0]}.")
  else:
    raise ValueError(f"--model must be one of {', '.join(MODELS)} or an existing PATH.keras, "
                     f"got {model!r}.")
  if not built.compiled:
    built.compile(keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy")
  return built


def device() -> str:
  """The devices Keras computes on, in words; says so where it sees no GPU."""
  backend = keras.config.backend()
  if backend == "jax":
    import jax
    found = jax.devices()
    kinds = ", ".join(str(getattr(d, "device_kind", d)) for d in found)
    return (f"JAX {found[0].platform} ({kinds})"
            + (", no GPU seen" if found[0].platform == "cpu" else ""))
  if backend == "torch":
    import torch
    if torch.cuda.is_available():
      return ("PyTorch cuda ("
              + ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
              + ")")
    return "PyTorch cpu, no GPU seen"
  gpus = tf.config.list_logical_devices("GPU")
  if gpus:
    return f"TensorFlow GPU {', '.join(gpu.name for gpu in gpus)}"
  return f"TensorFlow CPU (no GPU seen; {len(os.sched_getaffinity(0))} cores usable)"


def examine(name: str, *, data_dir: str | None = None, split: str = "train", model: str = "small",
            batch_size: int = 64, image_size: int | None = None, seconds: float = SECONDS,
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
  """Measures both sides of training `model` on `name`'s `split`; the report
  `main` prints (rows, verdict, remedy). Raises ValueError on a bad argument."""
  say = progress or (lambda line: None)
  name, data_dir = dataclasses.astuple(built.locate(name, data_dir))
  builder = built.open_built(name, data_dir)
  examples = _split_examples(builder, name, split)
  stored = builder.info.features["image"].shape[0]
  size = image_size or stored
  if size is None:
    raise ValueError(f"{name} stores images at their source size: give --image_size (e.g. 224).")
  model_batch_size = batch_size  # The model is timed at the batch it trains on, not the split's.
  batch_size = _input_batch_size(batch_size, examples, split, say)
  common: dict[str, Any] = {"batch_size": batch_size, "image_size": image_size,
                            "data_dir": data_dir}
  rows = _input_rows(name, split, examples, stored, seconds, common, say)
  num_classes = builder.info.features["label"].num_classes
  trained = load_model(model, num_classes, size)
  rows.append(_measure("model", f"model {os.path.basename(model)}: train steps on {device()}",
                       lambda: model_rate(trained, model_batch_size, size, num_classes, seconds),
                       seconds, say))
  split_bytes = examples * size * size * 3
  report: dict[str, Any] = {
      "name": name, "split": split, "batch_size": batch_size, "model_batch_size": model_batch_size,
      "image_size": size, "model": model,
      "device": device(), "seconds_per_measurement": seconds,
      "split_examples": examples, "split_cache_gib": round(split_bytes / 2**30, 3),
      "memory_cache_limit_gib": round(cache.memory_limit() / 2**30, 3),
      "rows": [dataclasses.asdict(row) for row in rows],
      "caveat": _small_split_caveat(split, examples, batch_size),
  }
  rates = {row.key: row.images_per_second for row in rows}
  report.update(verdict(input_rate=rates["training"] or 0.0, model_rate=rates["model"] or 0.0,
                        cached_rate=rates["training_cached"],
                        limit_rate=rates["decode_limit"] or 0.0,
                        unflipped_rate=rates["training_model_flips"],
                        fits=split_bytes <= cache.memory_limit(), sized=stored is not None,
                        name=name, size=size, stored=stored))
  return report


def _split_examples(builder: Any, name: str, split: str) -> int:
  """The examples of `split`, a split or a split expression (`test[:2]`) as the
  pipeline takes it. Raises ValueError where `name` has no such split."""
  try:
    return int(builder.info.splits[split].num_examples)
  except (KeyError, ValueError, AssertionError):
    raise ValueError(f"{name} has no split {split!r} in {builder.data_dir} (built: "
                     f"{', '.join(builder.info.splits) or 'nothing'}).") from None


def _input_batch_size(batch_size: int, examples: int, split: str,
                      say: Callable[[str], None]) -> int:
  """The batch the input is read in: at most the split's examples, as `train` does."""
  if batch_size <= examples:
    return batch_size
  say(f"note: --batch_size {batch_size} is more than the {examples} examples of {split!r}: "
      f"the input is read in batches of {examples}, as train does; the model is timed at "
      f"{batch_size}.")
  return examples


def _measure(key: str, label: str, make: Callable[[], Iterable[Any] | float], seconds: float,
             say: Callable[[str], None]) -> Row:
  """The row of what `make` gives: a rate already measured, or batches to read."""
  say(f"measuring {label} ...")
  made = make()
  if isinstance(made, float):
    row = Row(key, label, made)
  else:
    per_second, cpu = rate(made, seconds)
    row = Row(key, label, per_second, cpu_us_per_image=round(cpu, 1))
  say(f"  {row.images_per_second:,.0f} images/s")
  return row


def _input_rows(name: str, split: str, examples: int, stored: int | None, seconds: float,
                common: dict[str, Any], say: Callable[[str], None]) -> list[Row]:
  """The input side's rows: the decode limit, then the pipeline's datasets."""
  limit = _measure("decode_limit", f"decode limit (stored {stored or 'photos'}, decode_jpeg only)",
                   lambda: decode_limit(name, split=split, batch_size=common["batch_size"],
                                        data_dir=common["data_dir"]).repeat(), seconds, say)
  train = _measure("training", "training_dataset",
                   lambda: pipeline.training_dataset(name, split=split, **common).repeat(),
                   seconds, say)
  unflipped = _measure("training_model_flips",
                       "training_dataset, flip=False (the flip left to the model)",
                       lambda: pipeline.training_dataset(name, split=split, flip=False,
                                                         **common).repeat(), seconds, say)
  cached = _cached_row(name, split, examples, train.images_per_second or 0.0, seconds, common, say)
  evaluation = _measure("evaluation", "evaluation_dataset",
                        lambda: pipeline.evaluation_dataset(name, split=split, **common).repeat(),
                        seconds, say)
  return [limit, train, unflipped, cached, evaluation]


def _small_split_caveat(split: str, examples: int, batch_size: int) -> str | None:
  """Why the rows of a split too small to measure apart are noise; None for a large one."""
  if examples >= SMALL_SPLIT_BATCHES * batch_size:
    return None
  return (f"Caveat: {split!r} holds {examples:,} examples, fewer than "
          f"{SMALL_SPLIT_BATCHES} batches of {batch_size}: each measurement reads it again "
          "and again, so the differences between the rows are within their noise. Measure a "
          "larger split before acting on them.")


def _cached_row(name: str, split: str, examples: int, uncached: float, seconds: float,
                common: dict[str, Any], say: Callable[[str], None]) -> Row:
  """training_dataset with `cache="memory"` after its filling epoch, on the
  first examples of `split` that fill it in about `seconds`."""
  key, label = "training_cached", "training_dataset, cache='memory' (epochs after the first)"
  plain = split.isidentifier()  # `train`, not an expression: a part of it can be named.
  part = (min(examples, max(4 * common["batch_size"], int(uncached * seconds))) if plain
          else examples)
  part_split = f"{split}[:{part}]" if part < examples else split
  say(f"measuring {label} on {part_split} ...")
  try:
    ds = pipeline.training_dataset(name, split=part_split, cache="memory", **common)
  except ValueError as error:  # `full`'s training, or a part too large for memory.
    say(f"  not measured: {error}")
    return Row(key, label, None, str(error).split(":")[0])
  for _ in ds:  # The epoch that fills the cache.
    pass
  per_second, cpu = rate(ds.repeat(), seconds)
  row = Row(key, label, per_second, f"on {part_split}", round(cpu, 1))
  say(f"  {row.images_per_second:,.0f} images/s")
  return row


def verdict(*, input_rate: float, model_rate: float, cached_rate: float | None,
            limit_rate: float, fits: bool, sized: bool, name: str, size: int,
            stored: int | None, unflipped_rate: float | None = None) -> dict[str, Any]:
  """Which side limits training, by what factor, and the remedy that fits."""
  if model_rate <= input_rate * MARGIN and input_rate <= model_rate * MARGIN:
    return {"bound": "matched", "factor": round(model_rate / input_rate, 2), "remedy": "none",
            "verdict": f"Matched: the model trains {model_rate:,.0f} images/s and "
                       f"training_dataset delivers {input_rate:,.0f}; neither side waits much "
                       "for the other."}
  if model_rate < input_rate:
    factor = input_rate / model_rate
    return {"bound": "model", "factor": round(factor, 2), "remedy": "none",
            "verdict": f"Model-bound: the model trains {model_rate:,.0f} images/s, "
                       f"{factor:.1f} times slower than training_dataset delivers "
                       f"({input_rate:,.0f}). The input is not what limits training: a faster "
                       "device, mixed precision or a lighter model is."}
  factor = model_rate / input_rate
  head = (f"Input-bound: the model could train {model_rate:,.0f} images/s, {factor:.1f} times what "
          f"training_dataset delivers ({input_rate:,.0f}).")
  if unflipped_rate is not None and unflipped_rate > input_rate:
    head += (f" With flip=False and keras.layers.RandomFlip in the model it "
             f"delivers {unflipped_rate:,.0f}.")
  workers = math.ceil(model_rate / input_rate)
  service = (f"{workers} tf.data service workers of this machine's input rate would feed it "
             "(python -m photo_datasets data_service)")
  if sized and fits and cached_rate is not None and cached_rate >= model_rate:
    return {"bound": "input", "factor": round(factor, 2), "remedy": "cache", "workers": workers,
            "verdict": f"{head} Remedy: cache='memory' (the split fits in memory): epochs after "
                       f"the first read at {cached_rate:,.0f} images/s, "
                       f"{cached_rate / limit_rate:.1f} times the decode limit."}
  cache_note = ""
  if sized and fits and cached_rate is not None:
    cache_note = (f" cache='memory' helps ({cached_rate:,.0f} images/s after the first epoch) "
                  "but is not enough.")
  elif sized and not fits:
    cache_note = " The split does not fit in half the free memory for cache='memory'."
  return {"bound": "input", "factor": round(factor, 2), "remedy": "workers", "workers": workers,
          "verdict": f"{head}{cache_note} Remedy: {service}; "
                     f"or {_smaller_images(name, size, stored, sized)}."}


def _smaller_images(name: str, size: int, stored: int | None, sized: bool) -> str:
  """The remedy of a smaller stored size, which decodes faster, in words."""
  if not sized:
    return (f"a sized config (e.g. {name.split('/')[0]}/{size}) reads at its decode limit and "
            "can be cached")
  if stored and size < stored:
    return ("a smaller stored size decodes faster "
            f"(about {stored ** 2 / size ** 2:.1f} times at {size})")
  return "a smaller stored size (and image_size) decodes faster, about with the pixels"


def table(report: dict[str, Any]) -> str:
  """The report as a short table and the verdict."""
  lines = [f"{report['name']} {report['split']} ({report['split_examples']:,} examples, "
           f"{report['split_cache_gib']:.2f} GiB as uint8 at {report['image_size']}; "
           f"memory cache limit {report['memory_cache_limit_gib']:.2f} GiB), "
           f"batch {report['batch_size']}"
           + (f" (the model's {report['model_batch_size']})"
              if report["model_batch_size"] != report["batch_size"] else "")
           + f", ~{report['seconds_per_measurement']:g} s each",
           f"{'':76} {'images/s':>9}  x limit  wall us/image  CPU us/image"]
  rows = report["rows"]
  limit = rows[0]["images_per_second"]
  for row in rows:
    value, cpu = row["images_per_second"], row.get("cpu_us_per_image")
    shown = ((f"{value:9,.0f}  {value / limit:7.2f}  {1e6 / value:13,.0f}" if value is not None
              else f"{'-':>9}  {'':7}  {'':13}")
             + (f"  {cpu:12,.0f}" if cpu is not None else f"  {'':12}"))
    lines.append(f"{row['label'][:76]:76} {shown}" + (f"  {row['note']}" if row["note"] else ""))
  caveat = [report["caveat"], ""] if report.get("caveat") else []
  lines += ["", *costs(rows), "", *caveat, report["verdict"]]
  return "\n".join(lines)


def costs(rows: Sequence[dict[str, Any]]) -> list[str]:
  """The per-image CPU costs the rows show, in words: the decode, what training
  adds, what a cache leaves."""
  cpu = {row["key"]: row.get("cpu_us_per_image") for row in rows}
  limit, training = cpu.get("decode_limit"), cpu.get("training")
  if limit is None or training is None:
    return []
  said = (f"Per image, CPU of all cores: the decode limit {limit:,.0f} us; "
          f"training_dataset {training:,.0f} us ({_added(training - limit)}: reading, shuffle, "
          "flip, batch)")
  if (unflipped := cpu.get("training_model_flips")) is not None:
    said += f", {unflipped:,.0f} us with flip=False (the flip: {_added(training - unflipped)})"
  if cpu.get("training_cached") is not None:
    said += f"; with the memory cache {cpu['training_cached']:,.0f} us (no decode)"
  return [said + ". Stage by stage: docs/reading.md."]


def _added(us: float) -> str:
  """What one row adds to another's CPU per image; work cannot cost less than none, so a
  negative difference is the measurements' noise."""
  return f"{us:+,.0f} us" if us >= 0 else f"{us:+,.0f} us, within the noise"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
  parser = argparse.ArgumentParser(prog="python -m photo_datasets doctor",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("name", help="a built config, e.g. korean_food/224")
  parser.add_argument("--data_dir")
  parser.add_argument("--split", default="train",
                      help="a split or a split expression, e.g. train[:10%%]")
  parser.add_argument("--model", default="small", help=f"{' or '.join(MODELS)}, or PATH.keras")
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--image_size", type=int,
                      help="default: the stored size (required for full configs)")
  parser.add_argument("--seconds", type=float, default=SECONDS,
                      help="how long each measurement reads")
  parser.add_argument("--json", action="store_true",
                      help="print one JSON object instead of the table")
  args = parser.parse_args(argv)
  if args.batch_size < 1 or not args.seconds > 0:
    parser.error("--batch_size must be >= 1 and --seconds > 0")
  try:
    report = examine(args.name, data_dir=args.data_dir, split=args.split, model=args.model,
                     batch_size=args.batch_size, image_size=args.image_size, seconds=args.seconds,
                     progress=lambda line: print(line, file=sys.stderr, flush=True))
  except ValueError as error:
    sys.exit(f"error: {error}")
  print(json.dumps(report, indent=1) if args.json else table(report))
  return report


if __name__ == "__main__":
  main()

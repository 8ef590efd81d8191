"""Train a small Keras classifier on a built config: an example of the input pipeline at work.

  python -m photo_datasets train korean_food/224 [--data_dir DIR] [--epochs 5] [--batch_size 64]
  python -m photo_datasets train flowers_dataset/full --image_size 160 [--model mobilenet_v3_small]

Trains on `train` (`pipeline.training_dataset`), validates every epoch on
`validation` and evaluates on `test` at the end (`pipeline.evaluation_dataset`);
a split the build left out (a small sample may lack one) is skipped with a note.
Writes into --out_dir (default `train_out/<name>`): `model.keras`,
`history.json` (per-epoch metrics, training speed, test metrics), `history.png`
(the curves) and `classes.json` (label id -> class names).

Models are built with `weights=None`: nothing is downloaded. Images enter the
model as uint8 and become floats in its first layer, on the accelerator. With a
GPU visible, `--mixed_precision auto` computes in float16, the softmax in float32,
and the model mirrors the training images itself (`RandomFlip`), not tf.data.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import pathlib
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

import keras
import tensorflow as tf
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from photo_datasets.commands.models import MODELS, build_model
from photo_datasets.reading import built, pipeline

MIXED_PRECISION = ("auto", "on", "off")


class TrainError(ValueError):
  """A bad request (unbuilt config, missing image size, empty train split):
  the command line reports it as a usage error."""


@dataclasses.dataclass(frozen=True)
class TrainResult:
  """What a run produced and where it went."""

  name: str
  out_dir: pathlib.Path
  model_path: pathlib.Path
  history_path: pathlib.Path
  plot_path: pathlib.Path
  classes_path: pathlib.Path
  history: dict[str, list[float]]  # Keras's: loss, accuracy, val_loss, val_accuracy per epoch.
  test: dict[str, float] | None  # loss and accuracy on `test`; None when the split is missing.
  # Without the run's first batch (graph tracing) when there are more.
  train_images_per_second: float
  train_images: int  # Images seen in one epoch (the last incomplete batch is dropped).
  batch_size: int  # As used: no more than the train split holds.
  dtype_policy: str  # "float32" or "mixed_float16".
  skipped_splits: tuple[str, ...]


def train(
    name: str, *, data_dir: str | None = None, out_dir: str | pathlib.Path | None = None,
    epochs: int = 5, batch_size: int = 64, image_size: int | None = None,
    learning_rate: float = 1e-3, seed: int | None = None, mixed_precision: str = "auto",
    model: str = "small", verbose: int = 2,
) -> TrainResult:
  """Trains `model` on the built config `name` and saves it with its history.

  Trains on `train`, validates every epoch on `validation` and evaluates on
  `test` at the end; a split the build left out is skipped with a note. The
  arguments are the command line's options.

  Args:
    name: a built config, e.g. `"korean_food/224"` or `"flowers_dataset/full"`.
    data_dir: where the config was built; TFDS's default when None.
    out_dir: where to write `model.keras`, `history.json`, `history.png` and
      `classes.json`; default `train_out/<name>` (`default_out_dir`).
    epochs: epochs to train, >= 1.
    batch_size: images a batch, >= 1; lowered, with a note, to the size of
      the train split when it is larger.
    image_size: the side of the square images the model sees; default the
      stored size. Required for `full` configs.
    learning_rate: Adam's learning rate.
    seed: makes the example order, the augmentation and the initial weights
      repeatable; it also seeds Keras's global random generators, as
      `keras.utils.set_random_seed` does.
    mixed_precision: `"auto"` (float16 compute where the Keras backend sees a
      GPU, `dtype_policy`), `"on"` or `"off"`.
    model: one of `photo_datasets.commands.models.MODELS`.
    verbose: Keras's `verbose` for `fit` and `evaluate`.

  Returns:
    A `TrainResult`: the history, the test metrics, the training speed and
    where the files went.

  Raises:
    TrainError: the request cannot run (names the option to change).
  """
  _check_options(epochs=epochs, batch_size=batch_size, model=model,
                 mixed_precision=mixed_precision)
  inputs = _inputs(name, data_dir, image_size, batch_size, seed)
  out = pathlib.Path(out_dir if out_dir is not None else default_out_dir(inputs.name))
  out.mkdir(parents=True, exist_ok=True)
  if seed is not None:
    keras.utils.set_random_seed(seed)
  policy = dtype_policy(mixed_precision)
  with global_dtype_policy(policy):
    classifier, history, test, speed = _fit_and_test(inputs, model, learning_rate, epochs,
                                                     verbose)
  result = _result(inputs, out, history, test, speed, policy)
  settings = {"data_dir": inputs.data_dir, "epochs": epochs, "batch_size": inputs.batch_size,
              "image_size": inputs.size, "learning_rate": learning_rate, "seed": seed,
              "model": model, "dtype_policy": policy, "keras_backend": keras.config.backend()}
  _save(result, classifier, inputs.builder, settings, speed.rates())
  return result


@dataclasses.dataclass(frozen=True)
class _Inputs:
  """A built config opened for training, with the options as used and its datasets."""

  name: str
  data_dir: str | None
  builder: Any
  size: int  # The side the model sees.
  batch_size: int  # As used: no more than the train split holds.
  skipped: tuple[str, ...]  # The evaluation splits the build left out.
  flip_in_model: bool
  train_ds: Any
  validation_ds: Any  # None for a skipped split, as `test_ds`.
  test_ds: Any


def _inputs(name: str, data_dir: str | None, image_size: int | None, batch_size: int,
            seed: int | None) -> _Inputs:
  """The built config `name` opened, the options checked against it, and its datasets."""
  name, data_dir = _located(name, data_dir)
  builder = _built(name, data_dir)
  size = _image_size(name, builder.info, image_size)
  skipped, batch_size = _splits_to_use(name, builder.info, data_dir, batch_size)
  # Keras's advice: augment in the model on a GPU (where it is free), in tf.data on a CPU.
  flip_in_model = gpu_visible()
  train_ds, validation_ds, test_ds = _datasets(name, data_dir, size, batch_size, seed,
                                               flip_in_model, skipped)
  return _Inputs(name=name, data_dir=data_dir, builder=builder, size=size,
                 batch_size=batch_size, skipped=skipped, flip_in_model=flip_in_model,
                 train_ds=train_ds, validation_ds=validation_ds, test_ds=test_ds)


def _fit_and_test(
    inputs: _Inputs, model: str, learning_rate: float, epochs: int, verbose: int,
) -> tuple[keras.Model, dict[str, list[float]], dict[str, float] | None, _Speed]:
  """`model` built, compiled and fitted on `inputs`: the model, its history, its test
  metrics (None when the split is missing) and its training speed."""
  num_classes: int = inputs.builder.info.features["label"].num_classes
  classifier = build_model(model, num_classes, inputs.size, flip=inputs.flip_in_model)
  classifier.compile(optimizer=keras.optimizers.Adam(learning_rate),
                     loss=keras.losses.SparseCategoricalCrossentropy(), metrics=["accuracy"])
  speed = _Speed(inputs.batch_size)
  fit = classifier.fit(inputs.train_ds, validation_data=inputs.validation_ds, epochs=epochs,
                       callbacks=[speed], verbose=verbose,
                       shuffle=False)  # The pipeline shuffles.
  test = None
  if inputs.test_ds is not None:
    scores = classifier.evaluate(inputs.test_ds, return_dict=True, verbose=verbose)
    test = {key: float(value) for key, value in scores.items()}
  history = {key: [float(value) for value in values] for key, values in fit.history.items()}
  return classifier, history, test, speed


def _result(inputs: _Inputs, out: pathlib.Path, history: dict[str, list[float]],
            test: dict[str, float] | None, speed: _Speed, policy: str) -> TrainResult:
  """What the run produced, and where `_save` puts it in `out`."""
  return TrainResult(
      name=inputs.name, out_dir=out, model_path=out / "model.keras",
      history_path=out / "history.json", plot_path=out / "history.png",
      classes_path=out / "classes.json", history=history, test=test,
      train_images_per_second=speed.images_per_second(),
      train_images=speed.images_per_epoch(), batch_size=inputs.batch_size, dtype_policy=policy,
      skipped_splits=inputs.skipped)


def _check_options(*, epochs: int, batch_size: int, model: str, mixed_precision: str) -> None:
  """Raises TrainError naming the first option out of its range."""
  if epochs < 1:
    raise TrainError(f"--epochs must be >= 1, got {epochs}.")
  if batch_size < 1:
    raise TrainError(f"--batch_size must be >= 1, got {batch_size}.")
  if model not in MODELS:
    raise TrainError(f"--model must be one of {', '.join(MODELS)}, got {model!r}.")
  if mixed_precision not in MIXED_PRECISION:
    raise TrainError(f"--mixed_precision must be one of {', '.join(MIXED_PRECISION)}, "
                     f"got {mixed_precision!r}.")


def _image_size(name: str, info: Any, image_size: int | None) -> int:
  """The side the model sees: `image_size`, else the config's stored side."""
  stored_size: int | None = info.features["image"].shape[0]
  if image_size is not None:
    return image_size
  if stored_size is not None:
    return stored_size
  raise TrainError(f"{name} stores images at their source size: give --image_size "
                   f"(e.g. --image_size 224), or train on a sized config such as "
                   f"{name.split('/')[0]}/224.")


def _splits_to_use(name: str, info: Any, data_dir: str | None,
                   batch_size: int) -> tuple[tuple[str, ...], int]:
  """The evaluation splits the build left out, and the batch size the train
  split allows; says so where either differs from what was asked."""
  splits = {split: split_info.num_examples for split, split_info in info.splits.items()
            if split_info.num_examples}
  if "train" not in splits:
    raise TrainError(f"{name} in {data_dir or 'the default data dir'} has no train split to "
                     f"train on.")
  skipped = tuple(split for split in ("validation", "test") if split not in splits)
  for split in skipped:
    print(f"note: {name} has no {split} split (the build left it out): "
          + ("no validation during training." if split == "validation" else "no final test."))
  if batch_size > splits["train"]:
    print(f"note: --batch_size {batch_size} is more than the {splits['train']} train images: "
          f"using {splits['train']}.")
    batch_size = splits["train"]
  return skipped, batch_size


def _datasets(name: str, data_dir: str | None, size: int, batch_size: int, seed: int | None,
              flip_in_model: bool, skipped: tuple[str, ...]) -> tuple[Any, Any, Any]:
  """The train, validation and test datasets (None for a skipped split)."""
  try:  # The pipeline checks the rest (image_size range) and names the argument.
    train_ds = pipeline.training_dataset(name, batch_size=batch_size, image_size=size,
                                         data_dir=data_dir, seed=seed, flip=not flip_in_model)
    validation_ds, test_ds = (
        None if split in skipped else
        pipeline.evaluation_dataset(name, split=split, batch_size=batch_size, image_size=size,
                                    data_dir=data_dir)
        for split in ("validation", "test"))
  except ValueError as e:
    raise TrainError(str(e)) from e
  return train_ds, validation_ds, test_ds


def _save(result: TrainResult, classifier: keras.Model, builder: Any, settings: dict[str, Any],
          epoch_rates: list[float]) -> None:
  """The model, `history.json`, `history.png` and `classes.json` into `result.out_dir`."""
  classifier.save(result.model_path)
  result.history_path.write_text(json.dumps({
      "name": result.name,
      "settings": settings,
      "history": result.history,
      "train_images_per_epoch": result.train_images,
      # Without the first batch (graph tracing).
      "train_images_per_second": result.train_images_per_second,
      "epoch_train_images_per_second": epoch_rates,  # Every batch, tracing included.
      "test": result.test,
      "skipped_splits": list(result.skipped_splits),
  }, indent=2) + "\n", encoding="utf-8")
  size, model = settings["image_size"], settings["model"]
  plot_history(result.history, result.plot_path, title=f"{result.name}, {model}, {size}x{size}")
  result.classes_path.write_text(
      json.dumps(class_table(builder), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def default_out_dir(name: str) -> pathlib.Path:
  return pathlib.Path("train_out") / re.sub(r"[/:]", "_", name)


def dtype_policy(mixed_precision: str) -> str:
  """float16 compute pays on GPUs (tensor cores); on CPUs it is slower, so
  `auto` uses it only where the Keras backend sees a GPU."""
  if mixed_precision == "auto":
    return "mixed_float16" if gpu_visible() else "float32"
  return "mixed_float16" if mixed_precision == "on" else "float32"


def gpu_visible() -> bool:
  """Whether the Keras backend (TensorFlow, JAX or PyTorch) computes on a GPU."""
  backend = keras.config.backend()
  if backend == "jax":
    import jax
    return any(device.platform == "gpu" for device in jax.devices())
  if backend == "torch":
    import torch
    return bool(torch.cuda.is_available())
  return bool(tf.config.list_physical_devices("GPU"))


@contextlib.contextmanager
def global_dtype_policy(policy: str) -> Iterator[None]:
  """Keras's dtype policy is global (applications read it): set it for one
  model only, so a caller's later models are not changed behind its back."""
  before = keras.mixed_precision.global_policy()
  keras.mixed_precision.set_global_policy(policy)
  try:
    yield
  finally:
    keras.mixed_precision.set_global_policy(before)


def class_table(builder: Any) -> dict[str, dict[str, str]]:
  """label id -> {"name"}, and {"description"} where the dataset gives one
  (`PhotoBuilder.class_descriptions`; korean_food: the English name)."""
  names: list[str] = builder.info.features["label"].names
  descriptions = built.class_descriptions(builder)
  table = {str(label): {"name": name} for label, name in enumerate(names)}
  for row in table.values():
    if row["name"] in descriptions:
      row["description"] = descriptions[row["name"]]
  return table


def plot_history(history: dict[str, list[float]], path: pathlib.Path, title: str) -> None:
  """Loss and accuracy per epoch, train and validation, as a PNG (Agg: no display needed)."""
  figure = Figure(figsize=(10, 4), layout="constrained")
  FigureCanvasAgg(figure)
  figure.suptitle(title)
  for axes, metric in zip(figure.subplots(1, 2), ("loss", "accuracy"), strict=True):
    for key, label in ((metric, "train"), (f"val_{metric}", "validation")):
      if key in history:
        values = history[key]
        axes.plot(range(1, len(values) + 1), values, marker="o", label=label)
    axes.set(xlabel="epoch", ylabel=metric, title=metric)
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.legend()
  figure.savefig(path, dpi=100)


def _located(name: str, data_dir: str | None) -> tuple[str, str | None]:
  """`name` (a config's name or folder) and `data_dir` as TFDS opens them (`built.locate`)."""
  try:
    located = built.locate(name, data_dir)
  except built.NotBuiltError as e:
    raise TrainError(str(e)) from None
  return located.name, located.data_dir


def _built(name: str, data_dir: str | None) -> Any:
  """The builder of a built config; TrainError when it is not built there."""
  try:
    return built.open_built(name, data_dir)
  except built.NotBuiltError as e:
    raise TrainError(str(e)) from None


class _Speed(keras.callbacks.Callback):  # type: ignore[misc]  # keras ships no types.
  """Training images per second, validation excluded."""

  def __init__(self, batch_size: int):
    super().__init__()
    self.batch_size = batch_size
    self.epochs: list[tuple[int, float]] = []  # (batches, seconds) per epoch.
    # The first batch of the run, which traces the graph.
    self.first_batch_seconds: float | None = None
    self._start = self._last = 0.0
    self._batches = 0

  def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
    self._start = self._last = time.perf_counter()
    self._batches = 0

  def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
    self._last = time.perf_counter()
    self._batches += 1
    if self.first_batch_seconds is None:
      self.first_batch_seconds = self._last - self._start

  def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
    self.epochs.append((self._batches, self._last - self._start))

  def rates(self) -> list[float]:
    """Per epoch, all batches (the first epoch's include the graph tracing)."""
    return [batches * self.batch_size / seconds if seconds > 0 else 0.0
            for batches, seconds in self.epochs]

  def images_per_epoch(self) -> int:
    return self.epochs[-1][0] * self.batch_size if self.epochs else 0

  def images_per_second(self) -> float:
    """Over the whole run without its first batch (graph tracing), unless that was the only one."""
    batches = sum(b for b, _ in self.epochs)
    seconds = sum(s for _, s in self.epochs)
    if batches > 1 and self.first_batch_seconds is not None:
      batches, seconds = batches - 1, seconds - self.first_batch_seconds
    return batches * self.batch_size / seconds if seconds > 0 else 0.0


def summary(result: TrainResult) -> str:
  """A few lines: speed, accuracies, files."""
  batches = len(result.history["loss"]) * result.train_images // result.batch_size
  traced = (" (one batch: graph tracing included)" if batches <= 1
            else " (first batch, graph tracing, left out)")
  lines = [f"{result.name}: {result.train_images} training images per epoch, "
           f"{result.train_images_per_second:.0f} images/s{traced}, {result.dtype_policy}, "
           f"Keras on {keras.config.backend()}"]
  accuracies = [f"train {result.history['accuracy'][-1]:.3f}"]
  if "val_accuracy" in result.history:
    accuracies.append(f"validation {result.history['val_accuracy'][-1]:.3f}")
  if result.test is not None:
    accuracies.append(f"test {result.test['accuracy']:.3f}")
  lines.append("  final accuracy: " + ", ".join(accuracies))
  if result.skipped_splits:
    lines.append("  splits left out by the build: " + ", ".join(result.skipped_splits))
  lines.append(f"  saved in {result.out_dir}: {result.model_path.name}, "
               f"{result.history_path.name}, {result.plot_path.name} (curves), "
               f"{result.classes_path.name}")
  return "\n".join(lines)


def main(argv: list[str] | None = None) -> TrainResult:
  parser = argparse.ArgumentParser(prog="python -m photo_datasets train",
                                   description=__doc__.splitlines()[0],
                                   formatter_class=argparse.ArgumentDefaultsHelpFormatter)
  parser.add_argument("name", help="a built config, e.g. korean_food/224 or flowers_dataset/full")
  parser.add_argument("--data_dir",
                      help="where the config was built (TFDS's default when not given)")
  parser.add_argument("--out_dir", help="where to write the results (default train_out/<name>)")
  parser.add_argument("--epochs", type=int, default=5)
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--image_size", type=int,
                      help="side of the square images; default the stored size; required for "
                           "full configs")
  parser.add_argument("--learning_rate", type=float, default=1e-3)
  parser.add_argument("--seed", type=int,
                      help="repeatable example order, augmentation and initial weights")
  parser.add_argument("--mixed_precision", choices=MIXED_PRECISION, default="auto",
                      help="auto: mixed_float16 when TensorFlow sees a GPU")
  parser.add_argument("--model", choices=MODELS, default="small")
  parser.add_argument("--quiet", action="store_true", help="no per-epoch progress lines")
  args = parser.parse_args(argv)
  try:
    result = train(args.name, data_dir=args.data_dir, out_dir=args.out_dir, epochs=args.epochs,
                   batch_size=args.batch_size, image_size=args.image_size,
                   learning_rate=args.learning_rate, seed=args.seed,
                   mixed_precision=args.mixed_precision, model=args.model,
                   verbose=0 if args.quiet else 2)
  except TrainError as e:
    if isinstance(e.__context__, built.NotBuiltError):
      sys.exit(f"error: {e}")  # Not a misuse of the arguments: no usage text.
    parser.error(str(e))
  print(summary(result))
  return result


if __name__ == "__main__":
  main()

"""The main job on the bundled samples: build, load, train one epoch, report.

  python -m photo_datasets.demo [--data_dir demo_data] [--datasets flowers_dataset korean_food]

Builds every config of each dataset from its bundled sample with the real
`tfds build` command, loads the `224` config with `tfds.load`, trains a small
Keras model for one epoch, and prints a summary per dataset.
"""

from __future__ import annotations

import argparse
import importlib.resources
import os
import subprocess
import sys
import time

import keras
import tensorflow_datasets as tfds

from photo_datasets import pipeline
from photo_datasets.report import BuildReport

# Each dataset's package bundles its sample in `sample/`, used as manual dir.
DATASETS = ("flowers_dataset", "korean_food")


def build(name: str, data_dir: str) -> None:
  manual_dir = importlib.resources.files(name) / "sample"
  subprocess.run(
      [sys.executable, "-m", "tensorflow_datasets.scripts.cli.main", "build", name,
       "--imports", name, "--manual_dir", str(manual_dir), "--data_dir", data_dir,
       "--overwrite"],
      check=True)


def small_classifier(num_classes: int, image_size: int) -> keras.Model:
  return keras.Sequential([
      keras.Input((image_size, image_size, 3), dtype="uint8"),
      keras.layers.Rescaling(1 / 255),
      keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
      keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
      keras.layers.GlobalAveragePooling2D(),
      keras.layers.Dense(num_classes),
  ])


def train_one_epoch(name: str, data_dir: str, batch_size: int) -> tuple[int, float]:
  """Returns (images seen, images per second) of one epoch of `model.fit`."""
  builder = tfds.builder(f"{name}/224", data_dir=data_dir)
  ds = pipeline.training_dataset(f"{name}/224", batch_size=batch_size, data_dir=data_dir, seed=0)
  model = small_classifier(builder.info.features["label"].num_classes, 224)
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])
  start = time.perf_counter()
  model.fit(ds, epochs=1, verbose=2)
  seconds = time.perf_counter() - start
  seen = builder.info.splits["train"].num_examples
  return seen, seen / seconds


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--data_dir", default=os.path.abspath("demo_data"))
  parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
  parser.add_argument("--batch_size", type=int, default=32)
  args = parser.parse_args(argv)

  summaries = []
  for name in args.datasets:
    build(name, args.data_dir)
    seen, rate = train_one_epoch(name, args.data_dir, args.batch_size)
    info = tfds.builder(f"{name}/224", data_dir=args.data_dir).info
    sizes = {split: split_info.num_examples for split, split_info in info.splits.items()}
    summaries.append(
        BuildReport.from_metadata(dict(info.metadata)).summary(name, sizes)
        + f"\n  one epoch of model.fit on {seen} images: {rate:.0f} images/s"
        " (first epoch, graph tracing included)")

  print(f"\n=== Summary (data in {args.data_dir}) ===")
  print("\n".join(summaries))


if __name__ == "__main__":
  main()

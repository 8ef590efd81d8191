"""The main job on the bundled samples: build, load, train one epoch, report.

  python -m photo_datasets.demo [--data_dir demo_data] [--out_dir demo_out] [--datasets flowers_dataset korean_food]

Builds every config of each dataset from its bundled sample with the real
`tfds build` command, loads a batch of the `224` config with `tfds.load`,
trains the small model of `photo_datasets.train` for one epoch on it (the
input pipeline of `photo_datasets.pipeline`), and prints a summary per
dataset: the build report, the training speed and where the model, history,
curves and two picture grids (stored examples, and what the training pipeline
feeds the model) went (`<out_dir>/<dataset>/`).
"""

from __future__ import annotations

import argparse
import importlib.resources
import os
import subprocess
import sys

import tensorflow_datasets as tfds

from photo_datasets import show, train
from photo_datasets.report import BuildReport

# Each dataset's package bundles its sample in `sample/`, used as manual dir.
DATASETS = ("flowers_dataset", "korean_food")
CONFIG = "224"


def build(name: str, data_dir: str) -> None:
  manual_dir = importlib.resources.files(name) / "sample"
  subprocess.run(
      [sys.executable, "-m", "tensorflow_datasets.scripts.cli.main", "build", name,
       "--imports", name, "--manual_dir", str(manual_dir), "--data_dir", data_dir,
       "--overwrite"],
      check=True)


def loaded_batch(name: str, data_dir: str, batch_size: int) -> str:
  """One batch read back with plain `tfds.load`, as a user first would, described."""
  # No automatic cache: reading one batch would leave it partly filled (and TF warns about that).
  ds = tfds.load(name, split="train", data_dir=data_dir, batch_size=batch_size, as_supervised=True,
                 read_config=tfds.ReadConfig(try_autocache=False))
  images, labels = next(iter(ds))
  return (f"tfds.load batch: {images.dtype.name} images {tuple(images.shape)}, "
          f"{labels.dtype.name} labels {tuple(labels.shape)}")


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--data_dir", default=os.path.abspath("demo_data"))
  parser.add_argument("--out_dir", help="where each dataset's model, history and curves go, in <dataset>/ "
                      "(default: demo_out beside --data_dir)")
  parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
  parser.add_argument("--batch_size", type=int, default=8)
  args = parser.parse_args(argv)
  data_dir = os.path.abspath(args.data_dir)
  out_root = os.path.abspath(args.out_dir or os.path.join(os.path.dirname(data_dir), "demo_out"))

  summaries = []
  for name in args.datasets:
    build(name, data_dir)
    config = f"{name}/{CONFIG}"
    batch = loaded_batch(config, data_dir, args.batch_size)
    result = train.train(config, data_dir=data_dir, out_dir=os.path.join(out_root, name), epochs=1,
                         batch_size=args.batch_size, seed=0, verbose=2)
    pictures = [show.write_grid(config, split="train", data_dir=data_dir,
                                out=os.path.join(result.out_dir, "examples.png")),
                show.write_grid(config, split="train", data_dir=data_dir, pipeline=True, seed=0,
                                out=os.path.join(result.out_dir, "training_input.png"))]
    info = tfds.builder(config, data_dir=data_dir).info
    sizes = {split: split_info.num_examples for split, split_info in info.splits.items()}
    training = train.summary(result).replace("\n", "\n  ")
    summaries.append(f"{BuildReport.from_metadata(dict(info.metadata)).summary(name, sizes)}\n  {batch}\n"
                     f"  trained 1 epoch: {training}\n"
                     f"  pictures: {pictures[0]} (stored), {pictures[1]} (what the model sees)")

  print(f"\n=== Summary (data in {data_dir}, training results in {out_root}) ===")
  print("\n".join(summaries))


if __name__ == "__main__":
  main()

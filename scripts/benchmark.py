"""Build and read throughput of `korean_food` on a generated corpus.

  python scripts/benchmark.py [--images 600] [--workdir /tmp/kfood_bench]

Writes N photo-sized JPEGs (640x480, in 6 classes) as a kfood.zip of stored
inner zips, builds both configs with `tfds build` in one process (one scan,
reused), and reads the `224` train split as `model.fit` would get it
(`tfds.load(batch_size=64, as_supervised=True)` and
`pipeline.training_dataset`). Prints images per second for each phase.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import time
import zipfile

import numpy as np
import tensorflow_datasets as tfds
from PIL import Image

import korean_food
from photo_datasets import pipeline

CLASSES = [c for c in korean_food.food_classes() if c.index in (0, 1, 40, 80, 119, 149)]


def make_corpus(root: str, count: int) -> None:
  rng = np.random.default_rng(0)
  y, x = np.mgrid[0:480, 0:640]
  inner = {}
  for i in range(count):
    food = CLASSES[i % len(CLASSES)]
    base = (np.sin(x / (20 + i % 17)) + np.cos(y / (15 + i % 13))) * 60 + 128
    pixels = np.stack([base, base[::-1], base[:, ::-1]], -1) + rng.normal(0, 12, (480, 640, 3))
    out = io.BytesIO()
    Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(out, "JPEG", quality=90)
    name = f"{food.super_category}/{food.name}/Img_{food.index:03d}_{i:04d}.jpg"
    inner.setdefault(food.super_category, []).append((name, out.getvalue()))
  os.makedirs(root, exist_ok=True)
  with zipfile.ZipFile(os.path.join(root, "kfood.zip"), "w", zipfile.ZIP_STORED) as outer:
    for group, members in inner.items():
      buffer = io.BytesIO()
      with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, data in members:
          z.writestr(name, data)
      outer.writestr(f"{group}.zip", buffer.getvalue())


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--images", type=int, default=600)
  parser.add_argument("--workdir", default="/tmp/kfood_bench")
  args = parser.parse_args()
  shutil.rmtree(args.workdir, ignore_errors=True)
  manual_dir, data_dir = f"{args.workdir}/manual", f"{args.workdir}/data"
  make_corpus(manual_dir, args.images)

  config = tfds.download.DownloadConfig(manual_dir=manual_dir)
  timings = {}
  for name in ("224", "full"):
    builder = tfds.builder(f"korean_food/{name}", data_dir=data_dir)
    start = time.perf_counter()
    builder.download_and_prepare(download_config=config)
    timings[f"build {name}" + (" (includes the scan)" if name == "224" else "")] = (
        time.perf_counter() - start)

  # Without TFDS's automatic in-memory cache, as for the real corpus (GBs).
  no_cache = tfds.ReadConfig(try_autocache=False)
  readers = {
      "tfds.load(batch_size=64)": tfds.load(
          "korean_food/224", split="train", batch_size=64, as_supervised=True,
          data_dir=data_dir, read_config=no_cache),
      "pipeline.training_dataset(batch_size=64)": pipeline.training_dataset(
          "korean_food/224", batch_size=64, data_dir=data_dir),
  }
  for label, ds in readers.items():
    start, seen = time.perf_counter(), 0
    for images, _ in ds:
      seen += int(images.shape[0])
    timings[f"read 224 train with {label} ({seen} images)"] = (time.perf_counter() - start, seen)

  print(f"\nkorean_food benchmark, {args.images} JPEGs of 640x480, {os.cpu_count()} cores")
  for phase, value in timings.items():
    seconds, count = value if isinstance(value, tuple) else (value, args.images)
    print(f"  {phase}: {seconds:.1f} s, {count / seconds:.0f} images/s")


if __name__ == "__main__":
  main()

"""End to end: `training_dataset("korean_food/full")` crops keep each photo's
whole crop box (from `crop_area.properties`), through the build and the pipeline."""

from __future__ import annotations

import io
import os
import pathlib

import numpy as np
import tensorflow_datasets as tfds
from PIL import Image, ImageDraw

import korean_food  # noqa: F401  (registers the builder)
from photo_datasets import testing
from photo_datasets.reading import pipeline

FOLDER = "kfood/구이/갈비구이/"
SIZE, BOX = (400, 300), (100, 75, 300, 225)  # The box: a quarter of the photo, in its middle.
# A colour in each corner of the box, 40 x 30 pixels: a crop that cuts the box loses one.
CORNERS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255), "yellow": (255, 255, 0)}


def _photo(grey: int) -> bytes:
  image = Image.new("RGB", SIZE, (grey, grey, grey))
  x0, y0, x1, y1 = BOX
  draw = ImageDraw.Draw(image)
  for (left, top), colour in zip([(x0, y0), (x1 - 40, y0), (x0, y1 - 30), (x1 - 40, y1 - 30)],
                                 CORNERS.values(), strict=True):
    draw.rectangle([left, top, left + 39, top + 29], fill=colour)
  data = io.BytesIO()
  image.save(data, "JPEG", quality=95)
  return data.getvalue()


def _colours_seen(image: np.ndarray) -> set[str]:
  r, g, b = (image[..., i].astype(int) for i in range(3))
  masks = {"red": (r > 180) & (g < 80) & (b < 80), "green": (g > 180) & (r < 80) & (b < 80),
           "blue": (b > 180) & (r < 80) & (g < 80), "yellow": (r > 180) & (g > 180) & (b < 80)}
  return {name for name, mask in masks.items() if mask.sum() >= 4}


def test_training_crops_of_full_keep_the_whole_crop_box(tmp_path: pathlib.Path) -> None:
  names = [f"Img_000_{i:04d}" for i in range(8)]
  files = {f"{FOLDER}{name}.jpg": _photo(80 + 20 * i) for i, name in enumerate(names)}
  files[FOLDER + "crop_area.properties"] = testing.properties(
      ["[sections]"] + [f"{name}={BOX[0]},{BOX[1]},{BOX[2] - BOX[0]},{BOX[3] - BOX[1]}"  # x,y,w,h
                        for name in names])
  testing.write_tree(tmp_path / "manual", files)
  builder = testing.build("korean_food/full", tmp_path / "data", tmp_path / "manual")
  stored = list(tfds.as_numpy(builder.as_dataset(split="all")))
  assert len(stored) == 8 and all(example["has_bbox"] for example in stored)
  assert all(list(example["bbox"]) == [0.25, 0.25, 0.75, 0.75] for example in stored)

  boxed_shares = []
  for seed in range(6):
    ds = pipeline.training_dataset("korean_food/full", split="all", batch_size=8, image_size=64,
                                   data_dir=os.fspath(tmp_path / "data"), seed=seed)
    for images, _ in tfds.as_numpy(ds):
      for image in images:
        assert _colours_seen(image) == set(CORNERS), seed
        # The corners' share of the crop.
        boxed_shares.append((np.ptp(image.astype(int), axis=2) > 150).mean())
  assert len(boxed_shares) == 48
  # 16 % where the crop is the box, 4 % for the whole photo: crops of many sizes around the box.
  assert len({round(share, 3) for share in boxed_shares}) > 10
  assert min(boxed_shares) < 0.05 and max(boxed_shares) > 0.07

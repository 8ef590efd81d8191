"""The bundled sample, korean_food/sample/kfood.zip (scripts/make_korean_food_data.py):
what a build of it gives, and that neither it nor the dummy data holds a real photo."""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import korean_food
from korean_food import corpus
from photo_datasets.testing import read_examples

PACKAGE = pathlib.Path(korean_food.__file__).parent
SAMPLE_DIR = PACKAGE / "sample"
SHIPPED_DIRS = (SAMPLE_DIR, PACKAGE / "dummy_data")

SAMPLE_SKIPPED = {
    "찌개/김치찌개/Img_119_0005.jpg": "truncated",
    "찌개/김치찌개/Img_119_0006.jpg": "empty file",
    "찌개/김치찌개/Img_119_0007.jpg": "not an image format",
    "찌개/부대찌개/Img_124_0000.jpg": "not one of the 150 classes",
}


@dataclasses.dataclass(frozen=True)
class SampleBuilds:
  data_dir: pathlib.Path
  small: tfds.core.DatasetBuilder  # korean_food/224
  full: tfds.core.DatasetBuilder

  def of_config(self, config: str) -> tfds.core.DatasetBuilder:
    return {"224": self.small, "full": self.full}[config]


@pytest.fixture(scope="module")
def sample(samples) -> SampleBuilds:
  return SampleBuilds(pathlib.Path(samples.data_dir), samples.builder("korean_food/224"),
                      samples.builder("korean_food/full"))


def decode(data: bytes) -> np.ndarray:
  return tf.io.decode_jpeg(data, channels=3).numpy()


def _shipped_files() -> list[bytes]:
  return [read() for root in SHIPPED_DIRS for _, read in corpus.walk(root)]


def test_sample_is_small_and_dummy_data_beside_it():
  assert (SAMPLE_DIR / "kfood.zip").stat().st_size < 2_000_000
  assert len(_shipped_files()) > 50


@pytest.mark.real_photos
def test_sample_and_dummy_data_hold_no_real_photo(real_kfood):
  """The AIHub terms forbid redistribution: no byte-identical copy may ship."""
  real = {p.read_bytes() for p in real_kfood.parent.glob("kfood*/**/*")
          if p.is_file() and p.suffix != ".properties"}
  assert len(real) > 50
  assert not [data for data in _shipped_files() if data in real]


@pytest.mark.parametrize("config", ["224", "full"])
def test_sample_builds_with_expected_report(sample, config):
  builder = sample.of_config(config)
  assert {s: builder.info.splits[s].num_examples for s in ("train", "validation", "test")} == {
      "train": 33, "validation": 3, "test": 4}
  meta = builder.info.metadata
  skipped = {s["file_name"]: s["reason"] for s in meta["skipped_files"]}
  assert set(skipped) == set(SAMPLE_SKIPPED)
  for name, reason in SAMPLE_SKIPPED.items():
    assert reason in skipped[name]
  # Bad crop lines: `=,986,590`, `dissimilar`, two numbers, zero area. Converted:
  # CMYK, EXIF-rotated, GIF, RGBA PNG, PNG as .jpg, grayscale. No series: the generated plates of
  # 김치찌개 are alike in colour, but share no keypoints (docs/splits.md).
  assert meta["counts"] == {"bad crop lines": 4, "images converted to JPEG": 6,
                            "images with a crop box": 9, "padded JPEGs kept": 0,
                            "photos in near-duplicate groups": 0, "photos in series": 0,
                            "photos moved to their group's split": 0}
  assert meta["ignored_files"] == 5  # __MACOSX x2, .DS_Store, Thumbs.db, org_url.csv
  assert meta["duplicates"] == [["구이/갈비구이/Img_000_0002.jpg",
                                 "찌개/김치찌개/Img_119_0013.jpg"]]
  assert len(meta["warnings"]) == 1 and "Img_121_0011.jpg" in meta["warnings"][0]


def test_sample_examples_have_nfc_names_and_right_labels(sample):
  examples = read_examples(sample.full)
  by_class = {}
  for name, example in examples.items():
    by_class.setdefault(name.rsplit("/", 1)[0], set()).add(int(example["label"]))
    assert decode(example["image"]).ndim == 3
  assert by_class == {"구이/갈비구이": {0}, "구이/갈치구이": {1},
                      "찌개/김치찌개": {119}, "밥/비빔밥": {72}}
  rotated = examples["구이/갈비구이/Img_000_0010.jpg"]
  assert decode(rotated["image"]).shape == (160, 96, 3)  # stored 160x96, EXIF orientation 6
  assert rotated["has_bbox"]


def test_sample_224_batches_to_uint8_via_tfds_load(sample):
  ds = tfds.load("korean_food/224", split="train", data_dir=sample.data_dir, batch_size=8,
                 as_supervised=True, download=False)
  images, labels = next(iter(ds))
  assert images.dtype == tf.uint8 and tuple(images.shape) == (8, 224, 224, 3)
  assert labels.dtype == tf.int64 and tuple(labels.shape) == (8,)
  assert set(labels.numpy()) <= {0, 1, 72, 119}

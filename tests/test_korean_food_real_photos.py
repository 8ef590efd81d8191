"""The korean_food builder on real AIHub photos, read where they lie in
../shared/realdata/kfood (never copied into the project). Skipped where absent."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from PIL import Image
from test_series import KFOOD_SERIES  # Imports korean_food too, which registers the builder.

from photo_datasets import testing
from photo_datasets.testing import build, read_examples

pytestmark = pytest.mark.real_photos

REAL_LABELS = {"갈비구이": 0, "갈치구이": 1, "김치찌개": 119, "동태찌개": 121, "순두부찌개": 123}
REAL_GROUPS = {"갈비구이": "구이", "갈치구이": "구이", "김치찌개": "찌개",
               "동태찌개": "찌개", "순두부찌개": "찌개"}
PNG_AS_JPG = "찌개/김치찌개/Img_119_0001.jpg"


def decode(data: bytes) -> np.ndarray:
  return tf.io.decode_jpeg(data, channels=3).numpy()


def _real_photos(root: pathlib.Path) -> dict[str, pathlib.Path]:
  return {f"{p.parent.parent.name}/{p.parent.name}/{p.name}": p
          for p in sorted(root.glob("*/*/*")) if p.name != "crop_area.properties"}


def _real_boxes(root: pathlib.Path) -> dict[str, tuple[float, ...]]:
  """The real crop_area.properties values as relative boxes, by file_name."""
  photos = _real_photos(root)
  boxes = {}
  for props in root.glob("*/*/crop_area.properties"):
    folder = f"{props.parent.parent.name}/{props.parent.name}"
    for line in props.read_text().splitlines():
      key, _, value = line.partition("=")
      matches = [n for n in photos
                 if n.startswith(folder + "/")
                 and n.rsplit("/", 1)[1].rsplit(".", 1)[0].lower() == key.lower()]
      if not matches:
        continue
      (name,) = matches
      x, y, w, h = map(int, value.split(","))
      with Image.open(photos[name]) as image:
        width, height = image.size
      boxes[name] = (y / height, x / width, min(y + h, height) / height, min(x + w, width) / width)
  return boxes


@dataclasses.dataclass(frozen=True)
class RealBuilds:
  """The real photos built from their folder (`full`, `224`) and from a kfood.zip of them
  (`full`)."""

  root: pathlib.Path
  full: tfds.core.DatasetBuilder
  examples: dict[str, dict[str, Any]]  # Of `full`, by file_name.
  small_examples: dict[str, dict[str, Any]]  # Of `224`.
  zip_examples: dict[str, dict[str, Any]]  # Of `full` from kfood.zip.

  def photos(self) -> dict[str, pathlib.Path]:
    return _real_photos(self.root)


@pytest.fixture(scope="module")
def real(real_kfood, tmp_path_factory) -> RealBuilds:
  root = tmp_path_factory.mktemp("real")
  groups: dict[str, dict[str, bytes]] = {}
  for name, path in _real_photos(real_kfood).items():
    groups.setdefault(name.split("/")[0], {})[name] = path.read_bytes()
  for props in real_kfood.glob("*/*/crop_area.properties"):
    group = props.parent.parent.name
    groups[group][f"{group}/{props.parent.name}/{props.name}"] = props.read_bytes()
  inner = {f"{g}.zip": testing.zip_bytes(m) for g, m in groups.items()}
  testing.write_tree(root / "zip_manual",
                     {"kfood.zip": testing.zip_bytes(inner, "utf-8", dirs=False)})
  full = build("korean_food/full", root / "data", real_kfood)
  return RealBuilds(
      root=real_kfood,
      full=full,
      examples=read_examples(full),
      small_examples=read_examples(build("korean_food/224", root / "data", real_kfood)),
      zip_examples=read_examples(build("korean_food/full", root / "zip_data", root / "zip_manual")),
  )


def test_real_photos_labels_and_super_categories(real):
  assert set(real.examples) == set(real.photos())
  assert real.full.info.metadata["skipped_files"] == []
  for name, example in real.examples.items():
    _, food, _ = name.split("/")
    assert example["label"] == REAL_LABELS[food], name
    assert real.full.info.features["super_category"].int2str(
        example["super_category"]) == REAL_GROUPS[food], name


def test_real_crop_boxes_match_the_properties_files(real):
  boxes = _real_boxes(real.root)
  assert len(boxes) == 5  # 갈비구이 0001, 0002, 0004; 갈치구이 0002, 0006.JPG
  assert "구이/갈치구이/Img_001_0006.JPG" in boxes
  for name, example in real.examples.items():
    assert bool(example["has_bbox"]) == (name in boxes), name
    np.testing.assert_allclose(example["bbox"], boxes.get(name, (0, 0, 1, 1)), atol=1e-6,
                               err_msg=name)


def test_real_png_named_jpg_converted_and_decodable(real):
  source = (real.root / PNG_AS_JPG).read_bytes()
  assert source.startswith(b"\x89PNG")
  stored = real.examples[PNG_AS_JPG]["image"]
  assert stored[:3] == b"\xff\xd8\xff"
  assert decode(stored).shape == (369, 499, 3)
  assert decode(real.small_examples[PNG_AS_JPG]["image"]).shape == (224, 224, 3)


def test_real_uppercase_jpg_files_kept(real):
  upper = [n for n in real.photos() if n.endswith(".JPG")]
  assert len(upper) == 6
  assert all(n in real.examples for n in upper)


def test_real_clean_jpegs_stored_byte_for_byte(real):
  photos = real.photos()
  clean = [n for n in photos if n != PNG_AS_JPG]
  assert len(clean) == 46
  for name in clean:
    assert real.examples[name]["image"] == photos[name].read_bytes(), name
  for name, example in real.small_examples.items():
    assert decode(example["image"]).shape == (224, 224, 3), name


def test_real_photos_from_kfood_zip_give_the_same_examples(real):
  def summary(examples):
    return {n: (int(e["label"]), e["split"], tuple(e["bbox"]), e["image"])
            for n, e in examples.items()}
  assert summary(real.zip_examples) == summary(real.examples)


def test_real_series_are_reported_and_each_kept_in_one_split(real):
  """The ground truth of tests/test_series.py: each series one reported group, all in one split."""
  reported = [set(g["files"]) for g in real.full.info.metadata["series"]]
  for truth in KFOOD_SERIES:
    assert any(set(truth) <= group for group in reported), truth
    assert len({real.examples[name]["split"] for name in truth}) == 1, truth
  for group in reported:
    assert len({real.examples[name]["split"] for name in group}) == 1

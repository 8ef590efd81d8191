"""`benchmarks/benchmark_corpus.py`: the photos the benchmarks measure on."""

from __future__ import annotations

import io
import zipfile

import pytest
from PIL import Image

import korean_food
from korean_food import corpus
from photo_datasets.photos import images, near_duplicates

import benchmark_corpus


@pytest.mark.real_photos
def test_realistic_photos_are_distinct_photo_sized_jpegs_and_no_near_copies(real_kfood):
  name, photos = benchmark_corpus.photos(40, seed=3, workers=2)
  assert name == benchmark_corpus.REALISTIC
  assert len(set(photos)) == 40
  sizes = []
  for data in photos:
    with Image.open(io.BytesIO(data)) as image:
      assert image.format == "JPEG" and image.mode == "RGB"
      sizes.append(max(image.size))
  # The real AIHub photos' 300-1,198 px, within 10 %.
  assert 250 <= min(sizes) and max(sizes) <= 1400
  assert near_duplicates.groups([images.inspect_image(data).hashes for data in photos]) == []
  # Reproducible from the seed.
  assert benchmark_corpus.photos(3, seed=3, workers=1)[1] == photos[:3]


@pytest.mark.real_photos
def test_the_quality_read_back_is_the_one_written(real_kfood):
  for quality in (71, 90, 95, 100):
    out = io.BytesIO()
    Image.new("RGB", (16, 16), (90, 120, 30)).save(out, "JPEG", quality=quality)
    assert benchmark_corpus.jpeg_quality(Image.open(out)) == quality


def test_without_the_real_photos_the_generated_fallback_is_named(tmp_path):
  name, photos = benchmark_corpus.photos(5, realdata=None, workers=1)
  assert name == benchmark_corpus.GENERATED == benchmark_corpus.corpus_name(tmp_path / "absent")
  assert len(set(photos)) == 5


def test_the_kfood_zip_has_the_real_layout_and_class_indices(tmp_path):
  assert benchmark_corpus.write_kfood_zip(tmp_path, 12, realdata=None) == benchmark_corpus.GENERATED
  with zipfile.ZipFile(tmp_path / "kfood.zip") as outer:
    assert sorted(outer.namelist()) == sorted(f"{group}.zip" for group in benchmark_corpus.CLASSES)
    assert {info.compress_type for info in outer.infolist()} == {zipfile.ZIP_STORED}
  index = {food.name: food.index for food in korean_food.food_classes()}
  names = [file.parts for file, _ in corpus.walk(tmp_path)]
  assert len(names) == 12
  for group, food, file_name in names:
    assert (food, index[food]) in benchmark_corpus.CLASSES[group]
    assert file_name.startswith(f"Img_{index[food]:03d}_")

"""One strict decode decides whether a photo is kept, in every format the
corpus holds and whichever config is built first: real AIHub photos re-encoded
at test time (never stored in the project), with damaged copies made from
them. Skipped where the real photos are absent."""

from __future__ import annotations

import io
import pathlib

import pytest
import simplejpeg
from PIL import Image

import korean_food  # noqa: F401  (registers the builder)
from photo_datasets import testing
from photo_datasets.photos import images
from photo_datasets.testing import build, read_examples

pytestmark = pytest.mark.real_photos

CLASS_FOLDER = "구이/갈비구이"
# The formats damaged: `testing.CORPUS_testing.CORPUS_FORMATS`. Garbage goes at these byte offsets of the compressed
# data, as fractions of the file.
# libjpeg decodes about 1 in 9 JPEGs with such garbage without a warning (docs/troubleshooting.md), and no
# decoder can tell them from a photo: these places are among those it reports, in these photos.
GARBAGE_AT = (0.25, 0.5, 0.75)
# libwebp checks the frame headers, not the compressed pixels (docs/troubleshooting.md): garbage in
# the headers, which start 20 bytes in.
WEBP_GARBAGE_AT = (20, 40)


def damaged_copies(data: bytes, fmt: str) -> dict[str, bytes]:
  """Name -> a copy of `data` with garbage in its compressed data, or cut."""
  copies = {"cut": data[:len(data) * 2 // 3]}
  if fmt == "bmp":
    return copies  # Raw pixels: any bytes are valid pixels; only a cut shows.
  offsets = WEBP_GARBAGE_AT if "webp" in fmt else [int(len(data) * f) for f in GARBAGE_AT]
  for offset in offsets:
    copies[f"garbage_at_{offset}"] = testing.with_garbage(data, offset)
  return copies


def _real_pictures(root: pathlib.Path, count: int) -> list[Image.Image]:
  paths = sorted(root.glob(f"{CLASS_FOLDER}/*.jpg"))[:count]
  return [Image.open(p).convert("RGB") for p in paths]


@pytest.fixture(scope="module")
def pictures(real_kfood) -> list[Image.Image]:
  return _real_pictures(real_kfood, 3)


@pytest.mark.parametrize("fmt", testing.CORPUS_FORMATS)
def test_every_damaged_copy_is_rejected_and_the_photo_kept(pictures, fmt):
  for picture in pictures:
    data = testing.encoded(picture, fmt)
    images.inspect_image(data)  # The intact photo is kept.
    for damage, bad in damaged_copies(data, fmt).items():
      with pytest.raises(images.BadImage):
        images.inspect_image(bad)
        pytest.fail(f"{fmt} with {damage} accepted")


def test_png_damaged_in_its_image_data_is_rejected_before_its_exif_is_read(real_kfood):
  """The case that stored a PNG partly black: PIL's `getexif` loads a PNG, and its error was taken for a
  tolerated EXIF one."""
  data = (real_kfood / "찌개/김치찌개/Img_119_0001.jpg").read_bytes()
  assert data.startswith(b"\x89PNG")
  bad = testing.with_garbage(data, len(data) // 2)
  with pytest.raises(images.BadImage, match="PNG"):
    images.decode_and_inspect(bad)


def test_a_libjpeg_warning_about_metadata_keeps_the_photo(pictures):
  """libjpeg warns of a JFIF version it does not know: a header matter, the pixels decode completely."""
  data = bytearray(testing.encoded(pictures[0], "jpeg"))
  assert data[6:11] == b"JFIF\0"
  data[11] = 2  # Version 2.01.
  with pytest.raises(ValueError, match="unknown JFIF revision"):
    simplejpeg.decode_jpeg(bytes(data), strict=True)
  assert images.inspect_image(bytes(data)).format == "JPEG"


def test_a_tiff_is_not_kept(pictures):
  out = io.BytesIO()
  pictures[0].save(out, format="TIFF", compression="tiff_deflate")
  with pytest.raises(images.BadImage, match="unsupported image format TIFF"):
    images.inspect_image(out.getvalue())


def _corpus(pictures: list[Image.Image]) -> tuple[dict[str, bytes], set[str], set[str]]:
  """Files of one class folder: each picture in each format, and damaged copies of each."""
  files: dict[str, bytes] = {}
  damaged = set()
  number = 0
  for fmt in testing.CORPUS_FORMATS:
    for picture in pictures:
      data = testing.encoded(picture, fmt)
      for copy in [data, *damaged_copies(data, fmt).values()]:
        name = f"{CLASS_FOLDER}/Img_000_{number:04d}.jpg"  # Every format named .jpg, as the corpus does.
        files[name] = copy
        if copy is not data:
          damaged.add(name)
        number += 1
  out = io.BytesIO()
  pictures[0].save(out, format="TIFF")
  tiff = f"{CLASS_FOLDER}/Img_000_{number:04d}.jpg"
  files[tiff] = out.getvalue()
  return files, set(files) - damaged - {tiff}, damaged | {tiff}


@pytest.mark.parametrize("order", [("224", "full"), ("full", "224")])
def test_both_build_orders_skip_every_damaged_file_and_keep_every_valid_one(real_kfood, tmp_path, order):
  files, valid, unusable = _corpus(_real_pictures(real_kfood, 2))
  testing.write_tree(tmp_path / "manual" / "kfood", files)
  for config in order:  # One download dir: the config built second reuses the first one's scan.
    builder = build(f"korean_food/{config}", tmp_path / "data", tmp_path / "manual",
                    download_dir=tmp_path / "downloads")
    skipped = {s["file_name"]: s["reason"] for s in builder.info.metadata["skipped_files"]}
    assert set(skipped) == unusable, (config, {n: skipped.get(n) for n in unusable ^ set(skipped)})
    assert set(read_examples(builder)) == valid, config

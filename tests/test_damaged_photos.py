"""One strict decode decides whether a photo is kept, in every format the
corpus holds and whichever config is built first: real AIHub photos re-encoded
at test time (never stored in the project), with damaged copies made from
them, padded copies and valid files of every unusual kind. Skipped where the
real photos are absent."""

from __future__ import annotations

import csv
import dataclasses
import io
import pathlib

import numpy as np
import pytest
import simplejpeg
import tensorflow as tf
from PIL import Image

import korean_food  # noqa: F401  (registers the builder)
from photo_datasets import testing
from photo_datasets.catalog import report_page
from photo_datasets.photos import images
from photo_datasets.testing import build, read_examples

pytestmark = pytest.mark.real_photos

CLASS_FOLDER = "구이/갈비구이"
OTHER_FOLDER = "구이/닭갈비"
# The formats damaged: `testing.CORPUS_FORMATS`. Garbage goes at these byte offsets of the
# compressed data, as fractions of the file.
# libjpeg decodes about 1 in 9 JPEGs with such garbage without a warning (docs/troubleshooting.md),
# and no decoder can tell them from a photo: these places are among those it reports, in these
# photos.
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
  """The case that stored a PNG partly black: PIL's `getexif` loads a PNG, and its error was
  taken for a tolerated EXIF one."""
  data = (real_kfood / "찌개/김치찌개/Img_119_0001.jpg").read_bytes()
  assert data.startswith(b"\x89PNG")
  bad = testing.with_garbage(data, len(data) // 2)
  with pytest.raises(images.BadImage, match="PNG"):
    images.decode_and_inspect(bad)


def test_a_libjpeg_warning_about_metadata_keeps_the_photo(pictures):
  """libjpeg warns of a JFIF version it does not know: a header matter, the pixels decode
  completely."""
  data = bytearray(testing.encoded(pictures[0], "jpeg"))
  assert data[6:11] == b"JFIF\0"
  data[11] = 2  # Version 2.01.
  with pytest.raises(ValueError, match="unknown JFIF revision"):
    simplejpeg.decode_jpeg(bytes(data), strict=True)
  assert images.inspect_image(bytes(data)).format == "JPEG"


@pytest.mark.parametrize("place", testing.PADDING_PLACES)
@pytest.mark.parametrize("form", ["baseline_jpeg", "progressive_jpeg", "restart_markers_jpeg",
                                  "greyscale_jpeg", "cmyk_jpeg"])
def test_a_padded_jpeg_is_kept_with_the_pixels_of_the_photo(pictures, form, place):
  """Padding of zeros or 0xFF, of any length, between header segments, before the end marker or
  after it: the photo is kept, decoded to the pixels of the file without it, and the padding
  libjpeg warned of is counted."""
  data = testing.jpeg_forms(pictures[0])[form]
  check, pixels = images.decode_and_inspect(data)
  for name, padding in testing.PADDINGS.items():
    padded_check, padded_pixels = images.decode_and_inspect(testing.padded(data, place, padding))
    assert np.array_equal(np.asarray(padded_pixels), np.asarray(pixels)), (name, place)
    assert padded_check.padding <= len(padding)
    assert dataclasses.replace(padded_check, padding=0) == check
    warned = name in ("zeros_300", "zeros_4096") and place != "after_end_marker"
    if warned:  # libjpeg's "extraneous bytes" warning: the report counts it.
      assert padded_check.padding > 0, (name, place)


def test_arbitrary_bytes_are_kept_between_header_segments_not_after_the_compressed_data(pictures):
  """Between header segments no decoder reads a byte as a pixel. After the compressed data, a few
  arbitrary bytes libjpeg reads ahead pass unnoticed (docs/troubleshooting.md measures how many);
  more cannot be told from compressed data left unread, as damage leaves it."""
  data = testing.jpeg_forms(pictures[0])["baseline_jpeg"]
  stray = bytes(range(1, 65))
  assert images.inspect_image(testing.padded(data, "between_header_segments", stray)).padding == 64
  with pytest.raises(images.BadImage, match="extraneous bytes before marker 0xd9"):
    images.inspect_image(testing.padded(data, "before_end_marker", stray))


def _rejected(data: bytes) -> bool:
  try:
    images.inspect_image(data)
  except images.BadImage:
    return True
  return False


@pytest.mark.parametrize("form", ["baseline_jpeg", "progressive_jpeg", "restart_markers_jpeg"])
def test_damage_in_a_padded_jpeg_is_caught_as_without_padding(pictures, form):
  """Garbage in the compressed data at 9 places: caught in a photo padded with zeros before its
  end marker exactly where it is caught in the photo without padding (nearly everywhere:
  docs/troubleshooting.md)."""
  caught = 0
  for picture in pictures:
    data = testing.jpeg_forms(picture)[form]
    padded = testing.padded(data, "before_end_marker", bytes(300))
    assert not _rejected(padded)
    for tenth in range(1, 10):
      offset = len(data) * tenth // 10
      caught += _rejected(testing.with_garbage(padded, offset))
      assert (_rejected(testing.with_garbage(padded, offset))
              == _rejected(testing.with_garbage(data, offset))), tenth
  assert caught >= len(pictures) * 9 * 2 // 3


def test_every_unusual_kind_is_kept(pictures):
  for kind, (data, shown) in testing.unusual_photos(pictures[0]).items():
    check, pixels = images.decode_and_inspect(data)
    assert (check.width, check.height) == shown.size, kind
    assert check.padding == 0, kind


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
        # Every format named .jpg, as the corpus does.
        name = f"{CLASS_FOLDER}/Img_000_{number:04d}.jpg"
        files[name] = copy
        if copy is not data:
          damaged.add(name)
        number += 1
  out = io.BytesIO()
  pictures[0].save(out, format="TIFF")
  tiff = f"{CLASS_FOLDER}/Img_000_{number:04d}.jpg"
  files[tiff] = out.getvalue()
  return files, set(files) - damaged - {tiff}, damaged | {tiff}


def _unusual_corpus(picture: Image.Image) -> dict[str, tuple[bytes, Image.Image]]:
  """File name -> (a valid file of an unusual kind, or a padded JPEG; the image it shows), in a
  second class folder. JPEGs are named .png, the others .jpg: the content decides, never the
  name."""
  shown = testing.unusual_photos(picture)
  padded = {f"{form}_{place}": (testing.padded(shown[form][0], place, bytes(300)), shown[form][1])
            for form in testing.jpeg_forms(picture) for place in testing.PADDING_PLACES}
  padded["baseline_jpeg_ff"] = (
      testing.padded(shown["baseline_jpeg"][0], "before_end_marker", b"\xff" * 300), picture)
  return {f"{OTHER_FOLDER}/{kind}{'.png' if 'jpeg' in kind else '.jpg'}": value
          for kind, value in (shown | padded).items()}


def _assert_stored_as_shown(builder, config: str,
                            unusual: dict[str, tuple[bytes, Image.Image]]) -> None:
  """Each unusual file is stored as a viewer shows it (first frame, upright, alpha over white),
  re-encoded."""
  examples = read_examples(builder)
  for name, (_, shown) in unusual.items():
    stored = tf.io.decode_jpeg(examples[name]["image"], channels=3).numpy().astype(np.float64)
    if config != "full":
      shown = images.framed(shown, square=True).resize(stored.shape[1::-1],
                                                       Image.Resampling.BICUBIC)
    assert stored.shape[1::-1] == shown.size, (config, name)
    assert np.abs(stored - np.asarray(shown, np.float64)).mean() < 4, (config, name)


@pytest.mark.parametrize("order", [("224", "full"), ("full", "224")])
def test_both_build_orders_skip_every_damaged_file_and_keep_every_valid_one(
    real_kfood, tmp_path, order):
  pictures = _real_pictures(real_kfood, 2)
  files, valid, unusable = _corpus(pictures)
  unusual = _unusual_corpus(pictures[0])
  testing.write_tree(tmp_path / "manual" / "kfood",
                     files | {name: data for name, (data, _) in unusual.items()})
  padded = {name for name in unusual
            if "_before_" in name or "_between_" in name or name.endswith("_ff")}
  for config in order:  # One download dir: the config built second reuses the first one's scan.
    builder = build(f"korean_food/{config}", tmp_path / "data", tmp_path / "manual",
                    download_dir=tmp_path / "downloads")
    skipped = {s["file_name"]: s["reason"] for s in builder.info.metadata["skipped_files"]}
    assert set(skipped) == unusable, (config, {n: skipped.get(n) for n in unusable ^ set(skipped)})
    assert set(read_examples(builder)) == valid | set(unusual), config
    _assert_stored_as_shown(builder, config, unusual)
    with open(pathlib.Path(builder.data_dir) / report_page.CSV_NAME, encoding="utf-8",
              newline="") as f:
      flagged = {row["file_name"] for row in csv.DictReader(f) if row["flag"] == "padded_jpeg"}
    assert flagged and flagged <= padded, config  # Counted in the report, never silently.
    assert builder.info.metadata["counts"]["padded JPEGs kept"] == len(flagged), config

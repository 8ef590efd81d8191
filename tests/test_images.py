"""The shared image checks and conversion (photo_datasets/photos/images.py), on
images drawn by `photo_datasets.testing` and on real photos."""

from __future__ import annotations

import io
import pathlib

import numpy as np
import PIL.Image
import pytest
import tensorflow as tf
from PIL import Image

import flowers_dataset
from photo_datasets.photos import images
from photo_datasets.testing import (
  BLUE,
  GREEN,
  RED,
  WHITE,
  animated_gif,
  deep_png,
  encode,
  exif_rotated_jpeg,
  half_transparent_png,
  halves,
)

SAMPLE = pathlib.Path(flowers_dataset.__file__).parent / "sample" / "flower_photos"
REAL_PHOTO = SAMPLE / "daisy" / "100080576_f52e8ee070_n.jpg"  # 320x263, baseline RGB JPEG.


def decode(data: bytes) -> np.ndarray:
  """What a TFDS reader gets: the stored bytes must be a JPEG TF decodes."""
  assert data[:2] == b"\xff\xd8", "stored bytes are not a JPEG"
  return tf.io.decode_jpeg(data, channels=3).numpy().astype(int)


def assert_close(pixel, colour, tolerance=40):
  assert np.abs(np.asarray(pixel, int) - np.asarray(colour)).max() <= tolerance, (pixel, colour)


def stored(data: bytes, **kwargs) -> tuple[images.ImageCheck, np.ndarray]:
  check = images.inspect_image(data)
  return check, decode(images.encode_image(data, check, **kwargs))


# Valid images of every kind.


def test_clean_jpeg_is_stored_unchanged():
  data = REAL_PHOTO.read_bytes()
  check = images.inspect_image(data)
  assert (check.format, check.mode, check.orientation) == ("JPEG", "RGB", 1)
  assert (check.width, check.height) == (320, 263)
  assert check.is_clean_jpeg
  assert images.encode_image(data, check) == data


def test_every_sample_photo_is_a_clean_jpeg_of_its_true_size():
  photos = sorted(SAMPLE.glob("*/*.jpg"))
  assert len(photos) == 100
  for path in photos:
    data = path.read_bytes()
    check = images.inspect_image(data)
    height, width, _ = tf.io.decode_jpeg(data).shape
    assert check.is_clean_jpeg, path
    assert (check.width, check.height) == (width, height), path


def test_resized_jpeg_matches_a_full_decode_crop_and_resize():
  """The reduced-scale (draft) decode must not shift or degrade the crop."""
  data = REAL_PHOTO.read_bytes()
  check, pixels = stored(data, size=64)
  assert pixels.shape == (64, 64, 3)
  with Image.open(io.BytesIO(data)) as full:
    side = min(full.size)
    left, top = (full.width - side) // 2, (full.height - side) // 2
    reference = full.convert("RGB").crop((left, top, left + side, top + side))
    reference = np.asarray(reference.resize((64, 64), Image.BICUBIC), int)
  assert np.abs(pixels - reference).mean() < 8
  # A shifted crop would be far off: the check above can fail.
  assert np.abs(pixels[:, 4:] - reference[:, :-4]).mean() > np.abs(pixels - reference).mean() + 2


def test_small_image_is_upscaled_to_the_asked_size():
  _, pixels = stored(encode(halves(), "PNG"), size=96)
  assert pixels.shape == (96, 96, 3)
  # Centre square of a 40x30 red|blue image is still red on the left, blue on the right.
  assert_close(pixels[48, 5], RED)
  assert_close(pixels[48, 90], BLUE)


def test_cmyk_jpeg_becomes_rgb():
  data = encode(halves().convert("CMYK"), "JPEG", quality=95)
  check, pixels = stored(data)
  assert (check.format, check.mode, check.is_clean_jpeg) == ("JPEG", "CMYK", False)
  assert pixels.shape == (30, 40, 3)
  assert_close(pixels[15, 5], RED)
  assert_close(pixels[15, 35], BLUE)


def test_grayscale_jpeg_becomes_rgb():
  gray = Image.fromarray(np.tile(np.linspace(0, 255, 40, dtype=np.uint8), (30, 1)), "L")
  check, pixels = stored(encode(gray, "JPEG", quality=95))
  assert (check.mode, check.is_clean_jpeg) == ("L", False)
  assert pixels.shape == (30, 40, 3)
  assert np.abs(pixels[..., 0] - pixels[..., 2]).max() <= 3  # Still grey.
  assert pixels[15, 2, 0] < 30 and pixels[15, 37, 0] > 225


def test_palette_png_with_transparency_is_put_on_white():
  image = Image.new("P", (40, 30), 0)
  image.putpalette([0, 0, 0] + list(GREEN) + [0] * 762)
  image.paste(1, (20, 0, 40, 30))  # Right half green, left half index 0...
  data = encode(image, "PNG", transparency=0)  # ...which is transparent.
  check, pixels = stored(data)
  assert (check.format, check.mode) == ("PNG", "P")
  assert_close(pixels[15, 5], WHITE)
  assert_close(pixels[15, 35], GREEN)


def test_rgba_png_is_put_on_white():
  check, pixels = stored(half_transparent_png(hidden=RED, shown=BLUE))  # The red must not show.
  assert check.mode == "RGBA"
  assert_close(pixels[15, 5], WHITE)
  assert_close(pixels[15, 35], BLUE)


def test_16_bit_png_is_scaled_to_8_bits():
  check, pixels = stored(deep_png(left=65535, right=32896))  # 32896 = 128 * 257
  assert (check.format, check.mode) == ("PNG", "I;16")
  assert_close(pixels[15, 5], WHITE, tolerance=3)
  assert_close(pixels[15, 35], (128, 128, 128), tolerance=3)


def test_gif_keeps_its_first_frame():
  data = animated_gif([Image.new("RGB", (40, 30), RED), Image.new("RGB", (40, 30), GREEN)])
  with Image.open(io.BytesIO(data)) as gif:
    assert gif.n_frames == 2
  check, pixels = stored(data)
  assert check.format == "GIF"
  assert pixels.shape == (30, 40, 3)
  assert_close(pixels[15, 20], RED)


@pytest.mark.parametrize("fmt", ["WEBP", "BMP"])
def test_webp_and_bmp_become_jpeg(fmt):
  kwargs = {"lossless": True} if fmt == "WEBP" else {}
  check, pixels = stored(encode(halves(), fmt, **kwargs))
  assert (check.format, check.width, check.height) == (fmt, 40, 30)
  assert pixels.shape == (30, 40, 3)
  assert_close(pixels[15, 5], RED)
  assert_close(pixels[15, 35], BLUE)


# EXIF orientation.

# What each EXIF orientation asks a viewer to do to the stored pixels, written
# with numpy (independently of PIL's exif_transpose).
UPRIGHT = {
    1: lambda a: a,
    2: lambda a: a[:, ::-1],  # Mirror horizontally.
    3: lambda a: a[::-1, ::-1],  # Rotate 180.
    4: lambda a: a[::-1],  # Mirror vertically.
    5: lambda a: a.transpose(1, 0, 2),  # Mirror horizontally, rotate 270 CW.
    6: lambda a: np.rot90(a, -1),  # Rotate 90 CW.
    7: lambda a: np.rot90(a, -1)[::-1],  # Mirror horizontally, rotate 90 CW.
    8: lambda a: np.rot90(a, 1),  # Rotate 270 CW.
}


def with_orientation(pixels: np.ndarray, orientation: int) -> bytes:
  return exif_rotated_jpeg(Image.fromarray(pixels, "RGB"), orientation, quality=95)


def quadrants(width=48, height=32) -> np.ndarray:
  """Four flat colours, one per quadrant: any flip or turn moves them."""
  pixels = np.zeros((height, width, 3), np.uint8)
  h, w = height // 2, width // 2
  pixels[:h, :w], pixels[:h, w:] = RED, GREEN
  pixels[h:, :w], pixels[h:, w:] = BLUE, WHITE
  return pixels


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_is_applied(orientation):
  source = quadrants()
  data = with_orientation(source, orientation)
  check = images.inspect_image(data)
  assert check.orientation == orientation
  assert check.is_clean_jpeg == (orientation == 1)
  expected = UPRIGHT[orientation](source).astype(int)
  assert (check.height, check.width) == expected.shape[:2]
  pixels = decode(images.encode_image(data, check))
  assert pixels.shape == expected.shape
  # Quadrant centres carry the right colours (JPEG blurs only the edges).
  for y in (expected.shape[0] // 4, 3 * expected.shape[0] // 4):
    for x in (expected.shape[1] // 4, 3 * expected.shape[1] // 4):
      assert_close(pixels[y, x], expected[y, x])


@pytest.mark.parametrize("orientation", range(1, 9))
def test_upright_box_follows_the_transposed_pixels(orientation):
  stored_box = (0.125, 0.25, 0.5, 0.875)  # ymin, xmin, ymax, xmax on stored pixels.
  height, width = 32, 48
  source = np.zeros((height, width, 3), np.uint8)
  source[4:16, 12:42] = WHITE  # Exactly the box above.
  upright = UPRIGHT[orientation](source)
  rows = np.flatnonzero(upright[..., 0].any(axis=1))
  cols = np.flatnonzero(upright[..., 0].any(axis=0))
  h, w = upright.shape[:2]
  expected = (rows[0] / h, cols[0] / w, (rows[-1] + 1) / h, (cols[-1] + 1) / w)
  assert images.upright_box(stored_box, orientation) == pytest.approx(expected)

  # And encode_image crops that box out of the upright image: all white.
  data = with_orientation(source, orientation)
  check = images.inspect_image(data)
  crop = decode(images.encode_image(data, check, box=images.upright_box(stored_box, orientation)))
  assert crop.shape[:2] == (round(h * (expected[2] - expected[0])),
                            round(w * (expected[3] - expected[1])))
  assert crop[2:-2, 2:-2].min() > 200


def test_broken_exif_does_not_reject_a_photo():
  data = bytearray(with_orientation(quadrants(), 6))
  start = data.index(b"Exif\x00\x00")
  data[start + 6 : start + 14] = b"\xff" * 8  # Mangle the TIFF header inside APP1.
  check = images.inspect_image(bytes(data))
  assert check.orientation == 1
  assert decode(images.encode_image(bytes(data), check)).shape == (32, 48, 3)


# Unusable files: BadImage with a reason.


def test_truncated_jpeg_is_rejected():
  data = REAL_PHOTO.read_bytes()
  with pytest.raises(images.BadImage, match="cannot decode JPEG.*truncated"):
    images.inspect_image(data[: len(data) // 2])


def test_truncated_progressive_jpeg_is_rejected():
  with Image.open(REAL_PHOTO) as photo:
    data = encode(photo, "JPEG", progressive=True, quality=90)
  images.inspect_image(data)  # The whole file is fine.
  with pytest.raises(images.BadImage, match="cannot decode JPEG"):
    images.inspect_image(data[: len(data) * 2 // 3])


def test_truncated_png_is_rejected():
  noisy = np.random.default_rng(0).integers(0, 256, (64, 64, 3), np.uint8)
  data = encode(Image.fromarray(noisy, "RGB"), "PNG")
  with pytest.raises(images.BadImage, match="cannot decode PNG"):
    images.inspect_image(data[: len(data) // 2])


def test_empty_file_is_rejected():
  with pytest.raises(images.BadImage, match="empty file"):
    images.inspect_image(b"")


def test_random_bytes_are_rejected():
  data = np.random.default_rng(1).integers(0, 256, 2048, np.uint8).tobytes()
  with pytest.raises(images.BadImage, match="not an image format"):
    images.inspect_image(data)


def test_html_saved_as_jpg_is_rejected():
  data = b"<!DOCTYPE html><html><body>Rate limit exceeded</body></html>"
  with pytest.raises(images.BadImage, match=r"not an image format.*<!DOCTYP"):
    images.inspect_image(data)


def test_unsupported_format_is_rejected():
  with pytest.raises(images.BadImage, match="unsupported image format TIFF"):
    images.inspect_image(encode(halves(), "TIFF"))


@pytest.mark.parametrize("pixels", [1_100, 100_000])  # Above the limit; above twice it.
def test_decompression_bomb_is_rejected(monkeypatch, pixels):
  monkeypatch.setattr(PIL.Image, "MAX_IMAGE_PIXELS", 1_000)
  data = encode(Image.new("RGB", (pixels // 10, 10)), "PNG")
  with pytest.raises(images.BadImage, match="decompression bomb"):
    images.inspect_image(data)


def test_bomb_limit_is_a_real_limit(monkeypatch):
  monkeypatch.setattr(PIL.Image, "MAX_IMAGE_PIXELS", 1_000)
  assert images.inspect_image(encode(Image.new("RGB", (90, 10)), "PNG")).width == 90


def test_a_conversion_from_the_scans_pixels_is_the_conversion_of_its_own_decode_metadata_included():
  """The scan decodes JPEGs with simplejpeg; what it hands the conversion must encode to the bytes a
  conversion of its own (PIL's decode) makes, with what PIL carries over (this photo's comment)."""
  data = (SAMPLE / "roses" / "21522100663_455b77a90c_n.jpg").read_bytes()
  with Image.open(io.BytesIO(data)) as source:
    assert "icc_profile" in source.info and "comment" in source.info
  check, pixels = images.decode_and_inspect(data)
  assert images.encodes_from_scan(check, 64, None)
  from_scan = images.encode_image(data, check, size=64, decoded=pixels)
  assert from_scan == images.encode_image(data, check, size=64)

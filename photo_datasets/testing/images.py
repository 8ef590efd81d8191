"""Images for the tests: photo-like pictures the builders meet in the real corpora
(`photo`, `jpeg`, `odd_images`, `broken_files`), the formats the corpus holds and
damaged copies of them (`CORPUS_FORMATS`, `encoded`, `with_garbage`), and flat-colour
images (`halves`, `marked`, `half_transparent_png`, `deep_png`): a test can tell
exactly where each colour must end up after a conversion."""


from __future__ import annotations

import io
import os
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import ExifTags, Image, ImageDraw, ImageFilter

Size = tuple[int, int]  # width, height
Colour = tuple[int, int, int]
PathLike = str | os.PathLike[str]

RED: Colour = (255, 0, 0)
GREEN: Colour = (0, 255, 0)
BLUE: Colour = (0, 0, 255)
WHITE: Colour = (255, 255, 255)


def photo(seed: int, size: Size = (160, 120)) -> Image.Image:
  """A plate of food on a table (gradient, ellipses, blur, a little noise):
  compresses and decodes like a photo, fixed by `seed`."""
  rng = np.random.default_rng(seed)
  width, height = size
  c0, c1 = rng.integers(40, 220, size=(2, 3))
  t = (np.linspace(0, 1, width)[None, :] * 0.6 + np.linspace(0, 1, height)[:, None] * 0.4)[..., None]
  image = Image.fromarray((c0 * (1 - t) + c1 * t).astype(np.uint8))
  draw = ImageDraw.Draw(image)
  cx, cy = width * rng.uniform(0.4, 0.6), height * rng.uniform(0.4, 0.6)
  rx, ry = width * rng.uniform(0.25, 0.38), height * rng.uniform(0.28, 0.4)
  draw.ellipse([cx - rx, cy - ry, cx + rx, cy + ry], fill=(236, 234, 226),
               outline=(170, 168, 160), width=max(1, width // 50))
  for _ in range(int(rng.integers(3, 8))):
    fx, fy = cx + rng.uniform(-0.55, 0.55) * rx, cy + rng.uniform(-0.55, 0.55) * ry
    r = rng.uniform(0.12, 0.3) * min(rx, ry)
    colour = tuple(int(v) for v in rng.integers(50, 230, size=3))
    draw.ellipse([fx - r, fy - r * rng.uniform(0.6, 1.0), fx + r, fy + r], fill=colour)
  image = image.filter(ImageFilter.GaussianBlur(max(width, height) / 240 + 0.4))
  noise = rng.normal(0, 2.0, size=(height, width, 3))
  return Image.fromarray((np.asarray(image, np.float64) + noise).clip(0, 255).astype(np.uint8))


def encode(image: Image.Image, fmt: str = "JPEG", **options: Any) -> bytes:
  """`image` saved as `fmt` (JPEG at quality 80 unless `options` say otherwise)."""
  if fmt == "JPEG":
    options.setdefault("quality", 80)
  out = io.BytesIO()
  image.save(out, format=fmt, **options)
  return out.getvalue()


def jpeg(seed: int, size: Size = (160, 120), **options: Any) -> bytes:
  return encode(photo(seed, size), "JPEG", **options)


def exif_rotated_jpeg(raw: Image.Image, orientation: int = 6, **options: Any) -> bytes:
  """`raw` as the stored pixels, with an EXIF tag saying how to turn it upright."""
  exif = Image.Exif()
  exif[ExifTags.Base.Orientation] = orientation
  return encode(raw, "JPEG", exif=exif.tobytes(), **options)


def animated_gif(frames: Sequence[Image.Image]) -> bytes:
  """A looping GIF of `frames`; a builder keeps the first one."""
  return encode(frames[0], "GIF", save_all=True, append_images=list(frames[1:]), duration=100, loop=0)


def two_frame_gif(seed: int, size: Size) -> bytes:
  return animated_gif([photo(seed, size).quantize(64), photo(seed + 1, size).quantize(64)])


def rgba_png(seed: int, size: Size) -> bytes:
  """A cut-out dish: opaque in the middle, transparent around it."""
  image = photo(seed, size).convert("RGBA")
  alpha = Image.new("L", size, 0)
  ImageDraw.Draw(alpha).ellipse([size[0] // 6, size[1] // 6, size[0] * 5 // 6, size[1] * 5 // 6], fill=255)
  image.putalpha(alpha)
  return encode(image, "PNG")


def odd_images(seed: int) -> dict[str, bytes]:
  """One file of every odd kind a builder converts to RGB JPEG, by kind."""
  return {
      "png_as_jpg": encode(photo(seed, (144, 108)), "PNG"),
      "cmyk": encode(photo(seed + 1, (128, 96)).convert("CMYK"), "JPEG", quality=80),
      "grayscale": encode(photo(seed + 2, (120, 90)).convert("L"), "JPEG", quality=80),
      "gif": two_frame_gif(seed + 3, (112, 84)),
      "exif_rotated": exif_rotated_jpeg(photo(seed + 5, (160, 96))),
      "rgba_png": rgba_png(seed + 6, (120, 96)),
  }


def broken_files(seed: int) -> dict[str, bytes]:
  """Files named like photos that no decoder accepts, by kind."""
  whole = jpeg(seed, (128, 96))
  return {
      "truncated": whole[: len(whole) * 2 // 3],
      "empty": b"",
      "html": (b"<!DOCTYPE html>\n<html><head><title>403 Forbidden</title></head>\n"
               b"<body><h1>Forbidden</h1><p>Hotlinking is not allowed.</p></body></html>\n"),
  }



# The image formats the corpus holds, as PIL writes them (as the web does): name -> (PIL format, options).
CORPUS_FORMATS: dict[str, tuple[str, dict[str, Any]]] = {
    "jpeg": ("JPEG", {"quality": 90}),
    "progressive_jpeg": ("JPEG", {"quality": 90, "progressive": True}),
    "png": ("PNG", {}),
    "gif": ("GIF", {}),
    "bmp": ("BMP", {}),
    "webp": ("WEBP", {"quality": 80}),
    "lossless_webp": ("WEBP", {"lossless": True}),
}


def encoded(image: Image.Image, fmt: str) -> bytes:
  """`image` written in the `CORPUS_FORMATS` format `fmt`."""
  pil_format, options = CORPUS_FORMATS[fmt]
  out = io.BytesIO()
  image.save(out, format=pil_format, **options)
  return out.getvalue()


def with_garbage(data: bytes, offset: int, length: int = 64) -> bytes:
  """`data` with `length` random bytes (seeded by `offset`) written over it at `offset`: damaged compressed data."""
  noise = random.Random(offset).randbytes(length)
  return data[:offset] + noise + data[offset + length:]


# Flat-colour images: a test knows the colour of every pixel after conversion.


def halves(left: Colour = RED, right: Colour = BLUE, size: Size = (40, 30)) -> Image.Image:
  """An RGB image, left half one colour and right half another: a shifted,
  flipped or discoloured conversion shows."""
  width, height = size
  pixels = np.zeros((height, width, 3), np.uint8)
  pixels[:, : width // 2] = left
  pixels[:, width // 2 :] = right
  return Image.fromarray(pixels, "RGB")


def marked(size: Size, mark: tuple[int, int, int, int], background: Colour, colour: Colour = RED) -> Image.Image:
  """A flat `background` with a `colour` rectangle over x0 <= x < x1,
  y0 <= y < y1 (`mark`): where the rectangle lands shows how an image turned."""
  image = Image.new("RGB", size, background)
  x0, y0, x1, y1 = mark
  ImageDraw.Draw(image).rectangle([x0, y0, x1 - 1, y1 - 1], fill=colour)
  return image


def half_transparent_png(hidden: Colour = RED, shown: Colour = BLUE, size: Size = (40, 30)) -> bytes:
  """RGBA PNG: left half fully transparent `hidden` (must not show), right half opaque `shown`."""
  width, height = size
  pixels = np.zeros((height, width, 4), np.uint8)
  pixels[:, : width // 2] = (*hidden, 0)
  pixels[:, width // 2 :] = (*shown, 255)
  return encode(Image.fromarray(pixels, "RGBA"), "PNG")


def deep_png(left: int = 65535, right: int = 32896, size: Size = (40, 30)) -> bytes:
  """16-bit greyscale PNG in two halves (32896 = 128 * 257: grey 128 in 8 bits)."""
  width, height = size
  pixels = np.zeros((height, width), np.uint16)
  pixels[:, : width // 2] = left
  pixels[:, width // 2 :] = right
  return encode(Image.fromarray(pixels), "PNG")

"""Images for the tests: photo-like pictures the builders meet in the real corpora
(`photo`, `jpeg`, `odd_images`, `broken_files`), the formats the corpus holds and
damaged copies of them (`CORPUS_FORMATS`, `encoded`, `with_garbage`), valid files of
unusual kinds (`jpeg_forms`, `unusual_photos`) and padded JPEGs (`padded`), and flat-colour
images (`halves`, `marked`, `half_transparent_png`, `deep_png`): a test can tell
exactly where each colour must end up after a conversion."""


from __future__ import annotations

import io
import os
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import ExifTags, Image, ImageCms, ImageDraw, ImageFilter

from photo_datasets.photos.images import jpeg_marker_gaps

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
  t = (np.linspace(0, 1, width)[None, :] * 0.6
       + np.linspace(0, 1, height)[:, None] * 0.4)[..., None]
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
  return encode(frames[0], "GIF", save_all=True, append_images=list(frames[1:]), duration=100,
                loop=0)


def two_frame_gif(seed: int, size: Size) -> bytes:
  return animated_gif([photo(seed, size).quantize(64), photo(seed + 1, size).quantize(64)])


def rgba_png(seed: int, size: Size) -> bytes:
  """A cut-out dish: opaque in the middle, transparent around it."""
  image = photo(seed, size).convert("RGBA")
  alpha = Image.new("L", size, 0)
  ImageDraw.Draw(alpha).ellipse([size[0] // 6, size[1] // 6, size[0] * 5 // 6, size[1] * 5 // 6],
                                fill=255)
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


# The image formats the corpus holds, as PIL writes them (as the web does):
# name -> (PIL format, options).
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
  """`data` with `length` random bytes (seeded by `offset`) written over it at
  `offset`: damaged compressed data."""
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


def marked(size: Size, mark: tuple[int, int, int, int], background: Colour,
           colour: Colour = RED) -> Image.Image:
  """A flat `background` with a `colour` rectangle over x0 <= x < x1,
  y0 <= y < y1 (`mark`): where the rectangle lands shows how an image turned."""
  image = Image.new("RGB", size, background)
  x0, y0, x1, y1 = mark
  ImageDraw.Draw(image).rectangle([x0, y0, x1 - 1, y1 - 1], fill=colour)
  return image


def half_transparent_png(hidden: Colour = RED, shown: Colour = BLUE,
                         size: Size = (40, 30)) -> bytes:
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


# Valid photos of the unusual kinds the corpus may hold, and padded JPEGs: kept, as a decoder
# shows them.


def _saved(image: Image.Image, fmt: str, **options: Any) -> bytes:
  out = io.BytesIO()
  image.save(out, format=fmt, **options)
  return out.getvalue()


def _cut_out(image: Image.Image) -> Image.Image:
  """`image` with an alpha channel: opaque inside an ellipse, half transparent around it."""
  alpha = Image.new("L", image.size, 96)
  width, height = image.size
  ImageDraw.Draw(alpha).ellipse([width // 6, height // 6, width * 5 // 6, height * 5 // 6],
                                fill=255)
  image = image.copy()
  image.putalpha(alpha)
  return image


def _on_white(image: Image.Image) -> Image.Image:
  return Image.alpha_composite(Image.new("RGBA", image.size, WHITE + (255,)),
                               image.convert("RGBA")).convert("RGB")


def jpeg_forms(picture: Image.Image) -> dict[str, bytes]:
  """`picture` as each form of JPEG: baseline, progressive, with restart markers, greyscale,
  CMYK."""
  return {
      "baseline_jpeg": _saved(picture, "JPEG", quality=90),
      "progressive_jpeg": _saved(picture, "JPEG", quality=90, progressive=True),
      "restart_markers_jpeg": _saved(picture, "JPEG", quality=90, restart_marker_blocks=8),
      "greyscale_jpeg": _saved(picture.convert("L"), "JPEG", quality=90),
      "cmyk_jpeg": _saved(picture.convert("CMYK"), "JPEG", quality=90),
  }


def unusual_photos(picture: Image.Image) -> dict[str, tuple[bytes, Image.Image]]:
  """Valid files of every unusual kind the corpus may hold, made from one picture.

  The kinds: the forms of `jpeg_forms`, a JPEG with an ICC profile, an
  EXIF-rotated JPEG, an MPO, a 16-bit PNG, a greyscale PNG with alpha, a
  lossless WebP with alpha and an animated GIF. A builder must keep each one,
  stored as a viewer shows it.

  Args:
    picture: an RGB image.

  Returns:
    kind -> (the file's bytes, the upright RGB image a viewer shows: the first
    frame, any alpha over white).
  """
  grey = picture.convert("L")
  deep = Image.fromarray(np.asarray(grey, np.uint16) * 257)  # 16 bits, the same greys.
  icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
  flipped = picture.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
  grey_alpha, rgb_alpha = _cut_out(grey.convert("LA")), _cut_out(picture)
  frames = [picture.quantize(256), flipped.quantize(256)]
  shown = {kind: (data, grey.convert("RGB") if kind.startswith("grey") else picture)
           for kind, data in jpeg_forms(picture).items()}
  shown["cmyk_jpeg"] = (shown["cmyk_jpeg"][0], picture.convert("CMYK").convert("RGB"))
  return shown | {
      "icc_profile_jpeg": (_saved(picture, "JPEG", quality=90, icc_profile=icc), picture),
      "exif_rotated_jpeg": (
          exif_rotated_jpeg(picture.transpose(Image.Transpose.ROTATE_90), 6, quality=90), picture),
      "mpo": (_saved(picture, "MPO", quality=90, save_all=True, append_images=[flipped]), picture),
      "png_16_bit": (_saved(deep, "PNG"), grey.convert("RGB")),
      "grey_alpha_png": (_saved(grey_alpha, "PNG"), _on_white(grey_alpha)),
      "lossless_webp_alpha": (_saved(rgb_alpha, "WEBP", lossless=True), _on_white(rgb_alpha)),
      "animated_gif": (_saved(frames[0], "GIF", save_all=True, append_images=frames[1:],
                              duration=100, loop=0),
                       frames[0].convert("RGB")),
  }


def _marker_at(data: bytes, code: int) -> int:
  """The offset of the first `code` marker of a JPEG's first image (not one inside its EXIF
  thumbnail)."""
  return next(stop for marker, _, stop, _ in jpeg_marker_gaps(data) if marker == code)


# Where encoders pad a JPEG: place -> the offset the padding goes at.
PADDING_PLACES = {
    "before_end_marker": lambda data: _marker_at(data, 0xD9),
    "before_scan": lambda data: _marker_at(data, 0xDA),
    "between_header_segments": lambda data: _marker_at(data, 0xDB),  # The quantisation tables.
    "after_end_marker": len,
}
# Padding as encoders write it: name -> bytes.
PADDINGS = {
    "zeros_1": b"\0",
    "zeros_16": bytes(16),
    "zeros_300": bytes(300),
    "zeros_4096": bytes(4096),
    "ff_300": b"\xff" * 300,
    "zeros_and_ff_64": b"\0\xff" * 32,
}


def padded(data: bytes, place: str, padding: bytes) -> bytes:
  """The JPEG `data` with `padding` at `place` (`PADDING_PLACES`)."""
  offset = PADDING_PLACES[place](data)
  return data[:offset] + padding + data[offset:]

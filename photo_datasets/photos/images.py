"""Image validation and normalisation shared by the builders.

Every source file goes through `decode_and_inspect` once while the corpus is
scanned (`inspect_image` is the same check without the pixels). It sniffs
the content (never the extension), decodes it fully, and
says how the file is to be stored. `encode_image` then produces the stored
bytes: the source itself for a clean JPEG, otherwise one re-encoding to an
upright RGB JPEG, so every stored image decodes with
`tf.io.decode_jpeg(channels=3)`.
"""

from __future__ import annotations

import dataclasses
import io
import re
import struct
import warnings
import zlib
from collections.abc import Iterator
from typing import cast

import numpy as np
import simplejpeg
from PIL import ExifTags, Image, UnidentifiedImageError

from photo_datasets.photos import near_duplicates

# Names that may hold an image; the content is still sniffed, never trusted.
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")
READABLE_FORMATS = frozenset({"JPEG", "MPO", "PNG", "BMP", "GIF", "WEBP"})
JPEG_QUALITY = 92
# The square sizes, in pixels, a config stores and a pipeline reads at.
SQUARE_SIZES = range(16, 4097)


Box = tuple[float, float, float, float]  # ymin, xmin, ymax, xmax; relative, upright.


class BadImage(ValueError):
  """A file that cannot be used as an image; the message says why."""


@dataclasses.dataclass(frozen=True)
class ImageCheck:
  """What `inspect_image` learned about one valid image."""

  format: str  # PIL's name of the sniffed format, e.g. "JPEG", "PNG".
  mode: str  # PIL mode of the source, e.g. "RGB", "CMYK", "L", "P".
  width: int  # Upright size: after the EXIF orientation is applied.
  height: int
  orientation: int  # EXIF orientation tag, 1 when absent.
  hashes: bytes  # Perceptual hashes of the upright pixels (`near_duplicates.photo_hashes`).
  padding: int = 0  # Bytes of JPEG padding tolerated (`jpeg_padding`); reported, never silent.

  @property
  def stored_size(self) -> tuple[int, int]:
    """(width, height) of the pixels as stored, before the EXIF orientation."""
    return (self.height, self.width) if swaps_axes(self.orientation) else (self.width, self.height)

  @property
  def is_clean_jpeg(self) -> bool:
    """A JPEG that decodes to upright RGB as it is, so it is stored unchanged."""
    return self.format == "JPEG" and self.mode == "RGB" and self.orientation == 1


def swaps_axes(orientation: int) -> bool:
  """EXIF orientations 5 to 8 turn the image by 90°: width and height trade places."""
  return orientation >= 5


def _open(data: bytes) -> Image.Image:
  if not data:
    raise BadImage("empty file")
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("error", Image.DecompressionBombWarning)
      image = Image.open(io.BytesIO(data))
  except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
    raise BadImage(f"decompression bomb: {e}") from None
  except UnidentifiedImageError:
    raise BadImage(
        f"not an image format this package reads (starts with {data[:8]!r})"
    ) from None
  except Exception as e:  # PIL raises many types on malformed headers.
    raise BadImage(f"unreadable header: {type(e).__name__}: {e}") from None
  if image.format not in READABLE_FORMATS:
    raise BadImage(f"unsupported image format {image.format}")
  return image


def _orientation(image: Image.Image) -> int:
  try:
    value = image.getexif().get(ExifTags.Base.Orientation, 1)
  except Exception:  # A truncated EXIF block must not reject the photo.
    return 1
  return value if value in range(1, 9) else 1


# libjpeg warnings about metadata, not pixels: such a photo decodes completely.
_TOLERATED_JPEG_WARNINGS = re.compile(
    r"ICC|JFIF revision|Adobe|Invalid SOS parameters for sequential")
# JPEG modes the scan decodes with simplejpeg (PIL mode -> its colorspace); others (CMYK)
# through PIL.
_STRICT_JPEG_MODES = {"RGB": "RGB", "L": "GRAY"}


def check_pixel_data(data: bytes, fmt: str) -> int:
  """What PIL lets pass in the compressed pixels; raises `BadImage`, or
  returns the bytes of JPEG padding tolerated (`jpeg_padding`).

  PIL decodes a JPEG whose entropy-coded data is damaged without a word
  (libjpeg only warns, and fills in grey or garbage): `strict_jpeg_pixels`
  decodes it with libjpeg-turbo's warnings as errors instead (the scan's one
  decode of an RGB or greyscale JPEG; here, at 1/8 scale, for the others). A
  PNG's image data is checked against the CRC-32 of each IDAT chunk. Damage
  that leaves a valid stream (in a BMP's raw pixels, a lossy WebP, or garbage
  that libjpeg decodes without a warning) cannot be told from a photo:
  docs/troubleshooting.md.
  """
  if fmt in ("JPEG", "MPO"):
    return strict_jpeg_pixels(data, "GRAY", (1, 1))[1]
  if fmt == "PNG":
    _check_png_crcs(data)
  return 0


def strict_jpeg_pixels(data: bytes, colorspace: str,
                       size: tuple[int, int]) -> tuple[np.ndarray | None, int]:
  """A JPEG's pixels decoded by libjpeg-turbo at the smallest DCT scale that
  leaves at least `size` (width, height), with every warning about the
  compressed data an error (`BadImage`), except padding (`jpeg_padding`);
  and the number of padding bytes tolerated. The pixels are None where libjpeg
  warned about metadata only (`_TOLERATED_JPEG_WARNINGS`): they are whole, and
  the caller decodes them without warnings (simplejpeg gives none then)."""
  padding = 0
  for _ in range(_PADDING_PASSES):
    try:
      pixels: np.ndarray = simplejpeg.decode_jpeg(data, colorspace=colorspace, strict=True,
                                                  min_width=size[0], min_height=size[1])
    except ValueError as e:
      if "Premature end of JPEG file" in str(e):  # Worded as PIL words it, for the skip reasons.
        raise BadImage(f"cannot decode JPEG: image file is truncated ({e})") from None
      if _TOLERATED_JPEG_WARNINGS.search(str(e)):
        return None, padding
      place = jpeg_padding(data, str(e))
      if place is None:
        raise BadImage(f"damaged JPEG data: {e}") from None
      # Decoded again without it: the rest of the file is checked, and the pixels are those decoded
      # with the padding (libjpeg read no pixels from it).
      data = data[:place.start] + data[place.stop:]
      padding += place.stop - place.start
      continue
    return pixels, padding
  raise BadImage(
      f"damaged JPEG data: extraneous bytes still found after {_PADDING_PASSES} decodes")


# Padding: what encoders write outside the compressed pixels (zeros, or 0xFF fill).
_PADDING_BYTES = frozenset(b"\x00\xff")
# Decodes a JPEG may take, each after dropping the padding the last one found: an encoder pads at
# one or two places (a mix of 0x00 and 0xFF may take a decode more); more is damage.
_PADDING_PASSES = 5
# Padding bytes libjpeg may read before it skips the rest: its 64-bit bit buffer (0xFF 0x00 read
# as 0xFF data). Damage that leads it to read more of the padding as compressed data is damage.
_READ_AHEAD = 16
_EXTRANEOUS = re.compile(r"Corrupt JPEG data: (\d+) extraneous bytes before marker 0x([0-9a-f]{2})")
_RESTARTS = range(0xD0, 0xD8)  # RST0-7: inside a scan's entropy-coded data.
_STANDALONE = frozenset([0x01, *_RESTARTS])  # Markers with no length field after them.


def jpeg_padding(data: bytes, warning: str) -> slice | None:
  """Tells padding from damage where libjpeg warned of bytes it skipped.

  libjpeg's warning "N extraneous bytes before marker 0xMM" is all it says when
  it skips bytes it did not expect: bytes no segment holds, or compressed data
  left unread because damage misled the decoder. The marker structure (bytes
  only) tells them apart. Between the header segments before the first scan no
  decoder reads a byte as a pixel: whatever lies there is kept (an encoder's
  padding, or what a shortened metadata segment left over). From the first scan
  on, the N bytes must be padding: a run of 0x00 or 0xFF (no other byte) just
  before an MM marker, of which libjpeg read no more than `_READ_AHEAD` bytes as
  compressed data. Damage leaves real compressed data unread, which is no such
  run (also where it broke a later scan's header, and libjpeg skipped the scan),
  or reads on into the padding to make up for what it misread. A few arbitrary
  bytes at the end of the compressed data are no padding: libjpeg passes the few
  it read ahead without a warning, and more cannot be told from unread
  compressed data. docs/troubleshooting.md measures both sides.

  Args:
    data: the JPEG file's bytes.
    warning: the text of libjpeg's warning, as `simplejpeg` raises it.

  Returns:
    The slice of `data` to drop where the skipped bytes are padding; None where
    they are damage, or `warning` is not about extraneous bytes.
  """
  match = _EXTRANEOUS.fullmatch(warning)
  if match is None:
    return None
  count, marker = int(match[1]), int(match[2], 16)
  for code, start, stop, scanned in jpeg_marker_gaps(data):
    if code != marker:
      continue
    run = stop
    while scanned and run > start and data[run - 1] in _PADDING_BYTES:
      run -= 1
    if not scanned:
      run = start
    elif run < stop - 1 and data[run] == 0xFF and data[run + 1] == 0x00:
      run += 2  # FF 00 after compressed data is a compressed 0xFF byte, not padding.
    # The bytes libjpeg skipped: the shortest tail of the run it counts as `count` (the bits it
    # read ahead stay, as when it decoded them). 0xFF fill counts nothing: the tail is looked for
    # a little further back.
    skipped, lowest = stop - count, max(run, stop - count - 64)
    while skipped >= lowest and _skipped_bytes(data, skipped, stop) != count:
      skipped -= 1
    if skipped >= lowest and skipped - run <= _READ_AHEAD:
      return slice(skipped, stop)
  return None


def _skipped_bytes(data: bytes, start: int, stop: int) -> int:
  """How many of data[start:stop] libjpeg counts as extraneous: every byte,
  but 0xFF fill before a marker or before 0x00 (0xFF 0x00 counts 2)."""
  count, at = 0, start
  while at < stop:
    if data[at] != 0xFF:
      count, at = count + 1, at + 1
      continue
    while at < stop and data[at] == 0xFF:
      at += 1
    if at < stop:  # 0x00 after the fill.
      count, at = count + 2, at + 1
  return count


def jpeg_marker_gaps(data: bytes) -> Iterator[tuple[int, int, int, bool]]:
  """(marker, start, stop, scanned) for each marker of a JPEG's first image,
  up to its end marker: data[start:stop] are the bytes before the marker
  that no header segment holds (entropy-coded data after a scan's header, in
  which 0xFF 0x00 stands for 0xFF), the 0xFF fill before the marker left
  out; `scanned` where a scan began before them."""
  position, end, scanned = 2, len(data), False  # After the start marker.
  while position < end:
    start = at = position
    while True:  # The next marker: 0xFF, any 0xFF fill, then a code other than 0x00.
      at = data.find(b"\xff", at)
      if at < 0:
        return
      code_at = at + 1
      while code_at < end and data[code_at] == 0xFF:
        code_at += 1
      if code_at >= end:
        return
      if data[code_at] != 0x00:
        break
      at = code_at + 1
    code = data[code_at]
    yield code, start, at, scanned
    if code == 0xD9:
      return
    position = code_at + 1
    if code not in _STANDALONE:
      position += int.from_bytes(data[position:position + 2], "big")
    scanned = scanned or code == 0xDA


_PNG_CHUNK = struct.Struct(">I4s")


def _check_png_crcs(data: bytes) -> None:
  offset = 8  # After the signature.
  while offset + _PNG_CHUNK.size <= len(data):
    length, kind = _PNG_CHUNK.unpack_from(data, offset)
    end = offset + _PNG_CHUNK.size + length
    if kind in (b"IDAT", b"fdAT"):  # Image data (fdAT: an APNG's later frames).
      stored = data[end:end + 4]
      if len(stored) < 4 or zlib.crc32(data[offset + 4:end]) != int.from_bytes(stored, "big"):
        raise BadImage(f"damaged PNG image data: bad CRC-32 of the {kind.decode()} chunk "
                       f"at byte {offset}")
    if kind == b"IEND":
      return
    offset = end + 4


def inspect_image(data: bytes, strict: bool = True) -> ImageCheck:
  """Decodes `data` completely and describes it; raises `BadImage` if unusable."""
  return decode_and_inspect(data, strict)[0]


# The scan decodes a JPEG at the smallest DCT scale that keeps this many pixels
# on the short side: enough for the hashes and for the default config's
# conversion, which then needs no second decode (`encode_image(decoded=...)`).
SCAN_SIDE = 224


def decode_and_inspect(data: bytes, strict: bool = True) -> tuple[ImageCheck, Image.Image]:
  """Decodes a source file completely, once, and describes it: the scan's one decode.

  The content is sniffed (never the extension). A JPEG is decoded at the
  smallest DCT scale that keeps `SCAN_SIDE` pixels on its short side; every
  byte is read even at reduced scale, so truncation is caught, at a fraction
  of the cost of a full decode.

  Args:
    data: the source file's bytes.
    strict: True also checks the compressed pixel data, which PIL lets pass
      (`strict_jpeg_pixels`, `check_pixel_data`); False decodes as PIL alone
      does, damaged pixel data let through (what
      `benchmarks/damage_detection.py` compares with).

  Returns:
    (check, pixels): what `inspect_image` says, and the upright RGB pixels it
    decoded (JPEGs at `scan_reduction`, other formats at full size).

  Raises:
    BadImage: the file is empty, not an image this package reads, or does not
      decode completely; the message says why.
  """
  # Not closed: the pixels may be this very image (RGB, upright), and closing
  # it would free them. The file is an in-memory BytesIO.
  image = _open(data)
  width, height = image.size
  fmt = cast(str, image.format)  # _open checked it.
  mode = image.mode
  if min(width, height) < 1:
    raise BadImage("image has no pixels")
  if fmt in ("JPEG", "MPO"):
    _draft(image, _jpeg_reduction(image.size, SCAN_SIDE, 1.0))
  decoded, padding = _decode_pixels(data, image, fmt, mode, strict)
  orientation = _orientation(image)
  upright = (height, width) if swaps_axes(orientation) else (width, height)
  # The hash comes from the pixels just decoded, upright and as they will be stored.
  pixels = _to_rgb(_upright(decoded, orientation))
  hashes = near_duplicates.photo_hashes(pixels)
  return ImageCheck(fmt, mode, *upright, orientation, hashes, padding), pixels


def _decode_pixels(data: bytes, image: Image.Image, fmt: str, mode: str,
                   strict: bool) -> tuple[Image.Image, int]:
  """The pixels of `image` (`data`, opened and drafted to the scan's scale)
  decoded, and the bytes of JPEG padding tolerated; raises `BadImage` where
  they do not decode or, with `strict`, their compressed data is damaged."""
  array, padding = None, 0
  strict_jpeg = strict and fmt in ("JPEG", "MPO") and mode in _STRICT_JPEG_MODES
  if strict_jpeg:
    # libjpeg-turbo through simplejpeg, strictly, at the scale PIL's draft chose:
    # the same pixels as PIL's decode (both are libjpeg-turbo), with damage an error.
    array, padding = strict_jpeg_pixels(data, _STRICT_JPEG_MODES[mode], image.size)
  if array is not None:
    decoded = Image.fromarray(array[:, :, 0] if array.shape[2] == 1 else array)
    # What a re-encoding carries over (its comment), as from PIL's decode.
    decoded.info = dict(image.info)
    if decoded.size != image.size:
      raise BadImage(f"cannot decode {fmt}: {decoded.size} pixels decoded, {image.size} expected")
    return decoded, padding
  # The pixels first, strictly: reading the EXIF block first would load a PNG
  # (its eXIf chunk may follow the image data) with its errors taken for the
  # tolerated EXIF ones, and leave a partly decoded image.
  try:
    image.load()
  except Exception as e:
    raise BadImage(f"cannot decode {fmt}: {e}") from None
  if strict and not strict_jpeg:  # A strict JPEG's decode has checked its pixel data already.
    padding = check_pixel_data(data, fmt)
  return image, padding


def _jpeg_reduction(stored: tuple[int, int], size: int, fraction: float) -> int:
  """The DCT reduction (1, 2, 4 or 8) PIL's `draft` picks to leave at least
  `size` pixels on the short side of a `fraction` of the image."""
  scale = size / max(fraction * min(stored), 1)
  request = (int(stored[0] * scale) + 1, int(stored[1] * scale) + 1)
  most = min(stored[0] // request[0], stored[1] // request[1])
  return next((r for r in (8, 4, 2) if most >= r), 1)


def _draft(image: Image.Image, reduction: int) -> None:
  if reduction > 1:
    image.draft(None, (image.width // reduction, image.height // reduction))


def scan_reduction(check: ImageCheck) -> int:
  """The reduction of the pixels `decode_and_inspect` decoded."""
  if check.format not in ("JPEG", "MPO"):
    return 1
  return _jpeg_reduction(check.stored_size, SCAN_SIDE, 1.0)


def conversion_reduction(check: ImageCheck, size: int | None, box: Box | None) -> int:
  """The reduction a conversion decodes at: enough pixels for `size` (of the
  box), and never fewer than the scan's, so a conversion from the scan's
  pixels is the same as one from a decode of its own."""
  if check.format not in ("JPEG", "MPO") or not size:
    return 1
  fraction = 1.0 if box is None else min(box[2] - box[0], box[3] - box[1])
  return min(_jpeg_reduction(check.stored_size, size, fraction), scan_reduction(check))


# EXIF orientation -> the turn that shows the image upright, as ImageOps.exif_transpose.
_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM, 5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE, 8: Image.Transpose.ROTATE_90,
}


def _upright(image: Image.Image, orientation: int) -> Image.Image:
  """The image as shown, from the orientation already read (a broken EXIF block reads as 1)."""
  return image.transpose(_TRANSPOSE[orientation]) if orientation in _TRANSPOSE else image


def _to_rgb(image: Image.Image) -> Image.Image:
  if image.mode == "RGB":
    return image
  if image.mode in ("I;16", "I;16B", "I;16L", "I"):
    pixels = np.asarray(image, dtype=np.float64)
    peak = 65535.0 if image.mode.startswith("I;16") else max(pixels.max(), 1.0)
    image = Image.fromarray((pixels * (255.0 / peak)).clip(0, 255).astype(np.uint8))
  if image.mode == "P" and "transparency" in image.info:
    image = image.convert("RGBA")
  if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):
    image = image.convert("RGBA")
    background = Image.new("RGBA", image.size, (255, 255, 255, 255))
    image = Image.alpha_composite(background, image)
  return image.convert("RGB")


def framed(image: Image.Image, box: Box | None = None, *, square: bool = False) -> Image.Image:
  """The upright `image` cut as the configs store it: the crop `box` (ymin,
  xmin, ymax, xmax, relative), then, for a sized config, the centre square."""
  if box is not None:
    ymin, xmin, ymax, xmax = box
    w, h = image.size
    image = image.crop((round(xmin * w), round(ymin * h), round(xmax * w), round(ymax * h)))
  if not square:
    return image
  width, height = image.size
  side = min(width, height)
  left, top = (width - side) // 2, (height - side) // 2
  return image.crop((left, top, left + side, top + side))


def encode_image(
    data: bytes,
    check: ImageCheck,
    *,
    size: int | None = None,
    box: Box | None = None,
    decoded: Image.Image | None = None,
) -> bytes:
  """Returns the JPEG bytes to store for a valid image.

  Args:
    data: the source file, already accepted by `inspect_image`.
    check: what `inspect_image` returned for it.
    size: None keeps the source size; otherwise the (cropped) image is centre
      square cropped and resized to `size`×`size`.
    box: optional crop (ymin, xmin, ymax, xmax), relative to the upright image,
      applied before the square crop.
    decoded: the pixels of `decode_and_inspect`, used instead of decoding again
      where they are the ones this conversion decodes (`encodes_from_scan`).

  A clean JPEG with neither size nor box is returned unchanged.
  """
  if size is None and box is None and check.is_clean_jpeg:
    return data
  if decoded is not None and encodes_from_scan(check, size, box):
    image = decoded
  else:
    source = _open(data)  # Not closed, as in `decode_and_inspect`.
    if source.format in ("JPEG", "MPO"):
      _draft(source, conversion_reduction(check, size, box))
    source.seek(0)  # First frame of an animated GIF or WebP.
    source.load()
    image = _to_rgb(_upright(source, check.orientation))
  image = framed(image, box, square=bool(size))
  if size:
    image = image.resize((size, size), Image.Resampling.BICUBIC, reducing_gap=3.0)
  out = io.BytesIO()
  image.save(out, format="JPEG", quality=JPEG_QUALITY)
  return out.getvalue()


def encodes_from_scan(check: ImageCheck, size: int | None, box: Box | None) -> bool:
  """Whether the scan's pixels are those this conversion decodes: then the
  photo is converted in the scan, decoded once."""
  return conversion_reduction(check, size, box) == scan_reduction(check)


def relative_box(box: tuple[int, int, int, int], width: int, height: int) -> Box | None:
  """(x, y, w, h) pixels -> relative (ymin, xmin, ymax, xmax), clipped to the
  image; None when nothing of the box lies inside the image."""
  x, y, w, h = box
  x1, y1 = max(x, 0), max(y, 0)
  x2, y2 = min(x + w, width), min(y + h, height)
  if x2 <= x1 or y2 <= y1:
    return None
  return (y1 / height, x1 / width, y2 / height, x2 / width)


def upright_box(box: Box, orientation: int) -> Box:
  """Maps a relative (ymin, xmin, ymax, xmax) box on the stored pixels to the
  image as shown after its EXIF orientation is applied."""
  ymin, xmin, ymax, xmax = box
  corners = [(xmin, ymin), (xmax, ymax)]
  moves = {
      1: lambda x, y: (x, y),
      2: lambda x, y: (1 - x, y),
      3: lambda x, y: (1 - x, 1 - y),
      4: lambda x, y: (x, 1 - y),
      5: lambda x, y: (y, x),
      6: lambda x, y: (1 - y, x),
      7: lambda x, y: (1 - y, 1 - x),
      8: lambda x, y: (y, 1 - x),
  }
  (x1, y1), (x2, y2) = (moves[orientation](x, y) for x, y in corners)
  return (min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2))

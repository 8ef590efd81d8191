"""Near copies of a photo, as web corpora hold them: the near-duplicate rule must group them."""


from __future__ import annotations

import io

from PIL import Image, ImageOps

from photo_datasets.testing.images import encode, exif_rotated_jpeg


def near_copies(data: bytes) -> dict[str, bytes]:
  """Copies of a photo that the near-duplicate rule must group with it.

  The 14 kinds, as web corpora hold them: resized to 30 %, re-encoded as a
  JPEG of quality 40, as PNG, WebP and BMP, turned and given an EXIF
  orientation that turns it back, greyed, cropped by 5 % (all four sides,
  one, two, a corner) and given white borders of 5 % (all four sides, one, a
  corner).

  Args:
    data: the photo's file bytes (any format PIL reads; shown upright).

  Returns:
    kind -> the copy's file bytes.
  """
  with Image.open(io.BytesIO(data)) as opened:
    image = ImageOps.exif_transpose(opened).convert("RGB")
  width, height = image.size

  def cropped(left: int, top: int, right: int, bottom: int) -> bytes:  # Sides cut by 5 %.
    return encode(image.crop((left * width // 20, top * height // 20, width - right * width // 20,
                              height - bottom * height // 20)), quality=90)

  def bordered(left: int, top: int, right: int, bottom: int) -> bytes:  # White borders of 5 %.
    return encode(ImageOps.expand(image, (left * width // 20, top * height // 20,
                                          right * width // 20, bottom * height // 20),
                                  fill=(255, 255, 255)), quality=90)

  return {
      "resized_30": encode(image.resize((max(1, width * 3 // 10), max(1, height * 3 // 10)),
                                        Image.Resampling.LANCZOS), quality=90),
      "jpeg_q40": encode(image, quality=40),
      "png": encode(image, "PNG"),
      "webp": encode(image, "WEBP", quality=80),
      "bmp": encode(image, "BMP"),
      # Turned 90 degrees with EXIF orientation 6, which turns it back upright.
      "exif_rotated": exif_rotated_jpeg(image.transpose(Image.Transpose.ROTATE_90), orientation=6,
                                        quality=90),
      "grayscale": encode(image.convert("L"), quality=90),
      "cropped_all_sides": cropped(1, 1, 1, 1),
      "cropped_one_side": cropped(1, 0, 0, 0),
      "cropped_two_sides": cropped(1, 0, 1, 0),
      "cropped_corner": cropped(1, 1, 0, 0),
      "bordered_all_sides": bordered(1, 1, 1, 1),
      "bordered_one_side": bordered(0, 1, 0, 0),
      "bordered_corner": bordered(1, 1, 0, 0),
  }

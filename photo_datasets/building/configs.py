"""The size configs every builder of the package offers."""

from __future__ import annotations

import dataclasses
from typing import Any

import tensorflow_datasets as tfds

from photo_datasets.photos import images

DEFAULT_IMAGE_SIZE = 224
# What TFDS's own message for an unknown config leaves out.
VALID_NAMES = (f"A config is '{DEFAULT_IMAGE_SIZE}' (the default), 'full' (images at source "
               f"size) or any square size in pixels between {images.SQUARE_SIZES.start} and "
               f"{images.SQUARE_SIZES.stop - 1}, such as '160'.")


@dataclasses.dataclass
class ImageSizeConfig(tfds.core.BuilderConfig):
  """`image_size` None stores images at source size; N stores N×N crops."""

  image_size: int | None = None


def size_config(name: str) -> ImageSizeConfig:
  """`"full"`, or a square size in pixels such as `"160"`."""
  if name == "full":
    return ImageSizeConfig(
        name="full",
        description="Images at source size; clean JPEGs stored byte for byte.",
    )
  if not name.isdigit() or int(name) not in images.SQUARE_SIZES:
    raise ValueError(f"No config {name!r}. {VALID_NAMES}")
  size = int(name)
  return ImageSizeConfig(
      name=str(size),
      image_size=size,
      description=f"Images centre-cropped to a square and resized to {size}x{size}.",
  )


def restore_alternative_file_formats(info: Any) -> None:
  """Makes a `tfds.core.DatasetInfo` restored from `dataset_info.json` list the
  alternative formats recorded there (TFDS 4.9.10 keeps them in the proto only),
  so `tfds.data_source` finds the ArrayRecord copy of a config defined in code."""
  for value in info.as_proto.alternative_file_formats:
    file_format = tfds.core.FileFormat.from_value(value)
    if file_format not in info.alternative_file_formats:
      info.alternative_file_formats.append(file_format)

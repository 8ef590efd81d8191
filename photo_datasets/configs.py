"""The size configs every builder of the package offers."""

from __future__ import annotations

import dataclasses

import tensorflow_datasets as tfds

DEFAULT_IMAGE_SIZE = 224
# What TFDS's own message for an unknown config leaves out.
VALID_NAMES = (f"A config is '{DEFAULT_IMAGE_SIZE}' (the default), 'full' (images at source size) or any square "
               "size in pixels between 16 and 4096, such as '160'.")


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
  if not name.isdigit() or not 16 <= int(name) <= 4096:
    raise ValueError(f"No config {name!r}. {VALID_NAMES}")
  size = int(name)
  return ImageSizeConfig(
      name=str(size),
      image_size=size,
      description=f"Images centre-cropped to a square and resized to {size}x{size}.",
  )

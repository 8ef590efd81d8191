"""The size configs every builder of the package offers."""

from __future__ import annotations

import dataclasses

import tensorflow_datasets as tfds

DEFAULT_IMAGE_SIZE = 224


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
  size = int(name)
  if not 16 <= size <= 4096:
    raise ValueError(f"Image size must be between 16 and 4096, got {name!r}.")
  return ImageSizeConfig(
      name=str(size),
      image_size=size,
      description=f"Images centre-cropped to a square and resized to {size}x{size}.",
  )

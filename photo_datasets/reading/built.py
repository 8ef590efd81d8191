"""Built configs as the read side and the tools open them."""

from __future__ import annotations

from typing import Any

import tensorflow_datasets as tfds


def class_descriptions(builder: Any) -> dict[str, str]:
  """Class name -> the dataset's description of it (`PhotoBuilder.class_descriptions`;
  korean_food: the English name), also for a builder TFDS read from the files
  of a config not defined in code; {} for a dataset that gives none."""
  try:
    cls = tfds.builder_cls(builder.name)
  except Exception:  # Not registered: TFDS knows it from its files only.
    return {}
  hook = getattr(cls, "class_descriptions", None)
  return dict(hook()) if callable(hook) else {}

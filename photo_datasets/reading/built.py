"""Built configs as the read side and the tools open them."""

from __future__ import annotations

import os
import shlex
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


def build_command(builder: tfds.core.DatasetBuilder) -> str:
  """The `tfds build` command that builds `builder`'s config, as it runs from any folder (`--imports`
  registers the builder; the manual dir named is TFDS's default, spelled out, where the source goes)."""
  root = os.fspath(builder.data_dir_root)
  words = ["tfds", "build", builder.name, "--imports", type(builder).__module__.split(".")[0],
           "--config", builder.builder_config.name, "--data_dir", root]
  if builder.MANUAL_DOWNLOAD_INSTRUCTIONS:
    words += ["--manual_dir", os.path.join(root, "downloads", "manual")]
  return shlex.join(words)


def not_built(name: str, builder: tfds.core.DatasetBuilder) -> str:
  """What a reader of a config that is not built is told: where it looked, and the command that builds it."""
  return f"{name} is not built in {builder.data_dir_root}. Build it first:\n  {build_command(builder)}"

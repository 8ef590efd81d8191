"""Built configs as the read side and the tools open them: `open_built`, and
one error for a config that is not built (`not_built`: the builder says what
its data dir holds and the command that builds it)."""

from __future__ import annotations

import contextlib
import importlib
import os
from typing import Any

import tensorflow_datasets as tfds


class NotBuiltError(ValueError):
  """A config that is not built where it was looked for, or that TFDS does not know."""


def open_built(name: str, data_dir: str | os.PathLike[str] | None = None) -> Any:
  """The builder of the built config `name` (e.g. `"korean_food/224"`), in
  `data_dir` (TFDS's default when None). A dataset package of the dataset's
  name is imported first where there is one, as `tfds build --imports` does,
  so its builder is registered. Raises `NotBuiltError`: the config is not
  built there (the message gives the command that builds it), or TFDS knows no
  such dataset or config."""
  with contextlib.suppress(ImportError):
    importlib.import_module(name.split("/")[0].split(":")[0])
  try:
    builder = tfds.builder(name, data_dir=data_dir)
  except tfds.core.DatasetNotFoundError as e:
    raise NotBuiltError(str(e).splitlines()[0]) from None  # TFDS goes on to list every dataset.
  except Exception as e:  # TFDS raises several kinds (unknown config, version).
    raise NotBuiltError(f"cannot open {name}: {e}") from None
  if not builder.is_prepared():
    raise NotBuiltError(not_built(name, builder))
  return _registered(builder, data_dir)


def _registered(builder: Any, data_dir: str | os.PathLike[str] | None) -> Any:
  """`builder` as its registered class, with the dataset's hooks (`PhotoBuilder.class_descriptions`,
  `REPORT_NOTE`): TFDS gives a builder read from the files instead for a config not defined in code
  (`korean_food/64`). An earlier version's build stays the builder read from its files."""
  try:
    cls = tfds.builder_cls(builder.name)
  except Exception:  # Not registered: TFDS knows it from its files only.
    return builder
  if isinstance(builder, cls):
    return builder
  try:
    return cls(config=builder.builder_config.name, version=str(builder.version), data_dir=data_dir)
  except AssertionError:  # A version the code no longer builds (`NAME/CONFIG:VERSION`): as read.
    return builder


def not_built(name: str, builder: tfds.core.DatasetBuilder) -> str:
  """What a reader of a config that is not built is told: the package's builders say where it
  looked, the other versions built there and the command that builds it
  (`PhotoBuilder.not_built_message`); TFDS's other builders where it looked."""
  if hasattr(builder, "not_built_message"):
    return str(builder.not_built_message(name))
  return f"{name} is not built in {builder.data_dir_root}."

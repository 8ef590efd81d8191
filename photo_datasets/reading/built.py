"""Built configs as the read side and the tools open them: `open_built`, and
one error for a config that is not built (`not_built`, with the command that
builds it)."""

from __future__ import annotations

import contextlib
import glob
import importlib
import json
import os
import pathlib
import shlex
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
  except tfds.core.registered.DatasetNotFoundError as e:
    raise NotBuiltError(str(e).splitlines()[0]) from None  # TFDS goes on to list every dataset.
  except Exception as e:  # TFDS raises several kinds (unknown config, version).
    raise NotBuiltError(f"cannot open {name}: {e}") from None
  if not builder.is_prepared():
    raise NotBuiltError(not_built(name, builder))
  return _registered(builder, data_dir)


def _registered(builder: Any, data_dir: str | os.PathLike[str] | None) -> Any:
  """`builder` as its registered class, with the dataset's hooks (`PhotoBuilder.class_descriptions`,
  `REPORT_NOTE`): TFDS gives a builder read from the files instead for a config not defined in code
  (`korean_food/64`)."""
  try:
    cls = tfds.builder_cls(builder.name)
  except Exception:  # Not registered: TFDS knows it from its files only.
    return builder
  if isinstance(builder, cls):
    return builder
  return cls(config=builder.builder_config.name, version=str(builder.version), data_dir=data_dir)


# Stands for the manual dir in a command where no build recorded one.
MANUAL_DIR = "MANUAL_DIR"


def build_command(builder: tfds.core.DatasetBuilder) -> str:
  """The `tfds build` command that builds `builder`'s config, as it runs from any folder (`--imports`
  registers the builder). The manual dir is the one another config of the dataset in the same data dir
  was built from (`info.metadata["manual_dir"]`, the latest build's), else TFDS's default where it holds
  something, else `MANUAL_DIR`, to be replaced (`not_built` says so). A dataset that downloads its
  source itself gets none unless a sibling was built from one."""
  root = os.fspath(builder.data_dir_root)
  words = ["tfds", "build", builder.name, "--imports", type(builder).__module__.split(".")[0],
           "--config", builder.builder_config.name, "--data_dir", root]
  if builder.MANUAL_DOWNLOAD_INSTRUCTIONS:
    recorded = _recorded_manual_dir(builder)
    default = os.path.join(root, "downloads", "manual")
    if recorded:
      words += ["--manual_dir", recorded]
    elif recorded is None and not getattr(builder, "DOWNLOADS_ITS_SOURCE", False):
      words += ["--manual_dir", default if os.path.isdir(default) and os.listdir(default) else MANUAL_DIR]
  return shlex.join(words)


def _recorded_manual_dir(builder: tfds.core.DatasetBuilder) -> str | None:
  """The manual dir the latest built config of the dataset was built from ("" for a downloaded
  source), where it still exists; None where no config records one."""
  builds = []
  for path in glob.glob(os.path.join(glob.escape(os.fspath(builder.data_dir_root)), builder.name, "*", "*",
                                     "metadata.json")):
    with contextlib.suppress(OSError, ValueError):
      metadata = json.loads(pathlib.Path(path).read_text("utf-8"))
      if "manual_dir" in metadata and (not metadata["manual_dir"] or os.path.isdir(metadata["manual_dir"])):
        builds.append((os.path.getmtime(path), metadata["manual_dir"] or ""))
  return max(builds)[1] if builds else None


def not_built(name: str, builder: tfds.core.DatasetBuilder) -> str:
  """What a reader of a config that is not built is told: where it looked, and the command that builds it."""
  command = build_command(builder)
  placeholder = (f"\n(replace {MANUAL_DIR} by the folder holding the download: see "
                 f"`tfds.builder_cls({builder.name!r}).MANUAL_DOWNLOAD_INSTRUCTIONS`)"
                 if MANUAL_DIR in shlex.split(command) else "")
  return f"{name} is not built in {builder.data_dir_root}. Build it first:\n  {command}{placeholder}"

"""Built configs as the read side and the tools open them: `locate` (one rule
for what names a built config), `open_built`, the dataset's hooks for any
version's build (`class_descriptions`), and one error for a config that is not
built (`not_built`: the builder says what its data dir holds and the command
that builds it).

A built config is named as TFDS names it (`korean_food/224`,
`korean_food/224:1.6.0`, in a data dir) or by its folder, absolute, relative or
a bucket's: the version folder that holds its `dataset_info.json`, or the
config folder above it (its newest version). A name that is also an existing
folder holding a build is the folder, unless a data dir is given."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import re
from typing import Any

import tensorflow_datasets as tfds
from etils import epath

from photo_datasets.archives import storage

INFO_FILE = "dataset_info.json"
# TFDS's names: `dataset`, `dataset/config`, either with `:version`.
_NAME = re.compile(r"[a-z][a-z0-9_]*(/[\w.-]+)?(:[\d.*]+)?")


class NotBuiltError(ValueError):
  """A config that is not built where it was looked for, or that TFDS does not know."""


@dataclasses.dataclass(frozen=True)
class Located:
  """A built config as TFDS opens it: `name` (`dataset/config:version` for a
  folder) in `data_dir` (absolute; None for TFDS's default)."""

  name: str
  data_dir: str | None


def locate(name: str | os.PathLike[str],
           data_dir: str | os.PathLike[str] | None = None) -> Located:
  """What `name` (a config's name or folder, the module's rule) names, the
  data dir resolved once. Raises `NotBuiltError` for a folder that holds no
  built config, or one outside TFDS's layout `DATA_DIR/DATASET/CONFIG/VERSION`."""
  folder = version_folder(name, data_dir)
  if folder is None:
    return Located(os.fspath(name), None if data_dir is None else storage.absolute(data_dir))
  return _in_layout(folder)


def version_folder(name: str | os.PathLike[str],
                   data_dir: str | os.PathLike[str] | None = None) -> epath.Path | None:
  """The version folder holding the built config's files where `name` names a
  folder (the module's rule), wherever it lies; None where `name` is a name.
  Raises `NotBuiltError` for a folder without a built config."""
  reference = os.fspath(name)
  could_be_a_name = _NAME.fullmatch(reference) is not None
  if could_be_a_name and (data_dir is not None or not os.path.isdir(reference)):
    return None
  folder = epath.Path(storage.absolute(os.path.expanduser(reference)))
  if not folder.is_dir():
    raise NotBuiltError(f"{reference} is neither a built config's name (e.g. korean_food/224) "
                        "nor a folder.")
  if (folder / INFO_FILE).exists():
    return folder
  versions = sorted((child for child in folder.iterdir()
                     if tfds.core.Version.is_valid(child.name) and (child / INFO_FILE).exists()),
                    key=lambda child: tfds.core.Version(child.name))
  if not versions and could_be_a_name:  # A folder of that name holding no build (a package's).
    return None
  if not versions:
    raise NotBuiltError(f"{folder} holds no built config: no {INFO_FILE} in it or in a version "
                        f"folder in it (a built config's folder is DATA_DIR/NAME/CONFIG/VERSION).")
  return versions[-1]




def _in_layout(folder: epath.Path) -> Located:
  """The name and data dir of the built config in version folder `folder`."""
  info = json.loads((folder / INFO_FILE).read_text())
  config = info.get("configName") or info.get("config_name") or ""
  parts = [info["name"], config, info["version"]] if config else [info["name"], info["version"]]
  root = folder
  for part in reversed(parts):
    if root.name != part:
      raise NotBuiltError(
          f"{folder} holds {'/'.join(parts[:-1])}:{parts[-1]}, but TFDS opens a built config "
          f"only from a folder DATA_DIR/{'/'.join(parts)}: move it into one (mkdir -p "
          f"DATA_DIR/{'/'.join(parts[:-1])} && mv {folder} DATA_DIR/{'/'.join(parts)}) and name "
          "that folder, or pass --data_dir DATA_DIR.")
    root = root.parent
  return Located(f"{'/'.join(parts[:-1])}:{parts[-1]}", os.fspath(root))


def open_built(name: str | os.PathLike[str],
               data_dir: str | os.PathLike[str] | None = None) -> Any:
  """The builder of the built config `name` (e.g. `"korean_food/224"`, or its
  folder: `locate`), in `data_dir` (TFDS's default when None). A dataset
  package of the dataset's name is imported first where there is one, as `tfds
  build --imports` does, so its builder is registered. Raises `NotBuiltError`:
  the config is not built there (the message gives the command that builds
  it), or TFDS knows no such dataset or config."""
  located = locate(name, data_dir)
  name, data_dir = located.name, located.data_dir
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


def class_descriptions(builder: Any) -> dict[str, str]:
  """Class name -> what the dataset says of it (`PhotoBuilder.class_descriptions`;
  korean_food: the English name), for a build of any version, one read from its
  files included; {} for a dataset that gives none."""
  hooks = builder
  with contextlib.suppress(Exception):  # Not registered: TFDS knows it from its files only.
    hooks = tfds.builder_cls(builder.name)
  descriptions: dict[str, str] = getattr(hooks, "class_descriptions", dict)()
  return descriptions


def not_built(name: str, builder: tfds.core.DatasetBuilder) -> str:
  """What a reader of a config that is not built is told: the package's builders say where it
  looked, the other versions built there and the command that builds it
  (`PhotoBuilder.not_built_message`); TFDS's other builders where it looked."""
  if hasattr(builder, "not_built_message"):
    return str(builder.not_built_message(name))
  return f"{name} is not built in {builder.data_dir_root}."

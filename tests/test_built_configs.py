"""One rule for what names a built config, shared by every tool (`reading.built.locate`):
TFDS's name in a data dir, or the config's folder, absolute or relative, the version
folder or the config folder above it."""

from __future__ import annotations

import os
import pathlib
import shlex
import shutil
import subprocess

import pytest
import tensorflow_datasets as tfds

import korean_food  # noqa: F401  # Registers the builder.
from photo_datasets.commands import show, train, verify
from photo_datasets.reading import built, pipeline

NAME = "korean_food/224"


@pytest.fixture(scope="module")
def data_dir(samples) -> str:
  return samples.build(NAME)


def _version_folder(data_dir: str) -> pathlib.Path:
  return pathlib.Path(tfds.builder(NAME, data_dir=data_dir).data_dir)


def test_a_version_or_config_folder_absolute_or_relative_names_the_config(data_dir, monkeypatch):
  version = _version_folder(data_dir)
  expected = built.Located(f"{NAME}:{version.name}", data_dir)
  monkeypatch.chdir(version.parent.parent)  # The dataset's folder: relative paths below it.
  for folder in (version, version.parent, pathlib.Path(version.parent.name, version.name),
                 pathlib.Path(version.parent.name)):
    assert built.locate(os.fspath(folder)) == expected
  # A name stays a name, its data dir made absolute once.
  monkeypatch.chdir(pathlib.Path(data_dir).parent)
  relative = os.path.basename(data_dir)
  assert built.locate(NAME, relative) == built.Located(NAME, os.path.abspath(relative))


def test_the_tools_read_a_relative_config_folder(data_dir, monkeypatch, capsys):
  version = _version_folder(data_dir)
  monkeypatch.chdir(version.parent.parent.parent)
  config_folder = os.path.join("korean_food", "224")
  images, labels = next(iter(pipeline.training_dataset(config_folder, batch_size=4)))
  assert images.shape == (4, 224, 224, 3) and labels.shape == (4,)
  verify.main([config_folder])  # The folder above the version: its newest version.
  assert capsys.readouterr().out.startswith(f"{version}: intact, fingerprint ")
  captions = show.caption_function(built.open_built(os.fspath(version)))
  assert captions(0) != tfds.builder(NAME, data_dir=data_dir).info.features["label"].int2str(0)


def test_a_copy_outside_tfds_layout_is_told_the_command_that_moves_it(data_dir, tmp_path):
  copy = tmp_path / "colleague"
  shutil.copytree(_version_folder(data_dir), copy)
  with pytest.raises(built.NotBuiltError) as error:
    pipeline.training_dataset(os.fspath(copy))
  message = str(error.value)
  assert "TFDS opens a built config only from a folder DATA_DIR/korean_food/224/" in message
  command = message.split("(", 1)[1].rsplit(")", 1)[0]
  subprocess.run(command.replace("DATA_DIR", shlex.quote(os.fspath(tmp_path / "data"))),
                 shell=True, check=True)
  moved = next((tmp_path / "data" / "korean_food" / "224").iterdir())
  assert train.class_table(built.open_built(os.fspath(moved)))["0"]["description"]


def test_what_names_nothing_is_said_in_one_line(tmp_path):
  for reference, says in ((os.fspath(tmp_path / "nothing"), "is neither a built config's name"),
                          (os.fspath(tmp_path), "holds no built config")):
    with pytest.raises(built.NotBuiltError, match=says):
      pipeline.training_dataset(reference)
    with pytest.raises(SystemExit, match=says):
      verify.main([reference])


def test_a_name_that_is_also_a_folder_without_a_build_stays_a_name(tmp_path, monkeypatch):
  """From the package's own checkout, `korean_food` is a folder (the dataset's package)."""
  (tmp_path / "korean_food").mkdir()
  monkeypatch.chdir(tmp_path)
  assert built.locate("korean_food") == built.Located("korean_food", None)

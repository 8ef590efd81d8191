"""A data dir built by an earlier version of the package, read by this one: every way in names
the build that is there, how to read it as it is, and the command that builds this version."""

from __future__ import annotations

import json
import os
import pathlib
import shlex
import shutil

import pytest
import tensorflow_datasets as tfds

import korean_food
from photo_datasets import pipeline, verify
from photo_datasets.building import scan_cache, unbuilt
from photo_datasets.reading import built
from photo_datasets.testing import build

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"
EARLIER = "1.2.0"


def _as_earlier_version(data_dir: pathlib.Path, config: str) -> None:
  """Makes the build of `config` look as an earlier version of the package left it."""
  config_dir = data_dir / "korean_food" / config
  os.rename(config_dir / str(tfds.builder_cls("korean_food").VERSION), config_dir / EARLIER)
  info_path = config_dir / EARLIER / "dataset_info.json"
  info = json.loads(info_path.read_text("utf-8"))
  info["version"] = EARLIER
  info_path.write_text(json.dumps(info), "utf-8")


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory) -> tuple[pathlib.Path, pathlib.Path]:
  """A data dir holding korean_food/224 at EARLIER, built from the sample, with its saved scan."""
  root = tmp_path_factory.mktemp("upgrade")
  manual_dir = root / "my download"
  shutil.copytree(SAMPLE, manual_dir)
  build("korean_food/224", root / "data", manual_dir)
  _as_earlier_version(root / "data", "224")
  return root / "data", manual_dir


def _command_in(message: str) -> list[str]:
  (line,) = [line.strip() for line in message.splitlines()
             if line.strip().startswith("tfds build ")]
  return shlex.split(line)


def test_a_tool_names_the_earlier_build_and_both_ways_forward(upgraded):
  data_dir, manual_dir = upgraded
  with pytest.raises(built.NotBuiltError) as error:
    pipeline.training_dataset("korean_food/224", data_dir=os.fspath(data_dir))
  message = str(error.value)
  version = tfds.builder_cls("korean_food").VERSION
  assert f"korean_food/224 is not built in {data_dir} at version {version}." in message
  assert f"It holds korean_food/224 at version {EARLIER} (40 photos)" in message
  assert "the splits changed in 1.3.0, 1.4.0" in message  # The release notes that say "Splits ...".
  assert f"Read it as it is: korean_food/224:{EARLIER}" in message
  assert _command_in(message) == ["tfds", "build", "korean_food", "--imports", "korean_food",
                                  "--config", "224", "--data_dir", os.fspath(data_dir),
                                  "--manual_dir", os.fspath(manual_dir)]
  assert "The build reuses the saved scan: roughly 1 minute on" in message


def test_the_earlier_build_reads_as_it_is_through_the_tools(upgraded):
  data_dir, _ = upgraded
  name = f"korean_food/224:{EARLIER}"
  images, labels = next(iter(pipeline.training_dataset(name, batch_size=4,
                                                       data_dir=os.fspath(data_dir))))
  assert images.shape == (4, 224, 224, 3) and labels.shape == (4,)
  assert built.open_built(name, os.fspath(data_dir)).version == EARLIER
  verify.main([name, "--data_dir", os.fspath(data_dir)])  # The records match its fingerprint.


def test_plain_tfds_load_names_the_earlier_build_and_the_command(upgraded):
  data_dir, manual_dir = upgraded
  with pytest.raises(unbuilt.SourceNotFound) as error:
    tfds.load("korean_food/224", data_dir=os.fspath(data_dir))
  message = str(error.value)
  assert message.startswith(f"korean_food/224 is not built in {data_dir} at version "), message
  assert f"and {data_dir / 'downloads' / 'manual'} holds no download to build it from." in message
  assert f"Read it as it is: korean_food/224:{EARLIER}" in message
  assert _command_in(message)[-2:] == ["--manual_dir", os.fspath(manual_dir)]
  # What TFDS raises there: code that catches it still does.
  assert isinstance(error.value, AssertionError)


def test_plain_tfds_load_of_a_config_never_built_gives_the_command(tmp_path):
  with pytest.raises(unbuilt.SourceNotFound) as error:
    tfds.load("korean_food/224", data_dir=os.fspath(tmp_path))
  message = str(error.value)
  assert (f"{tmp_path / 'downloads' / 'manual'} holds no download to build it from. "
          "Build it first:\n") in message
  assert "It holds" not in message
  assert _command_in(message)[-2:] == ["--manual_dir", unbuilt.MANUAL_DIR]
  assert "MANUAL_DOWNLOAD_INSTRUCTIONS" in message


def test_a_rebuild_says_why_it_scans_again(upgraded, tmp_path, capsys):
  data_dir, manual_dir = upgraded
  scans = data_dir / "downloads" / "scans"
  (saved,) = scans.glob("korean_food-*.json")
  text = saved.read_text("utf-8")
  assert text.startswith('{"format": ')
  earlier = json.loads(text)
  earlier["format"] -= 1  # As an earlier version of the package saved it.
  (tmp_path / "downloads" / "scans").mkdir(parents=True)
  (tmp_path / "downloads" / "scans" / "korean_food-00000000000000000000.json").write_text(
      json.dumps(earlier), "utf-8")  # Named by that format: not the name this one looks for.
  build("korean_food/64", tmp_path, manual_dir)
  said = capsys.readouterr().out
  assert (f"korean_food/64: the saved scan in {tmp_path / 'downloads' / 'scans'} was made by "
          f"another version of the package (scan format {earlier['format']}; this one reads "
          f"{earlier['format'] + 1}): scanning {manual_dir} again.") in said


def test_the_saved_scan_of_other_files_is_named_so(tmp_path):
  path = scan_cache.saved_scan(tmp_path, "korean_food", os.fspath(SAMPLE))
  assert scan_cache.why_not_reused(path, "korean_food") is None
  (tmp_path / "korean_food-0123456789abcdef0123.json").write_text(path.name, "utf-8")  # Unreadable.
  assert "no saved scan in" in scan_cache.why_not_reused(path, "korean_food")

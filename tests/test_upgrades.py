"""A data dir built by an earlier version of the package, read by this one: every way in names
the build that is there, how to read it as it is, and the command that builds this version."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shlex
import shutil

import pytest
import tensorflow_datasets as tfds

import korean_food
from photo_datasets.building import scan_cache, unbuilt
from photo_datasets.commands import show, train, verify
from photo_datasets.photos import images
from photo_datasets.reading import built, pipeline
from photo_datasets.testing import build

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"
EARLIER = "1.6.0"
# The scan that version 1.6.0 saved of the sample in "<manual dir>/kfood.zip" (its folder written
# MANUAL_DIR here): its groups, series and splits, by the rules of 1.6.0.
SCAN_BY_EARLIER = pathlib.Path(__file__).parent / "data" / "korean_food-1.6.0-scan-of-sample.json"


def _save_earlier_scan(data_dir: pathlib.Path, manual_dir: pathlib.Path) -> pathlib.Path:
  """Puts the scan that 1.6.0 saved of `manual_dir` where 1.6.0 saved it, under its name."""
  digest = hashlib.sha256(f"12\0{manual_dir}".encode())  # 1.6.0's: format 12, then the files.
  for folder, dirs, files in os.walk(manual_dir):
    dirs.sort()
    for name in sorted(files):
      stat = os.stat(os.path.join(folder, name))
      digest.update(f"\0{folder}/{name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
  scans = data_dir / "downloads" / "scans"
  scans.mkdir(parents=True, exist_ok=True)
  path = scans / f"korean_food-{digest.hexdigest()[:20]}.json"
  text = SCAN_BY_EARLIER.read_text("utf-8")
  path.write_text(text.replace("MANUAL_DIR", json.dumps(os.fspath(manual_dir))[1:-1]), "utf-8")
  return path


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
  """A data dir holding korean_food/224 at EARLIER, built from the sample, and the scan that
  EARLIER saved (not this version's)."""
  root = tmp_path_factory.mktemp("upgrade")
  manual_dir = root / "my download"
  shutil.copytree(SAMPLE, manual_dir)
  build("korean_food/224", root / "data", manual_dir)
  _as_earlier_version(root / "data", "224")
  shutil.rmtree(root / "data" / "downloads" / "scans")
  _save_earlier_scan(root / "data", manual_dir)
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
  # Their notes say "Splits may change".
  assert "; the splits may have changed in 1.7.0, 1.8.0, 1.9.0 (" in message
  assert f"Read it as it is: korean_food/224:{EARLIER}" in message
  assert _command_in(message) == ["tfds", "build", "korean_food", "--imports", "korean_food",
                                  "--config", "224", "--data_dir", os.fspath(data_dir),
                                  "--manual_dir", os.fspath(manual_dir)]
  # The saved scan is EARLIER's: made by other rules, it is not reused.
  assert "The build scans its 40 photos again (no saved scan of them is of this version)" in message
  assert ": under a minute on " in message  # 40 photos: not "roughly 1 minute".


def test_the_earlier_build_reads_as_it_is_through_the_tools(upgraded):
  data_dir, _ = upgraded
  name = f"korean_food/224:{EARLIER}"
  images, labels = next(iter(pipeline.training_dataset(name, batch_size=4,
                                                       data_dir=os.fspath(data_dir))))
  assert images.shape == (4, 224, 224, 3) and labels.shape == (4,)
  assert built.open_built(name, os.fspath(data_dir)).version == EARLIER
  verify.main([name, "--data_dir", os.fspath(data_dir)])  # The records match its fingerprint.


def test_the_earlier_build_keeps_its_english_class_names(upgraded):
  """The dataset's descriptions of its classes hold for every version's build: train's
  classes.json and show's captions (the Korean names draw as empty boxes in its font)."""
  data_dir, _ = upgraded
  builder = built.open_built(f"korean_food/224:{EARLIER}", os.fspath(data_dir))
  names = builder.info.features["label"].names
  table = train.class_table(builder)
  assert all(table[str(label)]["description"].isascii() for label in range(len(names)))
  assert show.caption_function(builder)(0) == table["0"]["description"] != names[0]


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


def test_plain_tfds_load_of_a_config_never_built_gives_the_command(tmp_path, capsys, caplog):
  with pytest.raises(unbuilt.SourceNotFound) as error:
    tfds.load("korean_food/224", data_dir=os.fspath(tmp_path))
  # The refusal comes alone: no "Downloading and preparing dataset Unknown size", no warning
  # that the version folder not made "has no dataset_info.json".
  assert capsys.readouterr().out == ""
  assert [record.getMessage() for record in caplog.records if record.levelname == "WARNING"] == []
  message = str(error.value)
  assert (f"{tmp_path / 'downloads' / 'manual'} holds no download to build it from. "
          "Build it first:\n") in message
  assert "It holds" not in message
  assert _command_in(message)[-2:] == ["--manual_dir", unbuilt.MANUAL_DIR]
  assert "MANUAL_DOWNLOAD_INSTRUCTIONS" in message


def test_a_rebuild_over_the_earlier_scan_gives_a_fresh_builds_bytes(upgraded, tmp_path, capsys,
                                                                    monkeypatch):
  """The config built again into the data dir where EARLIER built it and saved its scan: scanned
  again, saying why, and the record files are those of a build into an empty data dir."""
  earlier_dir, manual_dir = upgraded
  data_dir = tmp_path / "upgraded"
  shutil.copytree(earlier_dir, data_dir)
  (earlier_scan,) = (data_dir / "downloads" / "scans").glob("korean_food-*.json")
  scanned: list[int] = []
  real_inspect = images.decode_and_inspect
  monkeypatch.setattr(images, "decode_and_inspect",
                      lambda data: scanned.append(1) or real_inspect(data))
  upgraded_build = build("korean_food/224", data_dir, manual_dir, workers=1)
  assert len(scanned) > 40  # Every photo decoded: the scan ran.
  said = capsys.readouterr().out
  assert (f"korean_food/224: the saved scan in {data_dir / 'downloads' / 'scans'} was made by an "
          f"earlier version of the package, whose checks, groups or splits may differ: scanning "
          f"{manual_dir} again.") in said
  assert earlier_scan.exists()  # Left as it was: an earlier version may still build from it.

  fresh = build("korean_food/224", tmp_path / "fresh", manual_dir)
  files = [(path.name, path.read_bytes())
           for path in sorted(pathlib.Path(upgraded_build.data_dir).glob("*.tfrecord-*"))]
  assert len(files) == 3
  assert files == [(path.name, path.read_bytes())
                   for path in sorted(pathlib.Path(fresh.data_dir).glob("*.tfrecord-*"))]
  prints = [json.loads((pathlib.Path(made.data_dir) / "metadata.json").read_text())["fingerprint"]
            for made in (upgraded_build, fresh)]
  assert prints[0]["sha256"] == prints[1]["sha256"]


def test_a_scan_by_other_rules_is_named_so(tmp_path):
  """A saved scan of the same files under another name of rules: another version's."""
  builder = tfds.builder_cls("korean_food")
  path = scan_cache.saved_scan(tmp_path, builder, os.fspath(SAMPLE))
  name, source, rules = path.stem.split("-")
  assert len(source) == 20 and len(rules) == 12
  (tmp_path / f"{name}-{source}-{'0' * 12}.json").write_text("{}", "utf-8")
  assert "was made by another version of the package or of its image libraries" in (
      scan_cache.why_not_reused(path, "korean_food"))


def test_the_saved_scan_of_other_files_is_named_so(tmp_path):
  path = scan_cache.saved_scan(tmp_path, tfds.builder_cls("korean_food"), os.fspath(SAMPLE))
  assert scan_cache.why_not_reused(path, "korean_food") is None
  (tmp_path / "korean_food-0123456789abcdef0123-0123456789ab.json").write_text("", "utf-8")
  assert "no saved scan in" in scan_cache.why_not_reused(path, "korean_food")


def test_the_release_notes_are_quoted_as_sure_as_they_are():
  class Notes:
    name, version = "some_photos", tfds.core.Version("1.3.0")
    RELEASE_NOTES = {"1.1.0": "Splits change: ...", "1.2.0": "Splits may change: ...",
                     "1.3.0": "Same splits as 1.2.0."}

  assert unbuilt._changes(Notes(), "1.0.0") == (
      "; the splits changed in 1.1.0 and may have changed in 1.2.0 "
      "(`tfds.builder_cls('some_photos').RELEASE_NOTES`)")
  assert unbuilt._changes(Notes(), "1.2.0") == "; the release notes of 1.3.0 keep its splits"

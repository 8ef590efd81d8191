"""`python -m photo_datasets verify` proves that TFDS reads a copy as it was
built (`catalog/fingerprint.py`): each edit of `dataset_info.json` that changes
what a reader gets is named, and shown to change it; an edit that does not
leaves the copy intact; a copy without `metadata.json` is checked against a
fingerprint given; the fingerprint's record names the platform, which the
fingerprint does not depend on. On copies of the bundled sample's build."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shlex
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import tensorflow_datasets as tfds

import korean_food
from photo_datasets.catalog import fingerprint
from photo_datasets.commands import verify
from photo_datasets.reading import random_access

NAME = "korean_food/224"
VERSION = str(korean_food.Builder.VERSION)
INFO = "dataset_info.json"


@pytest.fixture
def copy(samples, tmp_path) -> pathlib.Path:
  """A copy of the sample's `korean_food/224`: its version folder."""
  data_dir = samples.copy(tmp_path / "data", NAME)
  return pathlib.Path(data_dir) / "korean_food" / "224" / VERSION


def _verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
  """`python -m photo_datasets verify ARGS`, in this process: exit status and what it said."""
  try:
    verify.main(list(args))
    status = 0
  except SystemExit as exited:
    status = 1 if isinstance(exited.code, str) else int(exited.code or 0)
    if isinstance(exited.code, str):
      print(exited.code, file=sys.stderr)
  said = capsys.readouterr()
  return status, said.out + said.err


def _problems(said: str) -> list[str]:
  return [line.strip() for line in said.splitlines() if line.startswith("  ")]


def _kept(folder: pathlib.Path) -> dict[str, Any]:
  kept: dict[str, Any] = json.loads((folder / "metadata.json").read_text())["fingerprint"]
  return kept


def _edit_info(folder: pathlib.Path, change: Callable[[dict[str, Any]], None]) -> None:
  info = json.loads((folder / INFO).read_text(encoding="utf-8"))
  change(info)
  (folder / INFO).write_text(json.dumps(info, indent=2, ensure_ascii=False), encoding="utf-8")


def _split(info: dict[str, Any], name: str) -> dict[str, Any]:
  (split,) = [split for split in info["splits"] if split["name"] == name]
  return split


def _count(folder: pathlib.Path, split: str) -> int:
  """The examples TFDS's reader of the folder gives for `split`."""
  read = tfds.builder_from_directory(os.fspath(folder)).as_dataset(
      split=split, decoders={"image": tfds.decode.SkipDecoding()})
  return sum(1 for _ in read)


def test_an_intact_copy_verifies_by_its_folder_and_by_its_name(copy, capsys):
  kept = _kept(copy)["sha256"]
  status, said = _verify(capsys, os.fspath(copy), "--fingerprint", kept)
  assert status == 0 and f"intact, fingerprint {kept}" in said, said
  status, said = _verify(capsys, NAME, "--data_dir", os.fspath(copy.parents[2]))
  assert status == 0 and f"intact, fingerprint {kept}" in said, said


def _shard_length(info: dict[str, Any]) -> None:
  _split(info, "train")["shardLengths"] = [str(int(_split(info, "train")["shardLengths"][0]) - 1)]


def _rename(info: dict[str, Any]) -> None:
  _split(info, "train")["name"] = "training"


def _remove(info: dict[str, Any]) -> None:
  info["splits"] = [split for split in info["splits"] if split["name"] != "validation"]


def _add_shard(info: dict[str, Any]) -> None:
  _split(info, "train")["shardLengths"].append("1")


def _template(info: dict[str, Any]) -> None:
  _split(info, "train")["filepathTemplate"] = "{DATASET}-{SPLIT}-{SHARD_X_OF_Y}.{FILEFORMAT}"


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
  return lambda info: info.__setitem__(key, value)


Reads = Callable[[pathlib.Path, dict[str, int]], None]


def _fails(split: str, message: str) -> Reads:
  """TFDS's reader of the folder fails on `split`, saying `message` (`{n}`, `{m}` as below)."""

  def check(folder: pathlib.Path, values: dict[str, int]) -> None:
    with pytest.raises(Exception, match=message.format(**values)):
      _count(folder, split)

  return check


def _supervised_as(keys: tuple[str, str]) -> Reads:
  def check(folder: pathlib.Path, values: dict[str, int]) -> None:
    assert tfds.builder_from_directory(os.fspath(folder)).info.supervised_keys == keys

  return check


def _load_refuses(folder: pathlib.Path, values: dict[str, int]) -> None:
  with pytest.raises(AssertionError, match="version do not match"):
    tfds.builder(NAME, data_dir=os.fspath(folder.parents[2]))


# Edits that change what TFDS's readers get: the edit, the lines verify names
# (`{n}`: train's shard length as built, `{m}` one less), what the reader then
# does (None: not read here).
_READER_EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], list[str], Reads | None]] = {
    "shard length": (_shard_length,
                     [f"{INFO}: split 'train' has shard lengths {{m}} (built: {{n}})"],
                     _fails("train", "expected to contain {m} elements but contained at least")),
    "split renamed": (_rename, [f"{INFO}: split 'train' is missing (the build made it)",
                                f"{INFO}: split 'training' is not one the build made "
                                "(it made test, train, validation)"],
                      _fails("train", "Unknown split")),
    "split removed": (_remove, [f"{INFO}: split 'validation' is missing (the build made it)"],
                      _fails("validation", "Unknown split")),
    "shard added": (_add_shard, [f"{INFO}: split 'train' has shard lengths {{n}},1 (built: {{n}})",
                                 f"{INFO}: split 'train' reads korean_food-train.tfrecord-00000-of-"
                                 "00002, korean_food-train.tfrecord-00001-of-00002 (built: "
                                 "korean_food-train.tfrecord-00000-of-00001)"],
                    _fails("train", "korean_food-train.tfrecord-00000-of-00002")),
    "template": (_template, [f"{INFO}: split 'train' reads korean_food-train-00000-of-00001."
                             "tfrecord (built: korean_food-train.tfrecord-00000-of-00001)"],
                 _fails("train", "korean_food-train-00000-of-00001.tfrecord")),
    "supervisedKeys": (_set("supervisedKeys", {"tuple": {"items": [{"featureKey": "label"},
                                                                   {"featureKey": "image"}]}}),
                       [f"{INFO}: supervisedKeys is "], _supervised_as(("label", "image"))),
    "disableShuffling": (_set("disableShuffling", True),
                         [f"{INFO}: disableShuffling is true (built: false)"], None),
    "fileFormat": (_set("fileFormat", "array_record"),
                   [f'{INFO}: fileFormat is "array_record" (built: "tfrecord")'],
                   _fails("train", "not implemented for ArrayRecord")),
    "name": (_set("name", "korean_foods"), [f'{INFO}: name is "korean_foods"'],
             _fails("train", "korean_foods-train.tfrecord")),
    "configName": (_set("configName", "256"), [f'{INFO}: configName is "256" (built: "224")'],
                   None),
    "isBlocked": (_set("isBlocked", "withdrawn"), [f'{INFO}: isBlocked is "withdrawn"'], None),
    "features": (_set("features", {"pythonClassName": "tensorflow_datasets.core.features."
                                                      "features_dict.FeaturesDict"}),
                 [f"{INFO}: features is "], None),
    "version in place": (_set("version", "1.5.0"),
                         [f"{INFO}: version is '1.5.0', but the copy's folder is {VERSION}"],
                         _load_refuses),
    "unknown field": (_set("shardLength", ["1"]), [f"{INFO}: TFDS cannot read it"], None),
    "alternative format": (_set("alternativeFileFormats", ["array_record"]),
                           [f"{INFO}: alternativeFileFormats lists array_record, but its files "
                            "are missing: korean_food-test.array_record-00000-of-00001"], None),
}


@pytest.mark.parametrize("edit", _READER_EDITS)
def test_each_edit_that_changes_what_readers_get_is_named(copy, capsys, edit):
  change, lines, reads = _READER_EDITS[edit]
  (built,) = map(int, _split(json.loads((copy / INFO).read_text()), "train")["shardLengths"])
  values = {"n": built, "m": built - 1}
  _edit_info(copy, change)
  status, said = _verify(capsys, os.fspath(copy))
  assert status == 1, said
  problems = _problems(said)
  for line in lines:
    assert any(problem.startswith(line.format(**values)) for problem in problems), said
  assert all(problem.startswith(f"{INFO}: ") for problem in problems), said
  if reads is not None:  # The edit matters: TFDS's reader fails, or reads otherwise.
    reads(copy, values)


@pytest.mark.parametrize("edit", ["description", "numBytes", "numShards", "downloadSize"])
def test_an_edit_that_readers_do_not_see_leaves_the_copy_intact(copy, capsys, edit):
  before = _count(copy, "train")
  changes: dict[str, Callable[[dict[str, Any]], None]] = {
      "description": _set("description", "Another description."),
      "numBytes": lambda info: _split(info, "train").__setitem__("numBytes", "1"),
      # TFDS 4.9.10 counts a split's shards by its shard lengths, never by this field.
      "numShards": lambda info: _split(info, "train").__setitem__("numShards", "2"),
      "downloadSize": _set("downloadSize", "12345"),
  }
  _edit_info(copy, changes[edit])
  status, said = _verify(capsys, os.fspath(copy))
  assert status == 0 and f"intact, fingerprint {_kept(copy)['sha256']}" in said, said
  assert _count(copy, "train") == before


def test_the_array_record_copy_added_after_the_build_leaves_the_copy_intact(copy, capsys):
  random_access.add_array_record(NAME, os.fspath(copy.parents[2]))
  assert "array_record" in json.loads((copy / INFO).read_text())["alternativeFileFormats"]
  status, said = _verify(capsys, os.fspath(copy))
  assert status == 0 and f"intact, fingerprint {_kept(copy)['sha256']}" in said, said
  assert "the fingerprint does not cover its files" in said


def test_a_changed_record_file_is_named(copy, capsys):
  record = copy / "korean_food-train.tfrecord-00000-of-00001"
  data = bytearray(record.read_bytes())
  data[len(data) // 2] ^= 1
  record.write_bytes(bytes(data))
  status, said = _verify(capsys, os.fspath(copy))
  assert status == 1
  assert _problems(said) == [f"{record.name}: differs (SHA-256 {fingerprint.file_sha256(record)}, "
                             f"recorded {_kept(copy)['files'][record.name]})"], said


def test_a_copy_without_metadata_json_is_checked_against_the_fingerprint_given(copy, capsys):
  kept = _kept(copy)["sha256"]
  (copy / "metadata.json").unlink()
  assert _count(copy, "train") > 0  # All a reader needs is there.
  status, said = _verify(capsys, os.fspath(copy), "--fingerprint", kept)
  assert status == 0 and f"intact, fingerprint {kept}" in said, said
  assert "without metadata.json" in said
  other = "ab" * 32
  status, said = _verify(capsys, os.fspath(copy), "--fingerprint", other)
  assert status == 1 and f"has the fingerprint {kept}, not {other}" in said, said
  status, said = _verify(capsys, os.fspath(copy))
  assert status == 1 and "has no metadata.json" in said and "--fingerprint" in said, said
  # An edit of what readers get: the copy's fingerprint is no longer the one given.
  _edit_info(copy, _shard_length)
  done = subprocess.run([sys.executable, "-m", "photo_datasets", "verify", os.fspath(copy),
                         "--fingerprint", kept], capture_output=True, text=True, timeout=300,
                        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
  assert done.returncode == 1 and f"not {kept}" in done.stderr, done.stderr


def _made_before(kept: dict[str, Any]) -> str:
  """The fingerprint of a kept record as made before it covered dataset_info.json's other fields."""
  made = fingerprint.text(kept["features"], kept["shard_lengths"].items(),
                          list(kept["files"].items()))
  return hashlib.sha256(made.encode()).hexdigest()


def _as_built_before(folder: pathlib.Path) -> str:
  """Makes the copy's record as a build made before the fingerprint covered
  dataset_info.json's other fields left it; returns that fingerprint."""
  metadata = json.loads((folder / "metadata.json").read_text())
  kept = metadata["fingerprint"]
  for key in ("reader", "platform"):
    del kept[key]
  kept["sha256"] = _made_before(kept)
  (folder / "metadata.json").write_text(json.dumps(metadata))
  return str(kept["sha256"])


def test_a_build_made_before_checks_what_its_record_covers(copy, capsys):
  earlier = _as_built_before(copy)
  status, said = _verify(capsys, os.fspath(copy))
  assert status == 0 and f"intact, fingerprint {earlier}" in said, said
  assert "built before the fingerprint covered dataset_info.json's" in said
  assert _build_command(said)[:3] == ["tfds", "build", "korean_food"]
  _edit_info(copy, _set("disableShuffling", True))  # Not in its record: not checked, and said so.
  status, said = _verify(capsys, os.fspath(copy))
  assert status == 0 and "those fields are not" in said, said
  _edit_info(copy, _shard_length)
  status, said = _verify(capsys, os.fspath(copy))
  assert status == 1 and any(problem.startswith(f"{INFO}: split 'train' has shard lengths")
                             for problem in _problems(said)), said


def _build_command(said: str) -> list[str]:
  (line,) = [line.strip() for line in said.splitlines() if line.strip().startswith("tfds build ")]
  return shlex.split(line)


def test_a_build_made_before_fingerprints_is_given_the_command_that_builds_one(copy, capsys):
  metadata = json.loads((copy / "metadata.json").read_text())
  del metadata["fingerprint"]
  (copy / "metadata.json").write_text(json.dumps(metadata))
  status, said = _verify(capsys, os.fspath(copy))
  assert status == 1 and "it was built before fingerprints were kept" in said, said
  data_dir = copy.parent.parent.parent
  assert _build_command(said)[:9] == ["tfds", "build", "korean_food", "--imports", "korean_food",
                                      "--config", "224", "--data_dir", os.fspath(data_dir)]


def test_a_new_build_is_the_one_whose_fingerprint_was_made_before(copy, capsys):
  kept = _kept(copy)
  earlier = _made_before(kept)
  assert earlier != kept["sha256"]
  status, said = _verify(capsys, os.fspath(copy), "--fingerprint", earlier)
  assert status == 0 and f"intact, fingerprint {kept['sha256']}" in said, said
  assert "the fingerprint given is this build's as made before" in said


def test_a_build_made_before_without_metadata_json(copy, capsys):
  earlier = _as_built_before(copy)
  (copy / "metadata.json").unlink()
  status, said = _verify(capsys, os.fspath(copy), "--fingerprint", earlier)
  assert status == 0 and f"intact, fingerprint {earlier}" in said, said
  assert "matches a fingerprint made before" in said


def test_the_record_names_the_platform_which_the_fingerprint_does_not_depend_on(samples,
                                                                               monkeypatch):
  builder = samples.builder(NAME)
  kept = dict(builder.info.metadata)["fingerprint"]
  platform = kept["platform"]
  assert set(platform) == {"machine", "python", "numpy SIMD", "numpy BLAS", "opencv"}, platform
  assert all(isinstance(value, str) and value for value in platform.values())
  assert fingerprint.platform_info() == platform  # The same on one machine.
  monkeypatch.setattr(fingerprint, "platform_info", lambda: {"machine": "another"})
  monkeypatch.setattr(fingerprint, "versions", lambda: {"numpy": "another"})
  again = fingerprint.record(builder.info, builder.data_path, {})
  assert again["platform"] == {"machine": "another"} and again["versions"] == {"numpy": "another"}
  assert again["sha256"] == kept["sha256"]
  assert {key: value for key, value in again.items() if key not in ("platform", "versions")} == {
      key: value for key, value in kept.items() if key not in ("platform", "versions")}

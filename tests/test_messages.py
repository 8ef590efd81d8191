"""What a newcomer's mistakes are told, each message shown; a command a message
names is copied from it and run, from a folder outside the checkout."""

from __future__ import annotations

import os
import pathlib
import re
import shlex
import shutil
import subprocess

import pytest
import tensorflow_datasets as tfds

import korean_food
from photo_datasets.building import configs, disk
from photo_datasets.reading import pipeline

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"


def _run(command: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
  words = shlex.split(command)
  assert words[0] == "tfds" and shutil.which("tfds"), command
  return subprocess.run(words, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)


def _command_in(message: str) -> str:
  (line,) = [line.strip() for line in message.splitlines()
             if line.strip().startswith("tfds build ")]
  return line


@pytest.fixture(scope="module")
def built_by_the_hint(tmp_path_factory) -> tuple[pathlib.Path, str]:
  """korean_food/160, not built beside a korean_food/64 built from the sample: the error's command,
  run as printed; it names the manual dir the 64 was built from, which is not TFDS's default."""
  data_dir = tmp_path_factory.mktemp("data")
  manual_dir = tmp_path_factory.mktemp("my photos") / "kfood download"
  shutil.copytree(SAMPLE, manual_dir)
  tfds.builder("korean_food/64", data_dir=os.fspath(data_dir)).download_and_prepare(
      download_config=tfds.download.DownloadConfig(manual_dir=os.fspath(manual_dir)))
  with pytest.raises(ValueError) as error:
    pipeline.training_dataset("korean_food/160", data_dir=os.fspath(data_dir))
  message = str(error.value)
  command = _command_in(message)
  assert command == ("tfds build korean_food --imports korean_food --config 160 "
                     f"--data_dir {data_dir} --manual_dir '{manual_dir}'")
  done = _run(command, tmp_path_factory.mktemp("elsewhere"))
  assert done.returncode == 0, done.stderr[-3000:]
  return data_dir, done.stdout + done.stderr


def test_where_no_build_recorded_a_manual_dir_the_hint_says_what_to_put_in_it(tmp_path):
  with pytest.raises(ValueError) as error:
    pipeline.training_dataset("korean_food/160", data_dir=os.fspath(tmp_path))
  message = str(error.value)
  assert _command_in(message).endswith(" --manual_dir MANUAL_DIR")
  assert ("(replace MANUAL_DIR by the folder holding the download: see "
          "`tfds.builder_cls('korean_food').MANUAL_DOWNLOAD_INSTRUCTIONS`)") in message
  # Where TFDS looks by default: named, as it runs.
  shutil.copytree(SAMPLE, tmp_path / "downloads" / "manual")
  with pytest.raises(ValueError) as error:
    pipeline.training_dataset("korean_food/160", data_dir=os.fspath(tmp_path))
  assert _command_in(str(error.value)).endswith(
      f" --manual_dir {tmp_path / 'downloads' / 'manual'}")


def test_the_not_built_hint_builds_the_config_as_printed(built_by_the_hint):
  data_dir, _ = built_by_the_hint
  images, labels = next(iter(pipeline.training_dataset("korean_food/160", batch_size=8,
                                                       data_dir=os.fspath(data_dir))))
  assert images.shape == (8, 160, 160, 3) and labels.shape == (8,)


def test_the_build_summary_names_the_first_skip_reasons(built_by_the_hint):
  _, output = built_by_the_hint
  assert "skipped 찌개/김치찌개/Img_119_0006.jpg: empty file" in output


def test_a_batch_larger_than_the_split_is_refused_saying_how_large_it_may_be(built_by_the_hint):
  data_dir, _ = built_by_the_hint
  train = tfds.builder("korean_food/160",
                       data_dir=os.fspath(data_dir)).info.splits["train"].num_examples
  assert train < 64
  with pytest.raises(ValueError,
                     match=rf"batch_size 64 is larger than the {train} examples of korean_food/160 "
                           rf"split 'train'.*at most {train}"):
    pipeline.training_dataset("korean_food/160", batch_size=64, data_dir=os.fspath(data_dir))
  assert pipeline.training_dataset("korean_food/160", batch_size=train,
                                   data_dir=os.fspath(data_dir)).cardinality() == 1


@pytest.mark.parametrize("name", ["224px", "-5", "8", "5000"])
def test_an_invalid_config_name_lists_the_valid_ones(name, tmp_path):
  with pytest.raises(ValueError, match=re.escape(f"No config '{name}'. {configs.VALID_NAMES}")):
    tfds.builder(f"korean_food/{name}", data_dir=os.fspath(tmp_path))


def test_tfds_build_with_an_invalid_config_lists_the_valid_ones(tmp_path):
  done = _run("tfds build korean_food --imports korean_food --config 224px "
              f"--data_dir {tmp_path / 'data'}", tmp_path)
  assert done.returncode != 0
  assert f"No config '224px'. {configs.VALID_NAMES}" in done.stderr
  assert "closely match" not in done.stderr


def test_a_failed_load_of_a_config_never_built_leaves_nothing_behind(tmp_path):
  data_dir = tmp_path / "data"
  with pytest.raises(AssertionError, match="holds no download to build it from"):  # As TFDS's own.
    tfds.load("korean_food/225", data_dir=os.fspath(data_dir))
  assert not (data_dir / "korean_food" / "225").exists()
  assert not [p for p in data_dir.rglob("*") if p.name == ".photo_datasets.lock"]
  # What TFDS itself writes for any dataset it is asked for: its config list and an empty downloads
  # folder.
  assert sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file()) == [
      "korean_food/.config/metadata.json"]


def test_a_failed_build_keeps_the_other_configs_folders(tmp_path):
  data_dir = tmp_path / "data"
  tfds.builder("korean_food/64", data_dir=os.fspath(data_dir)).download_and_prepare(
      download_config=tfds.download.DownloadConfig(manual_dir=os.fspath(SAMPLE)))
  with pytest.raises(AssertionError):
    tfds.load("korean_food/225", data_dir=os.fspath(data_dir))
  assert sorted(p.name for p in (data_dir / "korean_food").iterdir()) == [".config", "64"]


@pytest.fixture
def unwritable(tmp_path) -> pathlib.Path:
  """A folder this process cannot write: read-only permissions, or for root (whom they do not stop)
  /sys."""
  if os.geteuid() == 0:
    return pathlib.Path("/sys/photo_datasets_test/data")
  folder = tmp_path / "read_only"
  folder.mkdir(mode=0o555)
  return folder / "data"


def test_an_unwritable_data_dir_is_one_line_naming_the_folder(unwritable):
  with pytest.raises(disk.DataDirNotWritable) as error:
    tfds.builder("korean_food/224", data_dir=os.fspath(unwritable)).download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=os.fspath(SAMPLE)))
  message = str(error.value)
  assert "\n" not in message and error.value.__cause__ is None
  existing = next(folder for folder in unwritable.parents if folder.is_dir())
  assert f"Cannot build korean_food/224: {existing} cannot be written" in message
  assert (f"needs to write {unwritable / 'korean_food' / '224'}" in message
          and "--data_dir DIR" in message)


def test_tfds_build_into_an_unwritable_data_dir_ends_with_that_line(unwritable, tmp_path):
  done = _run(f"tfds build korean_food --imports korean_food --data_dir {unwritable} "
              f"--manual_dir {SAMPLE}", tmp_path)
  assert done.returncode != 0
  last = done.stderr.strip().splitlines()[-1]
  assert (last.startswith("photo_datasets.building.disk.DataDirNotWritable: ")
          and "cannot be written" in last)
  assert "During handling of the above exception" not in done.stderr
  # A refusal is its message, not the last line of a traceback.
  assert "Traceback" not in done.stderr


def test_only_a_refusal_loses_its_traceback():
  from photo_datasets.building import cli

  def bug() -> None:
    int("not a number")  # A ValueError that no `raise` of the package's made.

  refusals = (lambda: disk.preflight("korean_food/224", ".", 1 << 62),
              lambda: configs.size_config("224px"))
  for function, refusal in ((refusals[0], True), (refusals[1], True), (bug, False)):
    try:
      function()
    except Exception as e:
      assert cli.is_refusal(e) is refusal
  assert not cli.is_tfds_cli()  # Here, in Python, nothing of the CLI's is installed.


def test_tfds_build_prints_a_short_description_and_no_progress_bars_into_a_log(tmp_path):
  done = _run("tfds build korean_food --imports korean_food --config 64 "
              f"--data_dir {tmp_path / 'data'} --manual_dir {SAMPLE}", tmp_path)
  assert done.returncode == 0, done.stderr[-3000:]
  readme = (SAMPLE.parent / "README.md").read_text("utf-8")
  first_paragraph = readme.strip().split("\n\n")[0]
  description = done.stdout.split('description="""')[1].split('"""')[0]
  assert [line.strip() for line in description.strip().splitlines()] == first_paragraph.splitlines()
  assert "Scanning" not in done.stderr and "examples/s" not in done.stderr
  # faiss's loader's account of which CPU build it loaded (8 lines on a CPU with AVX-512).
  assert "Loading faiss" not in done.stdout + done.stderr
  assert len((done.stdout + done.stderr).splitlines()) <= 70


def test_a_zip_beside_its_extracted_copy_is_one_warning_naming_what_was_read(tmp_path):
  import zipfile

  manual_dir = tmp_path / "manual"
  tree = pathlib.Path(korean_food.__file__).parent / "dummy_data"
  shutil.copytree(tree, manual_dir)
  photos = sorted(p for p in (manual_dir / "kfood").rglob("*") if p.is_file())
  with zipfile.ZipFile(manual_dir / "kfood.zip", "w") as archive:
    for path in photos:
      archive.write(path, path.relative_to(manual_dir).as_posix())
  builder = tfds.builder("korean_food/64", data_dir=os.fspath(tmp_path / "data"), workers=1)
  builder.download_and_prepare(
      download_config=tfds.download.DownloadConfig(manual_dir=os.fspath(manual_dir)))
  twice = [w for w in builder.info.metadata["warnings"] if "appear twice" in w]
  images = [p for p in photos if p.suffix != ".properties"]
  assert len(twice) == 1, builder.info.metadata["warnings"]
  assert twice[0].startswith(f"{len(images):,} files appear twice in the source (e.g. ")
  kept, left = twice[0].split(": read the copies in ")[1].split(", left out those in ")
  assert {kept, left} == {os.fspath(manual_dir / "kfood.zip"), os.fspath(manual_dir / "kfood")}

"""Builds under every way Python starts worker processes: fork (Linux), spawn (macOS, Windows)
and forkserver (Python 3.14's Linux default) give one dataset, say the same, and a script
without an `if __name__ == "__main__":` guard builds (`building/parallel.py`)."""

from __future__ import annotations

import json
import multiprocessing
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import korean_food
from photo_datasets.building import parallel

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"
METHODS = [method for method in ("fork", "spawn", "forkserver")
           if method in multiprocessing.get_all_start_methods()]
TFDS = shutil.which("tfds", path=os.path.dirname(sys.executable)) or shutil.which("tfds")


def _env(method: str) -> dict[str, str]:
  return {**os.environ, parallel.START_METHOD_ENV: method, parallel.WORKERS_ENV: "2",
          "TF_CPP_MIN_LOG_LEVEL": "2"}


def _records(config_dir: pathlib.Path) -> dict[str, bytes]:
  return {path.name: path.read_bytes() for path in sorted(config_dir.glob("*.tfrecord-*"))}


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, tuple[pathlib.Path, list[str]]]:
  """Both configs of the sample built by `tfds build` (the script its workers must not run),
  once per start method: the data dir and what the build printed."""
  assert TFDS is not None
  made = {}
  for method in METHODS:
    data_dir = tmp_path_factory.mktemp(method)
    done = subprocess.run([sys.executable, TFDS, "build", "korean_food", "--imports",
                           "korean_food", "--manual_dir", os.fspath(SAMPLE), "--data_dir",
                           os.fspath(data_dir)], capture_output=True, text=True, timeout=600,
                          env=_env(method))
    assert done.returncode == 0, f"{method}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    made[method] = data_dir, done.stdout.splitlines()
  return made


@pytest.mark.parametrize("config", ["224", "full"])
def test_every_start_method_builds_the_same_files(builds, config):
  version = str(korean_food.Builder.VERSION)
  found = {method: data_dir / "korean_food" / config / version
           for method, (data_dir, _) in builds.items()}
  prints = {method: json.loads((folder / "metadata.json").read_text())["fingerprint"]["sha256"]
            for method, folder in found.items()}
  assert len(set(prints.values())) == 1, prints
  reference = _records(found["fork"])
  assert len(reference) == 3
  for method, folder in found.items():
    assert _records(folder) == reference, method


def test_every_start_method_says_the_same(builds):
  """The same lines (less times and paths) whatever starts the workers; no worker's traceback."""
  def shape(data_dir: pathlib.Path, lines: list[str]) -> list[str]:
    return [line.replace(os.fspath(data_dir), "DATA_DIR").split(":", 1)[0] for line in lines]

  reference = shape(*builds["fork"])
  for method, (data_dir, lines) in builds.items():
    assert shape(data_dir, lines) == reference, method
    assert not [line for line in lines if "Traceback" in line], method


# A build at the script's top level, as in the README's quick start: no `__main__` guard.
_UNGUARDED = """
import sys
import tensorflow_datasets as tfds
import korean_food
builder = tfds.builder("korean_food/224", data_dir=sys.argv[1])
builder.download_and_prepare(
    download_config=tfds.download.DownloadConfig(manual_dir=sys.argv[2]))
print("BUILT", sum(split.num_examples for split in builder.info.splits.values()), flush=True)
"""


@pytest.mark.parametrize("method", [m for m in METHODS if m != "fork"])
def test_a_script_without_a_main_guard_builds(tmp_path, method):
  script = tmp_path / "build_it.py"
  script.write_text(_UNGUARDED)
  done = subprocess.run([sys.executable, os.fspath(script), os.fspath(tmp_path / "data"),
                         os.fspath(SAMPLE)], capture_output=True, text=True, timeout=180,
                        env=_env(method))
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.count("BUILT") == 1 and "waiting for it to end" not in done.stdout

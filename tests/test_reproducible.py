"""The same download gives the same dataset: byte-identical record files and one
fingerprint whatever the worker count, the workers' start method, the hash
seed, local or Beam, and the CPU's kernels (`building/reproducible.py`,
`catalog/fingerprint.py`); `python -m photo_datasets verify` confirms a copy
and names a changed file."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import tensorflow_datasets as tfds

import korean_food
from photo_datasets.building import reproducible
from photo_datasets.catalog import fingerprint
from photo_datasets.commands import verify

VERSION = str(korean_food.Builder.VERSION)
CONFIGS = ("224", "full")

# Each build in its own process, as two people's builds are: environment,
# extra `tfds build` arguments.
_BUILDS = {
    "2 workers, fork": ({"PHOTO_DATASETS_WORKERS": "2", "PHOTO_DATASETS_START_METHOD": "fork",
                         "PYTHONHASHSEED": "1"}, []),
    "1 worker": ({"PHOTO_DATASETS_WORKERS": "1", "PYTHONHASHSEED": "2"}, []),
    # `224` only: each of a build's worker pools starts its processes afresh.
    "2 workers, spawn": ({"PHOTO_DATASETS_WORKERS": "2", "PHOTO_DATASETS_START_METHOD": "spawn",
                          "PYTHONHASHSEED": "3"}, ["--config", "224"]),
    # Beam's SDK workers in processes of their own, which unpickle TFDS's serializer.
    "beam": ({"PHOTO_DATASETS_WORKERS": "2", "PYTHONHASHSEED": "4"},
             ["--beam_pipeline_options=runner=FnApiRunner,direct_num_workers=2,"
              "direct_running_mode=multi_processing"]),
    # As on an older CPU: OpenBLAS's generic x86-64 kernel, NumPy's baseline SIMD only, and
    # OpenCV's plain C++ paths (in the build's process, which its forked workers inherit).
    "older CPU": ({"PHOTO_DATASETS_WORKERS": "2", "PHOTO_DATASETS_START_METHOD": "fork",
                   "PYTHONHASHSEED": "5", "OPENBLAS_CORETYPE": "Prescott",
                   "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
                   "OPENCV_UNOPTIMIZED": "1"}, []),
}


# `tfds build` run from `-c`: spawned workers then import what their tasks
# need, not the `tfds` script.
_TFDS_BUILD = """
import os, sys
import cv2
if os.environ.get("OPENCV_UNOPTIMIZED"):
  cv2.setUseOptimized(False)
from tensorflow_datasets.scripts.cli import main
sys.argv = ["tfds", *sys.argv[1:]]
main.launch_cli()
"""


def _config_dir(data_dir: pathlib.Path, config: str) -> pathlib.Path:
  return data_dir / "korean_food" / config / VERSION


_PRINTED: dict[str, list[str]] = {}  # What each way of building printed, by line.


@pytest.fixture(scope="module")
def real_builds(real_kfood: pathlib.Path,
                tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
  """Both configs of the real photos built once per way of building: the data dirs."""
  built = {}
  for mode, (env, extra) in _BUILDS.items():
    data_dir = tmp_path_factory.mktemp("reproducible")
    done = subprocess.run(
        [sys.executable, "-c", _TFDS_BUILD, "build", "korean_food", "--imports", "korean_food",
         "--manual_dir", os.fspath(real_kfood), "--data_dir", os.fspath(data_dir), *extra],
        capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **env},
        timeout=900)
    assert done.returncode == 0, f"{mode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    built[mode] = data_dir
    _PRINTED[mode] = (done.stdout + done.stderr).splitlines()
  return built


def _files(config_dir: pathlib.Path) -> dict[str, str]:
  """SHA-256 of what the fingerprint covers: record files and the features' files."""
  return {path.name: fingerprint.file_sha256(path) for path in sorted(config_dir.iterdir())
          if ".tfrecord-" in path.name or path.name == "features.json"
          or path.name.endswith(".labels.txt")}


def _kept_fingerprint(config_dir: pathlib.Path) -> str:
  return json.loads((config_dir / "metadata.json").read_text())["fingerprint"]["sha256"]


@pytest.mark.real_photos
@pytest.mark.parametrize("config", CONFIGS)
def test_every_way_of_building_writes_the_same_bytes(real_builds, config):
  built = {mode: _config_dir(data_dir, config) for mode, data_dir in real_builds.items()
           if _config_dir(data_dir, config).exists()}
  assert len(built) >= 4 and "older CPU" in built
  files = {mode: _files(config_dir) for mode, config_dir in built.items()}
  reference = files["2 workers, fork"]
  assert sum(".tfrecord-" in name for name in reference) >= 3
  for mode, found in files.items():
    assert found == reference, mode
  prints = {mode: _kept_fingerprint(config_dir) for mode, config_dir in built.items()}
  assert len(set(prints.values())) == 1, prints


@pytest.mark.real_photos
def test_the_fingerprint_is_shown_where_the_build_is_described(real_builds):
  config_dir = _config_dir(real_builds["1 worker"], "224")
  kept = json.loads((config_dir / "metadata.json").read_text())["fingerprint"]
  assert set(kept["versions"]) >= {"tensorflow-datasets", "protobuf", "pillow", "simplejpeg",
                                   "numpy", "opencv-python-headless", "faiss-cpu",
                                   "libjpeg-turbo (Pillow)"}
  assert kept["files"] == {name: sha for name, sha in _files(config_dir).items()
                           if ".tfrecord-" in name}
  croissant = json.loads((config_dir / "croissant.json").read_text())
  assert kept["sha256"] in croissant["description"]
  assert {file["contentUrl"]: file["sha256"]
          for file in croissant["distribution"] if "sha256" in file} == kept["files"]
  assert kept["sha256"] in (config_dir / "report.html").read_text(encoding="utf-8")


@pytest.mark.real_photos
def test_the_build_as_an_older_cpu_ran_so_and_says_so(real_builds):
  """The same bytes above come from other kernels: its record names them."""
  kept = {mode: json.loads((_config_dir(real_builds[mode], "224") / "metadata.json").read_text())
          ["fingerprint"]["platform"] for mode in ("1 worker", "older CPU")}
  older, usual = kept["older CPU"], kept["1 worker"]
  assert older["opencv"].startswith("not optimized:") and usual["opencv"].startswith("optimized:")
  assert older["numpy SIMD"].split("dispatched here")[1].strip() == ""
  assert older["numpy BLAS"] != usual["numpy BLAS"]


def _verify(*args: str) -> tuple[int, str]:
  """`python -m photo_datasets verify ARGS`: exit status and what it wrote to stderr."""
  done = subprocess.run([sys.executable, "-m", "photo_datasets", "verify", *args],
                        capture_output=True, text=True,
                        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=300)
  return done.returncode, done.stdout + done.stderr


@pytest.mark.real_photos
def test_verify_confirms_a_copy_and_names_what_differs(real_builds, tmp_path):
  data_dir = real_builds["2 workers, fork"]
  config_dir = _config_dir(data_dir, "full")
  expected = _kept_fingerprint(config_dir)
  status, said = _verify("korean_food/full", "--data_dir", os.fspath(data_dir),
                         "--fingerprint", expected)
  assert status == 0, said
  assert f"intact, fingerprint {expected}" in said
  # Another build's fingerprint: the copy is intact but is not that build.
  other = _kept_fingerprint(_config_dir(data_dir, "224"))
  status, said = _verify(os.fspath(config_dir), "--fingerprint", other)
  assert status == 1 and "is intact" in said and other in said, said

  copy = tmp_path / "copy"
  shutil.copytree(config_dir, copy)
  record = sorted(copy.glob("*-train.tfrecord-*"))[0]
  with open(record, "r+b") as f:  # One byte changed, in the middle of the file.
    f.seek(os.path.getsize(record) // 2)
    byte = f.read(1)
    f.seek(-1, os.SEEK_CUR)
    f.write(bytes([byte[0] ^ 1]))
  labels = copy / "label.labels.txt"
  labels.write_text(labels.read_text(encoding="utf-8").replace("갈비구이", "갈비 구이"),
                    encoding="utf-8")
  missing = sorted(copy.glob("*-test.tfrecord-*"))[0]
  missing.unlink()
  status, said = _verify(os.fspath(copy))
  assert status == 1
  kept = json.loads((copy / "metadata.json").read_text())["fingerprint"]
  problems = [line.strip() for line in said.splitlines() if line.startswith("  ")]
  assert sorted(problems) == sorted([
      f"{record.name}: differs (SHA-256 {fingerprint.file_sha256(record)}, "
      f"recorded {kept['files'][record.name]})",
      f"label.labels.txt: differs (SHA-256 {fingerprint.file_sha256(labels)}, "
      f"recorded {kept['features']['label.labels.txt']})",
      f"{missing.name}: missing"]), said


def test_verify_refuses_a_config_built_before_fingerprints(tmp_path):
  folder = tmp_path / "korean_food" / "224" / "1.3.0"
  folder.mkdir(parents=True)
  (folder / "metadata.json").write_text(json.dumps({"source": "x"}))
  with pytest.raises(SystemExit) as exited:
    verify.main([os.fspath(folder)])
  assert exited.value.code == 1
  with pytest.raises(SystemExit) as exited:  # Not a SHA-256: refused before anything is read.
    verify.main([os.fspath(folder), "--fingerprint", "3f00"])
  assert exited.value.code == 2


# One example serialised in a fresh process, with TFDS's serializer after `use_in_tfds`.
_SERIALIZE = """
import hashlib, sys
import numpy as np
import tensorflow_datasets as tfds
from tensorflow_datasets.core import example_serializer
from photo_datasets.building import reproducible
reproducible.use_in_tfds()
features = tfds.features.FeaturesDict({
    "image": tfds.features.Image(shape=(None, None, 3)),
    "label": tfds.features.ClassLabel(num_classes=3),
    "file_name": tfds.features.Text(), "box": tfds.features.BBoxFeature(),
    "flag": tfds.features.Scalar(np.bool_)})
serializer = example_serializer.ExampleSerializer(features.get_serialized_info())
example = features.encode_example({
    "image": np.full((4, 4, 3), 7, np.uint8), "label": 1, "file_name": "a/b.jpg",
    "box": tfds.features.BBox(0.1, 0.2, 0.9, 1.0), "flag": True})
sys.stdout.write(serializer.serialize_example(example).hex())
"""


def test_tfds_serializer_gives_one_byte_string_in_every_process():
  made = set()
  for seed in range(2):
    done = subprocess.run([sys.executable, "-c", _SERIALIZE], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONHASHSEED": str(seed),
                                            "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, done.stderr[-2000:]
    made.add(done.stdout)
  with contextlib.redirect_stdout(io.StringIO()) as here:
    exec(_SERIALIZE, {})
  made.add(here.getvalue())
  assert len(made) == 1
  # Read back as any record is.
  features = tfds.features.FeaturesDict({"file_name": tfds.features.Text(),
                                         "label": tfds.features.ClassLabel(num_classes=3)})
  serializer = reproducible.DeterministicExampleSerializer(features.get_serialized_info())
  record = serializer.serialize_example(features.encode_example({"file_name": "x", "label": 2}))
  parsed = tfds.core.example_parser.ExampleParser(
      features.get_serialized_info()).parse_example(record)
  assert parsed["label"].numpy() == 2 and parsed["file_name"].numpy() == b"x"


@pytest.mark.real_photos
def test_a_beam_build_prints_no_more_lines_than_a_local_build(real_builds):
  """Both configs on `FnApiRunner` with two worker processes: the lines of a local build (no
  INFO line of Beam's, no TFDS line of a Beam split, no start-up line of a worker process, no
  TensorFlow start-up in a worker)."""
  local, beam = _PRINTED["2 workers, fork"], _PRINTED["beam"]
  assert not [line for line in beam if line.startswith("INFO:apache_beam")
              or "No semi_persistent_directory" in line or "Logging handler created" in line
              or re.match(r"INFO\[(writer|split_builder)\.py\]", line)]
  for launcher_only in ("All log messages before absl::InitializeLog()", "apitools not found"):
    assert sum(launcher_only in line for line in beam) == sum(launcher_only in line
                                                              for line in local)
  assert len(beam) <= len(local), "\n".join(beam)

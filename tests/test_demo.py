"""README command 1, `python -m photo_datasets demo`, as a user runs it: in a
fresh folder, with no argument, on the bundled samples."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import tensorflow_datasets as tfds

import flowers_dataset  # noqa: F401  (registers the builder)
import korean_food  # noqa: F401

CONFIGS = ("224", "full")
OUTPUTS = {"model.keras", "history.json", "history.png", "classes.json", "examples.png",
           "training_input.png"}


def test_the_demo_builds_loads_trains_draws_and_prints_38_lines(tmp_path: pathlib.Path) -> None:
  done = subprocess.run([sys.executable, "-m", "photo_datasets", "demo"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=600, check=False,
                        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
  assert done.returncode == 0, done.stderr[-3000:]
  lines = done.stdout.splitlines()
  assert len(lines) == 38, done.stdout  # As the README says.
  # The defaults, in the current folder.
  data_dir, out_dir = tmp_path / "demo_data", tmp_path / "demo_out"
  for name in ("flowers_dataset", "korean_food"):
    assert {p.name for p in (out_dir / name).iterdir()} == OUTPUTS
    history = json.loads((out_dir / name / "history.json").read_text(encoding="utf-8"))
    assert history["name"] == f"{name}/224" and len(history["history"]["loss"]) == 1
    for config in CONFIGS:
      builder = tfds.builder(f"{name}/{config}", data_dir=os.fspath(data_dir))
      folder = pathlib.Path(builder.data_path)
      assert (folder / "dataset_info.json").is_file() and (folder / "report.html").is_file()
      counts = ", ".join(f"{split} {builder.info.splits[split].num_examples}"
                         for split in ("train", "validation", "test"))
      assert f"  {name}/{config}: {counts}" in lines
      assert f"    report: {folder / 'report.html'}" in lines
      assert f"    fingerprint: {builder.info.metadata['fingerprint']['sha256']}" in lines
    assert "  tfds.load batch: uint8 images (8, 224, 224, 3), int64 labels (8,)" in lines
    assert re.search(rf"trained 1 epoch: {name}/224: \d+ training images per epoch", done.stdout)

"""The pipeline and the training script under Keras 3's JAX and PyTorch backends.

Keras picks its backend once, at import, so each run is a fresh process with
`KERAS_BACKEND` set. A backend that is not installed is skipped
(`pip install -e '.[jax]'` or `'.[torch]'` installs its CPU build).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import korean_food  # noqa: F401  (registers the builder)

REPO = pathlib.Path(__file__).resolve().parents[1]
BACKENDS = ("jax", "torch")
# A few steps of model.fit on each pipeline, the way a user writes it.
FIT_SCRIPT = textwrap.dedent("""
    import json, sys
    import keras
    import korean_food  # Registers the builder.
    from photo_datasets import models, pipeline

    data_dir = sys.argv[1]
    model = models.build_model("small", 150, 64)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    train = pipeline.training_dataset("korean_food/full", batch_size=8, image_size=64, data_dir=data_dir, seed=1)
    test = pipeline.evaluation_dataset("korean_food/full", split="test", batch_size=8, image_size=64,
                                       data_dir=data_dir)
    history = model.fit(train, epochs=2, steps_per_epoch=3, verbose=0)
    scores = model.evaluate(test, return_dict=True, verbose=0)
    images, labels = next(iter(train))
    probabilities = model.predict(images, verbose=0)
    print(json.dumps({"backend": keras.config.backend(), "loss": history.history["loss"], "test": scores,
                      "predicted": list(probabilities.shape), "module": type(probabilities).__module__}))
""")


@pytest.fixture(scope="module")
def data_dir(samples) -> str:
  return str(samples.build("korean_food/full", "korean_food/32"))


def _run(backend: str, args: list[str]) -> subprocess.CompletedProcess[str]:
  if importlib.util.find_spec(backend) is None:
    pytest.skip(f"{backend} is not installed (pip install -e '.[{backend}]')")
  env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": ""}
  done = subprocess.run([sys.executable, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  return done


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_pipeline_trains_and_evaluates_a_model(backend: str, data_dir: str) -> None:
  done = _run(backend, ["-c", FIT_SCRIPT, data_dir])
  result = json.loads(done.stdout.strip().splitlines()[-1])
  assert result["backend"] == backend
  assert len(result["loss"]) == 2 and all(loss > 0 for loss in result["loss"])
  assert 0 <= result["test"]["accuracy"] <= 1
  assert result["predicted"] == [8, 150]
  assert result["module"] == "numpy"  # Keras hands predictions back as numpy on every backend.


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_training_script_runs_unchanged(backend: str, data_dir: str, tmp_path: pathlib.Path) -> None:
  done = _run(backend, ["-m", "photo_datasets.train", "korean_food/32", "--data_dir", data_dir, "--epochs", "1",
                        "--batch_size", "8", "--seed", "1", "--out_dir", str(tmp_path)])
  assert f"Keras on {backend}" in done.stdout
  history = json.loads((tmp_path / "history.json").read_text())
  assert history["settings"]["keras_backend"] == backend
  assert history["settings"]["dtype_policy"] == "float32"  # No GPU visible.
  assert len(history["history"]["loss"]) == 1
  assert (tmp_path / "model.keras").stat().st_size > 0

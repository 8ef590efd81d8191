"""The pipeline and the training script under Keras 3's JAX and PyTorch backends.

Keras picks its backend once, at import, so each run is a fresh process with
`KERAS_BACKEND` set. A backend that is not installed is skipped
(`pip install -e '.[jax]'` or `'.[torch]'` installs its CPU build).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import korean_food  # noqa: F401  (registers the builder)

REPO = pathlib.Path(__file__).resolve().parents[1]
BACKENDS = ("jax", "torch")
# A few steps of model.fit on each pipeline, the way a user writes it; the test
# scores again from the predictions; then the training script, in the same
# process (one start of Keras, JAX and TensorFlow per backend).
FIT_SCRIPT = textwrap.dedent("""
    import json, sys
    import keras
    import numpy as np
    import korean_food  # Registers the builder.
    from photo_datasets.reading import pipeline
    from photo_datasets.commands import train as training_script
    from photo_datasets.commands import models

    data_dir, out_dir = sys.argv[1], sys.argv[2]
    model = models.build_model("small", 150, 64)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    train = pipeline.training_dataset("korean_food/full", batch_size=8, image_size=64,
                                      data_dir=data_dir, seed=1)
    test = pipeline.evaluation_dataset("korean_food/full", split="test", batch_size=8,
                                       image_size=64, data_dir=data_dir)
    history = model.fit(train, epochs=2, steps_per_epoch=3, verbose=0)
    scores = model.evaluate(test, return_dict=True, verbose=0)
    predicted = np.concatenate([model.predict(images, verbose=0)
                                for images, _ in test]).astype(np.float64)
    truth = np.concatenate([labels.numpy() for _, labels in test])
    chosen = np.clip(predicted[np.arange(len(truth)), truth], 1e-7, 1)
    expected = {"loss": float(-np.log(chosen).mean()),
                "accuracy": float((predicted.argmax(axis=1) == truth).mean())}
    images, labels = next(iter(train))
    probabilities = model.predict(images, verbose=0)
    training_script.main(["korean_food/32", "--data_dir", data_dir, "--epochs", "1",
                          "--batch_size", "8", "--seed", "1", "--out_dir", out_dir])
    print(json.dumps({"backend": keras.config.backend(), "loss": history.history["loss"],
                      "test": scores, "expected_test": expected, "test_examples": len(truth),
                      "predicted": list(probabilities.shape),
                      "module": type(probabilities).__module__}))
""")


@pytest.fixture(scope="module")
def data_dir(samples) -> str:
  return str(samples.build("korean_food/full", "korean_food/32"))


def _run(backend: str, args: list[str]) -> subprocess.CompletedProcess[str]:
  if importlib.util.find_spec(backend) is None:
    pytest.skip(f"{backend} is not installed (pip install -e '.[{backend}]')")
  env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": ""}
  done = subprocess.run([sys.executable, *args], env=env, cwd=REPO, capture_output=True, text=True,
                        timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  return done


@pytest.fixture(scope="module", params=BACKENDS)
def backend_run(request, data_dir: str,
                tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict, str, pathlib.Path]:
  """(backend, what the fit script found, what it printed, the training script's out dir)."""
  backend, out_dir = request.param, tmp_path_factory.mktemp(f"train_{request.param}")
  done = _run(backend, ["-c", FIT_SCRIPT, data_dir, str(out_dir)])
  return backend, json.loads(done.stdout.strip().splitlines()[-1]), done.stdout, out_dir


def test_the_pipeline_trains_and_evaluates_a_model(backend_run, samples) -> None:
  backend, result, _, _ = backend_run
  assert result["backend"] == backend
  # Untrained: about ln 150.
  assert len(result["loss"]) == 2 and abs(result["loss"][0] - math.log(150)) < 1
  assert (result["test_examples"]
          == samples.builder("korean_food/full").info.splits["test"].num_examples)
  assert result["test"] == pytest.approx(result["expected_test"], rel=1e-4)
  assert result["predicted"] == [8, 150]
  assert result["module"] == "numpy"  # Keras hands predictions back as numpy on every backend.


def test_the_training_script_runs_unchanged(backend_run) -> None:
  backend, _, printed, out_dir = backend_run
  assert f"Keras on {backend}" in printed
  history = json.loads((out_dir / "history.json").read_text())
  assert history["settings"]["keras_backend"] == backend
  assert history["settings"]["dtype_policy"] == "float32"  # No GPU visible.
  assert len(history["history"]["loss"]) == 1
  assert (out_dir / "model.keras").stat().st_size > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backend_whose_framework_is_missing_names_the_extra(backend) -> None:
  """Where the framework is installed, a stand-in for it that is not: the check is the same."""
  script = ("import photo_datasets\n"
            f"photo_datasets._BACKEND_EXTRAS[{backend!r}] = ('no_such_framework', {backend!r})\n"
            "from photo_datasets.reading import pipeline\n")
  env = {**os.environ, "KERAS_BACKEND": backend}
  for code in ([script] if importlib.util.find_spec(backend)
               else [script, "import photo_datasets.reading.pipeline"]):
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: KERAS_BACKEND={backend} needs "), last
    assert (f"install this package's '{backend}' extra "
            f"(python -m pip install -e '.[{backend}]'" in last)

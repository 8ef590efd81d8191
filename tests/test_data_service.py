"""`photo_datasets.reading.data_service`: the pipeline through a tf.data service on loopback.

Every test talks to a dispatcher and two worker processes started here
(`python -m photo_datasets data_service ...`, on free loopback ports), all
killed at the end. The lost-worker test runs its trainer in a process of its
own, so a hang fails the test instead of stopping the suite.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import IO, Any

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import korean_food
from photo_datasets.commands import models
from photo_datasets.reading import data_service, pipeline
from photo_datasets.testing import loopback

REPO = pathlib.Path(__file__).resolve().parents[1]
KFOOD_SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"
NAME = "korean_food/64"
TRAIN_EXAMPLES = 33  # The bundled sample's train split.
FILES = 3  # Record files per split where the workers share the split.
STALL_S = 3.0  # The watchdog's timeout in the lost-worker test.


@pytest.fixture(scope="module")
def one_file_dir(samples) -> str:
  """korean_food/64 from the sample, each split in one record file (one worker reads it all)."""
  assert len(samples.builder(NAME).info.splits["train"].file_instructions) == 1
  return samples.build(NAME)


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory) -> str:
  """korean_food/64 from the sample, each split in `FILES` record files (the workers share them)."""
  data_dir = tmp_path_factory.mktemp("shared")
  builder = tfds.builder(NAME, data_dir=os.fspath(data_dir))
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
      manual_dir=os.fspath(KFOOD_SAMPLE), num_shards=FILES))
  assert len(builder.info.splits["train"].file_instructions) == FILES
  return os.fspath(data_dir)


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Iterator[loopback.LoopbackService]:
  """A dispatcher with two workers, shared by the tests that kill nothing. It
  journals in a `--work_dir` (the lost-worker test's keeps its state in memory)."""
  logs = tmp_path_factory.mktemp("service_logs")
  with loopback.running(logs, 2, "--work_dir", str(logs / "journal")) as running:
    yield running


def _examples(ds: tf.data.Dataset) -> list[tuple[int, str]]:
  """(label, checksum of the image) of every example, in order."""
  return [(int(label), hashlib.sha1(image.tobytes()).hexdigest())
          for images, labels in ds
          for image, label in zip(images.numpy(), labels.numpy(), strict=True)]


def _unflipped(image: np.ndarray) -> str:
  """One checksum for an image and its mirror image, so a random flip does not change it."""
  return min(hashlib.sha1(image.tobytes()).hexdigest(),
             hashlib.sha1(image[:, ::-1].tobytes()).hexdigest())


# ---------------------------------------------------------------------------
# Addresses.


@pytest.mark.parametrize("address", [
    "localhost:5050", "grpc://localhost", "grpc://:5050", "grpc://localhost:0",
    "grpc://localhost:70000", "http://localhost:5050", "grpc://local host:5050", ""])
def test_a_malformed_address_is_refused_with_the_expected_form(address):
  ds = tf.data.Dataset.range(4).batch(2)
  with pytest.raises(ValueError, match=r"grpc://HOST:PORT"):
    data_service.distribute(ds, address, training=True, seed=None)


def test_addresses_that_are_well_formed_parse():
  assert (data_service.parse_address("grpc://dispatcher.example:5050")
          == ("dispatcher.example", 5050))
  assert data_service.parse_address("grpc://[::1]:5050") == ("[::1]", 5050)
  assert data_service.parse_address("10.0.0.2:5050", scheme=False) == ("10.0.0.2", 5050)


def test_the_stall_timeout_comes_from_the_environment(monkeypatch):
  monkeypatch.setenv(data_service.STALL_TIMEOUT_ENV, "7.5")
  assert data_service.stall_timeout() == 7.5
  assert data_service.stall_timeout(2.0) == 2.0
  with pytest.raises(ValueError, match="stall_timeout_s must be > 0"):
    data_service.stall_timeout(0)


# ---------------------------------------------------------------------------
# What the mode promises, over two epochs.


def test_evaluation_has_the_in_process_batches_with_every_example_once_in_each_epoch(
    service, shared_dir):
  """The workers' batches regrouped on the trainer: the in-process batch sizes."""
  local = pipeline.evaluation_dataset(NAME, split="train", batch_size=4, data_dir=shared_dir)
  served = pipeline.evaluation_dataset(NAME, split="train", batch_size=4, data_dir=shared_dir,
                                       data_service=service.address)
  in_process = [int(labels.shape[0]) for _, labels in local]
  assert in_process == [4] * (TRAIN_EXAMPLES // 4) + [TRAIN_EXAMPLES % 4]
  assert served.cardinality() == len(in_process)
  for _ in range(2):
    batches = [(int(labels.shape[0]), _examples(tf.data.Dataset.from_tensors((images, labels))))
               for images, labels in served]
    assert [size for size, _ in batches] == in_process
    assert (Counter(example for _, examples in batches for example in examples)
            == Counter(_examples(local)))


def test_training_epochs_hold_the_in_process_batches_each_example_at_most_once(service, shared_dir):
  stored = {_unflipped(image) for images, _ in pipeline.evaluation_dataset(
      NAME, split="train", batch_size=8, data_dir=shared_dir) for image in images.numpy()}
  assert len(stored) == TRAIN_EXAMPLES
  batch_size = 4
  served = pipeline.training_dataset(NAME, batch_size=batch_size, data_dir=shared_dir, seed=0,
                                     data_service=service.address)
  assert served.cardinality() == TRAIN_EXAMPLES // batch_size
  for _ in range(2):
    seen = [_unflipped(image) for images, labels in served for image in images.numpy()]
    assert len(seen) == len(set(seen))  # Nothing twice in an epoch.
    assert set(seen) <= stored
    # The workers keep their remainders; the trainer drops the epoch's one.
    assert len(seen) == TRAIN_EXAMPLES // batch_size * batch_size


def test_seeded_training_through_the_service_differs_every_epoch_and_repeats_from_run_to_run(
    service, one_file_dir):
  """Each served epoch runs a pipeline made from a seed of its own, drawn from
  the given one: epochs differ, and where one worker reads the whole split
  (one file) a second run with the same seed has the very same batches."""
  def run() -> list[list[tuple[int, str]]]:
    served = pipeline.training_dataset(NAME, batch_size=4, data_dir=one_file_dir, seed=5,
                                       data_service=service.address)
    return [_examples(served) for _ in range(2)]

  first_run, second_run = run(), run()
  assert first_run[0] != first_run[1]  # A new order and new flips every epoch.
  assert first_run == second_run
  other = pipeline.training_dataset(NAME, batch_size=4, data_dir=one_file_dir, seed=6,
                                    data_service=service.address)
  assert _examples(other) != first_run[0]


def test_seeded_training_through_the_service_under_a_global_seed_of_zero(service, one_file_dir):
  """keras.utils.set_random_seed(0) sets TensorFlow's global seed to 0, under which an
  op seeded by a tensor (each served epoch's seed) cannot be made; the pipeline still
  serves, and repeats."""
  keras.utils.set_random_seed(0)
  try:
    def run() -> list[tuple[int, str]]:
      return _examples(pipeline.training_dataset(NAME, batch_size=4, data_dir=one_file_dir, seed=5,
                                                 data_service=service.address))

    first = run()
    keras.utils.set_random_seed(0)
    assert run() == first and len(first) == len(set(first)) > 0
  finally:
    tf.random.set_seed(None)


def test_two_trainers_on_one_dispatcher_each_get_every_example(service, shared_dir):
  """Each iteration is a job of its own: two trainers reading at once do not split the
  epoch between them."""
  local = Counter(_examples(pipeline.evaluation_dataset(NAME, split="train", batch_size=4,
                                                        data_dir=shared_dir)))
  trainers = [iter(pipeline.evaluation_dataset(NAME, split="train", batch_size=4,
                                               data_dir=shared_dir, data_service=service.address))
              for _ in range(2)]
  seen: list[list[tuple[int, str]]] = [[], []]
  while trainers[0] is not None or trainers[1] is not None:  # Batch by batch, in turn.
    for i, trainer in enumerate(trainers):
      if trainer is not None:
        try:
          images, labels = next(trainer)
        except StopIteration:
          trainers[i] = None
          continue
        seen[i] += _examples(tf.data.Dataset.from_tensors((images, labels)))
  assert Counter(seen[0]) == Counter(seen[1]) == local


def test_a_dispatcher_with_a_work_dir_says_so_and_journals_there(service):
  journal = service.log_dir / "journal"
  assert service.said[0].rstrip().endswith(f", journal in {journal}")
  # Run after the tests above have run their jobs: the dispatcher's state is on disk.
  assert [p for p in journal.rglob("*") if p.is_file() and p.stat().st_size]


def test_model_fit_trains_through_the_service(service, shared_dir):
  num_classes = tfds.builder(NAME, data_dir=shared_dir).info.features["label"].num_classes
  train = pipeline.training_dataset(NAME, batch_size=4, data_dir=shared_dir, seed=1,
                                    data_service=service.address)
  validation = pipeline.evaluation_dataset(NAME, split="train", batch_size=8, data_dir=shared_dir,
                                           data_service=service.address)
  keras.utils.set_random_seed(0)
  model = models.build_model("small", num_classes, 64)
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(), metrics=["accuracy"])
  history = model.fit(train, validation_data=validation, epochs=2, verbose=0)
  assert (len(history.history["loss"]) == 2
          and abs(history.history["loss"][0] - np.log(num_classes)) < 1)
  # The served validation scores are those of the same model on the split read in-process.
  local = model.evaluate(pipeline.evaluation_dataset(NAME, split="train", batch_size=8,
                                                     data_dir=shared_dir),
                         return_dict=True, verbose=0)
  assert history.history["val_loss"][-1] == pytest.approx(local["loss"], rel=1e-4)
  assert history.history["val_accuracy"][-1] == pytest.approx(local["accuracy"])


# ---------------------------------------------------------------------------
# A lost worker.

# The trainer of the lost-worker test: epoch 1 kills a worker after its first
# batch, epoch 2 runs with the worker gone. One JSON line per event, with the time.
TRAINER = """
import json, os, signal, sys, time
import korean_food
from photo_datasets.reading import pipeline
address, data_dir, victim = sys.argv[1], sys.argv[2], int(sys.argv[3])
def say(**event):
  print(json.dumps({**event, "time": time.time()}), flush=True)
ds = pipeline.evaluation_dataset("korean_food/64", split="train", batch_size=1, data_dir=data_dir,
                                 data_service=address)
for epoch in (1, 2):
  examples = 0
  try:
    for _ in ds:
      examples += 1
      say(event="batch", epoch=epoch)
      if epoch == 1 and examples == 1:
        os.kill(victim, signal.SIGKILL)
        say(event="killed", epoch=epoch)
    say(event="end", epoch=epoch, examples=examples)
  except Exception as error:
    say(event="error", epoch=epoch, examples=examples, message=str(error))
"""


def _lines(stream: IO[str]) -> queue.Queue[str]:
  """The lines of `stream` as they come, read by a thread."""
  lines: queue.Queue[str] = queue.Queue()
  threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
  return lines


def _waited(events: list[dict[str, Any]], outcome: dict[str, Any]) -> float:
  """Seconds from the trainer's event before `outcome` (its epoch's last batch) to `outcome`."""
  before = [event["time"] for event in events
            if event["time"] <= outcome["time"] and event is not outcome]
  return float(outcome["time"] - max(before))


def test_a_killed_worker_stops_the_epoch_within_the_stall_timeout(shared_dir, tmp_path):
  """Bound: an epoch whose worker died ends, or stops with the lost-worker
  error, `STALL_S` seconds after its last batch (plus scheduling slack)."""
  with loopback.running(tmp_path) as service:
    victim = service.processes[2]
    trainer = subprocess.Popen(
        [sys.executable, "-c", TRAINER, service.address, shared_dir, str(victim.pid)],
        cwd=REPO, text=True, stdout=subprocess.PIPE,
        stderr=open(tmp_path / "trainer.log", "w"),  # noqa: SIM115
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
             data_service.STALL_TIMEOUT_ENV: str(STALL_S)})
    service.processes.append(trainer)
    assert trainer.stdout is not None
    lines = _lines(trainer.stdout)
    events: list[dict[str, Any]] = []
    outcome: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + 90  # Far beyond every bound: a hang fails here.
    while 2 not in outcome and time.monotonic() < deadline:
      try:
        event = json.loads(lines.get(timeout=deadline - time.monotonic()))
      except queue.Empty:
        break
      events.append(event)
      if event["event"] in ("end", "error"):
        outcome[event["epoch"]] = event
  assert set(outcome) == {1, 2}, (f"the trainer hung or failed: {events[-3:]}, "
                                  f"see {tmp_path / 'trainer.log'}")
  assert victim.returncode == -signal.SIGKILL
  for epoch in (1, 2):  # The dead worker's task holds the epoch open until the watchdog gives up.
    if outcome[epoch]["event"] == "error":
      assert "a worker was probably lost" in outcome[epoch]["message"]
      assert STALL_S - 0.5 <= _waited(events, outcome[epoch]) <= STALL_S + 5
    else:  # Killed after it had delivered everything.
      assert epoch == 1 and outcome[epoch]["examples"] == TRAIN_EXAMPLES
  # Deterministic: the dispatcher gave the dead worker a task in the new epoch,
  # and the live worker read every file.
  assert outcome[2]["event"] == "error" and outcome[2]["examples"] == TRAIN_EXAMPLES

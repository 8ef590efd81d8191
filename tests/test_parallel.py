"""`parallel.ordered_map`: input order whatever the worker count, bounded
look-ahead, and a dead worker costs only the item that killed it."""

from __future__ import annotations

import ast
import multiprocessing
import os
import signal
import subprocess
import sys

import pytest

from photo_datasets.building import parallel


def square_with_pid(x: int) -> tuple[int, int]:
  return x * x, os.getpid()


def die_on_13(x: int) -> int:
  if x == 13:
    os.kill(os.getpid(), signal.SIGKILL)  # As the kernel's out-of-memory killer does.
  return x * x


def crashed(x: int) -> str:
  return f"crashed on {x}"


def test_results_come_in_input_order_from_worker_processes():
  results = list(parallel.ordered_map(square_with_pid, range(200), workers=3, on_crash=crashed))
  assert [r for r, _ in results] == [x * x for x in range(200)]
  assert os.getpid() not in {pid for _, pid in results}


def test_one_worker_runs_in_this_process():
  results = list(parallel.ordered_map(square_with_pid, range(5), workers=1, on_crash=crashed))
  assert results == [(x * x, os.getpid()) for x in range(5)]


def test_inline_items_are_computed_here_in_order():
  results = list(parallel.ordered_map(square_with_pid, range(40), workers=2, on_crash=crashed,
                                      inline=lambda x: x % 2 == 0))
  assert [r for r, _ in results] == [x * x for x in range(40)]
  assert {pid == os.getpid()
          for x, (_, pid) in zip(range(40), results, strict=True) if x % 2 == 0} == {True}
  assert os.getpid() not in {pid for x, (_, pid) in zip(range(40), results, strict=True) if x % 2}


def test_a_worker_killed_by_one_item_loses_only_that_item():
  results = list(parallel.ordered_map(die_on_13, range(60), workers=2, on_crash=crashed))
  assert results == [x * x if x != 13 else "crashed on 13" for x in range(60)]


def test_items_are_read_lazily_a_few_per_worker_ahead():
  taken = []

  def items():
    for x in range(1000):
      taken.append(x)
      yield x

  results = parallel.ordered_map(square_with_pid, items(), workers=2, on_crash=crashed)
  next(results)
  assert len(taken) <= 2 * parallel.ITEMS_IN_FLIGHT_PER_WORKER + 1
  results.close()


def test_a_fork_pool_of_few_chunks_forks_a_worker_a_chunk(monkeypatch):
  """A fork pool's workers are forked at once, each copying this process's page tables: a
  phase of 3 items in chunks of 2 needs 2 of its 6. (Spawn and forkserver pools start their
  workers as chunks arrive.)"""
  monkeypatch.setenv(parallel.START_METHOD_ENV, "fork")

  def started(since: set[int]) -> set[int]:
    """The workers started since: another test's kept pool may still be alive."""
    return {p.pid for p in multiprocessing.active_children()} - since

  for items, size in (([1, 2, 3], None), (iter([1, 2, 3]), 3)):
    before = started(set())
    results = parallel.ordered_map(square_with_pid, items, workers=6, on_crash=crashed, chunk=2,
                                   size=size)
    assert next(results)[0] == 1
    workers = started(before)
    assert len(workers) == 2
    assert {pid for _, pid in results} <= workers
  before = started(set())
  unsized = parallel.ordered_map(square_with_pid, iter([1, 2, 3]), workers=6, on_crash=crashed,
                                 chunk=2)
  next(unsized)
  assert len(started(before)) == 6
  unsized.close()


def test_worker_count_from_the_environment(monkeypatch):
  monkeypatch.setenv(parallel.WORKERS_ENV, "3")
  assert parallel.default_workers() == 3
  monkeypatch.delenv(parallel.WORKERS_ENV)
  assert parallel.default_workers() == len(os.sched_getaffinity(0))
  for bad in ("0", "-2", "two", "1.5"):
    monkeypatch.setenv(parallel.WORKERS_ENV, bad)
    with pytest.raises(ValueError,
                       match=f"PHOTO_DATASETS_WORKERS must be a whole number >= 1, got '{bad}'"):
      parallel.default_workers()


# A script without a `__main__` guard that maps over workers twice; its task comes from a module
# beside it. Each process that runs the script says so.
_SCRIPT = """
import os, sys
import tensorflow  # Loaded here: the workers must not load it again.
from photo_datasets.building import parallel
import worker_state
print("SCRIPT RUN BY", os.getpid(), flush=True)
for phase in range(2):
  found = set(parallel.ordered_map(worker_state.state, range(40), workers=2, on_crash=str))
  print("PHASE", sorted(found), flush=True)
"""
_WORKER_STATE = """
import multiprocessing, sys
def state(_):  # Workers are numbered in the order this process started them.
  return int(multiprocessing.current_process().name.rsplit("-", 1)[1]), "tensorflow" in sys.modules
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_kept_pool_serves_every_phase_and_never_runs_the_script(tmp_path, method):
  """Spawned and forkserver workers start once for every phase, and run neither the script
  that started them (unguarded, it would start workers of its own) nor TensorFlow."""
  (tmp_path / "script.py").write_text(_SCRIPT)
  (tmp_path / "worker_state.py").write_text(_WORKER_STATE)
  env = {**os.environ, parallel.START_METHOD_ENV: method, "TF_CPP_MIN_LOG_LEVEL": "2"}
  done = subprocess.run([sys.executable, os.fspath(tmp_path / "script.py")], capture_output=True,
                        text=True, timeout=300, env=env)
  assert done.returncode == 0, done.stderr[-3000:]
  lines = done.stdout.splitlines()
  assert [line.split()[0] for line in lines] == ["SCRIPT", "PHASE", "PHASE"], lines
  seen = {state for line in lines[1:] for state in ast.literal_eval(line.split(" ", 1)[1])}
  assert {worker for worker, _ in seen} <= {1, 2}  # The first two workers, ...
  assert {uses_tf for _, uses_tf in seen} == {False}  # ... without TensorFlow.


def exit_at_start(*args: object) -> None:
  os._exit(3)


def test_workers_that_cannot_start_stop_the_map_with_one_clear_error(monkeypatch):
  monkeypatch.setenv(parallel.START_METHOD_ENV, "fork")
  monkeypatch.setattr(parallel, "_install", exit_at_start)
  with pytest.raises(parallel.WorkerStartError,
                     match=r"could not start \(start method fork;.*if __name__ == \"__main__\""):
    list(parallel.ordered_map(square_with_pid, range(10), workers=2, on_crash=crashed))

"""Per-photo work on every core the process may use, results in input order.

The main process reads the source sequentially (each archive opened once) and
hands each photo's bytes to a pool of worker processes; results come back in
input order, so a build is the same whatever the worker count. Photos travel
a few at a time (`_CHUNK`), and at most `ITEMS_IN_FLIGHT_PER_WORKER` per worker
are in flight, so memory does not grow with the corpus.

A worker that dies (out of memory, a crash in a native decoder) does not stop
the build: the photos it may have held are run again one by one, each in a
fresh process, and the one that kills its process again is given to
`on_crash` (the callers skip and report it). A worker never outlives the
process that started it: on Linux the kernel ends it (`PR_SET_PDEATHSIG`),
elsewhere it watches its parent every second.
"""

from __future__ import annotations

import collections
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent import futures
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# `tfds build` cannot pass arguments to a builder, so the count is also read from here.
WORKERS_ENV = "PHOTO_DATASETS_WORKERS"
# How the workers start: fork, spawn or forkserver (`_context`).
START_METHOD_ENV = "PHOTO_DATASETS_START_METHOD"
# Items go to the workers a few at a time: the pool's own cost, about 0.1 ms of this
# process's time per task (docs/performance.md#the-main-process), is then paid once per chunk,
# not per photo.
_CHUNK = 4
_CHUNKS_IN_FLIGHT_PER_WORKER = 2
ITEMS_IN_FLIGHT_PER_WORKER = _CHUNK * _CHUNKS_IN_FLIGHT_PER_WORKER


def default_workers() -> int:
  """`$PHOTO_DATASETS_WORKERS` if set, else every core this process may use."""
  value = os.environ.get(WORKERS_ENV, "").strip()
  if value:
    return check_workers(value, f"${WORKERS_ENV}")
  if hasattr(os, "sched_getaffinity"):
    return len(os.sched_getaffinity(0))
  return os.cpu_count() or 1


def check_workers(value: Any, name: str = "workers") -> int:
  try:
    workers = int(value)
  except (TypeError, ValueError):
    workers = 0
  if workers < 1 or str(value).strip() != str(workers):
    raise ValueError(f"{name} must be a whole number >= 1, got {value!r}.")
  return workers


def _context() -> multiprocessing.context.BaseContext:
  """`$PHOTO_DATASETS_START_METHOD` where set (a build's bytes do not depend
  on it); else fork on Linux: it starts workers in milliseconds and shares the
  loaded modules, and the workers only run PIL and hashlib, never TensorFlow."""
  method = os.environ.get(START_METHOD_ENV, "").strip()
  if method:
    methods = multiprocessing.get_all_start_methods()
    if method not in methods:
      raise ValueError(f"${START_METHOD_ENV} must be one of {', '.join(methods)}, got {method!r}.")
    return multiprocessing.get_context(method)
  if sys.platform.startswith("linux"):
    return multiprocessing.get_context("fork")
  return multiprocessing.get_context()


_TASK: Callable[[Any], Any] | None = None


def _install(task: Callable[[Any], Any], parent: int) -> None:
  global _TASK
  _TASK = task
  # Ctrl-C is the main process's to handle: no traceback per worker.
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  _die_with(parent)


_PR_SET_PDEATHSIG = 1  # From <linux/prctl.h>.


def _die_with(parent: int) -> None:
  """Ends this worker when its parent dies, even by SIGKILL (the out-of-memory
  killer picks the main process, the biggest): else the workers would live on,
  asleep, holding their memory."""
  if sys.platform.startswith("linux"):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
      if os.getppid() != parent:  # The parent died before the call: no signal will come.
        os._exit(1)
      return
  if (parent_process := multiprocessing.parent_process()) is not None:
    threading.Thread(target=_watch, args=(parent_process,), daemon=True).start()


def _watch(parent: multiprocessing.process.BaseProcess) -> None:
  """Where the kernel cannot be asked: look every second whether the parent lives."""
  while parent.is_alive():
    time.sleep(1)
  os._exit(1)


def _run(item: Any) -> Any:
  assert _TASK is not None
  return _TASK(item)


def _run_chunk(items: list[Any]) -> list[Any]:
  return [_run(item) for item in items]


def _pool(task: Callable[[Any], Any], workers: int) -> futures.ProcessPoolExecutor:
  # typeshed types `initializer` as taking no arguments, although `initargs` are passed to it.
  install: Callable[..., None] = _install
  return futures.ProcessPoolExecutor(workers, mp_context=_context(), initializer=install,
                                     initargs=(task, os.getpid()))


def _done(result: Result) -> futures.Future[Result]:
  future: futures.Future[Result] = futures.Future()
  future.set_result(result)
  return future


def ordered_map(
    task: Callable[[Item], Result],
    items: Iterable[Item],
    *,
    workers: int,
    on_crash: Callable[[Item], Result],
    inline: Callable[[Item], bool] | None = None,
    chunk: int = _CHUNK,
    in_flight: int | None = None,
) -> Iterator[Result]:
  """Yields `task(item)` for every item, in order, computed on `workers` processes.

  Args:
    task: a picklable function; exceptions it raises stop the map.
    items: consumed lazily, at most a few per worker ahead of the results.
    workers: 1 runs everything in this process, with no subprocess at all.
    on_crash: the result for an item whose worker process died twice.
    inline: items for which it is true are computed here, not sent to a worker
      (work too small to pay for the transfer).
    chunk: items sent to a worker at a time (1 for large tasks).
    in_flight: chunks sent and not yet returned, at most; default 2 per worker.
  """
  if workers <= 1:
    yield from map(task, items)
    return
  pending: collections.deque[tuple[list[Item], futures.Future[list[Result]]]] = collections.deque()
  in_flight = in_flight or workers * _CHUNKS_IN_FLIGHT_PER_WORKER
  pool = _pool(task, workers)
  batch: list[Item] = []

  def send_chunk() -> None:
    if batch:
      pending.append((list(batch), _submit(pool, list(batch))))
      batch.clear()

  try:
    for item in items:
      if inline and inline(item):
        send_chunk()  # What came before it stays before it.
        pending.append(([item], _done([task(item)])))
      else:
        batch.append(item)
        if len(batch) == chunk:
          send_chunk()
      while len(pending) >= in_flight:
        results, pool = _next(pending, pool, task, workers, on_crash)
        yield from results
    send_chunk()
    while pending:
      results, pool = _next(pending, pool, task, workers, on_crash)
      yield from results
  finally:
    pool.shutdown(wait=True, cancel_futures=True)


def _submit(pool: futures.ProcessPoolExecutor, items: list[Any]) -> futures.Future[list[Any]]:
  try:
    return pool.submit(_run_chunk, items)
  except BrokenProcessPool as e:  # A worker died since the last result: `_next` reruns.
    future: futures.Future[list[Any]] = futures.Future()
    future.set_exception(e)
    return future


def _next(
    pending: collections.deque[tuple[list[Item], futures.Future[list[Result]]]],
    pool: futures.ProcessPoolExecutor,
    task: Callable[[Item], Result],
    workers: int,
    on_crash: Callable[[Item], Result],
) -> tuple[list[Result], futures.ProcessPoolExecutor]:
  """Pops the oldest chunk's results; after a worker died, reruns what the pool held."""
  try:
    results = pending[0][1].result()
  except BrokenProcessPool:
    held = sum(len(items) for items, future in pending if not future.done() or future.exception())
    logging.warning("A worker process died; rerunning its %d photos one by one.", held)
    pool.shutdown(wait=True, cancel_futures=True)
    for i, (items, future) in enumerate(pending):
      if not future.done() or future.exception() is not None:
        pending[i] = (items, _done([_run_alone(task, item, on_crash) for item in items]))
    pool = _pool(task, workers)
    results = pending[0][1].result()
  pending.popleft()
  return results, pool


def _run_alone(task: Callable[[Item], Result], item: Item,
               on_crash: Callable[[Item], Result]) -> Result:
  with _pool(task, 1) as solo:
    try:
      result: Result = solo.submit(_run, item).result()
      return result
    except BrokenProcessPool:
      return on_crash(item)

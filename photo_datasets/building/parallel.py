"""Per-photo work on every core the process may use, results in input order.

The main process reads the source sequentially (each archive opened once) and
hands each photo's bytes to a pool of worker processes; results come back in
input order, so a build is the same whatever the worker count. Photos travel
a few at a time (`_CHUNK`), and at most `ITEMS_IN_FLIGHT_PER_WORKER` per worker
are in flight, so memory does not grow with the corpus.

How workers start (docs/building.md#every-core-by-default):

* fork (Linux's default here): a pool a phase, whose workers share the task and
  the loaded modules with this process; a worker a chunk at most, where the
  phase's size is known (each fork copies this process's page tables,
  TensorFlow's among them).
* spawn (macOS's and Windows's default) and forkserver (`$PHOTO_DATASETS_START_METHOD`):
  a fresh interpreter a worker, which costs an import of what the tasks need,
  so one pool serves every phase of every build in the process (`_KeptPool`,
  ended after `KEPT_POOL_IDLE_SECONDS` unused). Each phase's task goes to it
  pickled in a file, read once per worker. Its workers do not run this
  process's `__main__` (the `tfds` script or the user's): they import only
  what the tasks name, never TensorFlow or Beam, and a script without an
  `if __name__ == "__main__":` guard is not run again in each of them.

A worker that dies (out of memory, a crash in a native decoder) does not stop
the build: the photos it may have held are run again one by one, each in a
fresh process, and the one that kills its process again is given to
`on_crash` (the callers skip and report it). Workers that cannot start at
all raise `WorkerStartError`, which names the cause and the way around it. A
worker never outlives the process that started it: on Linux the kernel ends
it (`PR_SET_PDEATHSIG`), elsewhere it watches its parent every second.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import itertools
import logging
import multiprocessing
import multiprocessing.context
import multiprocessing.spawn
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from concurrent import futures
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# `tfds build` cannot pass arguments to a builder, so the count is also read from here.
WORKERS_ENV = "PHOTO_DATASETS_WORKERS"
# How the workers start: fork, spawn or forkserver (`_context`).
START_METHOD_ENV = "PHOTO_DATASETS_START_METHOD"
# Items go to the workers a few at a time: the pool's own cost a task, in this process
# (docs/performance.md#the-main-process), is then paid once per chunk, not per photo.
_CHUNK = 4
_CHUNKS_IN_FLIGHT_PER_WORKER = 2
ITEMS_IN_FLIGHT_PER_WORKER = _CHUNK * _CHUNKS_IN_FLIGHT_PER_WORKER
# A kept pool (spawn, forkserver) unused this long ends, its workers' memory freed; `tfds
# build` goes from one config to the next well within it.
KEPT_POOL_IDLE_SECONDS = 60


class WorkerStartError(RuntimeError):
  """The worker processes could not start: nothing was wrong with the photos."""


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


def _context(method: str | None = None) -> multiprocessing.context.BaseContext:
  """`method` where given; else `$PHOTO_DATASETS_START_METHOD` where set (a
  build's bytes do not depend on it); else fork on Linux: its workers share the
  loaded modules, none imported again (and run no thread of their own); else
  the platform's default, spawn on macOS and Windows, where fork is unsafe or
  missing."""
  method = method or os.environ.get(START_METHOD_ENV, "").strip()
  if method:
    methods = multiprocessing.get_all_start_methods()
    if method not in methods:
      raise ValueError(f"${START_METHOD_ENV} must be one of {', '.join(methods)}, got {method!r}.")
  elif sys.platform.startswith("linux"):
    method = "fork"
  else:
    method = multiprocessing.get_start_method()
  return _LEAN_CONTEXTS.get(method) or multiprocessing.get_context(method)


_MAIN_KEYS = ("init_main_from_name", "init_main_from_path")
_PREPARING = threading.Lock()


@contextlib.contextmanager
def _without_main() -> Iterator[None]:
  """Processes started meanwhile do not import this process's `__main__`: multiprocessing
  reads what a child imports first from `spawn.get_preparation_data`, for spawn and
  forkserver alike (and for the fork server itself, where it starts one)."""
  real = multiprocessing.spawn.get_preparation_data

  def lean(name: str) -> dict[str, Any]:
    data = real(name)
    for key in _MAIN_KEYS:
      data.pop(key, None)
    return data

  with _PREPARING:
    multiprocessing.spawn.get_preparation_data = lean
    try:
      yield
    finally:
      multiprocessing.spawn.get_preparation_data = real


class _LeanSpawnProcess(multiprocessing.context.SpawnProcess):
  @staticmethod
  def _Popen(process_obj: Any) -> Any:  # noqa: N802 (multiprocessing's name)
    with _without_main():
      return multiprocessing.context.SpawnProcess._Popen(process_obj)


class _LeanSpawnContext(multiprocessing.context.SpawnContext):
  Process = _LeanSpawnProcess


_LEAN_CONTEXTS: dict[str, multiprocessing.context.BaseContext] = {"spawn": _LeanSpawnContext()}
if "forkserver" in multiprocessing.get_all_start_methods():

  class _LeanForkServerProcess(multiprocessing.context.ForkServerProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:  # noqa: N802
      with _without_main():
        return multiprocessing.context.ForkServerProcess._Popen(process_obj)

  class _LeanForkServerContext(multiprocessing.context.ForkServerContext):
    Process = _LeanForkServerProcess

  _LEAN_CONTEXTS["forkserver"] = _LeanForkServerContext()


_TASK: Callable[[Any], Any] | None = None


def _install(task: Callable[[Any], Any] | None, parent: int | None) -> None:
  """A worker's start: its task (None in a kept pool, where each chunk names it), Ctrl-C left
  to the main process (no traceback per worker), and its end tied to `parent`'s (None:
  whichever process forked it, the fork server)."""
  global _TASK
  _TASK = task
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  if hasattr(signal, "pthread_sigmask"):  # Held since its start (`_sigint_held`): now dropped.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
  _die_with(parent)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
  """Ctrl-C held back from this thread meanwhile: a worker forked or spawned now starts with
  it held (not raised in the middle of its start, with a traceback) until `_install` ignores
  it; this process gets it once the block ends."""
  if not hasattr(signal, "pthread_sigmask"):
    yield
    return
  held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
  try:
    yield
  finally:
    signal.pthread_sigmask(signal.SIG_SETMASK, held)


_PR_SET_PDEATHSIG = 1  # From <linux/prctl.h>.


def _die_with(parent: int | None) -> None:
  """Ends this worker when its parent dies, even by SIGKILL (the out-of-memory
  killer picks the main process, the biggest): else the workers would live on,
  asleep, holding their memory. A fork server ends with the process it serves."""
  if sys.platform.startswith("linux"):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
      if parent is not None and os.getppid() != parent:  # Died before the call: no signal.
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


# In a kept pool's worker: the tasks of the last phases, by their file.
_KEPT_TASKS: dict[str, Callable[[Any], Any]] = {}


def _run_kept_chunk(task_file: str, items: list[Any]) -> list[Any]:
  if (task := _KEPT_TASKS.get(task_file)) is None:
    if len(_KEPT_TASKS) >= 4:  # Phases interleave (one feeds another), a few at most.
      _KEPT_TASKS.pop(next(iter(_KEPT_TASKS)))
    with open(task_file, "rb") as f:
      task = _KEPT_TASKS[task_file] = pickle.load(f)
  return [task(item) for item in items]


def refuse_in_a_starting_worker(what: str) -> None:
  """Raises where a worker process being started (spawn, forkserver) runs the user's script
  again, as multiprocessing does for a script that starts processes there: else a build in
  the script would wait for the build lock its own parent holds."""
  if getattr(multiprocessing.current_process(), "_inheriting", False):
    raise RuntimeError(
        f"{what} in a worker process that is starting: the script that started the build runs "
        f"again in each worker ({multiprocessing.get_start_method()} start method). Put what "
        "builds or loads a config under `if __name__ == \"__main__\":`.")


def _ping() -> int:
  return os.getpid()


def _started(pool: futures.ProcessPoolExecutor, method: str) -> futures.ProcessPoolExecutor:
  """`pool`, once a worker has answered; else `WorkerStartError`."""
  try:
    with _sigint_held():
      answer = pool.submit(_ping)
    answer.result()
  except BrokenProcessPool as e:
    pool.shutdown(wait=False, cancel_futures=True)
    raise WorkerStartError(
        f"The build's worker processes could not start (start method {method}; their error, if "
        "any, is printed above). A script that builds or loads an unbuilt config must do so "
        "under `if __name__ == \"__main__\":`; else set $PHOTO_DATASETS_START_METHOD to another "
        f"of {', '.join(multiprocessing.get_all_start_methods())}, or "
        f"${WORKERS_ENV}=1 to build in this process.") from e
  return pool


def _needs_main(task: Callable[[Any], Any]) -> bool:
  """Whether `task` pickles with a reference to `__main__` (a function or class defined in the
  script), which a worker that does not run the script could not unpickle."""
  try:
    return b"__main__" in pickle.dumps(task)
  except Exception:  # Unpicklable: a forked worker inherits it.
    return True


def _executor(context: multiprocessing.context.BaseContext, workers: int,
              task: Callable[[Any], Any] | None) -> futures.ProcessPoolExecutor:
  """A started pool of `workers` whose initializer installs `task` (None: a kept pool's)."""
  method = context.get_start_method()
  # typeshed types `initializer` as taking no arguments, although `initargs` are passed to it.
  install: Callable[..., None] = _install
  parent = None if method == "forkserver" else os.getpid()
  return _started(futures.ProcessPoolExecutor(workers, mp_context=context, initializer=install,
                                              initargs=(task, parent)), method)


def _pool(task: Callable[[Any], Any], workers: int,
          method: str | None = None) -> futures.ProcessPoolExecutor:
  context = _context(method)
  method = context.get_start_method()
  if method != "fork" and _needs_main(task):
    context = multiprocessing.get_context(method)  # One that runs `__main__` in its workers.
  return _executor(context, workers, task)


class _KeptPool:
  """Worker processes kept for every phase (spawn, forkserver): each phase's task is pickled
  into a file of `folder` that its chunks name."""

  def __init__(self, context: multiprocessing.context.BaseContext, workers: int):
    self.executor = _executor(context, workers, None)
    self.folder = tempfile.mkdtemp(prefix="photo_datasets-tasks-")
    self.phases = 0  # Running now.
    self.idle: threading.Timer | None = None

  def close(self) -> None:
    self.executor.shutdown(wait=False, cancel_futures=True)
    shutil.rmtree(self.folder, ignore_errors=True)


# (start method, workers) -> the pool kept for them in this process.
_KEPT: dict[tuple[str, int], _KeptPool] = {}
_KEPT_LOCK = threading.Lock()
_TASK_FILES = itertools.count()


class _Phase:
  """One `ordered_map`'s workers: a pool of its own (fork, or a task that needs `__main__`) or
  this process's kept pool, and what to do when a worker died."""

  def __init__(self, task: Callable[[Any], Any], workers: int, method: str | None = None,
               chunks: int | None = None):
    self.task, self.workers, self.method = task, workers, method
    context = _context(method)
    self.key = (context.get_start_method(), workers)
    self.task_file: str | None = None
    pickled = None
    if self.key[0] != "fork":
      with contextlib.suppress(Exception):  # Unpicklable: `_pool` says so where it matters.
        pickled = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
    if pickled is None or b"__main__" in pickled:
      # A worker a chunk at most: this process forks each in turn (docstring).
      self.workers = workers if chunks is None else min(workers, max(1, chunks))
      self.pool = _pool(task, self.workers, method)
      return
    with _KEPT_LOCK:
      kept = _KEPT.get(self.key)
      if kept is None:
        kept = _KEPT[self.key] = _KeptPool(context, workers)
      if kept.idle is not None:
        kept.idle.cancel()
        kept.idle = None
      kept.phases += 1
      self.pool = kept.executor
      self.task_file = os.path.join(kept.folder, f"{next(_TASK_FILES)}.pickle")
    with open(self.task_file, "wb") as f:
      f.write(pickled)

  def submit(self, items: list[Any]) -> futures.Future[list[Any]]:
    try:
      with _sigint_held():  # A fork pool starts its workers as chunks arrive.
        if self.task_file is None:
          return self.pool.submit(_run_chunk, items)
        return self.pool.submit(_run_kept_chunk, self.task_file, items)
    except BrokenProcessPool as e:  # A worker died since the last result: `_next` reruns.
      future: futures.Future[list[Any]] = futures.Future()
      future.set_exception(e)
      return future

  def restart(self) -> None:
    """A new pool, after a worker died (for the kept one: unless another phase made it)."""
    if self.task_file is None:
      self.pool.shutdown(wait=True, cancel_futures=True)
      self.pool = _pool(self.task, self.workers, self.method)
      return
    with _KEPT_LOCK:
      kept = _KEPT[self.key]
      if kept.executor is self.pool:
        kept.executor.shutdown(wait=True, cancel_futures=True)
        kept.executor = _executor(_context(self.method), self.workers, None)
      self.pool = kept.executor

  def close(self) -> None:
    if self.task_file is None:
      self.pool.shutdown(wait=True, cancel_futures=True)
      return
    with _KEPT_LOCK:
      kept = _KEPT[self.key]
      with contextlib.suppress(OSError):
        os.remove(self.task_file)
      kept.phases -= 1
      if kept.phases == 0:
        kept.idle = threading.Timer(KEPT_POOL_IDLE_SECONDS, _end_kept, (self.key, kept))
        kept.idle.daemon = True
        kept.idle.start()


def _end_kept(key: tuple[str, int], kept: _KeptPool) -> None:
  with _KEPT_LOCK:
    if _KEPT.get(key) is kept and kept.phases == 0:
      del _KEPT[key]
      kept.close()


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
    size: int | None = None,
    in_flight: int | None = None,
    start_method: str | None = None,
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
    size: how many items there are, where the caller knows (a list's length is read): a phase
      of fewer chunks than `workers` forks only a worker a chunk.
    in_flight: chunks sent and not yet returned, at most; default 2 per worker.
    start_method: how the workers start; default `_context`'s. A process that runs threads of
      its own (a Beam worker's gRPC) asks for forkserver: a fork would copy them mid-call.

  Raises:
    WorkerStartError: the worker processes could not start.
  """
  if workers <= 1:
    yield from map(task, items)
    return
  pending: collections.deque[tuple[list[Item], futures.Future[list[Result]]]] = collections.deque()
  in_flight = in_flight or workers * _CHUNKS_IN_FLIGHT_PER_WORKER
  if size is None and isinstance(items, Sized):
    size = len(items)
  phase = _Phase(task, workers, start_method, None if size is None else -(-size // chunk))
  batch: list[Item] = []

  def send_chunk() -> None:
    if batch:
      pending.append((list(batch), phase.submit(list(batch))))
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
        yield from _next(pending, phase, on_crash)
    send_chunk()
    while pending:
      yield from _next(pending, phase, on_crash)
  finally:
    for _, future in pending:
      future.cancel()
    phase.close()


def _next(
    pending: collections.deque[tuple[list[Item], futures.Future[list[Result]]]],
    phase: _Phase,
    on_crash: Callable[[Item], Result],
) -> list[Result]:
  """Pops the oldest chunk's results; after a worker died, reruns what the pool held."""
  try:
    results = pending[0][1].result()
  except BrokenProcessPool:
    held = sum(len(items) for items, future in pending if not future.done() or future.exception())
    logging.warning("A worker process died; rerunning its %d photos one by one.", held)
    for i, (items, future) in enumerate(pending):
      if not future.done() or future.exception() is not None:
        pending[i] = (items, _done([_run_alone(phase.task, item, on_crash) for item in items]))
    phase.restart()
    results = pending[0][1].result()
  pending.popleft()
  return results


def _run_alone(task: Callable[[Item], Result], item: Item,
               on_crash: Callable[[Item], Result]) -> Result:
  with _pool(task, 1) as solo:
    try:
      result: Result = solo.submit(_run, item).result()
      return result
    except BrokenProcessPool:
      return on_crash(item)

"""The input pipeline on other machines: TensorFlow's tf.data service.

`pipeline.training_dataset(..., data_service="grpc://HOST:PORT")` (and
`evaluation_dataset`) hands its batched dataset to `distribute`: the reading,
decoding and augmentation run on tf.data service workers, which stream the
batches to the trainer. The parts are started with

  python -m photo_datasets data_service dispatcher --port 5050 [--work_dir DIR]
  python -m photo_datasets data_service worker --dispatcher HOST:5050 [--port 5051]

Choices, in one place:

* Processing mode `distributed_epoch`, for training and evaluation alike: the
  dispatcher hands each record file of the split (from TFDS's file
  instructions) to one worker, so an epoch holds every example once.
  `parallel_epochs` would have every worker produce the whole epoch: with two
  workers each example twice, and with a seed the very same batches twice.
  Order: each worker keeps the pipeline's order within the files it was
  given (for evaluation, stored order; for training, the seeded shuffle), and
  the trainer takes the workers' batches as they arrive. Each worker batches
  its own examples, so evaluation gets up to one smaller batch per worker and
  training drops up to `batch_size - 1` examples per worker, not per epoch;
  `pipeline` passes its batch size, and `distribute` regroups them on the
  trainer (one copy of each batch): evaluation then has the in-process
  batches, and training (whose workers keep their remainders) drops only the
  epoch's last incomplete batch, as in-process.
* Seeds: every epoch through the service starts a fresh copy of the dataset
  on the workers. So `pipeline` hands a seeded training pipeline over as a
  function of one epoch's seed, and each epoch's seed is drawn from `seed`
  here (`tf.data.Dataset.random`): epochs differ, and a run with the same
  seed repeats them. With one worker, or a split of one file, the batches
  are then repeatable too; with several workers and files, which worker
  reads which file depends on timing, so only the examples of each epoch are.
* Compression off: with `"AUTO"` (snappy on the workers, undone on the
  trainer) the batches cost more CPU per image
  (docs/past-one-machine.md#what-it-costs-on-one-machine, measured with
  `benchmarks/data_service.py`).
* Jobs: each iteration of the dataset is its own anonymous job, so trainers
  sharing a dispatcher never share or steal each other's batches.
* A lost worker. TensorFlow 2.21 keeps a lost worker's tasks for ever: the
  dispatcher's `worker_timeout_ms` only serves distributed snapshots, the
  client treats the dead worker's UNAVAILABLE as a preemption and retries it
  without a deadline, and an epoch ends only when the dispatcher has seen
  every task finish. TensorFlow's own recovery is a worker restarted at the
  same address (it takes its tasks back); only round-robin reads
  (`num_consumers`), which need an endless dataset, drop a task. So the
  batches reach the trainer through a watchdog: when no batch has come for
  `stall_timeout_s` seconds (default `STALL_TIMEOUT_S`, or the environment
  variable `PHOTO_DATASETS_STALL_TIMEOUT_S`), the epoch stops with an error
  saying a worker was probably lost: within `stall_timeout_s` of the epoch's
  last batch. The thread that read the epoch stays blocked in TensorFlow (it
  offers no way to cancel that read) until the worker is back or the process
  ends. Restart that worker at its address (or the dispatcher, which forgets
  it) before the next epoch: the dispatcher gives every new epoch a task on
  each worker it ever saw.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import queue
import re
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import tensorflow as tf

from photo_datasets.reading import arguments

PROCESSING_MODE = "distributed_epoch"
COMPRESSION = None  # Off: see the module docstring.
# How long the trainer waits for a batch before it calls a worker lost. A
# batch normally comes in well under a second; the first one of an epoch
# waits for the dispatcher to hand out tasks and the shuffle buffer to fill,
# and the first after a worker's restart for gRPC's reconnect backoff
# (docs/past-one-machine.md#how-it-behaves).
STALL_TIMEOUT_S = 60.0
STALL_TIMEOUT_ENV = "PHOTO_DATASETS_STALL_TIMEOUT_S"
_MAX_INT32 = 2**31 - 1  # TensorFlow keeps seeds modulo this.
# Batches the watchdog holds ahead of the trainer (the service client buffers more).
_WATCHDOG_QUEUE = 2


@dataclasses.dataclass(frozen=True)
class Service:
  """A tf.data service dispatcher and how to read from it, for `pipeline`'s
  `data_service=` (a plain `"grpc://HOST:PORT"` string takes the defaults).

  Attributes:
    address: the dispatcher, `"grpc://HOST:PORT"`.
    compression: `None` (off: the batches cost less CPU per image,
      docs/past-one-machine.md#what-it-costs-on-one-machine) or `"AUTO"`
      (snappy on the workers, undone in the trainer).
    stall_timeout_s: the watchdog's timeout in seconds; None takes
      `stall_timeout()`'s (the environment's, else `STALL_TIMEOUT_S`).
    watchdog: False reads without the watchdog (a lost worker then hangs the
      epoch, as TensorFlow does).
  """

  address: str
  compression: str | None = COMPRESSION
  stall_timeout_s: float | None = None
  watchdog: bool = True

  @classmethod
  def of(cls, service: str | Service) -> Service:
    return service if isinstance(service, Service) else cls(service)


_ADDRESS = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})")


class WorkerLostError(RuntimeError):
  """No batch came from the tf.data service within the stall timeout."""


def parse_address(address: str, *, scheme: bool = True) -> tuple[str, int]:
  """`(host, port)` of `"grpc://HOST:PORT"` (of `"HOST:PORT"` when not `scheme`).

  Raises:
    ValueError: on anything else, saying what is expected.
  """
  expected = "grpc://HOST:PORT" if scheme else "HOST:PORT"
  text = address
  if scheme:
    if not isinstance(address, str) or not address.startswith("grpc://"):
      raise ValueError(f"data_service must look like {expected} (e.g. grpc://dispatcher:5050), "
                       f"got {address!r}.")
    text = address[len("grpc://"):]
  elif isinstance(address, str) and address.startswith("grpc://"):
    text = address[len("grpc://"):]
  match = _ADDRESS.fullmatch(text) if isinstance(text, str) else None
  if match is None or not 1 <= int(match["port"]) <= 65535:
    raise ValueError(f"a tf.data service address must look like {expected} (port 1 to 65535), "
                     f"got {address!r}.")
  return match["host"], int(match["port"])


def stall_timeout(stall_timeout_s: float | None = None) -> float:
  """The stall timeout in seconds: the argument, else the environment's, else the default."""
  if stall_timeout_s is None:
    stall_timeout_s = float(os.environ.get(STALL_TIMEOUT_ENV, STALL_TIMEOUT_S))
  if not stall_timeout_s > 0:
    raise ValueError(f"stall_timeout_s must be > 0 seconds, got {stall_timeout_s!r}.")
  return stall_timeout_s


def distribute(ds: tf.data.Dataset | Callable[[tf.Tensor], tf.data.Dataset],
               service: str | Service, *, training: bool, seed: int | None,
               batch_size: int | None = None,
               stall_timeout_s: float | None = None) -> tf.data.Dataset:
  """`ds` (batched) produced by the tf.data service at `service`, watched for lost workers.

  Args:
    ds: the batched pipeline, as `pipeline` builds it when served: it reads the
      split's record files from a list the dispatcher can hand out, and
      asserts no example count (a worker reads only the files it is given).
      Or a function making the pipeline of one epoch from an int64 seed (a
      seeded training pipeline): every epoch then gets its own seed, drawn
      from `seed`, so epochs differ and a run repeats.
    service: `"grpc://HOST:PORT"` of the dispatcher, or a `Service` saying
      how to read from it.
    training: whether `ds` is the training pipeline (the same mode either way;
      with `batch_size`, training drops the remainder).
    seed: the pipeline's seed: where `ds` is a function, the seed of the
      epochs' seeds.
    batch_size: when given, the trainer regroups the workers' batches into
      batches of this size, as in-process: for evaluation every batch full but
      the last, for training the remainder dropped. Without it, each worker's
      last batch is as the workers made it.
    stall_timeout_s: seconds without a batch after which the epoch stops with
      a `WorkerLostError` message; default the `Service`'s, else `stall_timeout()`.

  Returns:
    A dataset of the same elements, each iteration one epoch of the service.

  Raises:
    ValueError: on a malformed address or timeout, or a function without a seed.
  """
  options = Service.of(service)
  address = options.address
  parse_address(address)
  timeout = stall_timeout(stall_timeout_s if stall_timeout_s is not None
                          else options.stall_timeout_s)
  if batch_size is not None:
    arguments.whole_number(batch_size, "batch_size", arguments.POSITIVE)

  def served(epoch: tf.data.Dataset) -> tf.data.Dataset:
    return epoch.apply(tf.data.experimental.service.distribute(
        processing_mode=PROCESSING_MODE, service=address, compression=options.compression))

  if isinstance(ds, tf.data.Dataset):
    epochs = served(ds)
  else:
    if seed is None:
      raise ValueError("a pipeline made per epoch needs the seed its epochs' seeds are drawn from.")
    # Each iteration draws the next seed, and the service runs that epoch's
    # pipeline as a job of its own.
    epoch_seed = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).take(1)
    epochs = epoch_seed.flat_map(lambda epoch: served(_with_a_usable_graph_seed(ds, epoch)))
  watched_epochs = watched(epochs, timeout, address) if options.watchdog else epochs
  if batch_size is None:
    return watched_epochs
  regrouped: tf.data.Dataset = watched_epochs.rebatch(batch_size, drop_remainder=training)
  return regrouped


def _with_a_usable_graph_seed(make: Callable[[tf.Tensor], tf.data.Dataset],
                              epoch: tf.Tensor) -> tf.data.Dataset:
  """`make(epoch)`, its random ops seeded by the tensor `epoch`. TensorFlow
  combines an op's seed with the global one and compares the pair with (0, 0),
  which a tensor cannot answer: under a global seed of 0 (as after
  `keras.utils.set_random_seed(0)`) every seeded op would fail. So this epoch's
  function graph takes another fixed seed then, the pipeline staying repeatable."""
  graph = tf.compat.v1.get_default_graph()
  if graph.seed is not None and graph.seed % _MAX_INT32 == 0:
    graph.seed = _MAX_INT32 - 1
  return make(epoch)


def watched(ds: tf.data.Dataset, timeout_s: float, service: str) -> tf.data.Dataset:
  """`ds`, whose every iteration fails with a lost-worker message when no
  element comes for `timeout_s` seconds. A thread iterates `ds`, so a hung
  read cannot block the caller (the thread is left behind, waiting)."""

  def epoch() -> Iterator[Any]:
    batches: queue.Queue[tuple[str, Any]] = queue.Queue(_WATCHDOG_QUEUE)
    stop = threading.Event()
    reader = threading.Thread(target=_read, args=(ds, batches, stop), daemon=True,
                              name="tf.data service watchdog reader")
    reader.start()
    try:
      while True:
        try:
          kind, value = batches.get(timeout=timeout_s)
        except queue.Empty:
          raise WorkerLostError(
              f"no batch from the tf.data service at {service} for {timeout_s:g} s: a worker "
              "was probably lost (TensorFlow waits for a lost worker to come back at its "
              "address). Restart that worker at the same HOST:PORT, or restart the "
              "dispatcher, then resume training.") from None
        if kind == "end":
          return
        if kind == "error":
          raise value
        yield value
    finally:
      stop.set()

  return tf.data.Dataset.from_generator(epoch, output_signature=ds.element_spec)


def _read(ds: tf.data.Dataset, batches: queue.Queue[tuple[str, Any]],
          stop: threading.Event) -> None:
  """Puts every element of one iteration of `ds` on `batches`, then `("end", None)`."""

  def put(item: tuple[str, Any]) -> bool:
    while not stop.is_set():
      try:
        batches.put(item, timeout=0.5)
        return True
      except queue.Full:
        continue
    return False

  try:
    for element in ds:
      if not put(("batch", element)):
        return
  except Exception as error:  # Handed to the trainer, which raises it.
    put(("error", error))
    return
  put(("end", None))


# ---------------------------------------------------------------------------
# The servers.


def run_dispatcher(port: int, work_dir: str | None, worker_timeout_ms: int | None) -> None:
  """Starts a dispatcher on `port` and serves until killed. With `work_dir`
  (a local folder or gs://), it journals its state there and recovers it on restart."""
  config = tf.data.experimental.service.DispatcherConfig(
      port=port, work_dir=work_dir, fault_tolerant_mode=work_dir is not None,
      worker_timeout_ms=worker_timeout_ms)
  server = tf.data.experimental.service.DispatchServer(config)
  print("tf.data service dispatcher listening on "
        f"grpc://{socket.gethostname()}:{_bound_port(server)}"
        + (f", journal in {work_dir}" if work_dir else ""), flush=True)
  server.join()


def run_worker(dispatcher: str, port: int, host: str, imports: Sequence[str] = ()) -> None:
  """Starts a worker on `port` for `dispatcher` ("HOST:PORT") and serves until
  killed. The trainer reaches it as `host:port`. It reads the data dir itself;
  `imports` are modules to import first, as `tfds build --imports` (e.g. the
  dataset packages, where a served pipeline needs their code)."""
  for module in imports:
    importlib.import_module(module)

  # Decoding runs on the CPUs; a GPU here is the trainer's.
  tf.config.set_visible_devices([], "GPU")
  dispatcher_host, dispatcher_port = parse_address(dispatcher, scheme=False)
  config = tf.data.experimental.service.WorkerConfig(
      dispatcher_address=f"{dispatcher_host}:{dispatcher_port}",
      worker_address=f"{host}:%port%", port=port)
  server = tf.data.experimental.service.WorkerServer(config)
  print(f"tf.data service worker listening on {host}:{_bound_port(server)}, "
        f"dispatcher {dispatcher_host}:{dispatcher_port}", flush=True)
  server.join()


def _bound_port(server: Any) -> int:
  bound: int = server._server.bound_port()  # noqa: SLF001  (the port chosen for --port 0)
  return bound


def _port(text: str) -> int:
  port = int(text)
  if not 0 <= port <= 65535:
    raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {text}")
  return port


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(prog="python -m photo_datasets data_service",
                                   description=__doc__.split("\n")[0])
  parts = parser.add_subparsers(dest="part", required=True)
  dispatcher = parts.add_parser("dispatcher",
                                help="coordinates the workers; trainers connect to it")
  dispatcher.add_argument("--port", type=_port, required=True)
  dispatcher.add_argument("--work_dir",
                          help="journal folder (local or gs://): survives a dispatcher restart")
  dispatcher.add_argument("--worker_timeout_ms", type=int, default=None,
                          help="when the dispatcher logs a worker as lost "
                               "(it does not drop its tasks)")
  worker = parts.add_parser("worker",
                            help="reads, decodes and augments; streams batches to the trainer")
  worker.add_argument("--dispatcher", required=True, help="HOST:PORT of the dispatcher")
  worker.add_argument("--port", type=_port, default=0, help="default: any free port")
  worker.add_argument("--host", default=socket.gethostname(),
                      help="the name trainers reach this machine by (default: its hostname)")
  worker.add_argument("--imports", "-i", default="",
                      help="comma-separated modules to import first, as `tfds build --imports`")
  args = parser.parse_args(argv)
  runners: dict[str, Callable[[], None]] = {
      "dispatcher": lambda: run_dispatcher(args.port, args.work_dir, args.worker_timeout_ms),
      "worker": lambda: run_worker(args.dispatcher, args.port, args.host,
                                 [m for m in args.imports.split(",") if m]),
  }
  try:
    runners[args.part]()
  except ValueError as error:
    sys.exit(f"error: {error}")


if __name__ == "__main__":
  main()

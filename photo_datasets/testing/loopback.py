"""A tf.data service on this machine, for the tests and the benchmarks: a
dispatcher and its workers, each a process of `python -m photo_datasets data_service`
on loopback, killed by `stop` (or on leaving `running`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import select
import socket
import subprocess
import sys
from collections.abc import Iterator

STARTUP_S = 60  # A server prints where it listens within this (imports included).


def free_port() -> int:
  with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port: int = probe.getsockname()[1]
    return port


@dataclasses.dataclass
class LoopbackService:
  """A dispatcher and its workers on loopback; each server's stderr goes to a log in `log_dir`."""

  log_dir: pathlib.Path
  dispatcher_port: int = dataclasses.field(default_factory=free_port)
  processes: list[subprocess.Popen[str]] = dataclasses.field(default_factory=list)
  said: list[str] = dataclasses.field(default_factory=list)  # Each server's first line.

  @property
  def address(self) -> str:
    return f"grpc://localhost:{self.dispatcher_port}"

  def start(self, workers: int, *dispatcher_args: str) -> None:
    """Starts the dispatcher and `workers` workers at once; returns when each says where it
    listens."""
    started = [self._popen("dispatcher", "--port", str(self.dispatcher_port), *dispatcher_args)]
    for _ in range(workers):
      started.append(self._popen("worker", "--dispatcher", f"localhost:{self.dispatcher_port}",
                                 "--port", str(free_port()), "--host", "localhost"))
    for process in started:
      assert process.stdout is not None
      ready, _, _ = select.select([process.stdout], [], [], STARTUP_S)
      line = process.stdout.readline() if ready else ""
      if "listening on" not in line:
        raise RuntimeError(f"{process.args!r} did not start: {line!r}, "
                           f"see the logs in {self.log_dir}")
      self.said.append(line)

  def _popen(self, *args: str) -> subprocess.Popen[str]:
    # The process owns the log file.
    log = open(self.log_dir / f"server_{len(self.processes)}.log", "w")  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "photo_datasets", "data_service", *args], text=True,
        stdout=subprocess.PIPE, stderr=log, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    self.processes.append(process)
    return process

  def stop(self) -> None:
    for process in self.processes:
      if process.poll() is None:
        process.kill()
      process.wait(timeout=30)


@contextlib.contextmanager
def running(log_dir: pathlib.Path, workers: int = 2,
            *dispatcher_args: str) -> Iterator[LoopbackService]:
  """A started `LoopbackService`, stopped on leaving."""
  service = LoopbackService(log_dir)
  try:
    service.start(workers, *dispatcher_args)
    yield service
  finally:
    service.stop()

"""A build run as a cluster runs it: Beam's portable path, a job service and a pool of SDK
workers that are processes of their own (what Flink and Spark use for Python), both from
`apache-beam` on this machine. Its records are those of the local build, byte for byte."""

from __future__ import annotations

import contextlib
import os
import pathlib
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import apache_beam as beam
import pytest

import korean_food
from photo_datasets import testing
from photo_datasets.catalog import fingerprint
from photo_datasets.testing import build, loopback

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"


def _wait_for(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
  deadline = time.monotonic() + seconds
  while time.monotonic() < deadline:
    if process.poll() is not None:
      raise RuntimeError(f"{process.args} ended ({process.returncode}) before listening on {port}")
    with socket.socket() as probe:  # Not `create_connection`: the suite's network guard refuses it.
      if probe.connect_ex(("127.0.0.1", port)) == 0:
        return
    time.sleep(0.2)
  raise TimeoutError(f"nothing listens on port {port} after {seconds} s")


def _private_tmp_works() -> bool:
  """Whether this process may give a child a mount namespace with a `/tmp` of its own."""
  return shutil.which("unshare") is not None and subprocess.run(
      ["unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs none /tmp"],
      capture_output=True).returncode == 0


def _private_tmp_keeping(prefix: str, hold: pathlib.Path) -> str:
  """The shell commands that mount an empty `/tmp`, keeping this Python's environment (CI makes
  its venv in `/tmp`) where it was: held at `hold` (outside `/tmp`) meanwhile."""
  if not os.path.realpath(prefix).startswith("/tmp/"):
    return "mount -t tmpfs none /tmp"
  hold.mkdir()
  prefix, hold_dir = shlex.quote(os.path.realpath(prefix)), shlex.quote(os.fspath(hold))
  return (f"mount --bind {prefix} {hold_dir} && mount -t tmpfs none /tmp && "
          f"mkdir -p {prefix} && mount --bind {hold_dir} {prefix}")


@contextlib.contextmanager
def _portable(logs: pathlib.Path, *, private_tmp: bool
              ) -> Iterator[beam.options.pipeline_options.PipelineOptions]:
  """A job service and an external worker pool on loopback, as docs/building.md starts them; the
  pool starts `python` from PATH, this one's. With `private_tmp` the pool runs as on another
  host: in a mount namespace of its own, whose `/tmp` is empty and not the launcher's."""
  job_port, pool_port = loopback.free_port(), loopback.free_port()
  env = {**os.environ,
         "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}"}
  pool = [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
          "--service_port", str(pool_port)]
  if private_tmp:
    pool = ["unshare", "-m", "--propagation", "private", "sh", "-c",
            f"{_private_tmp_keeping(sys.prefix, logs / 'python')} && exec {shlex.join(pool)}"]
  services = []
  try:
    for name, args in (("job_service", [sys.executable, "-m",
                                        "apache_beam.runners.portability.local_job_service_main",
                                        "--port", str(job_port)]),
                       ("worker_pool", pool)):
      with open(logs / f"{name}.log", "wb") as log:
        services.append(subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT))
    _wait_for(job_port, services[0])
    _wait_for(pool_port, services[1])
    yield beam.options.pipeline_options.PipelineOptions([
        "--runner=PortableRunner", f"--job_endpoint=localhost:{job_port}",
        "--environment_type=EXTERNAL", f"--environment_config=localhost:{pool_port}"])
  finally:
    for service in services:
      service.terminate()
      with contextlib.suppress(subprocess.TimeoutExpired):
        service.wait(timeout=30)


@pytest.fixture(scope="module")
def portable_options(tmp_path_factory) -> Iterator[beam.options.pipeline_options.PipelineOptions]:
  with _portable(tmp_path_factory.mktemp("beam_services"), private_tmp=False) as options:
    yield options


@pytest.mark.parametrize("config", ["224", "full"])
def test_a_portable_build_gives_the_local_build_byte_for_byte(portable_options, tmp_path, config):
  local = build(f"korean_food/{config}", tmp_path / "local", SAMPLE)
  portable = build(f"korean_food/{config}", tmp_path / "portable", SAMPLE,
                   beam_options=portable_options)
  kept = fingerprint.sha256_of(portable.info.metadata)
  assert kept and kept == fingerprint.sha256_of(local.info.metadata)
  # The record files are those the fingerprint names, hashed again.
  assert fingerprint.verify(portable.data_dir, portable.info.metadata, expected=kept) == kept
  assert portable.info.metadata["skipped_files"] == local.info.metadata["skipped_files"]
  assert [name for name in os.listdir(portable.data_dir) if name.startswith("beam-")] == []


def test_a_pool_on_another_host_gives_the_local_build_byte_for_byte():
  """The worker pool sees the manual and data dirs (shared storage, here /var/tmp) but not the
  launcher's `/tmp`: every file a worker reads was written where both see it."""
  if not _private_tmp_works():
    testing.missing("mount_namespace", "cannot give the worker pool a /tmp of its own "
                    "(unshare -m needs root)")
  shared = pathlib.Path(tempfile.mkdtemp(prefix="shared-storage-", dir="/var/tmp"))
  try:
    manual_dir = shared / "manual"
    shutil.copytree(SAMPLE, manual_dir)
    with _portable(shared, private_tmp=True) as options:
      remote = build("korean_food/224", shared / "portable", manual_dir, beam_options=options)
    local = build("korean_food/224", shared / "local", manual_dir)
    kept = fingerprint.sha256_of(remote.info.metadata)
    assert kept and kept == fingerprint.sha256_of(local.info.metadata)
    assert fingerprint.verify(remote.data_dir, remote.info.metadata, expected=kept) == kept
  finally:
    shutil.rmtree(shared, ignore_errors=True)

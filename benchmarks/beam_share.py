"""The launcher's share of a Beam build's CPU, run as a cluster runs it.

  python benchmarks/beam_share.py [--photos 2000] [--config 224] [--workdir /tmp/beam_share]

Starts Beam's job service and an external worker pool on this machine (the
portable path Flink and Spark use for Python; docs/building.md), builds the
config of a `kfood.zip` of realistic photos (`benchmark_corpus`) with plain
`tfds build ... --beam_pipeline_options=runner=PortableRunner,...`, and samples
/proc every half second for the CPU of the `tfds build` process tree (the
launcher, its scan's worker processes included) and of the worker pool's
tree (the SDK workers). The launcher's start-up (a `tfds build` of the config
already built: imports, TFDS's checks; the median of three) is measured apart
and left out of its share, as the goal asks. On a cluster only the pool's work spreads over
machines: the launcher's share is what one machine still does. Then the same
`tfds build` without Beam (the package's own worker pool, every core), into a
data dir of its own, for the two builds' times side by side, and whether the
two builds wrote the same record files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

from photo_datasets.testing import loopback

import harness  # benchmarks/harness.py


def _sampled_cpu(process: subprocess.Popen[bytes], pool: int | None = None) -> tuple[float, float]:
  """CPU seconds of `process`'s tree and the growth of `pool`'s (if given) while `process` runs."""
  roots = {"launcher": process.pid, **({"pool": pool} if pool is not None else {})}
  seen: dict[str, dict[int, int]] = {tree: {} for tree in roots}
  before = sum(harness.tree_cpu_ticks(pool).values()) if pool is not None else 0
  while process.poll() is None:
    for tree, root in roots.items():
      seen[tree].update(harness.tree_cpu_ticks(root))
    time.sleep(0.5)
  ticks = {tree: sum(by_pid.values()) for tree, by_pid in seen.items()}
  pool_ticks = ticks.get("pool", before) - before
  return ticks["launcher"] / harness.CLOCK_TICKS, pool_ticks / harness.CLOCK_TICKS


def _record_hashes(data_dir: str) -> dict[str, str]:
  """The SHA-256 of each record file a build wrote in `data_dir`, by its path there."""
  root = pathlib.Path(data_dir)
  return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
          for path in sorted(root.rglob("*.tfrecord-*"))}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--photos", type=int, default=2000)
  parser.add_argument("--config", default="224")
  parser.add_argument("--workdir", default="/tmp/beam_share")
  args = parser.parse_args()
  source, corpus = harness.made_corpus(args.workdir, args.photos)
  data_dir = os.path.join(args.workdir, "data")
  shutil.rmtree(data_dir, ignore_errors=True)
  job_port, pool_port = loopback.free_port(), loopback.free_port()
  services = [subprocess.Popen([sys.executable, "-m", module, flag, str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
              for module, flag, port in (
                  ("apache_beam.runners.portability.local_job_service_main", "--port", job_port),
                  ("apache_beam.runners.worker.worker_pool_main", "--service_port", pool_port))]
  command = ["tfds", "build", "korean_food", "--imports", "korean_food", "--config", args.config,
             "--data_dir", data_dir, "--manual_dir", source]
  options = (f"--beam_pipeline_options=runner=PortableRunner,job_endpoint=localhost:{job_port},"
             f"environment_type=EXTERNAL,environment_config=localhost:{pool_port}")
  try:
    time.sleep(10)  # Both services listening.
    start = time.perf_counter()
    with open(os.path.join(args.workdir, "build.log"), "wb") as log:
      build = subprocess.Popen([*command, options], stdout=log, stderr=subprocess.STDOUT)
      launcher, pool = _sampled_cpu(build, services[1].pid)
    wall = time.perf_counter() - start
    if build.returncode:
      raise SystemExit(f"the build failed ({build.returncode}): {args.workdir}/build.log")
    startups = []
    for _ in range(3):  # The config built: start-up alone; its median, as it varies by a second.
      again = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
      startups.append(_sampled_cpu(again)[0])
    startup = statistics.median(startups)
  finally:
    for service in services:
      service.terminate()
  local_dir = os.path.join(args.workdir, "data_local")
  shutil.rmtree(local_dir, ignore_errors=True)
  start = time.perf_counter()
  local = subprocess.Popen([*command[:-4], "--data_dir", local_dir, *command[-2:]],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  local_cpu, _ = _sampled_cpu(local)
  local_wall = time.perf_counter() - start
  if local.returncode:
    raise SystemExit(f"the local build failed ({local.returncode})")
  work = launcher - startup
  portable_records, local_records = (_record_hashes(d) for d in (data_dir, local_dir))
  report = {"corpus": corpus, "photos": args.photos, "config": args.config,
            "wall_seconds": round(wall, 1), "launcher_cpu_seconds": round(launcher, 1),
            "launcher_startup_cpu_seconds": round(startup, 1),
            "pool_cpu_seconds": round(pool, 1),
            "launcher_share_beyond_startup": round(work / (work + pool), 3),
            "local_wall_seconds": round(local_wall, 1), "local_cpu_seconds": round(local_cpu, 1),
            "record_files": len(local_records),
            "same_records_as_local": bool(local_records) and portable_records == local_records,
            "machine": harness.machine()}
  print(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
  main()

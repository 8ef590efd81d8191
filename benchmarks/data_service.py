"""What the tf.data service costs and gives: `training_dataset` in-process vs through the service.

  python benchmarks/data_service.py [--photos DIR] [--images 2000] [--batch_size 64]
      [--repeats 3] [--workdir DIR] [--json out.json]

On the same photos, in one run, `pipeline.training_dataset("korean_food/224",
split="all")` (no seed, the fast unordered decoding) is read

1. in-process;
2. through a tf.data service on this machine with one worker, compression off
   (what `photo_datasets.reading.data_service` does);
3. the same with compression on (`"AUTO"`: snappy on the worker, undone in the trainer);
4. the same, compression off, without the lost-worker watchdog (the cost of the watchdog);
5. through the service with two workers, compression off.

The dispatcher and the workers are processes of `python -m
photo_datasets data_service` on loopback, started here and killed at the end.
Photos come from `--photos` (a folder with a kfood.zip, or a tree of class
folders) or from `benchmarks/benchmark_corpus.py` (`--images` of them, cached
in the workdir): mosaics of the real photos in ../shared/realdata, or
generated pictures where that folder is absent; the output names which. The
`224` config is built from them once (kept in the workdir).

Each row makes a warm-up pass of a few batches, then `--repeats` timed epochs;
the rows take turns epoch by epoch, so a change in the machine's load touches
them all alike. The median epoch counts. CPU seconds are counted for the
trainer and for the service's processes (from /proc), so images per
CPU-second say what the service costs in work, not only in time.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import tensorflow_datasets as tfds  # noqa: E402

import korean_food  # noqa: E402,F401  (registers the builder)
from photo_datasets.reading import data_service, pipeline  # noqa: E402
from photo_datasets.testing import loopback  # noqa: E402

import harness  # noqa: E402  (benchmarks/harness.py, beside this script)

NAME = "korean_food/224"
SPLIT = "all"
WARMUP_BATCHES = 3
REPO = pathlib.Path(__file__).resolve().parents[1]
ROWS = {
    "in_process": "1 in-process training_dataset",
    "service_1": "2 service, 1 worker, compression off",
    "service_1_compressed": "3 service, 1 worker, compression AUTO (snappy)",
    "service_1_unwatched": "4 service, 1 worker, compression off, no watchdog",
    "service_2": "5 service, 2 workers, compression off",
}


class LocalService(loopback.LoopbackService):
  """The loopback service, and the CPU time of its processes."""

  def cpu_seconds(self) -> float:
    return sum(harness.process_cpu_seconds(process.pid) for process in self.processes)


def photos_dir(photos: str | None, workdir: str, count: int) -> tuple[str, str]:
  """(folder the builder reads, the corpus's name)."""
  return (photos, f"--photos {photos}") if photos else harness.made_corpus(workdir, count)


@dataclasses.dataclass
class Epoch:
  """One timed pass: its images and when its first batch, its last batch and its end came."""

  images: int
  first_s: float  # From the start of the pass to the first batch.
  last_s: float  # To the last batch.
  end_s: float  # To the end of the pass.

  @property
  def rate(self) -> float:
    return self.images / self.end_s

  def steady_rate(self, batch_size: int) -> float:
    """Images per second between the first batch and the last."""
    return (self.images - batch_size) / max(self.last_s - self.first_s, 1e-9)


def epoch(ds: tf.data.Dataset, batches: int | None = None) -> Epoch:
  """One pass over `ds` (or over its first `batches`)."""
  images = 0
  start = time.perf_counter()
  first = last = 0.0
  for index, (batch, _) in enumerate(ds):
    last = time.perf_counter() - start
    first = first or last
    images += int(batch.shape[0])
    if batches is not None and index + 1 >= batches:
      break
  return Epoch(images, first, last, time.perf_counter() - start)


def measure(makers: dict[str, Callable[[], tf.data.Dataset]],
            services: dict[str, LocalService | None],
            repeats: int, batch_size: int) -> dict[str, dict[str, Any]]:
  datasets = {key: make() for key, make in makers.items()}
  for ds in datasets.values():
    epoch(ds, WARMUP_BATCHES)

  def row(key: str) -> Callable[[], dict[str, float]]:
    def run() -> dict[str, float]:
      service = services[key]
      cpu_before = time.process_time() + (service.cpu_seconds() if service else 0.0)
      timed = epoch(datasets[key])
      cpu = time.process_time() + (service.cpu_seconds() if service else 0.0) - cpu_before
      return {"images": timed.images, "rates": round(timed.rate, 1),
              "steady_rates": round(timed.steady_rate(batch_size), 1),
              "first_batch_s": round(timed.first_s, 3),
              "end_wait_s": round(timed.end_s - timed.last_s, 3), "cpu_seconds": round(cpu, 2)}
    return run

  results = harness.in_turns({key: row(key) for key in makers}, repeats)
  for result in results.values():
    result["images"] = result["images"][-1]
    result["median"] = result["median_rates"]
    result["per_cpu_second"] = round(result["images"] / result["median_cpu_seconds"], 1)
  return results


def table(report: dict[str, Any]) -> str:
  rows = report["rows"]
  base = rows["in_process"]["median"]
  lines = [
      f"{report['photos']} photos ({report['source']}), {NAME} split={SPLIT!r}, "
      f"batch {report['batch_size']}, {report['repeats']} timed epochs per row (medians)",
      f"machine: {report['cores']} cores usable; TF {tf.__version__}; "
      f"load average before {report['load_before']}, after {report['load_after']}",
      "",
      f"{'row':50} {'images':>6} {'images/s':>8} {'x (1)':>5} {'steady':>7} {'first s':>7} "
      f"{'end s':>6} {'/CPU-s':>6}  epochs, images/s",
  ]
  for key, label in ROWS.items():
    row = rows[key]
    spread = ", ".join(f"{rate:,.0f}" for rate in row["rates"])
    lines.append(f"{label:50} {row['images']:6d} {row['median']:8,.0f} {row['median'] / base:5.2f} "
                 f"{row['median_steady_rates']:7,.0f} {row['median_first_batch_s']:7.2f} "
                 f"{row['median_end_wait_s']:6.2f} {row['per_cpu_second']:6,.0f}  {spread}")
  lines += [
      "(images/s: whole epochs; steady: images/s between an epoch's first and last batch; "
      "first s: seconds to",
      " the first batch; end s: from the last batch to the end of the epoch; "
      "/CPU-s: images per CPU-second of",
      " the trainer and the service's processes together)",
  ]
  return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--photos",
                      help="a folder with kfood.zip or class folders; default: benchmark_corpus")
  parser.add_argument("--images", type=int, default=2000,
                      help="photos made when --photos is not given")
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--repeats", type=int, default=3, help="timed epochs per row")
  parser.add_argument("--workdir", default="/tmp/photo_datasets_data_service_bench")
  parser.add_argument("--json",
                      help="write the results here (default <workdir>/data_service_benchmark.json)")
  args = parser.parse_args(argv)
  os.makedirs(args.workdir, exist_ok=True)
  source, corpus = photos_dir(args.photos, args.workdir, args.images)
  data_dir, build_seconds = harness.built(NAME, source, args.workdir)
  photos = tfds.builder(NAME, data_dir=data_dir).info.splits[SPLIT].num_examples
  log_dir = os.path.join(args.workdir, "logs")
  os.makedirs(log_dir, exist_ok=True)
  one, two = (LocalService(pathlib.Path(log_dir) / "one"),
              LocalService(pathlib.Path(log_dir) / "two"))
  try:
    for service, workers in ((one, 1), (two, 2)):
      service.log_dir.mkdir(exist_ok=True)
      service.start(workers)
    def make(service: LocalService | None, **options: Any) -> Callable[[], tf.data.Dataset]:
      served = data_service.Service(service.address, **options) if service else None
      return lambda: pipeline.training_dataset(NAME, split=SPLIT, batch_size=args.batch_size,
                                               data_dir=data_dir, data_service=served)

    makers = {"in_process": make(None), "service_1": make(one),
              "service_1_compressed": make(one, compression="AUTO"),
              "service_1_unwatched": make(one, watchdog=False), "service_2": make(two)}
    services = {"in_process": None, "service_1": one, "service_1_compressed": one,
                "service_1_unwatched": one, "service_2": two}
    load_before = harness.load_average()
    results = measure(makers, services, args.repeats, args.batch_size)
    load_after = harness.load_average()
  finally:
    one.stop()
    two.stop()
  report = {
      "machine": harness.machine(), "source": f"{corpus} in {source}", "photos": photos,
      "batch_size": args.batch_size, "repeats": args.repeats,
      "build_seconds": round(build_seconds, 1), "cores": len(os.sched_getaffinity(0)),
      "load_before": load_before, "load_after": load_after, "rows": results,
  }
  print(table(report))
  harness.write_json(report, args.json or os.path.join(args.workdir, "data_service_benchmark.json"))
  return report


if __name__ == "__main__":
  main()

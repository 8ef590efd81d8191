"""What every benchmark here shares: the machine, the photos, a build to measure, CPU time, rows
timed in turns.

  from harness import ...   # Scripts in benchmarks/ run as `python benchmarks/NAME.py`.

* `machine()`: the CPU, cores, memory and library versions a result was measured with.
* `made_corpus(workdir, count)`: `benchmark_corpus`'s kfood.zip of `count` photos (mosaics of the
  real photos in ../shared/realdata, or generated pictures where it is absent), kept in `workdir`
  for later runs.
* `built(name, source, workdir)`: a data dir with config `name` built from `source`, kept while
  the source is.
* `cpu_seconds(children=...)`: CPU seconds of this process, and of the processes it started;
  `process_cpu_seconds(pid)` for any one process.
* `in_turns(rows, repeats)`: each row's timed passes taking turns, so a change in the machine's load
  touches every row alike; medians.
* `write_json(report, path)`: the results, with the command that produced them.
"""

from __future__ import annotations

import io
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from PIL import Image

import benchmark_corpus

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def machine() -> dict[str, Any]:
  """The CPU model, cores, memory and the versions of what reads and builds."""
  import keras
  import PIL
  import tensorflow as tf
  import tensorflow_datasets as tfds

  info: dict[str, Any] = {
      "cpu_model": platform.processor() or "unknown",
      "cores_in_machine": os.cpu_count(),
      "cores_usable": len(os.sched_getaffinity(0)),
      "python": platform.python_version(),
      "tensorflow": tf.__version__,
      "tensorflow_datasets": tfds.__version__,
      "keras": keras.__version__,
      "pillow": PIL.__version__,
      "load_average": load_average(),
  }
  try:
    with open("/proc/cpuinfo") as cpuinfo:
      models = [line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")]
    if models:
      info["cpu_model"] = models[0]
    with open("/proc/meminfo") as meminfo:
      total = next(line for line in meminfo if line.startswith("MemTotal:"))
    info["memory_gb"] = round(int(total.split()[1]) / 2**20, 1)
  except (OSError, StopIteration):
    pass
  return info


def load_average() -> list[float]:
  return [round(x, 2) for x in os.getloadavg()]


def cpu_ticks() -> list[int]:
  """The machine's CPU time so far, all CPUs, by kind (`/proc/stat`); [] where unknown."""
  try:
    with open("/proc/stat") as stat:
      return [int(field) for field in stat.readline().split()[1:]]
  except (OSError, ValueError):
    return []


def steal_share(before: list[int], after: list[int]) -> float | None:
  """The share of every CPU's time between two `cpu_ticks` that the hypervisor gave to other
  machines (steal, the eighth field): on a VM, what a run's speed does not owe to the code."""
  if len(before) < 8 or len(after) < 8:
    return None
  spent = [b - a for a, b in zip(before[:8], after[:8], strict=True)]
  return spent[7] / max(sum(spent), 1)


def made_corpus(workdir: str, count: int,
                realdata: Any = benchmark_corpus.REALDATA) -> tuple[str, str]:
  """(folder, corpus name) of `benchmark_corpus`'s kfood.zip of `count` photos, made once and kept
  (`realdata` None: generated pictures)."""
  name = benchmark_corpus.corpus_name(realdata)
  root = os.path.join(workdir, f"{name.split()[0]}_{count}")
  done = os.path.join(root, "COMPLETE")
  if not os.path.exists(done):
    shutil.rmtree(root, ignore_errors=True)
    print(f"making {count} {name} photos in {root} ...", flush=True)
    benchmark_corpus.write_kfood_zip(root, count, realdata=realdata)
    open(done, "w").close()
  return root, name


def built(name: str, source: str, workdir: str, folder: str = "data") -> tuple[str, float]:
  """(data dir holding config `name` built from `source`, build seconds; 0 when kept from an
  earlier run)."""
  import tensorflow_datasets as tfds

  from photo_datasets import testing

  data_dir = os.path.join(workdir, folder)
  marker = os.path.join(data_dir, f"SOURCE-{name.replace('/', '-')}")
  if (os.path.exists(marker) and open(marker).read() == source
      and tfds.builder(name, data_dir=data_dir).is_prepared()):
    # Built from this source by an earlier run, at the dataset's current version.
    return data_dir, 0.0
  tfds.disable_progress_bar()
  start = time.perf_counter()
  testing.build(name, data_dir, source)
  with open(marker, "w") as out:
    out.write(source)
  return data_dir, time.perf_counter() - start


def process_cpu_seconds(pid: int) -> float:
  """User + system CPU seconds of process `pid` (every thread), from /proc; 0 when it is gone."""
  try:
    with open(f"/proc/{pid}/stat") as stat:
      fields = stat.read().rsplit(")", 1)[1].split()
  except OSError:
    return 0.0
  return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def tree_cpu_ticks(root: int) -> dict[int, int]:
  """Clock ticks of CPU (user + system) of process `root` and of every live process below it,
  by pid, from /proc."""
  parents: dict[int, int] = {}
  ticks: dict[int, int] = {}
  for entry in os.listdir("/proc"):
    if not entry.isdigit():
      continue
    try:
      with open(f"/proc/{entry}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:  # Gone meanwhile.
      continue
    parents[int(entry)] = int(fields[1])
    ticks[int(entry)] = int(fields[11]) + int(fields[12])  # utime + stime.
  found, frontier = {root}, {root}
  while frontier:
    frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
    found |= frontier
  return {pid: ticks[pid] for pid in found if pid in ticks}


def _descendants_cpu_seconds() -> float:
  """CPU seconds of the live processes this one started, and theirs, from /proc."""
  below = tree_cpu_ticks(os.getpid())
  return sum(ticks for pid, ticks in below.items() if pid != os.getpid()) / CLOCK_TICKS


def cpu_seconds(children: bool = False) -> float:
  """CPU seconds of this process, and of the live processes it started if `children`."""
  return time.process_time() + (_descendants_cpu_seconds()
                                if children and os.path.isdir("/proc") else 0.0)


def in_turns(
    rows: Mapping[str, Callable[[], Mapping[str, float]]], repeats: int,
    say: Callable[[str, int, Mapping[str, float]], None] | None = None,
) -> dict[str, dict[str, Any]]:
  """Runs each row's pass `repeats` times, the rows taking turns; each pass returns figures by name
  (e.g. images, seconds, cpu_seconds). Returns per row every figure's list and its median."""
  results: dict[str, dict[str, Any]] = {key: {} for key in rows}
  for repeat in range(repeats):
    for key, run in rows.items():
      figures = run()
      for field, value in figures.items():
        results[key].setdefault(field, []).append(value)
      if say:
        say(key, repeat, figures)
  for result in results.values():
    for field, values in list(result.items()):
      result[f"median_{field}"] = statistics.median(values)
  return results


def write_json(report: dict[str, Any], path: str) -> None:
  """`report`, with the command line that produced it, as JSON at `path`."""
  report = {"command": " ".join([os.path.relpath(sys.argv[0]), *sys.argv[1:]]), **report}
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, "w") as file:
    json.dump(report, file, indent=1)
  print(f"results: {path}")


def naive_loop(manual_dir: str) -> tuple[int, float]:
  """(photos, seconds) of the hand-written one-core pipeline."""
  from korean_food import corpus
  from photo_datasets.photos.images import IMAGE_SUFFIXES
  start, count = time.perf_counter(), 0
  for file, read in corpus.walk(manual_dir):
    if not file.name.lower().endswith(IMAGE_SUFFIXES):
      continue
    with Image.open(io.BytesIO(read())) as image:
      small = image.convert("RGB").resize((224, 224), Image.BICUBIC)
    small.save(io.BytesIO(), "JPEG", quality=92)
    count += 1
  return count, time.perf_counter() - start

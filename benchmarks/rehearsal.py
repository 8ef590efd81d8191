"""A build of the whole corpus as a user runs it: full size, real layout, plain `tfds build`.

  python benchmarks/rehearsal.py [--workdir /tmp/rehearsal] [--photos 150513] [--keep]

Makes a `kfood.zip` like AIHub's from `benchmarks/benchmark_corpus.py`
(realistic photos made from the real ones in ../shared/realdata, generated
pictures where that folder is absent): every one of the 150 classes with its
real photo count (classes.tsv, 150,513 photos in all; `--photos N` scales the
counts down), one stored inner zip per group (27), the outer archive ZIP64,
and a `crop_area.properties` per class (a `[sections]` line, CRLF, a box for
about a quarter of the photos, a few malformed lines). The photos are scaled
to the real corpus's mean of about 106 KB (16 GB in all).

Then it runs `tfds build korean_food --imports korean_food --manual_dir ...`
(every config) in a fresh process and reports: the time, against the naive
one-core loop over the same photos (`harness.naive_loop`, one config) run right
after it, the peak memory of
the whole process tree (the sum of each process's PSS, so pages that forked
workers share are counted once), the peak disk use of the data dir's
filesystem above what it used before, whether every photo arrived in
both configs (the file names of every split read back), and the series and
near-copy groups with the split shares (overall, and the class farthest from
80/10/10). Not part of the test
suite: it takes about an hour on 2 cores and some 40 GB of disk.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from typing import Any

from PIL import Image

from photo_datasets.building import parallel
from photo_datasets.photos.splits import SPLIT_SHARES as SHARES

import benchmark_corpus
import harness  # benchmarks/harness.py

# Photos shrunk by this much per side weigh about the real corpus's 106 KB
# (16 GB / 150,513; the real photos in ../shared weigh 148 KB on average).
_SHRINK = 0.75


def _classes() -> list[tuple[int, str, str, int]]:
  """(index, super-category, name, photos) of every class, from classes.tsv."""
  path = pathlib.Path(__file__).resolve().parents[1] / "korean_food" / "classes.tsv"
  rows = [line.split("\t") for line in path.read_text("utf-8").splitlines()[1:]]
  return [(int(r[0]), r[1], r[3], int(r[6])) for r in rows]


class _Photo:
  """Picklable maker of one rehearsal photo."""

  def __init__(self, realdata: pathlib.Path | None):
    self.realdata = realdata

  def __call__(self, seed: int) -> bytes:
    if self.realdata is None:
      return benchmark_corpus.generated_photo(seed)
    return benchmark_corpus.realistic_photo(seed, self.realdata, scale=_SHRINK)


def _fail(seed: int) -> bytes:
  raise RuntimeError(f"making photo {seed} killed its worker")


def _crop_file(names: list[str], sizes: list[tuple[int, int]], rng: random.Random) -> bytes:
  lines = ["[sections]"]
  for name, (width, height) in zip(names, sizes, strict=True):
    if rng.random() < 0.25:
      w, h = rng.randint(width // 3, width), rng.randint(height // 3, height)
      lines.append(f"{name.rsplit('.', 1)[0]}={rng.randint(0, width - w)},"
                   f"{rng.randint(0, height - h)},{w},{h}")
  lines += ["=,986,590", "Img_999_9999=dissimilar"]  # Malformed, as reported.
  return ("\r\n".join(lines) + "\r\n").encode("ascii")


def make_corpus(root: pathlib.Path, total: int, realdata: pathlib.Path | None) -> dict[str, int]:
  """Writes root/kfood.zip; returns the photos per group."""
  classes = _classes()
  scale = total / sum(count for *_, count in classes)
  rng = random.Random(0)
  plan: dict[str, list[tuple[int, str, int]]] = {}
  for index, group, name, count in classes:
    plan.setdefault(group, []).append((index, name, max(1, round(count * scale))))
  root.mkdir(parents=True, exist_ok=True)
  made = {}
  seed = 0
  maker = _Photo(realdata)
  maker(0)  # Loads the real photos once, here: every forked worker then has them.
  with zipfile.ZipFile(root / "kfood.zip.partial", "w", zipfile.ZIP_STORED,
                       allowZip64=True) as outer:
    for group, foods in sorted(plan.items()):
      with tempfile.TemporaryFile(dir=root) as spool:
        with zipfile.ZipFile(spool, "w", zipfile.ZIP_STORED, allowZip64=True) as inner:
          for index, name, count in foods:
            seeds = range(seed, seed + count)
            seed += count
            names, sizes = [], []
            for number, data in enumerate(parallel.ordered_map(maker, seeds,
                                                               workers=parallel.default_workers(),
                                                               on_crash=_fail)):
              file_name = f"Img_{index:03d}_{number:04d}.jpg"
              with Image.open(io.BytesIO(data)) as image:
                sizes.append(image.size)
              names.append(file_name)
              inner.writestr(f"{group}/{name}/{file_name}", data)
            inner.writestr(f"{group}/{name}/crop_area.properties", _crop_file(names, sizes, rng))
            made[group] = made.get(group, 0) + count
        spool.seek(0)
        with outer.open(f"{group}.zip", "w", force_zip64=True) as member:
          shutil.copyfileobj(spool, member, 1 << 20)
      print(f"  {group}.zip: {made[group]} photos", flush=True)
  os.replace(root / "kfood.zip.partial", root / "kfood.zip")
  return made


def _tree(pid: int) -> list[int]:
  pids, stack = [], [pid]
  while stack:
    current = stack.pop()
    pids.append(current)
    for task in pathlib.Path(f"/proc/{current}/task").glob("*"):
      try:
        stack += [int(child) for child in (task / "children").read_text().split()]
      except OSError:
        pass
  return pids


def _pss_bytes(pid: int) -> int:
  try:
    for line in pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
      if line.startswith("Pss:"):
        return int(line.split()[1]) * 1024
  except OSError:
    pass
  return 0


# Reading a process's smaps_rollup walks its page tables: every build process's, twice a second,
# took about 16 % of a core during the full-size build (by ps), on the 2 cores the build is timed
# on. 5 s is short beside the full-size build's phases (minutes each).
WATCH_SECONDS = 5.0


def build(manual_dir: pathlib.Path, data_dir: pathlib.Path, log: pathlib.Path) -> dict[str, float]:
  """`tfds build korean_food` in a fresh process, its memory and disk watched every
  `WATCH_SECONDS`."""
  command = ["tfds", "build", "korean_food", "--imports", "korean_food",
             "--manual_dir", str(manual_dir), "--data_dir", str(data_dir)]
  print("running: " + " ".join(command), flush=True)
  data_dir.mkdir(parents=True, exist_ok=True)
  used_before = shutil.disk_usage(data_dir).used
  peaks = {"memory": 0, "disk": 0}
  start = time.monotonic()
  with open(log, "w") as out:
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)

    def watch() -> None:
      while process.poll() is None:
        peaks["memory"] = max(peaks["memory"], sum(_pss_bytes(p) for p in _tree(process.pid)))
        peaks["disk"] = max(peaks["disk"], shutil.disk_usage(data_dir).used - used_before)
        time.sleep(WATCH_SECONDS)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    returncode = process.wait()
    watcher.join()
  if returncode:
    raise SystemExit(f"tfds build failed ({returncode}); see {log}")
  return {"seconds": time.monotonic() - start, "peak_memory_gb": peaks["memory"] / 1e9,
          "peak_disk_gb": peaks["disk"] / 1e9}


def arrived(data_dir: pathlib.Path) -> dict[str, dict[str, int]]:
  """Per config: examples per split and distinct file names, read back from the records."""
  import tensorflow as tf
  import tensorflow_datasets as tfds

  import korean_food  # noqa: F401  (registers the builder)
  found = {}
  for config in ("224", "full"):
    builder = tfds.builder(f"korean_food/{config}", data_dir=str(data_dir))
    names: set[bytes] = set()
    counts = {}
    for split in builder.info.splits:
      ds = builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()},
                              read_config=tfds.ReadConfig(try_autocache=False))
      ds = ds.map(lambda example: example["file_name"],
                  num_parallel_calls=tf.data.AUTOTUNE).batch(4096)
      before = len(names)
      for batch in ds.as_numpy_iterator():
        names.update(batch.tolist())
      counts[split] = len(names) - before
    found[config] = {**counts, "distinct file names": len(names),
                     "skipped": len(builder.info.metadata["skipped_files"])}
  found["groups"] = groups_and_shares(builder.info.metadata)
  return found


def groups_and_shares(metadata: dict[str, Any]) -> dict[str, object]:
  """The series and near-copy groups (`metadata["series"]`, `["near_duplicates"]`), the largest
  group of both joined where they touch, and the split shares: overall, and the farthest class from
  80/10/10."""
  parent: dict[str, str] = {}

  def root(name: str) -> str:
    while parent.setdefault(name, name) != name:
      name = parent[name]
    return name

  series = metadata.get("series", [])  # Absent from builds before the series rule.
  for group in series + metadata["near_duplicates"]:
    for name in group["files"][1:]:
      parent[root(name)] = root(group["files"][0])
  sizes = collections.Counter(root(name) for name in list(parent))
  counts = metadata["class_counts"]
  totals = [sum(row) for row in zip(*counts.values(), strict=True)]
  shares = {split: sum(row) / sum(totals) for split, row in counts.items()}
  worst = max((abs(row[i] / totals[i] - share) for split, row in counts.items()
               for share in [dict(SHARES)[split]] for i in range(len(totals)) if totals[i]),
              default=0.0)
  return {"series": len(series), "photos in series": sum(len(g["files"]) for g in series),
          "largest series": max((len(g["files"]) for g in series), default=0),
          "largest group": max(sizes.values(), default=0),
          "split shares": {split: round(share, 4) for split, share in shares.items()},
          "largest deviation of a class's share": round(worst, 3)}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--workdir", default="/tmp/rehearsal")
  parser.add_argument("--photos", type=int, default=150_513)
  parser.add_argument("--keep", action="store_true", help="keep the corpus and the data dir")
  args = parser.parse_args()
  workdir = pathlib.Path(args.workdir)
  manual, data = workdir / "manual", workdir / "data"
  realdata = (benchmark_corpus.REALDATA
              if benchmark_corpus.corpus_name() == benchmark_corpus.REALISTIC else None)
  report: dict[str, object] = {"corpus": benchmark_corpus.corpus_name(),
                               "cores": len(os.sched_getaffinity(0))}
  if not (manual / "kfood.zip").exists():
    shutil.rmtree(workdir, ignore_errors=True)
    start = time.monotonic()
    print(f"making {args.photos} photos in {manual} ...", flush=True)
    report["groups"] = make_corpus(manual, args.photos, realdata)
    report["making_minutes"] = (time.monotonic() - start) / 60
  size = (manual / "kfood.zip").stat().st_size
  with zipfile.ZipFile(manual / "kfood.zip") as outer:
    report["inner_zips"] = len(outer.namelist())
  report["kfood_zip_gb"] = size / 1e9
  shutil.rmtree(data, ignore_errors=True)
  report["build"] = build(manual, data, workdir / "tfds_build.log")
  photos, naive_seconds = harness.naive_loop(str(manual))  # The same photos, right after, one core.
  report["naive_loop"] = {"photos": photos, "seconds": naive_seconds,
                          "build_over_naive": report["build"]["seconds"] / naive_seconds}
  report["arrived"] = arrived(data)
  report["records_gb"] = {config: sum(p.stat().st_size
                                      for p in (data / "korean_food" / config).rglob("*.tfrecord*"))
                          / 1e9 for config in ("224", "full")}
  report["machine"] = harness.machine()
  print(json.dumps(report, indent=2, ensure_ascii=False))
  harness.write_json(report, str(workdir / "rehearsal.json"))
  if not args.keep:
    shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
  sys.exit(main())

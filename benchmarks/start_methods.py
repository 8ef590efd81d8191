"""Measures a build's wall time under each way workers start, and the cost of a build started
from plain `tfds.builder` (TensorFlow not yet loaded) against one after `import tensorflow`.

  python benchmarks/start_methods.py [--photos N] [--repeats 3] [--rows TEXT] [--json FILE]

Each build is a fresh process into an empty data dir, the rows taking turns (`in_turns`);
medians. Rows: `tfds build korean_food` (every default config) with fork, spawn and forkserver;
a script that builds korean_food/224 with `tfds.builder(...).download_and_prepare()`, with and
without `import tensorflow` first (fork). Source: the real AIHub photos in ../shared/realdata/kfood
(`--photos 0`, the default) or N realistic photos made from them (`benchmark_corpus`). The
script rows also time `download_and_prepare` alone. Checks that the fingerprints agree.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import benchmark_corpus
import harness

_BUILD_SCRIPT = """
import sys, time
if sys.argv[3] == "tf first":
  import tensorflow  # noqa: F401
import tensorflow_datasets as tfds
import korean_food
start = time.perf_counter()
builder = tfds.builder("korean_food/224", data_dir=sys.argv[1])
builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=sys.argv[2]))
print("BUILD SECONDS", time.perf_counter() - start)
"""


def _fingerprints(data_dir: str) -> dict[str, str]:
  return {str(path.parent.parent.name): json.loads(path.read_text())["fingerprint"]["sha256"]
          for path in pathlib.Path(data_dir).glob("korean_food/*/*/metadata.json")}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--photos", type=int, default=0, help="0: the real photos")
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "start_methods"))
  parser.add_argument("--rows", default="", help="only the rows whose name has this text")
  parser.add_argument("--json")
  args = parser.parse_args()
  if args.photos:
    source, corpus = harness.made_corpus(args.workdir, args.photos)
  else:
    source, corpus = os.fspath(benchmark_corpus.REALDATA), "the real AIHub photos"
  tfds_script = shutil.which("tfds", path=os.path.dirname(sys.executable)) or "tfds"
  data_dir = os.path.join(args.workdir, "data")
  prints: dict[str, list[dict[str, str]]] = {}

  def row(key: str, command: list[str], method: str) -> Callable[[], dict[str, float]]:
    def one() -> dict[str, float]:
      shutil.rmtree(data_dir, ignore_errors=True)
      env = {**os.environ, "PHOTO_DATASETS_START_METHOD": method, "TF_CPP_MIN_LOG_LEVEL": "2"}
      start = time.perf_counter()
      done = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
      figures = {"seconds": round(time.perf_counter() - start, 2)}
      for line in done.stdout.splitlines():
        if line.startswith("BUILD SECONDS "):  # The script's build alone, less its imports.
          figures["build_seconds"] = round(float(line.split()[-1]), 2)
      prints.setdefault(key, []).append(_fingerprints(data_dir))
      return figures
    return one

  rows = {f"tfds build, {method}": row(
      f"tfds build, {method}", [sys.executable, tfds_script, "build", "korean_food", "--imports",
                                "korean_food", "--manual_dir", source, "--data_dir", data_dir],
      method) for method in ("fork", "spawn", "forkserver")}
  for how in ("plain tfds.builder", "tf first"):
    rows[f"224 script, {how}"] = row(
        f"224 script, {how}", [sys.executable, "-c", _BUILD_SCRIPT, data_dir, source, how], "fork")
  rows = {key: run for key, run in rows.items() if args.rows in key}
  results = harness.in_turns(rows, args.repeats,
                             say=lambda key, i, figures: print(key, i, figures, flush=True))
  agree = {key: all(p == found[0] for p in found) for key, found in prints.items()}
  methods = {json.dumps(found[0], sort_keys=True)
             for key, found in prints.items() if key.startswith("tfds build")}
  across = len(methods) == 1 if methods else None
  report = {"machine": harness.machine(), "corpus": corpus, "source": source,
            "results": results, "fingerprints_agree_within_rows": agree,
            "fingerprints_agree_across_start_methods": across, "fingerprints": prints}
  for key, result in results.items():
    build = (f", the build alone {result['median_build_seconds']:.1f} s"
             if "median_build_seconds" in result else "")
    print(f"{key}: median {result['median_seconds']:.1f} s{build}")
  print("fingerprints agree within rows:", agree, "across start methods:", across)
  if args.json:
    harness.write_json(report, args.json)


if __name__ == "__main__":
  main()

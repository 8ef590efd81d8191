"""The series matching of this checkout beside an earlier commit's, in one run.

Matches the window's pairs of real photos with `photo_datasets.photos.series`
as it is in the working tree and as it was at `--before` (that commit's
`series.py`, loaded from git beside it), in alternating passes: the 47 AIHub
photos of ../shared/realdata/kfood in their classes and `Img_XXX_YYYY` order
(read in place, never copied; skipped where absent) and the 100 flowers of
flowers_dataset/sample in Flickr id order. Each pass is `series.groups` on one
core (`map`, as the scan's grouping worker runs a class), CPU time; the table
gives medians, per photo and per window pair, and their ratio. The links and
the groups must be the same in both, in every pass, or it stops. Both match
this checkout's features (`series.describe`), so only the matching differs.
Beside them, on the same photos in the same passes, each one's features (its
`describe`) and the naive loop (`build.py`'s: open, RGB, resize to 224,
encode), so that the whole series per photo reads as a share of the loop.

  python benchmarks/series_matching.py --before REV [--repeats 9] [--json]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import pathlib
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable, Sequence
from typing import Any

from flowers_dataset.flowers_dataset_dataset_builder import flickr_id
from korean_food.listing import series_position
from photo_datasets.photos import images, series
from photo_datasets.photos.records import class_folder

REPO = pathlib.Path(__file__).resolve().parents[1]
KFOOD = REPO.parent / "shared" / "realdata" / "kfood"
FLOWERS = REPO / "flowers_dataset" / "sample" / "flower_photos"


def series_at(revision: str) -> types.ModuleType:
  """`photo_datasets/photos/series.py` as it was at `revision`, as a module of its own."""
  source = subprocess.run(
      ["git", "-C", str(REPO), "show", f"{revision}:photo_datasets/photos/series.py"],
      capture_output=True, text=True, check=True).stdout
  spec = importlib.util.spec_from_loader(f"series_at_{revision}", loader=None)
  assert spec
  module = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = module  # Its dataclasses look their module up.
  exec(compile(source, f"{revision}:series.py", "exec"), module.__dict__)
  return module


class Corpus:
  """Real photos of one corpus in their classes, their bytes and features."""

  def __init__(self, label: str, root: pathlib.Path, pattern: str,
               position: Callable[[str], int | None]) -> None:
    self.label = label
    paths = sorted(p for p in root.glob(pattern) if p.suffix.lower() in images.IMAGE_SUFFIXES)
    self.names = [p.relative_to(root).as_posix() for p in paths]
    self.data = [p.read_bytes() for p in paths]
    self.pixels = [images.decode_and_inspect(data)[1] for data in self.data]
    self.features = [series.describe(p) for p in self.pixels]
    self.position = position

  def window_pairs(self) -> int:
    sizes: dict[str, int] = {}
    for name in self.names:
      if self.position(name) is not None:
        sizes[class_folder(name)] = sizes.get(class_folder(name), 0) + 1
    return sum(min(series.WINDOW, n - 1 - k) for n in sizes.values() for k in range(n))


def _cpu_ms(work: Callable[[], object]) -> tuple[float, Any]:
  start = time.process_time()
  result = work()
  return (time.process_time() - start) * 1e3, result


def measure(before: types.ModuleType, corpora: Sequence[Corpus], repeats: int) -> dict[str, Any]:
  import build  # benchmarks/build.py, beside this script: its naive loop.

  arms = {"before": before, "after": series}
  linked = {}
  for corpus in corpora:  # Today's features in both: only the matching differs.
    links = [sorted(m.scored_links(corpus.names, corpus.features, corpus.position, class_folder))
             for m in arms.values()]
    if links[0] != links[1]:
      raise SystemExit(f"{corpus.label}: the links differ")
    linked[corpus.label] = len(links[0])
  # CPU ms of each pass: (arm, corpus) for the matching, (step, corpus) for the others.
  times: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
  for _ in range(repeats):  # Alternating, so a change of the machine's load touches all alike.
    for corpus in corpora:
      found = []
      for arm, module in arms.items():
        ms, grouped = _cpu_ms(lambda m=module, c=corpus: m.groups(
            c.names, c.features, c.position, class_folder))
        times[arm, corpus.label].append(ms)
        found.append(grouped)
      if found[0] != found[1]:
        raise SystemExit(f"{corpus.label}: the groups differ")
      for arm, module in arms.items():
        times[f"features {arm}", corpus.label].append(
            _cpu_ms(lambda m=module, c=corpus: [m.describe(p) for p in c.pixels])[0])
      times["naive", corpus.label].append(
          _cpu_ms(lambda c=corpus: [build._naive(d) for d in c.data])[0])
  result: dict[str, Any] = {}
  for corpus in corpora:
    pairs = corpus.window_pairs()
    row = {"photos": len(corpus.names), "window pairs": pairs, "links": linked[corpus.label]}
    for step in (*arms, *(f"features {arm}" for arm in arms), "naive"):
      row[f"{step} ms a photo"] = round(
          statistics.median(times[step, corpus.label]) / len(corpus.names), 3)
    for arm in arms:
      row[f"{arm} ms a window pair"] = round(
          statistics.median(times[arm, corpus.label]) / pairs, 3)
    row["before / after"] = round(row["before ms a photo"] / row["after ms a photo"], 2)
    result[corpus.label] = row
  return result


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--before", required=True,
                      help="the git revision whose series.py is the baseline")
  parser.add_argument("--repeats", type=int, default=9)
  parser.add_argument("--json", action="store_true")
  args = parser.parse_args()
  corpora = [Corpus("flowers", FLOWERS, "*/*", flickr_id)]
  if KFOOD.exists():
    corpora.insert(0, Corpus("kfood", KFOOD, "*/*/*", series_position))
  result = measure(series_at(args.before), corpora, args.repeats)
  if args.json:
    print(json.dumps(result, ensure_ascii=False, indent=1))
    return
  print(f"series matching before ({args.before}) and after (this checkout), CPU on one core, "
        f"median of {args.repeats} alternating passes; the same links and groups in every pass")
  print("| corpus | photos | window pairs | matching before, ms a photo (a pair) | after | "
        "before / after | features before / after, ms a photo | naive loop | "
        "whole series before / after, × naive |")
  print("|---|---|---|---|---|---|---|---|---|")
  for name, row in result.items():
    before, after = row["before ms a photo"], row["after ms a photo"]
    features = row["features before ms a photo"], row["features after ms a photo"]
    naive = row["naive ms a photo"]
    print(f"| {name} | {row['photos']} | {row['window pairs']} | "
          f"{before:.2f} ({row['before ms a window pair']:.2f}) | "
          f"{after:.2f} ({row['after ms a window pair']:.2f}) | {row['before / after']:.2f} | "
          f"{features[0]:.2f} / {features[1]:.2f} | {naive:.2f} | "
          f"{(features[0] + before) / naive:.2f} / {(features[1] + after) / naive:.2f} |")

if __name__ == "__main__":
  main()

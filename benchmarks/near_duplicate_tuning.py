"""Measures `photo_datasets.photos.near_duplicates` on the real photos, to choose THRESHOLD.

For each photo it makes every kind of copy the hashes must survive, hashes it
as the scan does (`images.inspect_image`) and reports the distance to the
original (of the closest region-to-whole pair, and of that pair's keys) and
whether the rule groups them; then the distances between distinct photos, the
false-merge rate per threshold, and the closest pairs among the kfood photos.
The photos are read in place, never copied.

  python benchmarks/near_duplicate_tuning.py [--json] [--kfood DIR] [--flowers DIR]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import pathlib
from typing import Any

import numpy as np

from photo_datasets import testing
from photo_datasets.photos import images, near_duplicates

REPO = pathlib.Path(__file__).resolve().parents[1]
KFOOD = REPO.parent / "shared" / "realdata" / "kfood"
FLOWERS = REPO / "flowers_dataset" / "sample" / "flower_photos"
SUFFIXES = (".jpg", ".jpeg", ".png")
THRESHOLDS = tuple(range(40, 97, 8))
# Two shots of one bowl seconds apart (spoon moved), found by eye among the closest pairs.
TWO_SHOTS = ("찌개/순두부찌개/Img_123_0002.JPG", "찌개/순두부찌개/Img_123_0004.JPG")


def photos(folder: pathlib.Path) -> list[pathlib.Path]:
  return sorted(p for p in folder.rglob("*") if p.suffix.lower() in SUFFIXES)


def scan_hashes(data: bytes) -> bytes:
  """The photo's hashes, as the scan computes them."""
  return images.inspect_image(data).hashes


def copy_hashes(data: bytes) -> dict[str, bytes]:
  """The hashes of each kind of copy (`testing.near_copies`) of the photo `data`."""
  return {kind: scan_hashes(copy) for kind, copy in testing.near_copies(data).items()}


def summary(values: list[int]) -> dict[str, float]:
  array = np.array(values)
  return {"max": int(array.max()), "p50": float(np.percentile(array, 50)),
          "p99": float(np.percentile(array, 99))}


def grouped(a: bytes, b: bytes) -> bool:
  return near_duplicates.groups([a, b]) == [[0, 1]]


def measure(files: list[pathlib.Path], kfood: list[pathlib.Path]) -> dict[str, Any]:
  originals: list[bytes] = []
  per_kind: dict[str, list[tuple[int, int, bool]]] = collections.defaultdict(list)
  for path in files:
    data = path.read_bytes()
    original = scan_hashes(data)
    originals.append(original)
    for kind, value in copy_hashes(data).items():
      per_kind[kind].append((*near_duplicates.distance(original, value), grouped(original, value)))
  distinct = np.array([near_duplicates.distance(a, b)[0]
                       for a, b in itertools.combinations(originals, 2)])
  result: dict[str, Any] = {
      "photos": len(files), "hash_bits": near_duplicates.HASH_BYTES * 8,
      "threshold": near_duplicates.THRESHOLD, "key_threshold": near_duplicates.KEY_THRESHOLD,
      "copies": {kind: summary([d for d, _, _ in values]) for kind, values in per_kind.items()},
      "copy_keys": {kind: summary([k for _, k, _ in values]) for kind, values in per_kind.items()},
      "copies_grouped": {kind: float(np.mean([g for _, _, g in values]))
                         for kind, values in per_kind.items()},
      "distinct_pairs": int(distinct.size),
      "distinct_grouped": len(near_duplicates.groups(originals)),
      "distinct_min": int(distinct.min()),
      "distinct_percentiles": {str(q): float(np.percentile(distinct, q)) for q in (0.1, 1, 5)},
      "false_merge_rate": {str(t): float(np.mean(distinct <= t)) for t in THRESHOLDS},
      "false_merges": {str(t): int(np.sum(distinct <= t)) for t in THRESHOLDS},
  }
  index = {path: i for i, path in enumerate(files)}
  pairs = sorted((near_duplicates.distance(originals[index[a]], originals[index[b]])[0],
                  str(a.relative_to(KFOOD)), str(b.relative_to(KFOOD)))
                 for a, b in itertools.combinations(kfood, 2))
  result["kfood_closest"] = [{"distance": d, "a": a, "b": b} for d, a, b in pairs[:3]
                             if (a, b) != TWO_SHOTS]
  result["two_shots"] = next(({"distance": d, "a": a, "b": b} for d, a, b in pairs
                              if (a, b) == TWO_SHOTS), None)
  return result


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
  parser.add_argument("--kfood", type=pathlib.Path, default=KFOOD)
  parser.add_argument("--flowers", type=pathlib.Path, default=FLOWERS)
  args = parser.parse_args()
  kfood = photos(args.kfood) if args.kfood.is_dir() else []
  result = measure(kfood + photos(args.flowers), kfood)
  if args.json:
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return
  threshold = result["threshold"]
  print(f"{result['photos']} photos, {result['hash_bits']}-bit hashes, THRESHOLD={threshold}, "
        f"KEY_THRESHOLD={result['key_threshold']}")
  print(f"{'copy kind':<18} {'max':>4} {'p50':>5} {'p99':>5} {'key max':>8} {'grouped':>8}")
  for kind, s in result["copies"].items():
    key, share = result["copy_keys"][kind], result["copies_grouped"][kind]
    print(f"{kind:<18} {s['max']:>4} {s['p50']:>5.1f} {s['p99']:>5.1f} "
          f"{key['max']:>8} {share:>8.1%}")
  p = result["distinct_percentiles"]
  print(f"distinct pairs: {result['distinct_pairs']}, min {result['distinct_min']}, "
        f"p0.1 {p['0.1']:.0f}, p1 {p['1']:.0f}, p5 {p['5']:.0f}; "
        f"groups among them: {result['distinct_grouped']}")
  print("threshold  false merges  rate")
  for t in THRESHOLDS:
    print(f"{t:>9}  {result['false_merges'][str(t)]:>12}  {result['false_merge_rate'][str(t)]:.2e}")
  labelled = [("kfood closest", pair) for pair in result["kfood_closest"]]
  if result["two_shots"]:
    labelled.append(("two shots of a bowl", result["two_shots"]))
  for label, pair in labelled:
    merged = "merged" if pair["distance"] <= threshold else "not merged"
    print(f"{label}: {pair['distance']:>3} ({merged})  {pair['a']}  {pair['b']}")


if __name__ == "__main__":
  main()

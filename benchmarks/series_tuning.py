"""Measures `photo_datasets.photos.series` on the real photos, to choose THRESHOLD and WINDOW.

The photos are decoded as the scan does (`images.decode_and_inspect`) and read
in place, never copied. For each threshold and window it joins the series of
the 47 AIHub photos in ../shared/realdata/kfood (in `Img_XXX_YYYY` order) and
of the 100 flower photos of flowers_dataset/sample (in Flickr id order) and
counts, over the pairs of photos of one class, the pairs of one ground-truth
series joined (true), the pairs joined that are not (false) and the pairs of
one series left apart (missed); the ground truth is `tests/test_series.py`'s,
written down by looking at every photo. Then the overlap of each kind of copy
(crops, re-encode, flip, a small rotation) with its original, the closest
pairs of different scenes, and the CPU time of the descriptor per photo, side
by side with the scan's other per-photo work. With `--orb` (needs
opencv-python-headless) also ORB features with a RANSAC homography on the
same pairs, and their cost. With `--mosaics N`, also the share of pairs of N
benchmark-corpus photos (`benchmarks/benchmark_corpus.py`, the rehearsal's)
that the threshold links, beside that share among the real photos of one class
that are no series.

  python benchmarks/series_tuning.py [--orb] [--mosaics 300] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import itertools
import json
import pathlib
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from PIL import Image

from flowers_dataset.flowers_dataset_dataset_builder import flickr_id
from korean_food.listing import series_position
from photo_datasets.photos import images, quality, series

REPO = pathlib.Path(__file__).resolve().parents[1]
KFOOD = REPO.parent / "shared" / "realdata" / "kfood"
FLOWERS = REPO / "flowers_dataset" / "sample" / "flower_photos"
THRESHOLDS = (0.62, 0.66, 0.68, 0.70, 0.72, 0.74, 0.76, 0.78, 0.80)
WINDOWS = (2, 4, 8)


def ground_truth() -> list[set[str]]:
  spec = importlib.util.spec_from_file_location("test_series", REPO / "tests" / "test_series.py")
  assert spec and spec.loader
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return [set(group) for group in module.KFOOD_SERIES]


class Corpus:
  """Photos of one corpus, named `<class>/<file>`, decoded as the scan does."""

  def __init__(self, root: pathlib.Path, position: Callable[[str], int | None]):
    self.paths = sorted(p for p in root.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    self.names = [f"{p.parent.name}/{p.name}" if root == FLOWERS else p.relative_to(root).as_posix()
                  for p in self.paths]
    self.pixels = [images.decode_and_inspect(p.read_bytes())[1] for p in self.paths]
    self.features = [series.colour_histogram(p) for p in self.pixels]
    self.position = position


def _folder(name: str) -> str:
  return name.rsplit("/", 2)[-2]


def counts(corpus: Corpus, truth: list[set[str]], threshold: float, window: int) -> dict[str, int]:
  found = series.groups(corpus.names, corpus.features, corpus.position, _folder, threshold, window)
  joined = {frozenset((corpus.names[i], corpus.names[j]))
            for group in found for i, j in itertools.combinations(group, 2)}
  true = {frozenset(pair) for group in truth for pair in itertools.combinations(sorted(group), 2)}
  return {"true": len(joined & true), "false": len(joined - true), "missed": len(true - joined)}


def copies(data: bytes) -> dict[str, Image.Image]:
  """Kinds of change a series (or a copy) shows, of the upright photo."""
  image = images.decode_and_inspect(data)[1]
  w, h = image.size

  def jpeg(picture: Image.Image, q: int) -> Image.Image:
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=q)
    return images.decode_and_inspect(out.getvalue())[1]

  return {
      "reencode_q50": jpeg(image, 50),
      "crop_centre_70": image.crop((int(0.15 * w), int(0.15 * h), int(0.85 * w), int(0.85 * h))),
      "crop_left_half_65": image.crop((0, 0, int(0.65 * w), h)),
      "flip": image.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
      "rotate_8": image.rotate(8, resample=Image.Resampling.BILINEAR, expand=False).crop(
          (int(0.1 * w), int(0.1 * h), int(0.9 * w), int(0.9 * h))),
  }


def cpu_ms(work: Callable[[Image.Image], object], pixels: Sequence[Image.Image], repeats: int = 5) -> float:
  """Median over repeats of the CPU time per photo, in ms."""
  runs = []
  for _ in range(repeats):
    start = time.process_time()
    for p in pixels:
      work(p)
    runs.append(1000 * (time.process_time() - start) / len(pixels))
  return round(statistics.median(runs), 3)


def orb_measure(corpus: Corpus, truth: list[set[str]], window: int) -> dict[str, Any]:
  import cv2  # opencv-python-headless, only for this comparison.

  cv2.setNumThreads(1)
  orb = cv2.ORB_create(nfeatures=200, edgeThreshold=15, patchSize=15)
  matcher = cv2.BFMatcher(cv2.NORM_HAMMING)

  def features(pixels: Image.Image) -> tuple[Any, Any]:
    grey = pixels.convert("L")
    scale = 256 / max(grey.size)
    grey = grey.resize((round(grey.width * scale), round(grey.height * scale)), Image.Resampling.BILINEAR)
    keys, descriptors = orb.detectAndCompute(np.asarray(grey), None)
    return np.float32([k.pt for k in keys]), descriptors

  found = [features(p) for p in corpus.pixels]

  def inliers(a: int, b: int) -> int:
    (pa, da), (pb, db) = found[a], found[b]
    if da is None or db is None or len(da) < 8 or len(db) < 8:
      return 0
    good = [m[0] for m in matcher.knnMatch(da, db, k=2) if len(m) == 2 and m[0].distance < 0.8 * m[1].distance]
    if len(good) < 8:
      return 0
    _, mask = cv2.findHomography(pa[[g.queryIdx for g in good]], pb[[g.trainIdx for g in good]], cv2.RANSAC, 5.0)
    return 0 if mask is None else int(mask.sum())

  series_of = {name: i for i, group in enumerate(truth) for name in group}
  true_scores, false_scores = [], []
  for a, b in itertools.combinations(range(len(corpus.names)), 2):
    na, nb = corpus.names[a], corpus.names[b]
    if _folder(na) != _folder(nb):
      continue
    pa, pb = corpus.position(na), corpus.position(nb)
    if pa is None or pb is None or abs(pa - pb) > window:
      continue
    same = na in series_of and series_of.get(na) == series_of.get(nb)
    (true_scores if same else false_scores).append(inliers(a, b))
  return {"cpu_ms_per_photo": cpu_ms(features, corpus.pixels, 3),
          "true_pair_inliers": sorted(true_scores, reverse=True),
          "false_pair_inliers_top": sorted(false_scores, reverse=True)[:10]}


def link_rates(kfood: Corpus, flowers: Corpus, truth: list[set[str]], mosaics: int) -> dict[str, Any]:
  """Share of pairs at or over THRESHOLD: real photos of one class and no one series, and benchmark mosaics."""
  import benchmark_corpus

  series_of = {name: i for i, group in enumerate(truth) for name in group}
  real = [series.overlap(corpus.features[a], corpus.features[b])
          for corpus in (kfood, flowers) for a, b in itertools.combinations(range(len(corpus.names)), 2)
          if _folder(corpus.names[a]) == _folder(corpus.names[b])
          and not (corpus.names[a] in series_of and series_of[corpus.names[a]] == series_of.get(corpus.names[b]))]
  name, photos = benchmark_corpus.photos(mosaics)
  made = [series.colour_histogram(images.decode_and_inspect(data)[1]) for data in photos]
  fake = [series.overlap(a, b) for a, b in itertools.combinations(made, 2)]

  def row(values: list[float]) -> dict[str, float]:
    return {"pairs": len(values), "median overlap": round(statistics.median(values), 3),
            "share linked": round(sum(v >= series.THRESHOLD for v in values) / len(values), 4)}

  return {"real photos, one class, no series": row(real), f"{mosaics} {name.split(' (')[0]} mosaics": row(fake)}


def measure(orb: bool, mosaics: int = 0) -> dict[str, Any]:
  truth = ground_truth()
  kfood = Corpus(KFOOD, series_position)
  flowers = Corpus(FLOWERS, flickr_id)
  result: dict[str, Any] = {"kfood_photos": len(kfood.names), "flowers_photos": len(flowers.names),
                            "true_pairs": sum(len(g) * (len(g) - 1) // 2 for g in truth)}
  result["rule"] = {f"window {w}": {f"{t:.2f}": {"kfood": counts(kfood, truth, t, w),
                                                  "flowers_false": counts(flowers, [], t, w)["false"]}
                                     for t in THRESHOLDS} for w in WINDOWS}
  by_name = dict(zip(kfood.names, kfood.features, strict=True))
  series_of = {name: i for i, group in enumerate(truth) for name in group}
  pair_overlaps = []
  for a, b in itertools.combinations(kfood.names, 2):
    pa, pb = series_position(a), series_position(b)
    if _folder(a) == _folder(b) and pa is not None and pb is not None and abs(pa - pb) <= series.WINDOW:
      same = a in series_of and series_of.get(a) == series_of.get(b)
      pair_overlaps.append((round(series.overlap(by_name[a], by_name[b]), 3), same, a, b.rsplit("/", 1)[1]))
  pair_overlaps.sort(reverse=True)
  result["kfood_pairs_within_window"] = [list(p) for p in pair_overlaps]
  kinds: dict[str, list[float]] = {}
  for path, feature in zip(kfood.paths + flowers.paths, kfood.features + flowers.features, strict=True):
    for kind, copy in copies(path.read_bytes()).items():
      kinds.setdefault(kind, []).append(series.overlap(feature, series.colour_histogram(copy)))
  result["copies_overlap_min_median"] = {k: [round(min(v), 3), round(statistics.median(v), 3)]
                                         for k, v in kinds.items()}
  every = kfood.pixels + flowers.pixels
  result["cpu_ms_per_photo"] = {
      "series.colour_histogram": cpu_ms(series.colour_histogram, every),
      "quality.measure": cpu_ms(quality.measure, every),
      "near_duplicates.photo_hashes": cpu_ms(lambda p: images.near_duplicates.photo_hashes(p), every),
  }
  if orb:
    result["orb"] = orb_measure(kfood, truth, series.WINDOW)
  if mosaics:
    result["link_rates"] = link_rates(kfood, flowers, truth, mosaics)
  return result


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--orb", action="store_true", help="also measure ORB + RANSAC (needs opencv-python-headless)")
  parser.add_argument("--mosaics", type=int, default=0, help="also the link rate among N benchmark photos")
  parser.add_argument("--json", action="store_true")
  args = parser.parse_args()
  result = measure(args.orb, args.mosaics)
  if args.json:
    print(json.dumps(result, ensure_ascii=False, indent=1))
    return
  print(f"{result['kfood_photos']} kfood photos, {result['flowers_photos']} flowers, "
        f"{result['true_pairs']} true pairs in the ground truth")
  for window, rows in result["rule"].items():
    print(window)
    for t, row in rows.items():
      k = row["kfood"]
      print(f"  threshold {t}: kfood true {k['true']}, false {k['false']}, missed {k['missed']}; "
            f"flowers false {row['flowers_false']}")
  print(f"kfood pairs of one class within {series.WINDOW} numbers, by overlap (the closest 30):")
  for value, same, a, b in result["kfood_pairs_within_window"][:30]:
    print(f"  {value:.3f} {'series ' if same else 'apart  '} {a} ~ {b}")
  print("overlap of copies with their original (min, median):", result["copies_overlap_min_median"])
  print("CPU ms per photo (median of 5 passes):", result["cpu_ms_per_photo"])
  if "orb" in result:
    print("ORB + RANSAC:", result["orb"])
  if "link_rates" in result:
    print("pairs linked by the threshold:", result["link_rates"])


if __name__ == "__main__":
  main()

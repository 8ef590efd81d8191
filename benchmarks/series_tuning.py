"""Measures `photo_datasets.photos.series` on the real photos, to choose its `Rule` and WINDOW.

The photos are decoded as the scan does (`images.decode_and_inspect`) and read
in place, never copied. For each rule (colour alone from SURE, at least
CLOSE_INLIERS keypoints in one geometry from CLOSE, MIN_INLIERS from BAND) and window it joins
the series of the 47 AIHub photos in ../shared/realdata/kfood (in
`Img_XXX_YYYY` order) and of the 100 flower photos of flowers_dataset/sample
(in Flickr id order) and counts, over the pairs of photos of one class, the
pairs of one ground-truth series joined (true), the pairs joined that are not
(false) and the pairs of one series left apart (missed); the ground truth is
`tests/test_series.py`'s, written down by looking at every photo. Beside
them, the hard cases the rule never saw (`tests/test_series.py`'s): each photo
beside a close-up of it (its centre, 30 % and 50 % of its area, and 30 %
around four points off its centre, enlarged back), which must join, and in
each class the three pairs of different photos whose colours overlap most,
which must not. Then the overlap and inliers of
each kind of copy (crops, re-encode, flip, a small rotation) with its
original, the closest pairs of different scenes, and the CPU time of the
features per photo, side by side with the scan's other per-photo work. With
`--mosaics N`, also the share of pairs of N benchmark-corpus photos
(`benchmarks/benchmark_corpus.py`, the rehearsal's) that the rule joins,
beside that share among the real photos of one class that are no series.

With `--keypoint_settings N`, instead: for each ORB setting of `SETTINGS`
(keypoint side, keypoints, scales, scale step, FAST threshold), the counts
above and the second shots of `--second_shots` under the chosen rule, and on
N benchmark-corpus photos the CPU time
per photo the keypoints add to the scan's (the near-copy hashes, then the
whole features, against the hashes, then the colour histogram alone; the
features read the hashes' grey plane as in the scan; alternating passes,
medians) and per matched pair (each photo with the next WINDOW).

With `--steep_views`, instead: each photo beside views of it steeper than
`--second_shots`' (keystone 30 to 45 %, or 40 to 55 % and a turn of up to 15
degrees), in three lights, joined by the chosen rule; with `--before REV`, also
by that revision's `series.py` on the same features.

  python benchmarks/series_tuning.py [--mosaics 300] [--keypoint_settings 300] [--json]
  python benchmarks/series_tuning.py --steep_views [--before REV]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import itertools
import json
import pathlib
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from unittest import mock

from PIL import Image, ImageOps

from flowers_dataset.flowers_dataset_dataset_builder import flickr_id
from korean_food.listing import series_position
from photo_datasets.photos import images, near_duplicates, quality, series

REPO = pathlib.Path(__file__).resolve().parents[1]
KFOOD = REPO.parent / "shared" / "realdata" / "kfood"
FLOWERS = REPO / "flowers_dataset" / "sample" / "flower_photos"
SURES = (0.74, 0.78, 0.80)
# (CLOSE, CLOSE_INLIERS); None: no such tier.
CLOSE = ((0.65, 4), (0.65, 5), (0.70, 4), (0.70, 5), (0.70, 6), (0.72, 5), (None, None))
BANDS = ((0.40, 6), (0.40, 8), (0.40, 10), (0.45, 8), (0.50, 8))
WINDOWS = (2, 4, 8)
# ORB settings (side, keypoints, scales, scale step, FAST threshold): the chosen one first, then
# the one before it (224 px, 4 scales), and cheaper or larger ones.
SETTINGS = ((288, 250, 3, 1.4, 25), (224, 250, 4, 1.4, 20), (288, 250, 3, 1.4, 30),
            (288, 200, 3, 1.4, 35), (256, 250, 3, 1.4, 25), (240, 250, 3, 1.4, 25),
            (288, 250, 4, 1.4, 25))
# Close-ups: the centre of the photo with this share of its area, enlarged back (`close_up`).
ZOOMS = (0.3, 0.5)
# Off-centre close-ups: 30 % of the photo around these points, a third of the way in from two
# edges, enlarged back: a step closer to one side.
OFF_CENTRE = ((0.35, 0.35), (0.65, 0.35), (0.35, 0.65), (0.65, 0.65))


def _test_series() -> Any:
  spec = importlib.util.spec_from_file_location("test_series", REPO / "tests" / "test_series.py")
  assert spec and spec.loader
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def ground_truth() -> list[set[str]]:
  return [set(group) for group in _test_series().KFOOD_SERIES]


class Corpus:
  """Photos of one corpus, named `<class>/<file>`, decoded as the scan does."""

  def __init__(self, root: pathlib.Path, position: Callable[[str], int | None]):
    self.paths = sorted(p for p in root.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    self.names = [f"{p.parent.name}/{p.name}" if root == FLOWERS else p.relative_to(root).as_posix()
                  for p in self.paths]
    self.pixels = [images.decode_and_inspect(p.read_bytes())[1] for p in self.paths]
    self.features = [series.describe(p) for p in self.pixels]
    self.position = position


def _folder(name: str) -> str:
  return name.rsplit("/", 2)[-2]


def counts(corpus: Corpus, truth: list[set[str]], rule: series.Rule, window: int) -> dict[str, int]:
  found = series.groups(corpus.names, corpus.features, corpus.position, _folder, rule, window)
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


def cpu_ms(work: Callable[[Image.Image], object], pixels: Sequence[Image.Image],
           repeats: int = 5) -> float:
  """Median over repeats of the CPU time per photo, in ms."""
  runs = []
  for _ in range(repeats):
    start = time.process_time()
    for p in pixels:
      work(p)
    runs.append(1000 * (time.process_time() - start) / len(pixels))
  return round(statistics.median(runs), 3)


def hard_cases(kfood: Corpus, truth: list[set[str]]) -> dict[str, list[tuple[bytes, bytes]]]:
  """Pairs of features: each photo and each of its close-ups (must join), the look-alikes (must
  not)."""
  tests = _test_series()

  def made(data: bytes) -> bytes:
    return series.describe(images.decode_and_inspect(data)[1])

  cases = {f"close-up {area:.0%}": [(f, made(tests.close_up(p.read_bytes(), area)))
                                    for f, p in zip(kfood.features, kfood.paths, strict=True)]
           for area in ZOOMS}
  cases["close-up 30% off-centre"] = [(f, made(tests.close_up(p.read_bytes(), 0.3, centre)))
                                      for f, p in zip(kfood.features, kfood.paths, strict=True)
                                      for centre in OFF_CENTRE]
  cases["look-alikes"] = [(kfood.features[i], kfood.features[j])
                          for i, j in tests.look_alikes(kfood.names, kfood.features, truth)]
  return cases


def link_rates(kfood: Corpus, flowers: Corpus, truth: list[set[str]],
               mosaics: int) -> dict[str, Any]:
  """Share of pairs the rule joins: real photos of one class and no one series, and benchmark
  mosaics."""
  import benchmark_corpus

  series_of = {name: i for i, group in enumerate(truth) for name in group}
  real = [(corpus.features[a], corpus.features[b])
          for corpus in (kfood, flowers)
          for a, b in itertools.combinations(range(len(corpus.names)), 2)
          if _folder(corpus.names[a]) == _folder(corpus.names[b])
          and not (corpus.names[a] in series_of
                   and series_of[corpus.names[a]] == series_of.get(corpus.names[b]))]
  name, photos = benchmark_corpus.photos(mosaics)
  made = [series.describe(images.decode_and_inspect(data)[1]) for data in photos]
  fake = list(itertools.combinations(made, 2))

  def row(pairs: list[tuple[bytes, bytes]]) -> dict[str, float]:
    overlaps = [series.overlap(a, b) for a, b in pairs]
    matched = sum(series.RULE.inliers_needed(v) not in (0, None) for v in overlaps)
    return {"pairs": len(pairs), "median overlap": round(statistics.median(overlaps), 3),
            "share matched": round(matched / len(pairs), 4),
            "share joined": round(sum(series.joined(a, b) for a, b in pairs) / len(pairs), 4)}

  return {"real photos, one class, no series": row(real),
          f"{mosaics} {name.split(' (')[0]} mosaics": row(fake)}


def measure(mosaics: int = 0) -> dict[str, Any]:
  truth = ground_truth()
  kfood = Corpus(KFOOD, series_position)
  flowers = Corpus(FLOWERS, flickr_id)
  result: dict[str, Any] = {"kfood_photos": len(kfood.names), "flowers_photos": len(flowers.names),
                            "true_pairs": sum(len(g) * (len(g) - 1) // 2 for g in truth)}
  cases = hard_cases(kfood, truth)
  every_inliers = series.inliers
  memo: dict[tuple[bytes, bytes], int] = {}

  def cached(a: bytes, b: bytes, least: int = 3) -> int:
    if (a, b) not in memo:
      memo[a, b] = every_inliers(a, b)  # Every count, whatever the rule needs.
    return memo[a, b]

  # Each hard case's keypoints matched once for the whole sweep (`series.joined`).
  series.inliers = cached  # type: ignore[assignment]
  try:
    rules = {}
    for sure, (close, close_inliers), (band, least) in itertools.product(SURES, CLOSE, BANDS):
      rule = series.Rule(sure, close or sure, close_inliers or least, band, least)
      row: dict[str, Any] = {"kfood": counts(kfood, truth, rule, series.WINDOW),
                             "flowers_false": counts(flowers, [], rule, series.WINDOW)["false"]}
      row.update({kind: sum(series.joined(a, b, rule) for a, b in pairs)
                  for kind, pairs in cases.items()})
      tier = f"{close:.2f} {close_inliers}" if close else "-"
      rules[f"{sure:.2f}, {tier}, {band:.2f} {least}"] = row
    result["rule (sure, close close_inliers, band min_inliers), window 4"] = rules
    chosen = series.RULE
    result["windows, chosen rule"] = {
        w: {"kfood": counts(kfood, truth, chosen, w),
            "flowers_false": counts(flowers, [], chosen, w)["false"]} for w in WINDOWS}
  finally:
    series.inliers = every_inliers  # type: ignore[method-assign]
  result["hard cases"] = {kind: len(pairs) for kind, pairs in cases.items()}
  by_name = dict(zip(kfood.names, kfood.features, strict=True))
  series_of = {name: i for i, group in enumerate(truth) for name in group}
  pair_overlaps = []
  for a, b in itertools.combinations(kfood.names, 2):
    pa, pb = series_position(a), series_position(b)
    if (_folder(a) == _folder(b) and pa is not None and pb is not None
        and abs(pa - pb) <= series.WINDOW):
      same = a in series_of and series_of.get(a) == series_of.get(b)
      pair_overlaps.append((round(series.overlap(by_name[a], by_name[b]), 3),
                            series.inliers(by_name[a], by_name[b]), same, a, b.rsplit("/", 1)[1]))
  pair_overlaps.sort(reverse=True)
  result["kfood_pairs_within_window"] = [list(p) for p in pair_overlaps]
  kinds: dict[str, list[tuple[float, int]]] = {}
  for path, feature in zip(kfood.paths + flowers.paths, kfood.features + flowers.features,
                           strict=True):
    for kind, copy in copies(path.read_bytes()).items():
      other = series.describe(copy)
      kinds.setdefault(kind, []).append((series.overlap(feature, other),
                                         series.inliers(feature, other)))
  result["copies_overlap_inliers_min_median"] = {
      k: [round(min(o for o, _ in v), 3), round(statistics.median(o for o, _ in v), 3),
          min(i for _, i in v), statistics.median(i for _, i in v)] for k, v in kinds.items()}
  every = kfood.pixels + flowers.pixels
  result["cpu_ms_per_photo"] = {
      "series.colour_histogram": cpu_ms(series.colour_histogram, every),
      "series.describe": cpu_ms(series.describe, every),
      "quality.measure": cpu_ms(quality.measure, every),
      "near_duplicates.photo_hashes": cpu_ms(lambda p: images.near_duplicates.photo_hashes(p),
                                             every),
  }
  if mosaics:
    result["link_rates"] = link_rates(kfood, flowers, truth, mosaics)
  return result


@contextlib.contextmanager
def orb_setting(side: int, keypoints: int, levels: int, step: float,
                contrast: int) -> Iterator[None]:
  """`series.describe` with these ORB settings while in the block."""
  names = ("_KEYPOINT_SIDE", "_KEYPOINTS", "_LEVELS", "_SCALE_STEP", "_CORNER_CONTRAST")
  before = [getattr(series, name) for name in names]
  try:
    for name, value in zip(names, (side, keypoints, levels, step, contrast), strict=True):
      setattr(series, name, value)
    vars(series._ORBS).clear()  # This thread's ORB, made anew with the settings.
    yield
  finally:
    for name, value in zip(names, before, strict=True):
      setattr(series, name, value)
    vars(series._ORBS).clear()  # This thread's ORB, made anew with the settings.


def keypoint_settings(count: int, passes: int = 5) -> dict[str, Any]:
  """Each of `SETTINGS`: what the chosen rule finds with it, and what it costs."""
  import benchmark_corpus

  truth = ground_truth()
  kfood, flowers = Corpus(KFOOD, series_position), Corpus(FLOWERS, flickr_id)
  mosaics = [images.decode_and_inspect(data)[1] for data in benchmark_corpus.photos(count)[1]]

  def scan_ms(features: Callable[[Image.Image], object]) -> float:
    start = time.process_time()
    for pixels in mosaics:
      near_duplicates.photo_hashes(pixels)  # As the scan: the hashes first, their grey plane kept.
      features(pixels)
    return 1000 * (time.process_time() - start) / len(mosaics)

  found: dict[str, dict[str, Any]] = {}
  costs: dict[str, list[float]] = {"colour": []}
  # Alternating, so a change of the machine's load touches every setting alike.
  for _ in range(passes):
    costs["colour"].append(scan_ms(series.colour_histogram))
    for setting in SETTINGS:
      with orb_setting(*setting):
        costs.setdefault(str(setting), []).append(scan_ms(series.describe))
  for setting in SETTINGS:
    with orb_setting(*setting):
      for corpus in (kfood, flowers):
        corpus.features = [series.describe(p) for p in corpus.pixels]
      row: dict[str, Any] = {
          "kfood": counts(kfood, truth, series.RULE, series.WINDOW),
          "flowers_false": counts(flowers, [], series.RULE, series.WINDOW)["false"]}
      row.update({kind: sum(series.joined(a, b) for a, b in pairs)
                  for kind, pairs in hard_cases(kfood, truth).items()})
      made = [series.describe(p) for p in mosaics]
      neighbours = [(made[i], made[j]) for i in range(len(made))
                    for j in range(i + 1, min(i + series.WINDOW + 1, len(made)))]
      start = time.process_time()
      for a, b in neighbours:
        series.inliers(a, b)
      row["ms per matched pair"] = round(1000 * (time.process_time() - start) / len(neighbours), 3)
      row["keypoints per photo"] = round(statistics.mean(
          (len(f) - series.HISTOGRAM_BYTES) // series.KEYPOINT_BYTES for f in made))
      row["ms per photo over the colour rule"] = round(
          statistics.median(costs[str(setting)]) - statistics.median(costs["colour"]), 3)
      # The second shots and their look-alikes under the chosen rule, both halves.
      shots = second_shots((series.RULE.strong_inliers,), older=False)
      row.update(next(iter(shots.values())))
      found[str(setting)] = row
  return {"photos": count, "settings": found}


STRONGS = (8, 10, 12, 15, None)  # STRONG_INLIERS tried by --second_shots; None: never below BAND.


def _joined(pairs: list[tuple[bool, bytes, bytes]], held: bool, rule: series.Rule) -> str:
  """How many of `pairs` in one half (`held` out or not) `rule` joins, of how many."""
  half = [(a, b) for h, a, b in pairs if h == held]
  return f"{sum(series.joined(a, b, rule) for a, b in half)} / {len(half)}"


def second_shots(strongs: Sequence[int | None] = STRONGS, older: bool = True) -> dict[str, Any]:
  """Each kfood and flowers photo's second shots (`shots.second_shot`, two of each kind) beside it,
  which must join, and the look-alikes (four a class) with their second plate as a second shot of
  each kind, which must not; for each STRONG_INLIERS of `strongs` (and with `older`, version
  1.5.0's rule), the counts joined on the photos the parameters were chosen on and on the
  held-out rest (`shots.held_out`)."""
  from photo_datasets.testing import shots

  truth = ground_truth()
  corpora = (Corpus(KFOOD, series_position), Corpus(FLOWERS, flickr_id))
  made = {kind: [] for kind in shots.KINDS}  # (held out, first, second)
  looks: dict[str, list[tuple[bool, bytes, bytes]]] = {
      kind: [] for kind in ("unchanged", *shots.KINDS)}
  tests = _test_series()
  for corpus in corpora:
    for name, path, features in zip(corpus.names, corpus.paths, corpus.features, strict=True):
      for kind in shots.KINDS:
        for variant in range(2):
          second = series.describe(images.decode_and_inspect(
              shots.second_shot(path.read_bytes(), name, kind, variant))[1])
          made[kind].append((shots.held_out(name), features, second))
    for i, j in tests.look_alikes(corpus.names, corpus.features, truth, per_class=4):
      held = shots.held_out(corpus.names[i] + corpus.names[j])
      looks["unchanged"].append((held, corpus.features[i], corpus.features[j]))
      for kind in shots.KINDS:
        second = shots.second_shot(corpus.paths[j].read_bytes(), corpus.names[j], kind)
        looks[kind].append((held, corpus.features[i],
                            series.describe(images.decode_and_inspect(second)[1])))
  result: dict[str, Any] = {}
  arms = [(f"STRONG_INLIERS {strong or 'never'}", strong, {}) for strong in strongs]
  if older:
    arms.append(("version 1.5.0's rule (a similarity alone, never below BAND)", None,
                 {"_homography": lambda points_a, points_b, least: 0}))
  for arm, strong, patches in arms:
    rule = series.Rule(strong_inliers=strong)
    row = {}
    with contextlib.ExitStack() as stack:
      for attribute, value in patches.items():
        stack.enter_context(mock.patch.object(series, attribute, value))
      for part, held in (("chosen on", False), ("held out", True)):
        row[part] = {
            **{f"second shots {kind}": _joined(pairs, held, rule) for kind, pairs in made.items()},
            **{f"look-alikes {kind}": _joined(pairs, held, rule) for kind, pairs in looks.items()}}
    result[arm] = row
  return result


# Views steeper than `shots`' "angle" (keystone, widest turn in degrees), each in three lights:
# cases harder than those the rule was chosen on.
STEEP = {"keystone 30-45 %": ((0.30, 0.45), 8), "keystone 40-55 %, turn 15": ((0.40, 0.55), 15)}
STEEP_LIGHTS = ("unchanged", "brightness", "white balance")


def steep_views(before: str | None) -> dict[str, Any]:
  """Each kfood and flowers photo beside two views of it of each of `STEEP` in each of
  `STEEP_LIGHTS` (a JPEG at quality 80): the pairs the chosen rule joins, and with `before`, the
  pairs that revision's `series.py` joins on the same features."""
  import hashlib

  import numpy as np
  from series_matching import series_at

  from photo_datasets.testing import shots

  rules = {"this checkout": series, **({f"at {before}": series_at(before)} if before else {})}
  pairs: dict[str, list[tuple[bytes, bytes]]] = {}
  for corpus in (Corpus(KFOOD, series_position), Corpus(FLOWERS, flickr_id)):
    for name, path, features in zip(corpus.names, corpus.paths, corpus.features, strict=True):
      with Image.open(path) as opened:
        photo = ImageOps.exif_transpose(opened).convert("RGB")
      for view, (keystone, turn) in STEEP.items():
        for variant in range(2):
          seed = hashlib.sha256(f"{name}\0{view}\0{variant}".encode()).digest()
          rng = np.random.default_rng(int.from_bytes(seed[:8], "little"))
          moved = shots._angle(photo, rng, keystone, turn)
          for light in STEEP_LIGHTS:
            lit = moved if light == "unchanged" else shots._light(moved, light, rng)
            second = images.decode_and_inspect(shots._jpeg(lit, 80))[1]
            pairs.setdefault(f"{view}, {light}", []).append((features, series.describe(second)))
  return {label: {kind: f"{sum(module.joined(a, b) for a, b in made)} / {len(made)}"
                  for kind, made in pairs.items()}
          for label, module in rules.items()}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--mosaics", type=int, default=0,
                      help="also the share joined among N benchmark photos")
  parser.add_argument("--keypoint_settings", type=int, default=0,
                      help="instead, each ORB setting's counts and cost, on N benchmark photos")
  parser.add_argument("--second_shots", action="store_true",
                      help="instead, second shots and look-alikes under each kind of change, "
                           "both halves")
  parser.add_argument("--steep_views", action="store_true",
                      help="instead, views steeper than --second_shots' angles, in three lights")
  parser.add_argument("--before", metavar="REV",
                      help="with --steep_views, also that revision's series.py")
  parser.add_argument("--json", action="store_true")
  args = parser.parse_args()
  if args.steep_views:
    print(json.dumps(steep_views(args.before), ensure_ascii=False, indent=1))
    return
  if args.second_shots:
    print(json.dumps(second_shots(), ensure_ascii=False, indent=1))
    return
  if args.keypoint_settings:
    settings = keypoint_settings(args.keypoint_settings)
    if args.json:
      print(json.dumps(settings, ensure_ascii=False, indent=1))
      return
    print(f"ORB settings (side, keypoints, scales, step, FAST threshold), the chosen rule; CPU on "
          f"{settings['photos']} benchmark photos, median of 5 alternating passes:")
    for setting, row in settings["settings"].items():
      print(f"  {setting}: {row}")
    return
  result = measure(args.mosaics)
  if args.json:
    print(json.dumps(result, ensure_ascii=False, indent=1))
    return
  print(f"{result['kfood_photos']} kfood photos, {result['flowers_photos']} flowers, "
        f"{result['true_pairs']} true pairs in the ground truth; "
        f"hard cases: {result['hard cases']}")
  print("rule (colour alone from SURE; from CLOSE, CLOSE_INLIERS keypoints; from BAND, "
        "MIN_INLIERS), window 4:")
  for rule, row in result["rule (sure, close close_inliers, band min_inliers), window 4"].items():
    k = row["kfood"]
    hard = ", ".join(f"{kind} {row[kind]}" for kind in result["hard cases"])
    print(f"  {rule}: kfood true {k['true']}, false {k['false']}, missed {k['missed']}; "
          f"flowers false {row['flowers_false']}; joined: {hard}")
  print("the chosen rule by window:", result["windows, chosen rule"])
  print(f"kfood pairs of one class within {series.WINDOW} numbers, by overlap (the closest 30; "
        "overlap, inliers):")
  for value, count, same, a, b in result["kfood_pairs_within_window"][:30]:
    print(f"  {value:.3f} {count:3d} {'series ' if same else 'apart  '} {a} ~ {b}")
  print("copies beside their original (overlap min, median; inliers min, median):",
        result["copies_overlap_inliers_min_median"])
  print("CPU ms per photo (median of 5 passes):", result["cpu_ms_per_photo"])
  if "link_rates" in result:
    print("pairs joined by the rule:", result["link_rates"])


if __name__ == "__main__":
  main()

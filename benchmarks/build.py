"""Build throughput of `korean_food` against a naive one-core PIL loop, and memory.

  python benchmarks/build.py [--photos DIR] [--images 3000] [--rss 10000 40000]

Photos come from DIR (any layout the builder reads: kfood.zip, group zips or
an extracted tree) or from `benchmarks/benchmark_corpus.py`, in a kfood.zip of
stored inner zips as AIHub ships it: distinct mosaics of the real photos in
../shared/realdata at AIHub's sizes and JPEG qualities where that folder is
present, generated pictures otherwise. Every table names the corpus it ran on.

On the same photos, side by side, it times:
* the naive loop: one core, each photo read, opened with PIL, converted to RGB,
  resized to 224x224 and encoded as JPEG;
* `tfds build`-equivalent builds of `korean_food/224` (scan included) with 1
  worker and with every core, then `full` reusing the scan;
* reading the `224` train split with `tfds.load(batch_size=64)`.
Each build runs in its own process, timed from after TensorFlow's import (about
3 s that `tfds build` pays once, whatever the corpus size). Peak RSS is that
of the main process (`VmHWM`) and of the largest worker (`getrusage`; it
counts the pages a forked worker shares with the main process). `--rss A B`
also builds `224` from A and from B generated photos and compares the peaks.

`--main_cpu A B` measures instead what the main process spends per photo
beyond start-up, with the package's writer (records written by the workers)
and with TFDS's own writer side by side: `224` (scan included) then `full`
(scan reused) built from A and from B photos, the difference of the main
process's CPU seconds over B - A photos.

`--steps` times instead each step of one photo's work on one core, against
the naive loop in the same run: the scan's decode and hashes, its quality
scores, series features (after the hashes, whose grey plane they read, as in
the scan) and SHA-256, the conversion, the record's encoding and
serialisation, and the series matching at the corpus's density (the real
photos' own window pairs, `--series`'s population of 2,000, in one process);
then the series' whole (features and matching). Every step runs once a round,
`--rounds R` rounds (3 by default): each step's share is of the naive loop
of its own round, and the table gives medians.

`--decode_scales` measures instead what a JPEG's DCT scale does to the stored
`224` image and to its cost: each photo decoded by libjpeg-turbo at the scan's
scale (1/8, 1/4, 1/2 or whole, the largest reduction that keeps 224 px on the
short side), at libjpeg's finest (the smallest M/8 that keeps them) and whole,
its centre square resized as the conversion resizes it; the decode and resize
on one core (median of `--rounds` passes), and the image's sharpness (its
Laplacian's variance) and PSNR against a Lanczos resize of the whole decode.

`--near_duplicates` measures instead the cost of the near-duplicate rule: the
perceptual hashes per photo (the scan with them against the scan without) and
the grouping of 150,000 photos' hashes, in one search and in 2, 4 and 8 parts
(each part alone, one after the other: the longest is what the grouping phase
waits for on many workers).

`--download_forms R` measures instead what reading the download as AIHub
sends it costs: `224` builds (scan included, every core) of the same kfood.zip
as it is, as its pieces named by offset (`--piece_mb`, 16 by default: more
piece boundaries per photo than AIHub's 1 GiB), as `download.tar` holding
them, and joined in name order, interleaved, R rounds; it prints the medians
of wall seconds and of CPU seconds (main process and workers) per photo, and
each form's ratio to kfood.zip. On a shared machine quote the CPU-second ratio.

`--series` measures instead the cost of the series rule: the scan's per-photo
work (`scan._Inspect`) without the series features, with the colour histogram
alone and with the whole features, in CPU time per photo, alternating passes
over the same photos (medians) with the naive loop's work on them, so the
keypoints' cost prints as a share of this machine's naive loop too; then `series.groups`
over `--series_photos` (150,513) photos in 150 classes, each with the features
of one of those photos drawn at random, held as a scan holds them
(`series.FeatureFile`: the bytes the main process keeps for them, traced by
tracemalloc, beside the bytes of the features themselves), the pairwise work
(a window of neighbours per photo, the share of those pairs whose keypoints
are matched, matched as the scan does on a worker pool of every core, and
the CPU time of the grouping, main process and workers, per matched pair)
and the largest series it makes of photos that are no series.

`--rounds R` compares instead only the `224` build with every core (scan included)
with the naive loop, alternating them R times over the same photos: each
round's ratio of their rates and the median. This VM's speed drifts within a
run; a ratio of neighbouring passes does not. Each round also gives the share of
the machine's CPU time the hypervisor gave to other machines during each pass
(steal, from `/proc/stat`) and the build's CPU time a photo (main process and
workers), and the run the median of its rounds whose passes lost under 1 % to
steal.

`--phases` times instead one `224` build with every core in this process,
phase by phase: each worker phase from its pool's start to its end, and its
workers' CPU.

`--phase_start 2 8 32` measures instead what a phase of one item costs on N
fork workers, TensorFlow loaded as in a build: told the phase's size (a list,
or `size=` as the writer gives it), one worker forks; not told (an iterator),
N do.

`--scaling 1 2 4 8 16` measures instead how the per-photo work of a `224`
build (scan: full decode check and SHA-256; conversion: decode at reduced
scale, resize, encode) spreads over N workers through the package's worker
pool, on photos held in memory. It needs neither TensorFlow nor TFDS, so it
runs on any machine with Pillow and numpy, and shows the scaling a machine
with more cores than this one would see (reading and TFDS's writer excluded).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import glob
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from typing import Any
from unittest import mock

import numpy as np
from PIL import Image

from photo_datasets.photos import records

import benchmark_corpus
import harness  # benchmarks/harness.py


def _build_work(data: bytes) -> int:
  """What a `224` build does per photo in its workers: scan, then convert."""
  from photo_datasets.photos import images, splits
  check = images.inspect_image(data)
  splits.content_digest(data)
  return len(images.encode_image(data, check, size=224))


def _naive(data: bytes) -> None:
  """The naive loop's work on one photo: open, RGB, resize to 224, encode."""
  with Image.open(io.BytesIO(data)) as image:
    small = image.convert("RGB").resize((224, 224), Image.BICUBIC)
  small.save(io.BytesIO(), "JPEG", quality=92)


def steps(count: int, rounds: int) -> None:
  """Where one photo's time goes, step by step, on one core (photos in memory): every step once a
  round, `rounds` rounds, each step's share of the naive loop of its own round."""
  from photo_datasets.photos import images, near_duplicates, quality, series, splits
  name, photos = benchmark_corpus.photos(count)
  scanned = [images.decode_and_inspect(data) for data in photos]

  def full_decode(data: bytes) -> None:
    with Image.open(io.BytesIO(data)) as image:
      image.load()

  timed = {
      "naive loop: open, RGB, resize 224, encode": (_naive, photos),
      "  of which the full decode": (full_decode, photos),
      "scan: one decode (224 px kept), check and hashes": (images.decode_and_inspect, photos),
      "  of which the near-copy hashes": (near_duplicates.photo_hashes,
                                          [pixels for _, pixels in scanned]),
      "scan: quality scores": (quality.measure, [pixels for _, pixels in scanned]),
      # As the scan pays them: after the hashes, whose grey plane the keypoints read.
      "scan: series features (colour and keypoints)": (series.describe,
                                                       [pixels for _, pixels in scanned],
                                                       near_duplicates.grey),
      "  of which the colour histogram": (series.colour_histogram,
                                          [pixels for _, pixels in scanned]),
      "scan: SHA-256": (splits.content_digest, photos),
      "conversion to 224 from the scan's pixels": (
          lambda item: images.encode_image(b"", item[0], size=224, decoded=item[1]), scanned),
      "conversion to 224 from a decode of its own": (
          lambda item: images.encode_image(item[0], item[1][0], size=224),
          list(zip(photos, scanned, strict=True))),
  }
  converted = [images.encode_image(b"", check, size=224, decoded=pixels)
               for check, pixels in scanned]
  timed["the record: encode and serialise the example"] = (_record_serialiser(), converted)
  features = [series.describe(pixels) for _, pixels in scanned]
  kind, names, every = _window_population(2_000, features, *_random_population(2_000, features))
  matching = f"series matching at the corpus's density ({kind}, one process)"
  timed[matching] = (_series_matching(names), [every])  # One run over every photo.
  features_label = "scan: series features (colour and keypoints)"
  ms: dict[str, list[float]] = collections.defaultdict(list)
  for _ in range(rounds):
    for label, (step, items, *before) in timed.items():
      seconds = _seconds(step, items, *before)
      ms[label].append(seconds / (len(names) if label == matching else len(items)) * 1e3)
    ms["the series: features and matching"].append(ms[features_label][-1] + ms[matching][-1])
  naive = ms[next(iter(timed))]  # The first row's, round by round.
  print(f"{count} {name} photos ({sum(map(len, photos)) / count / 1e3:.0f} KB on average), "
        f"one core, {rounds} rounds of every step; ms per photo and share of the naive loop of "
        "the same round, medians:")
  for label, times in ms.items():
    shares = [t / n for t, n in zip(times, naive, strict=True)]
    print(f"  {label:58} {statistics.median(times):6.2f} {statistics.median(shares):5.0%}")


def decode_scales(count: int, rounds: int) -> None:
  """The stored `224` image and its decode and resize at each DCT scale rule (module docstring)."""
  import cv2
  import simplejpeg

  from photo_datasets.photos import images
  name, photos = benchmark_corpus.photos(count)
  jpegs = []
  for data in photos:
    with contextlib.suppress(ValueError):  # simplejpeg reads no header it cannot scale.
      height, width = simplejpeg.decode_jpeg_header(data)[:2]
      jpegs.append((data, width, height, 8 // images.scan_reduction(images.inspect_image(data))))

  def scaled(width: int, height: int, eighths: int) -> dict[str, int]:
    return {"min_width": -(-width * eighths // 8), "min_height": -(-height * eighths // 8)}

  def square(pixels: np.ndarray, method: Image.Resampling) -> np.ndarray:
    height, width = pixels.shape[:2]
    side = min(width, height)
    top, left = (height - side) // 2, (width - side) // 2
    image = Image.fromarray(np.ascontiguousarray(pixels[top:top + side, left:left + side]))
    return np.asarray(image.resize((224, 224), method, reducing_gap=3.0 if method ==
                                   Image.Resampling.BICUBIC else None))

  def sharpness(pixels: np.ndarray) -> float:
    grey = cv2.cvtColor(pixels, cv2.COLOR_RGB2GRAY).astype(np.float32)
    return float(cv2.Laplacian(grey, cv2.CV_32F).var())

  def psnr(a: np.ndarray, b: np.ndarray) -> float:
    error = np.mean((a.astype(np.float64) - b) ** 2)
    return float(10 * np.log10(255**2 / max(error, 1e-9)))

  rules = {"the scan's": lambda w, h, scan: scan,
           "libjpeg's finest M/8": lambda w, h, scan: next(
               (m for m in range(1, 8) if -(-min(w, h) * m // 8) >= 224), 8),
           "whole": lambda w, h, scan: 8}
  references = [square(simplejpeg.decode_jpeg(data), Image.Resampling.LANCZOS)
                for data, *_ in jpegs]
  scales = {label: [rule(width, height, scan) for _, width, height, scan in jpegs]
            for label, rule in rules.items()}

  def stored(label: str) -> list[np.ndarray]:
    return [square(simplejpeg.decode_jpeg(data, **scaled(width, height, eighths)),
                   Image.Resampling.BICUBIC)
            for (data, width, height, _), eighths in zip(jpegs, scales[label], strict=True)]

  passes: dict[str, list[float]] = collections.defaultdict(list)
  for _ in range(rounds):  # The rules alternate: the machine's drift falls on each alike.
    for label in rules:
      start = time.process_time()
      stored(label)
      passes[label].append((time.process_time() - start) / len(jpegs) * 1e3)
  print(f"{len(jpegs)} {name} JPEGs: decoded at each rule's DCT scale, the centre square resized "
        "to 224 (bicubic, as the conversion); ms a photo on one core (median of "
        f"{rounds} alternating passes), and against a Lanczos resize of the whole decode, medians: "
        "the sharpness's ratio and the PSNR, of every photo and of those decoded at a reduced "
        "scale")
  for label in rules:
    images_224 = stored(label)
    ratios = [sharpness(a) / max(sharpness(b), 1e-9)
              for a, b in zip(images_224, references, strict=True)]
    decibels = [psnr(a, b) for a, b in zip(images_224, references, strict=True)]
    reduced = [i for i, eighths in enumerate(scales[label]) if eighths < 8]
    of_reduced = (f"{statistics.median(ratios[i] for i in reduced):.2f}, "
                  f"{statistics.median(decibels[i] for i in reduced):.1f} dB" if reduced else "-")
    print(f"  {label:22} {statistics.median(passes[label]):5.2f} ms; reduced {len(reduced):4}: "
          f"sharpness {statistics.median(ratios):.2f}, PSNR {statistics.median(decibels):.1f} dB; "
          f"of the reduced {of_reduced}")


def _record_serialiser() -> Any:
  """Encodes and serialises a `224` example of a converted photo, as the writing workers do."""
  import tensorflow_datasets as tfds

  import korean_food  # noqa: F401  # Registers the builder.
  from photo_datasets.building import reproducible
  with tempfile.TemporaryDirectory() as data_dir:
    features = tfds.builder("korean_food/224", data_dir=data_dir).info.features
  serializer = reproducible.DeterministicExampleSerializer(features.get_serialized_info())
  group, food = "구이", "갈비구이"
  fields = {"label": 0, "super_category": group, "file_name": f"{group}/{food}/Img_000_0001.jpg"}
  return lambda image: serializer.serialize_example(
      features.encode_example({"image": image, **fields}))


def _series_matching(names: list[str]) -> Any:
  """`series.groups` over one population of features, in this process."""
  from korean_food.listing import series_position
  from photo_datasets.photos import series
  from photo_datasets.photos.records import class_folder
  return lambda every: series.groups(
      names, every, lambda name: series_position(name.rsplit("/", 1)[-1]), class_folder)


def _random_population(total: int, features: list[bytes]) -> tuple[list[str], list[bytes]]:
  """`total` photos in 150 classes, each with features drawn at random from `features`."""
  names = [f"g/class{i % 150}/Img_{i % 150:03d}_{i // 150:05d}.jpg" for i in range(total)]
  every = [features[i] for i in np.random.default_rng(0).integers(len(features), size=total)]
  return names, every


def _seconds(step: Any, items: list[Any], before: Any = None) -> float:
  """Seconds `step` takes over `items`; `before(item)`, where given, runs first, untimed."""
  seconds = 0.0
  for item in items:
    if before is not None:
      before(item)
    start = time.perf_counter()
    step(item)
    seconds += time.perf_counter() - start
  return seconds


def _fail(item: object) -> int:
  raise RuntimeError("a worker died")


def phase_start(worker_counts: list[int], repeats: int = 9) -> None:
  """A phase of one item on fork workers, with TensorFlow loaded as in a build, told its size
  (a list) and not (an iterator), alternating: the medians."""
  import tensorflow as tf  # noqa: F401  (the pages each fork copies)

  from photo_datasets.building import parallel
  os.environ[parallel.START_METHOD_ENV] = "fork"

  def seconds(items: Any, workers: int) -> float:
    start = time.perf_counter()
    list(parallel.ordered_map(abs, items, workers=workers, on_crash=abs))
    return time.perf_counter() - start

  print(f"a phase of one item, fork, TensorFlow loaded; median of {repeats}, ms; "
        f"{len(os.sched_getaffinity(0))} cores")
  print(f"{'workers':>8} {'size told':>10} {'size unknown':>13}")
  for workers in worker_counts:
    told, unknown = [], []
    for _ in range(repeats):
      told.append(seconds([-1], workers))
      unknown.append(seconds(iter([-1]), workers))
    print(f"{workers:>8} {statistics.median(told) * 1e3:>10.0f} "
          f"{statistics.median(unknown) * 1e3:>13.0f}")


def scaling(worker_counts: list[int], count: int) -> None:
  from photo_datasets.building import parallel
  name, photos = benchmark_corpus.photos(count, workers=max(worker_counts))
  print(f"{count} {name} photos ({sum(map(len, photos)) / count / 1e3:.0f} KB on average) "
        f"held in memory; {len(os.sched_getaffinity(0))} cores")
  print(f"{'workers':>8} {'images/s':>9} {'speed-up':>9} {'per worker':>11}")
  base = None
  for workers in worker_counts:
    start = time.perf_counter()
    done = sum(1 for _ in parallel.ordered_map(_build_work, photos, workers=workers,
                                               on_crash=_fail))
    rate = done / (time.perf_counter() - start)
    base = base or rate / workers
    print(f"{workers:8d} {rate:9.0f} {rate / base:9.2f} {rate / base / workers:11.2f}")


def near_duplicate_costs(count: int) -> None:
  from photo_datasets.photos import images, near_duplicates
  name, photos = benchmark_corpus.photos(min(count, 200))

  # The scan's pixels of each photo.
  decoded = [images.decode_and_inspect(data)[1] for data in photos]

  def per_photo_ms(work: Any, items: list[Any]) -> float:
    start = time.process_time()
    for item in items:
      work(item)
    return (time.process_time() - start) / len(items) * 1e3

  whole = per_photo_ms(images.decode_and_inspect, photos)
  hashes = per_photo_ms(near_duplicates.photo_hashes, decoded)
  with_hashes, without = whole, whole - hashes
  print(f"scan of one photo ({len(photos)} {name} photos of "
        f"{sum(map(len, photos)) / len(photos) / 1e3:.0f} KB): "
        f"{without:.2f} ms without the hashes, "
        f"{with_hashes:.2f} ms with them (+{with_hashes - without:.2f} ms)")
  hashes = _clustered_hashes(150_000, np.random.default_rng(0))
  start = time.perf_counter()
  found = near_duplicates.groups(hashes)
  print(f"grouping 150,000 photos ({len(near_duplicates.REGIONS)} hashes each, keys within "
        f"{near_duplicates.KEY_THRESHOLD}, hashes within {near_duplicates.THRESHOLD}): "
        f"{time.perf_counter() - start:.1f} s, {len(found)} groups")
  for parts in (2, 4, 8):
    seconds = []
    for part in range(parts):
      start = time.perf_counter()
      near_duplicates.groups(hashes, part=part, parts=parts)
      seconds.append(time.perf_counter() - start)
    print(f"  in {parts} parts: the longest {max(seconds):.1f} s, all {sum(seconds):.1f} s")


def series_costs(count: int, total: int = 150_513) -> None:
  import statistics

  from photo_datasets.building import parallel, scan
  from photo_datasets.photos import series
  name, photos = benchmark_corpus.photos(min(count, 300))
  candidates = [records.Candidate(f"a/b/Img_000_{i:05d}.jpg", (), data)
                for i, data in enumerate(photos)]

  def cpu_ms(inspect: scan._Inspect) -> float:
    start = time.process_time()
    for candidate in candidates:
      inspect(candidate)
    return (time.process_time() - start) / len(candidates) * 1e3

  # The colour histogram alone (the rule before keypoints) beside the whole features, in the
  # same run.
  arms = {"without the series features": (False, series.describe),
          "with the colour histogram alone": (True, series.colour_histogram),
          "with the series features": (True, series.describe)}
  passes: dict[str, list[float]] = {arm: [] for arm in arms}
  # The machine's own yardstick, in the same passes: figures from other days compare as shares.
  naive_passes = []
  for _ in range(5):
    for arm, (with_series, describe) in arms.items():
      with mock.patch.object(series, "describe", describe):
        passes[arm].append(cpu_ms(scan._Inspect(None, series=with_series)))
    start = time.process_time()
    for data in photos:
      _naive(data)
    naive_passes.append((time.process_time() - start) / len(photos) * 1e3)
  medians = {arm: statistics.median(runs) for arm, runs in passes.items()}
  without, naive = medians["without the series features"], statistics.median(naive_passes)
  keypoints = medians["with the series features"] - medians["with the colour histogram alone"]
  print(f"scan of one photo, CPU time ({len(photos)} {name} photos of "
        f"{sum(map(len, photos)) / len(photos) / 1e3:.0f} KB, median of 5 alternating passes): "
        + ", ".join(f"{ms:.2f} ms {arm} (+{ms - without:.2f} ms)" for arm, ms in medians.items())
        + f"; the naive loop {naive:.2f} ms: the keypoints "
        "(the whole features over the colour histogram) "
        f"{keypoints:.2f} ms, {keypoints / naive:.0%} of it")
  features = [series.describe(scan.images.decode_and_inspect(data)[1]) for data in photos]
  names, every = _random_population(total, features)
  tracemalloc.start()
  kept = series.FeatureFile()
  for f in every:
    kept.add(f)
  held = tracemalloc.get_traced_memory()[0]
  tracemalloc.stop()
  kept.close()
  print(f"features of {total:,} photos: {sum(map(len, every)) / 1e6:,.0f} MB, of which the "
        f"scan's main process holds {held / 1e6:,.0f} MB (histograms; the keypoints wait in a "
        "temporary file)")
  kind, names, every = _window_population(total, features, names, every)
  per_photo = medians["with the series features"] - without
  groupings: dict[str, list[tuple[int, float, float, list[list[int]]]]] = {
      arm: [] for arm in _RULES}
  for _ in range(3):  # Alternating passes, medians: the two rules side by side.
    for arm, (rule, patches) in _RULES.items():
      groupings[arm].append(_grouping(names, every, rule, patches))
  for arm, tries in groupings.items():
    matched, _, _, found = tries[0]
    cpu, wall = (statistics.median(float(grouped[k]) for grouped in tries) for k in (1, 2))
    sizes = sorted(map(len, found))
    matching = cpu / len(names) * 1e3
    print(f"{arm}: series.groups over {len(names):,} {kind} in their classes "
          f"(window {series.WINDOW}) on {parallel.default_workers()} worker processes, "
          f"median of 3 alternating passes: keypoints matched for {matched:,} pairs "
          f"({matched / max(_window_pairs(names), 1):.0%} of the window's pairs), "
          f"{wall:.1f} s, {cpu:.1f} s CPU (main process and workers: reading, sending, "
          f"matching, grouping), {cpu / max(matched, 1) * 1e3:.2f} ms CPU a matched pair; "
          f"{len(found):,} series of {sum(sizes):,} photos, "
          f"largest {sizes[-1] if sizes else 0} (at most {series.MAX_SERIES}); "
          f"the whole series per photo: {per_photo:.2f} ms features + {matching:.2f} ms matching = "
          f"{per_photo + matching:.2f} ms, {(per_photo + matching) / naive:.0%} of the naive loop")


# The series rule of today and version 1.5.0's (a similarity alone, and colour below BAND never
# joined), grouped side by side in one run: the cost of the change, everything counted.
_RULES: dict[str, tuple[Any, dict[str, Any]]] = {
    "version 1.5.0's rule": ("1.5.0", {"_homography": lambda points_a, points_b, least: 0}),
    "today's rule": ("today", {}),
}


# Photos a class of the real corpus holds, about (150,513 in 150 classes).
_CLASS_SIZE = 1_000


def _window_population(total: int, features: list[bytes], names: list[str],
                       every: list[bytes]) -> tuple[str, list[str], list[bytes]]:
  """The photos to group: the real kfood photos of ../shared in their classes and order, each class
  copied under new names until `total`, the copies of a class one after the other in classes of
  about `_CLASS_SIZE` photos, so the window's pairs are the real photos' own (and, where copies
  meet, pairs of other photos of the class), as many a photo as in the corpus; the benchmark's
  photos drawn at random where ../shared is absent."""
  from korean_food.listing import series_position
  from photo_datasets.photos import images, series
  root = benchmark_corpus.REALDATA / "kfood"
  paths = (sorted(p for p in root.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
           if root.exists() else [])
  if not paths:
    return f"photos drawn at random from the {len(features)}", names, every
  real = [(p.relative_to(root).as_posix(),
           series.describe(images.decode_and_inspect(p.read_bytes())[1]))
          for p in paths]
  class_sizes = collections.Counter(name.rsplit("/", 1)[0] for name, _ in real)
  copied_names, copied = [], []
  for copy in range(total // len(real) + 1):
    for name, described in real:
      folder, file_name = name.rsplit("/", 1)
      per_class = max(1, round(_CLASS_SIZE / class_sizes[folder]))  # Copies in one class.
      where = series_position(file_name)
      grown = f"{folder}_{copy // per_class}"
      copied_names.append(f"{grown}/Img_000_{copy % per_class:04d}{where:04d}.jpg"
                          if where is not None else f"{grown}/{copy % per_class}_{file_name}")
      copied.append(described)
  return f"real kfood photos ({len(real)}, copied)", copied_names[:total], copied[:total]


def _window_pairs(names: Sequence[str]) -> int:
  from photo_datasets.photos import series
  from photo_datasets.photos.records import class_folder
  sizes = collections.Counter(map(class_folder, names))
  return sum(sum(min(series.WINDOW, n - 1 - k) for k in range(n)) for n in sizes.values())


def _grouping(names: list[str], every: list[bytes], rule: str,
              patches: dict[str, Any]) -> tuple[int, float, float, list[list[int]]]:
  """`series.groups` over features in a `FeatureFile`, its runs matched on a worker pool of every
  core (the scan runs the same matching a class a task, `scan._ScanGroups`), with `rule`: the pairs
  matched, CPU seconds (main process and workers), wall seconds."""
  from korean_food.listing import series_position
  from photo_datasets.building import parallel
  from photo_datasets.photos import series
  from photo_datasets.photos.records import class_folder
  kept = series.FeatureFile()
  for f in every:
    kept.add(f)
  matched = 0

  def pool_map(task: Any, runs: Any) -> Any:
    def counted() -> Any:
      nonlocal matched
      for run in runs:
        matched += len(run.pairs)
        yield run
    return parallel.ordered_map(task, counted(), workers=parallel.default_workers(), chunk=1,
                                on_crash=series.unmatched)

  chosen = series.RULE if rule == "today" else dataclasses.replace(series.RULE, strong_inliers=None)
  with contextlib.ExitStack() as stack:  # Patched before the pool forks: its workers fit the same.
    for attribute, value in patches.items():
      stack.enter_context(mock.patch.object(series, attribute, value))
    before, wall = _cpu_seconds(), time.perf_counter()
    found = series.groups(names, kept, lambda name: series_position(name.rsplit("/", 1)[-1]),
                          class_folder, chosen, pair_map=pool_map)
    cpu, wall = _cpu_seconds() - before, time.perf_counter() - wall
  kept.close()
  return matched, cpu, wall, found


def _cpu_seconds() -> float:
  """CPU time of this process and of its children that have ended."""
  own, children = (resource.getrusage(resource.RUSAGE_SELF),
                   resource.getrusage(resource.RUSAGE_CHILDREN))
  return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _clustered_hashes(count: int, rng: np.random.Generator) -> list[bytes]:
  """Hashes like a corpus's: a photo's regions ~24 of 256 bits from its whole,
  and a third of the photos near copies (~12 bits) of 1,000 others."""
  from photo_datasets.photos import near_duplicates
  regions, size = len(near_duplicates.REGIONS), near_duplicates.HASH_BYTES * 8
  bases = rng.integers(0, 2, (1000, size), dtype=np.uint8)
  hashes = []
  for start in range(0, count, 10_000):
    chunk = min(10_000, count - start)
    whole = rng.integers(0, 2, (chunk, size), dtype=np.uint8)
    indices = np.arange(start, start + chunk)
    copies = indices % 3 == 0
    whole[copies] = bases[indices[copies] % 1000] ^ (rng.random((copies.sum(), size)) < 12 / 256)
    region_bits = whole[:, None, :] ^ (rng.random((chunk, regions, size)) < 24 / 256)
    region_bits[:, 0] = whole
    packed = np.packbits(region_bits, axis=2).reshape(chunk, -1)
    hashes += [row.tobytes() for row in packed]
  return hashes


def _build_in_this_process(config: str, manual_dir: str, data_dir: str, workers: int,
                           tfds_buffer_mb: int, writer: str = "workers") -> None:
  import tensorflow as tf  # noqa: F401  (TFDS imports it lazily: 3 s that are no build's work)
  import tensorflow_datasets as tfds
  from tensorflow_datasets.core import shuffle

  from photo_datasets.building import builder as photo_builder
  if tfds_buffer_mb:  # A measuring device only: isolates this package's memory from TFDS's.
    shuffle.MAX_MEM_BUFFER_SIZE = tfds_buffer_mb << 20
  photo_builder.PhotoBuilder.WRITE_IN_WORKERS = writer == "workers"

  import korean_food  # noqa: F401  (registers the builder)
  builder = tfds.builder(f"korean_food/{config}", data_dir=data_dir, workers=workers)
  start, cpu_start, ticks = time.perf_counter(), time.process_time(), harness.cpu_ticks()
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=manual_dir))
  seconds, main_cpu = time.perf_counter() - start, time.process_time() - cpu_start
  steal = harness.steal_share(ticks, harness.cpu_ticks())
  examples = sum(split.num_examples for split in builder.info.splits.values())
  workers_usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  print("RESULT " + json.dumps({
      "seconds": seconds, "examples": examples, "rss_mb": _peak_rss_mb(), "steal": steal,
      "main_cpu_seconds": main_cpu,
      "worker_rss_mb": workers_usage.ru_maxrss / 1024,
      "cpu_seconds": main_cpu + workers_usage.ru_utime + workers_usage.ru_stime,
  }))


def _peak_rss_mb() -> float:
  """This process's peak RSS. Not `getrusage`: its maxrss survives `exec`, so
  it would report the launching process's peak when that one was larger."""
  with open("/proc/self/status") as status:
    (line,) = [entry for entry in status if entry.startswith("VmHWM:")]
  return int(line.split()[1]) / 1024


def build(config: str, manual_dir: str, data_dir: str, workers: int, tfds_buffer_mb: int = 0,
          writer: str = "workers") -> dict:
  """Builds in a fresh process, so peak RSS is this build's alone; `writer`
  "tfds" writes the records with TFDS's own writer, in the main process."""
  out = subprocess.run(
      [sys.executable, __file__, "--_build", config, manual_dir, data_dir, str(workers),
       str(tfds_buffer_mb), writer],
      check=True, capture_output=True, text=True)
  (line,) = [entry for entry in out.stdout.splitlines() if entry.startswith("RESULT ")]
  return json.loads(line.removeprefix("RESULT "))


def download_forms(workdir: str, count: int, rounds: int, workers: int, piece_mb: int,
                   realdata: Any) -> None:
  """`224` builds of one corpus in each form the download arrives in, interleaved."""
  from photo_datasets import testing
  plain = f"{workdir}/forms/zip"
  corpus = benchmark_corpus.write_kfood_zip(plain, count, realdata=realdata)
  pieces = testing.write_pieces(f"{plain}/kfood.zip", f"{workdir}/forms/pieces/21.한국음식",
                                piece_mb << 20)
  os.makedirs(f"{workdir}/forms/tar")
  testing.write_tar(pieces, f"{workdir}/forms/tar/download.tar", "21.한국음식")
  os.makedirs(f"{workdir}/forms/joined")
  testing.join_in_name_order(pieces, f"{workdir}/forms/joined/kfood.zip")
  forms = ["zip", "pieces", "tar", "joined"]
  results: dict[str, list[dict[str, Any]]] = {form: [] for form in forms}
  for round_ in range(rounds):
    for form in forms:
      data_dir = f"{workdir}/forms/data_{form}_{round_}"
      results[form].append(build("224", f"{workdir}/forms/{form}", data_dir, workers))
      shutil.rmtree(data_dir)
  size = os.path.getsize(f"{plain}/kfood.zip")
  print(f"\n{count} photos, {corpus}; kfood.zip {size / 2**20:.0f} MB, "
        f"{len(pieces)} pieces of {piece_mb} MiB; "
        f"224 builds, {workers} workers, {rounds} interleaved rounds, medians; "
        f"{len(os.sched_getaffinity(0))} cores")
  print(f"{'form':10} {'wall s':>8} {'CPU s':>8} {'CPU ms/photo':>13} {'wall ratio':>11} "
        f"{'CPU ratio':>10}")
  base_wall = float(np.median([r["seconds"] for r in results["zip"]]))
  base_cpu = float(np.median([r["cpu_seconds"] for r in results["zip"]]))
  for form in forms:
    wall = float(np.median([r["seconds"] for r in results[form]]))
    cpu = float(np.median([r["cpu_seconds"] for r in results[form]]))
    assert {r["examples"] for r in results[form]} == {results["zip"][0]["examples"]}, form
    print(f"{form:10} {wall:8.2f} {cpu:8.2f} {cpu / count * 1e3:13.2f} {wall / base_wall:11.3f} "
          f"{cpu / base_cpu:10.3f}")


def main_process_cpu(workdir: str, counts: list[int], workers: int, realdata: Any) -> None:
  """The main process's CPU per photo beyond start-up, with each writer: builds of
  `224` (scan included) then `full` (scan reused) from A and from B photos; the
  difference of their CPU over the difference of their photos."""
  rows: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
  for count in counts:
    manual = f"{workdir}/manual_{count}"
    corpus = benchmark_corpus.write_kfood_zip(manual, count, seed=count, realdata=realdata)
    for writer in ("workers", "tfds"):
      data_dir = f"{workdir}/data_{count}_{writer}"
      for config in ("224", "full"):
        rows.setdefault((config, writer), {})[count] = build(config, manual, data_dir, workers,
                                                             writer=writer)
      shutil.rmtree(data_dir)
    shutil.rmtree(manual)
  machine = harness.machine()
  small, large = counts
  print(f"\n{corpus}; builds of {small} and {large} photos, {workers} workers; "
        f"{machine['cores_usable']} cores "
        f"({machine['cpu_model']}, load {machine['load_average']})")
  print(f"{'build':34} {'main CPU ms/photo':>18} {'all CPU ms/photo':>17} {'main share':>11} "
        f"{'wall s (B)':>11}")
  for (config, writer), by_count in rows.items():
    main = ((by_count[large]["main_cpu_seconds"] - by_count[small]["main_cpu_seconds"])
            / (large - small) * 1e3)
    every = ((by_count[large]["cpu_seconds"] - by_count[small]["cpu_seconds"])
             / (large - small) * 1e3)
    label = f"{config}{', scan reused' if config == 'full' else ', scan included'}, {writer} writer"
    print(f"{label:34} {main:18.3f} {every:17.2f} {main / every:11.0%} "
          f"{by_count[large]['seconds']:11.1f}")


def read_rate(data_dir: str) -> tuple[int, float]:
  import tensorflow_datasets as tfds

  import korean_food  # noqa: F401  (registers the builder)
  ds = tfds.load("korean_food/224", split="train", batch_size=64, as_supervised=True,
                 data_dir=data_dir, read_config=tfds.ReadConfig(try_autocache=False))
  start, seen = time.perf_counter(), 0
  for images, _ in ds:
    seen += int(images.shape[0])
  return seen, time.perf_counter() - start


def phases(manual_dir: str, corpus: str, data_dir: str, workers: int) -> None:
  """One `224` build in this process on `workers`, each worker phase timed from its pool's start
  to its end, with its workers' CPU; then the build's whole time and CPU."""
  import tensorflow as tf  # noqa: F401  (as in `_build_in_this_process`)
  import tensorflow_datasets as tfds

  import korean_food  # noqa: F401  (registers the builder)
  from photo_datasets.building import parallel
  start_phase, close_phase = parallel._Phase.__init__, parallel._Phase.close
  rows = []

  def started(phase: Any, task: Any, *args: Any) -> None:
    phase.began = time.perf_counter()
    start_phase(phase, task, *args)
    phase.name = type(task).__name__

  def closed(phase: Any) -> None:
    close_phase(phase)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # Its workers are joined by now.
    rows.append((phase.name, phase.workers, phase.began, time.perf_counter(),
                 usage.ru_utime + usage.ru_stime))

  parallel._Phase.__init__, parallel._Phase.close = started, closed  # type: ignore[method-assign]
  builder = tfds.builder("korean_food/224", data_dir=data_dir, workers=workers)
  begin, cpu_begin = time.perf_counter(), time.process_time()
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=manual_dir))
  end = time.perf_counter()
  photos = sum(split.num_examples for split in builder.info.splits.values())
  print(f"{photos} photos, {corpus}; 224 build on {workers} workers, this process; "
        f"{len(os.sched_getaffinity(0))} cores")
  print(f"{'phase':14} {'workers':>7} {'from s':>7} {'to s':>7} {'workers CPU s':>14}")
  cpu = 0.0
  for name, phase_workers, began, ended, cpu_after in rows:
    print(f"{name:14} {phase_workers:>7} {began - begin:>7.2f} {ended - begin:>7.2f} "
          f"{cpu_after - cpu:>14.2f}")
    cpu = cpu_after
  print(f"the build: {end - begin:.2f} s; CPU {cpu * 1e3 / photos:.1f} ms a photo in workers, "
        f"{(time.process_time() - cpu_begin) * 1e3 / photos:.1f} in this process")


# A VM's hypervisor hands CPU time to other machines (steal); a round whose passes lost more
# measured the neighbours as much as the code.
_CALM_STEAL = 0.01


def rounds(manual_dir: str, corpus: str, workdir: str, workers: int, count: int) -> None:
  """The `224` build on `workers` against the naive loop, alternating, `count` rounds."""
  ratios, calm = [], []
  for round_number in range(1, count + 1):
    ticks = harness.cpu_ticks()
    photos, naive_seconds = harness.naive_loop(manual_dir)
    naive_steal = harness.steal_share(ticks, harness.cpu_ticks())
    shutil.rmtree(f"{workdir}/data_{workers}", ignore_errors=True)
    result = build("224", manual_dir, f"{workdir}/data_{workers}", workers)
    ratios.append(naive_seconds / result["seconds"])
    steals = (naive_steal, result.get("steal"))
    if None not in steals and max(steals) < _CALM_STEAL:
      calm.append(ratios[-1])
    stolen = "" if None in steals else "steal: loop {:.1%}, build {:.1%}; ".format(*steals)
    print(f"round {round_number}: naive loop {photos / naive_seconds:.0f} images/s, build 224 on "
          f"{workers} workers {photos / result['seconds']:.0f} images/s: {ratios[-1]:.2f} x "
          f"naive ({stolen}the build's CPU "
          f"{result['cpu_seconds'] / photos * 1e3:.2f} ms a photo)", flush=True)
  machine = harness.machine()
  print(f"{photos} photos, {corpus}; {machine['cores_usable']} cores "
        f"({machine['cpu_model']}); build 224 against the naive loop, median of {count} rounds: "
        f"{statistics.median(ratios):.2f}")
  if calm:
    print(f"median of the {len(calm)} rounds whose loop and build each lost under "
          f"{_CALM_STEAL:.0%} of the CPUs to steal: {statistics.median(calm):.2f}")


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--photos", help="a folder in any korean_food layout; default: generate")
  parser.add_argument("--images", type=int, default=3000, help="photos to make")
  parser.add_argument("--generated", action="store_true",
                      help="use the generated fallback pictures even where the real photos are "
                           "present")
  parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
  parser.add_argument("--rss", type=int, nargs=2, metavar=("A", "B"),
                      help="also compare the peak RSS of 224 builds of A and B generated photos")
  parser.add_argument("--tfds_buffer_mb", type=int, default=0,
                      help="with --rss: cap TFDS's in-memory shuffle buffer (default 1 GB), "
                           "to see this package's own memory")
  parser.add_argument("--decode_scales", action="store_true",
                      help="only the stored 224 image and its cost at each DCT scale (see above)")
  parser.add_argument("--near_duplicates", action="store_true",
                      help="only measure the cost of the near-duplicate rule")
  parser.add_argument("--series", action="store_true",
                      help="the cost of the series rule (see above)")
  parser.add_argument("--series_photos", type=int, default=150_513,
                      help="photos grouped by --series")
  parser.add_argument("--steps", action="store_true",
                      help="only time each step of one photo's work on one core")
  parser.add_argument("--phase_start", type=int, nargs="+", metavar="N",
                      help="only what a phase of one item costs on N fork workers (see above)")
  parser.add_argument("--scaling", type=int, nargs="+", metavar="N",
                      help="only measure the per-photo work on N workers (no TensorFlow needed)")
  parser.add_argument("--download_forms", type=int, metavar="R",
                      help="only compare 224 builds of kfood.zip, its pieces, download.tar and "
                           "a name-order join, R interleaved rounds")
  parser.add_argument("--piece_mb", type=int, default=16,
                      help="with --download_forms: the pieces' size")
  parser.add_argument("--main_cpu", type=int, nargs=2, metavar=("A", "B"),
                      help="the main process's CPU per photo beyond start-up (see above)")
  parser.add_argument("--phases", action="store_true",
                      help="only one 224 build with every core, phase by phase (see above)")
  parser.add_argument("--rounds", type=int, metavar="R",
                      help="only the 224 build with every core against the naive loop, R "
                           "alternating rounds; with --steps or --decode_scales, their rounds "
                           "(default 3)")
  parser.add_argument("--workdir", default="/tmp/photo_datasets_bench")
  parser.add_argument("--_build", nargs=6, help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args._build:
    config, manual_dir, data_dir, workers, tfds_buffer_mb, writer = args._build
    _build_in_this_process(config, manual_dir, data_dir, int(workers), int(tfds_buffer_mb), writer)
    return
  if args.main_cpu:
    shutil.rmtree(args.workdir, ignore_errors=True)
    main_process_cpu(args.workdir, args.main_cpu, args.workers,
                     None if args.generated else benchmark_corpus.REALDATA)
    return
  if args.phase_start:
    phase_start(args.phase_start)
    return
  if args.scaling:
    scaling(args.scaling, args.images)
    return
  if args.steps:
    steps(min(args.images, 400), args.rounds or 3)
    return
  if args.decode_scales:
    decode_scales(min(args.images, 400), args.rounds or 3)
    return
  if args.near_duplicates:
    near_duplicate_costs(args.images)
    return
  if args.download_forms:
    shutil.rmtree(args.workdir, ignore_errors=True)
    realdata = None if args.generated else benchmark_corpus.REALDATA
    download_forms(args.workdir, args.images, args.download_forms, args.workers, args.piece_mb,
                   realdata)
    return
  if args.series:
    series_costs(args.images, args.series_photos)
    return

  shutil.rmtree(args.workdir, ignore_errors=True)
  manual_dir = args.photos or f"{args.workdir}/manual"
  corpus = args.photos
  if not args.photos:
    realdata = None if args.generated else benchmark_corpus.REALDATA
    corpus = (benchmark_corpus.write_kfood_zip(manual_dir, args.images, realdata=realdata)
              + " photos")
  if args.rounds:
    rounds(manual_dir, corpus, args.workdir, args.workers, args.rounds)
    return
  if args.phases:
    phases(manual_dir, corpus, f"{args.workdir}/data_phases", args.workers)
    return
  count, naive_seconds = harness.naive_loop(manual_dir)
  naive_rate = count / naive_seconds
  rows = [("naive PIL loop, 1 core (read, RGB, resize 224, encode)", 1, count, naive_seconds, None)]
  for workers in sorted({1, args.workers}):
    result = build("224", manual_dir, f"{args.workdir}/data_{workers}", workers)
    rows.append((f"build 224, scan included, {workers} worker(s)", workers, count,
                 result["seconds"], result))
  result = build("full", manual_dir, f"{args.workdir}/data_{args.workers}", args.workers)
  rows.append((f"build full, scan reused, {args.workers} worker(s)", args.workers, count,
               result["seconds"], result))
  seen, read_seconds = read_rate(f"{args.workdir}/data_{args.workers}")
  rows.append(("read 224 train, tfds.load(batch_size=64)", None, seen, read_seconds, None))

  machine = harness.machine()
  print(f"\n{count} photos from {manual_dir}: {corpus}; {machine['cores_usable']} cores "
        f"({machine['cores_in_machine']} in the machine, {machine['cpu_model']}, "
        f"load {machine['load_average']})")
  print(f"{'phase':58} {'images/s':>9} {'x naive':>8} {'per core':>9} "
        f"{'peak RSS MB (main/worker)':>26} {'main CPU ms/photo':>18}")
  for label, workers, n, seconds, result in rows:
    rate = n / seconds
    per_core = f"{rate / naive_rate / workers:.2f}" if workers else ""
    rss = f"{result['rss_mb']:.0f} / {result['worker_rss_mb']:.0f}" if result else ""
    main_cpu = f"{result['main_cpu_seconds'] / n * 1e3:.2f}" if result else ""
    print(f"{label:58} {rate:9.0f} {rate / naive_rate:8.2f} {per_core:>9} {rss:>26} {main_cpu:>18}")
  rate_224, rate_full = count / rows[-3][3], count / rows[-2][3]
  total = 150_513 / rate_224 + 150_513 / rate_full
  print(f"projected full corpus (150,513 photos), 224 then full with {args.workers} workers: "
        f"{total / 60:.1f} min")

  if args.rss:
    peaks = {}
    for size in args.rss:
      folder = f"{args.workdir}/rss_{size}"
      benchmark_corpus.write_kfood_zip(f"{folder}/manual", size, seed=size)
      result = build("224", f"{folder}/manual", f"{folder}/data", args.workers, args.tfds_buffer_mb)
      peaks[size] = result["rss_mb"]
      records = sum(os.path.getsize(p)
                    for p in glob.glob(f"{folder}/data/korean_food/224/*/*train.tfrecord*"))
      print(f"build 224 of {size} photos: {size / result['seconds']:.0f} images/s, peak RSS "
            f"{result['rss_mb']:.0f} MB main, {result['worker_rss_mb']:.0f} MB largest worker; "
            f"train records {records / 2**20:.0f} MB (what TFDS's writer buffers, up to "
            f"{args.tfds_buffer_mb or 1000} MB)")
      shutil.rmtree(folder)
    a, b = args.rss
    print(f"peak RSS ratio {b} / {a} photos: {peaks[b] / peaks[a]:.2f}")


if __name__ == "__main__":
  main()

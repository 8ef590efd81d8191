"""The report page at the size of the full Korean food corpus: its file size and render time.

  python benchmarks/report_page_scale.py [--photos 150000] [--out /tmp/report_scale.html]
      [--records]

Simulates the report data of a build of `--photos` photos in korean_food's 150
classes (per-class counts from 300 to 1,500, 80/10/10 splits, 1.3 % skipped,
2 % in near-duplicate groups, 0.5 % in byte-identical groups, 6 % flagged
photos over the seven quality flags, 200 warnings) and renders the page with
thumbnails made from the bundled CC-BY flower photos at 224×224 (standing in
for the stored images; every section at its cap of thumbnails). Prints the
time to make the thumbnails, to render, and the page's size.

With `--source_photos DIR` (e.g. the real photos in ../shared/realdata/kfood),
also times what a build spends per thumbnail (`report_page.thumbnail` of the
photo as the 224 config stores it): from the image the scan converted, and
where the scan converted none, from the source photo converted first
(`images.encode_image`); and the total for the page's thumbnails at each rate.

With `--records`, also times the records pass that finds the thumbnails' stored
images (`report_page.read_records` reads each split with the images left
encoded): on TFRecord files of `--photos` examples holding random bytes of the
224 config's mean stored size (17 KB), parsed and filtered the same way.
"""

from __future__ import annotations

import argparse
import io
import os
import pathlib
import random
import sys
import tempfile
import time

from PIL import Image

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from korean_food import food_classes  # noqa: E402
from photo_datasets.catalog import page_data, page_html, report_page  # noqa: E402
from photo_datasets.catalog.build_report import BuildReport, Skipped  # noqa: E402
from photo_datasets.photos import images  # noqa: E402

SAMPLE = (pathlib.Path(__file__).resolve().parents[1] / "flowers_dataset" / "sample"
          / "flower_photos")
FLAGS = ("dark", "light", "low_information", "blurry", "odd_aspect_ratio", "odd_size", "grayscale")
STORED_BYTES = 17_000  # Mean stored JPEG of korean_food/224 (2.6 GB for 150,513 photos).


def simulated_page(photos: int, seed: int = 0) -> page_data.PageData:
  rng = random.Random(seed)
  classes = food_classes()
  weights = [rng.uniform(300, 1500) for _ in classes]
  per_class = [round(photos * w / sum(weights)) for w in weights]
  names = [(c, f"{c.super_category}/{c.name}/Img_{c.index:03d}_{j:04d}.jpg")
           for c, n in zip(classes, per_class, strict=True) for j in range(n)]
  split_of = {name: rng.choices(("train", "validation", "test"), (8, 1, 1))[0] for _, name in names}
  rows = []
  for c, n in zip(classes, per_class, strict=True):
    counts = {"train": 0, "validation": 0, "test": 0}
    for j in range(n):
      counts[split_of[f"{c.super_category}/{c.name}/Img_{c.index:03d}_{j:04d}.jpg"]] += 1
    rows.append(page_data.ClassRow(c.index, c.name, c.english_name, counts, n * 7 // 10))
  shuffled = [name for _, name in names]
  rng.shuffle(shuffled)
  at = 0

  def take(count: int) -> list[str]:
    nonlocal at
    at += count
    return shuffled[at - count:at]

  report = BuildReport(ignored_files=31, counts={"bad crop lines": 412,
                                                 "images with a crop box": photos * 7 // 10,
                                                 "images converted to JPEG": photos // 40})
  report.skipped_files = [Skipped(name, "cannot decode JPEG: image file is truncated")
                          for name in take(photos // 75)]
  near = take(photos // 50)
  report.near_duplicates = [{"files": near[i:i + 3], "across_classes": i % 30 == 0}
                            for i in range(0, len(near), 3)]
  same = take(photos // 200)
  report.duplicates = [same[i:i + 2] for i in range(0, len(same), 2)]
  report.warnings = [f"{name}: prefix Img_121 is class 121, but the folder is class 119"
                     for name in take(200)]
  flags = []
  for flag in FLAGS:
    for name in rng.sample(shuffled, photos * 6 // 100 // len(FLAGS)):
      flags.append({"file_name": name, "split": split_of[name], "label": name.split("/")[1],
                    "flag": flag, "score": round(rng.random(), 4)})
  flags.sort(key=lambda r: (FLAGS.index(r["flag"]), -r["score"]))
  return page_data.PageData(
      "korean_food/224", "Images centre-cropped to a square and resized to 224x224.",
      ["train", "validation", "test"], rows, report, quality_flags=flags, flag_names=list(FLAGS),
      split_of=split_of, source="/data/kfood.zip", build_seconds=528.0,
      source_images={"formats": {"JPEG": photos - 900, "PNG": 700, "GIF": 200},
                     "modes": {"RGB": photos},
                     "orientations": {"1": photos - 300, "6": 300}, "conversions": {"PNG RGB": 700},
                     "long_side": {"edges": [0, 64, 128, 256, 512, 1024, 2048, 4096, 8192],
                                   "counts": [0, 10, 900, 20000, 70000, 50000, 8000, 1090, 0]}},
      class_weights=[1.0] * len(classes), channel_mean=[150.1, 120.3, 95.2],
      channel_std=[66.0, 64.1, 67.9],
      note="Private: a page of korean_food with thumbnails is as private as the photos.")


def stored_stand_ins(names: set[str]) -> dict[str, bytes]:
  """224×224 JPEGs of the flower photos, one per name (cycled)."""
  flowers = []
  for path in sorted(SAMPLE.glob("*/*.jpg")):
    with Image.open(path) as image:
      out = io.BytesIO()
      image.convert("RGB").resize((224, 224)).save(out, "JPEG", quality=90)
      flowers.append(out.getvalue())
  return {name: flowers[i % len(flowers)] for i, name in enumerate(sorted(names))}


def time_records_pass(photos: int, wanted: set[str], names: list[str]) -> float:
  """Seconds for one pass as `read_records` makes it, over TFRecords of `photos` examples."""
  import tensorflow as tf

  folder = tempfile.mkdtemp()
  shards = 64
  payload = os.urandom(STORED_BYTES)
  writers = [tf.io.TFRecordWriter(os.path.join(folder, f"r-{i:05d}")) for i in range(shards)]
  for i, name in enumerate(names[:photos]):
    example = tf.train.Example(features=tf.train.Features(feature={
        "file_name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[name.encode()])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 150])),
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[payload]))}))
    writers[i % shards].write(example.SerializeToString())
  for writer in writers:
    writer.close()
  keys = sorted(wanted)
  table = tf.lookup.StaticHashTable(
      tf.lookup.KeyValueTensorInitializer(tf.constant(keys), tf.ones(len(keys), tf.int32)),
      default_value=0)
  spec = {"file_name": tf.io.FixedLenFeature([], tf.string),
          "label": tf.io.FixedLenFeature([], tf.int64),
          "image": tf.io.FixedLenFeature([], tf.string)}
  start = time.perf_counter()
  ds = tf.data.TFRecordDataset(sorted(str(p) for p in pathlib.Path(folder).iterdir()),
                               num_parallel_reads=16)
  ds = ds.map(lambda r: tf.io.parse_single_example(r, spec), num_parallel_calls=tf.data.AUTOTUNE)
  ds = ds.map(lambda e: (e["file_name"], e["label"],
                         tf.where(table.lookup(e["file_name"]) > 0, e["image"], tf.constant(b""))),
              num_parallel_calls=tf.data.AUTOTUNE)
  found = sum(1 for _, _, image in ds.as_numpy_iterator() if image)
  seconds = time.perf_counter() - start
  for path in pathlib.Path(folder).iterdir():
    path.unlink()
  os.rmdir(folder)
  assert found == len(wanted), (found, len(wanted))
  return seconds


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--photos", type=int, default=150_000)
  parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "report_scale.html"))
  parser.add_argument("--records", action="store_true")
  parser.add_argument("--source_photos")
  args = parser.parse_args()
  start = time.perf_counter()
  page = simulated_page(args.photos)
  simulated = time.perf_counter() - start
  stored, skipped = page_data.wanted_thumbnails(page)
  stand_ins = stored_stand_ins(stored | skipped)
  start = time.perf_counter()
  uris = report_page.data_uris(stand_ins)
  thumbnails = time.perf_counter() - start
  start = time.perf_counter()
  text = page_html.render(page, uris)
  with open(args.out, "w", encoding="utf-8") as f:
    f.write(text)
  rendered = time.perf_counter() - start
  print(f"{args.photos:,} photos (simulated in {simulated:.1f} s): "
        f"{len(uris)} thumbnails made in {thumbnails:.1f} s, "
        f"page rendered and written in {rendered:.2f} s: "
        f"{os.path.getsize(args.out) / 1e6:.2f} MB ({args.out})")
  if args.source_photos:
    paths = sorted(p for p in pathlib.Path(args.source_photos).rglob("*")
                   if p.suffix.lower() in (".jpg", ".jpeg"))
    checks = {path: images.inspect_image(path.read_bytes()) for path in paths}  # The scan's.
    start = time.perf_counter()
    converted = []
    for path in paths:
      converted.append(images.encode_image(path.read_bytes(), checks[path], size=224))
      report_page.thumbnail(converted[-1])
    from_source = (time.perf_counter() - start) / len(paths)
    start = time.perf_counter()
    for image in converted:
      report_page.thumbnail(image)
    from_stored = (time.perf_counter() - start) / len(paths)
    print(f"thumbnails of {len(paths)} photos in {args.source_photos} as 224 stores them: "
          f"{from_stored * 1e3:.1f} ms each from the scan's conversion, "
          f"{from_source * 1e3:.1f} ms from the source; {len(uris)} thumbnails: "
          f"{from_stored * len(uris):.1f} s and {from_source * len(uris):.1f} s")
  if args.records:
    seconds = time_records_pass(args.photos, stored, sorted(page.split_of))
    print(f"records pass over {args.photos:,} examples of {STORED_BYTES / 1e3:.0f} KB "
          f"for {len(stored)} thumbnails: {seconds:.1f} s")


if __name__ == "__main__":
  main()

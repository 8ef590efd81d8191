"""`report.html` and `quality.csv`: the build report a person looks at, beside `dataset_info.json`.

Every build writes both into the built config's folder (`builder.data_path`,
`<data_dir>/<dataset>/<config>/<version>/`), and `python -m photo_datasets report
NAME --data_dir DIR` writes them again for a config built earlier (`write`).

This module gathers what the page shows from a builder (`page_data`, filling
`page_data.PageData`), makes the thumbnails and writes the files; the HTML is
`page_html`'s. The page is one self-contained HTML file: inline CSS, no
script, no network; thumbnails are small JPEGs embedded as `data:` URIs, at
most `THUMBNAILS_PER_SECTION` per section (worst or most telling first, with a
count of the rest), so the page of the full Korean food corpus stays a few MB
(docs/data-quality.md#the-build-report).
Sections: overview, problems (skipped files, near-duplicate groups, series and
byte-identical groups, rejected crop lines, warnings), classes (counts per
split, bar chart, crop-box share, classes far below the median marked, empty
ones in one line), quality flags, and the source photos' sizes, formats,
conversions and EXIF rotations.

Thumbnails show what the records hold. At build time they are made from the
source photos, framed as stored (a sized config's crop box and centre square;
a `full` config's photo upright), each decoded at reduced scale: a few hundred
reads by span, outside the build's one decode of each photo. For a config
built earlier, whose source may be gone, the stored images are read back from
the records by `file_name`: one pass over each split with the images left
encoded (`SkipDecoding`), only the wanted ones kept. A skipped file gets a
thumbnail when it is still a file under the source folder and something of it
decodes.

`quality.csv` holds every flagged photo: file name, split, label, flag, score
(for `padded_jpeg`, a JPEG kept despite padding, the bytes of padding).
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import io
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from etils import epath
from PIL import Image, ImageOps

from photo_datasets.archives import storage
from photo_datasets.catalog import fingerprint
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.catalog.page_data import CSV_NAME, ClassRow, PageData, wanted_thumbnails
from photo_datasets.catalog.page_html import render
from photo_datasets.photos import quality

FILE_NAME = "report.html"
CSV_FIELDS = ("file_name", "split", "label", "flag", "score")
THUMBNAIL_SIDE = 96  # Pixels, the longer side.
_ORIENTATION = 0x0112  # The EXIF tag.

# Where the photos of a built config come from, for thumbnails: names -> bytes.
ImageSource = Callable[[set[str]], dict[str, bytes]]


# ---------------------------------------------------------------------------
# Thumbnails.


def thumbnail(data: bytes, side: int = THUMBNAIL_SIDE) -> bytes | None:
  """A small upright JPEG of the image `data` (a photo as its config stores it), or None where
  nothing of it decodes. A JPEG is decoded at 1/2 to 1/8 scale where it is large (PIL's
  draft), so a thumbnail costs a fraction of the photo's full decode.

  Args:
    data: the encoded image, in any format PIL opens.
    side: the thumbnail's longer side, in pixels.

  Returns:
    The thumbnail as JPEG bytes (`data` itself where it is already an upright
    RGB JPEG of at most `side` pixels), or None where nothing of `data` decodes.
  """
  try:
    with warnings.catch_warnings():
      # PIL's warnings about odd files: the report names those already.
      warnings.simplefilter("ignore")
      with Image.open(io.BytesIO(data)) as opened:
        if (opened.format == "JPEG" and opened.mode == "RGB" and max(opened.size) <= side
            and opened.getexif().get(_ORIENTATION, 1) == 1):
          return data  # A thumbnail already (a build's, made on its workers).
        opened.draft("RGB", (side * 2, side * 2))
        image = ImageOps.exif_transpose(opened)
        image = (image.convert("RGBA").convert("RGB") if image.mode in ("P", "PA", "LA")
                 else image.convert("RGB"))
        image.thumbnail((side, side), Image.Resampling.BILINEAR)
        out = io.BytesIO()
        image.save(out, "JPEG", quality=70)
  except Exception:  # Anything: a skipped file may be anything.
    return None
  return out.getvalue()


def data_uris(photos: Mapping[str, bytes]) -> dict[str, str]:
  """file_name -> `data:` URI of its thumbnail, for the images something decodes of."""
  uris = {}
  for name, data in photos.items():
    if (small := thumbnail(data)) is not None:
      uris[name] = "data:image/jpeg;base64," + base64.b64encode(small).decode("ascii")
  return uris


def write_csv(path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]]) -> None:
  """`quality.csv`: one row per flagged photo (`CSV_FIELDS`); only the header where none is
  flagged."""
  text = io.StringIO(newline="")
  writer = csv.DictWriter(text, CSV_FIELDS, extrasaction="ignore")
  writer.writeheader()
  writer.writerows(rows)
  epath.Path(path).write_bytes(text.getvalue().encode("utf-8"))  # A bucket's folder too.


def write_files(folder: str | os.PathLike[str], page: PageData, photos: Mapping[str, bytes]) -> str:
  """Writes `report.html` and `quality.csv` into `folder`; returns the page's path."""
  path = os.path.join(os.fspath(folder), FILE_NAME)
  epath.Path(path).write_bytes(render(page, data_uris(photos)).encode("utf-8"))
  write_csv(os.path.join(os.fspath(folder), CSV_NAME), page.quality_flags)
  return path


# ---------------------------------------------------------------------------
# From a built config.


@dataclasses.dataclass
class _Records:
  """What one pass over a config's records found."""

  split_of: dict[str, str]  # file_name -> split, of the rows read.
  counts: dict[str, list[int]]  # split -> examples per label id, of the rows read.
  images: dict[str, bytes]  # file_name -> stored image, of the wanted ones.


def read_records(builder: Any, wanted: set[str], *, every_row: bool) -> _Records:
  """One pass over each split's records with the images left encoded (`SkipDecoding`): the
  stored images of `wanted`, and with `every_row` each example's split and label (for a config
  built before its metadata held the class counts)."""
  import tensorflow as tf
  import tensorflow_datasets as tfds

  info = builder.info
  label_key = _label_key(info)
  keys = sorted(wanted) or [""]  # The table needs a key; no example is named "".
  table = tf.lookup.StaticHashTable(
      tf.lookup.KeyValueTensorInitializer(tf.constant(keys), tf.ones(len(keys), tf.int32)),
      default_value=0)

  def pick(example: dict[str, Any]) -> tuple[Any, Any, Any]:
    name = example["file_name"]
    # Only the wanted images travel to Python.
    image = tf.where(table.lookup(name) > 0, example["image"], tf.constant(b""))
    return name, example[label_key], image

  records = _Records({}, {}, {})
  num_classes = info.features[label_key].num_classes
  for split in info.splits:
    ds = builder.as_dataset(split=split, shuffle_files=False,
                            decoders={"image": tfds.decode.SkipDecoding()},
                            read_config=tfds.ReadConfig(try_autocache=False))
    if not every_row:
      ds = ds.filter(lambda example: table.lookup(example["file_name"]) > 0)
    counts = records.counts[split] = [0] * num_classes
    for name, label, image in tfds.as_numpy(ds.map(pick, num_parallel_calls=tf.data.AUTOTUNE)):
      file_name = name.decode("utf-8")
      records.split_of[file_name] = split
      counts[int(label)] += 1
      if image:
        records.images[file_name] = bytes(image)
  return records


def _label_key(info: Any) -> str:
  return str(info.supervised_keys[1]) if info.supervised_keys else "label"


def _flag_names(rows: Sequence[Mapping[str, Any]]) -> list[str]:
  """The flags in display order: `quality.FLAGS`, then any others the rows name."""
  return list(quality.FLAGS) + [flag for flag in dict.fromkeys(row["flag"] for row in rows)
                                if flag not in quality.FLAGS]


def page_data(builder: Any, split_of: Mapping[str, str] | None = None,
              report: BuildReport | None = None) -> PageData:
  """The page of the config `builder` has built, from its `info` (the build report, unless
  `report` is given, and the statistics in `info.metadata`); classes without counts in the
  metadata get none (0)."""
  info = builder.info
  metadata = dict(info.metadata)
  report = report or BuildReport.from_metadata(metadata)
  names = list(info.features[_label_key(info)].names)
  descriptions: dict[str, str] = getattr(builder, "class_descriptions", dict)()
  splits = list(info.splits)
  counts = metadata.get("class_counts") or {}
  crops = metadata.get("crop_boxes")
  classes = [ClassRow(i, name, descriptions.get(name, ""),
                      {s: int(counts.get(s, [0] * len(names))[i]) for s in splits},
                      int(crops[i]) if crops else None) for i, name in enumerate(names)]
  flags = list(getattr(report, "quality_flags", None) or metadata.get("quality_flags") or [])
  config = builder.builder_config
  return PageData(
      dataset=f"{info.name}/{info.config_name}",
      config_description=config.description if config else "",
      splits=splits, classes=classes, report=report, quality_flags=flags,
      flag_names=_flag_names(flags),
      flag_thresholds=dict(quality.THRESHOLDS),
      split_of=dict(split_of or {}), source=metadata.get("source"),
      source_images=metadata.get("source_images"), class_weights=metadata.get("class_weights"),
      channel_mean=metadata.get("channel_mean"), channel_std=metadata.get("channel_std"),
      note=getattr(builder, "REPORT_NOTE", ""), data_dir=os.fspath(builder.data_dir_root),
      fingerprint=fingerprint.sha256_of(metadata))


def _skipped_images(source: str | None, names: Iterable[str]) -> dict[str, bytes]:
  """The bytes of skipped files still found as files under the source folder."""
  found = {}
  for name in names:
    path = os.path.join(source, name) if source else ""
    if path and storage.is_file(path):
      found[name] = storage.read_bytes(path)
  return found


def write(builder: Any, *, split_of: Mapping[str, str] | None = None,
          source_images: ImageSource | None = None, build_seconds: float | None = None,
          out_dir: str | os.PathLike[str] | None = None) -> str:
  """Writes `report.html` and `quality.csv` of the config `builder` has built into its
  `data_path` (or `out_dir`); returns the page's path.

  Args:
    builder: the builder of a built config.
    split_of: file_name -> split of every example, where the caller knows them (a build);
      else a pass over the records learns them (and the class counts, where the metadata
      holds none).
    source_images: reads the wanted photos, framed as stored, from the source instead of the
      records (a build: far cheaper than a pass over every record).
    build_seconds: how long the build took (a build; not kept in the metadata, which stays the
      same for the same source).
    out_dir: the folder to write into instead of `builder.data_path`; it must exist.

  Returns:
    The path of `report.html`.

  Raises:
    OSError: where the folder cannot be written.
  """
  page = page_data(builder, split_of)
  page.build_seconds = build_seconds
  stored, skipped = wanted_thumbnails(page)
  if split_of is None or (stored and source_images is None):
    records = read_records(builder, stored, every_row=split_of is None)
    if split_of is None:
      page.split_of = records.split_of
      if "class_counts" not in builder.info.metadata:
        page.counts_from_records = True
        for row in page.classes:
          row.counts = {split: records.counts[split][row.label] for split in page.splits}
    photos = records.images
  else:
    photos = source_images(stored) if source_images and stored else {}
  photos.update(_skipped_images(page.source, skipped))
  return write_files(builder.data_path if out_dir is None else out_dir, page, photos)

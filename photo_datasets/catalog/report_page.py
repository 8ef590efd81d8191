"""`report.html` and `quality.csv`: the build report a person looks at, beside `dataset_info.json`.

Every build writes both into the built config's folder (`builder.data_path`,
`<data_dir>/<dataset>/<config>/<version>/`), and `python -m photo_datasets.report
NAME --data_dir DIR` writes them again for a config built earlier (`write`).

The page is one self-contained HTML file: inline CSS, no script, no network;
thumbnails are small JPEGs embedded as `data:` URIs, at most
`THUMBNAILS_PER_SECTION` per section (worst or most telling first, with a count
of the rest), so the page of the full Korean food corpus stays a few MB.
Sections: overview, classes (counts per split, bar chart, crop-box share,
classes far below the median marked), problems (skipped files, near-duplicate
and byte-identical groups, rejected crop lines, warnings), quality flags, and
the source photos' sizes, formats, conversions and EXIF rotations.

Thumbnails show what the records hold. At build time they are made from the
source photos, framed as stored (a sized config's crop box and centre square;
a `full` config's photo upright), each decoded at reduced scale: a few hundred
reads by span, outside the build's one decode of each photo. For a config built earlier, whose source may be gone,
the stored images are read back from the records by `file_name`: one pass
over each split with the images left encoded (`SkipDecoding`), only the
wanted ones kept. A skipped file gets a thumbnail when it is still a file
under the source folder and something of it decodes.

`quality.csv` holds every flagged photo: file name, split, label, flag, score.
"""

from __future__ import annotations

import base64
import collections
import csv
import dataclasses
import datetime
import html
import io
import os
import shlex
import statistics as stats
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from PIL import Image, ImageOps

from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import images, quality
from photo_datasets.photos.records import class_folder

FILE_NAME = "report.html"
CSV_NAME = "quality.csv"
CSV_FIELDS = ("file_name", "split", "label", "flag", "score")
THUMBNAILS_PER_SECTION = 100
LISTED_PER_SECTION = 1000  # Rows of text per section (skips, groups, flags) before "and N more".
THUMBNAIL_SIDE = 96  # Pixels, the longer side.
# A class whose count is below this share of the median count is marked.
FAR_BELOW_MEDIAN = 0.5
_SPLIT_COLOURS = {"train": "#4e79a7", "validation": "#f28e2b", "test": "#59a14f"}

# Where the photos of a built config come from, for thumbnails: names -> bytes.
ImageSource = Callable[[set[str]], dict[str, bytes]]


@dataclasses.dataclass
class ClassRow:
  """One class of the dataset on the page."""

  label: int
  name: str
  description: str  # Shown beside the name (korean_food: the English name); "" for none.
  counts: dict[str, int]  # Split -> examples.
  crop_boxes: int | None = None  # Photos with a crop box; None where not recorded.

  @property
  def total(self) -> int:
    return sum(self.counts.values())


@dataclasses.dataclass
class PageData:
  """Everything the page shows, as plain data (no TensorFlow): `render` turns it into HTML."""

  dataset: str  # "korean_food/224"
  config_description: str
  splits: list[str]
  classes: list[ClassRow]
  report: BuildReport
  quality_flags: list[dict[str, Any]] = dataclasses.field(default_factory=list)
  flag_names: list[str] = dataclasses.field(default_factory=list)  # Display order.
  flag_thresholds: dict[str, float] = dataclasses.field(default_factory=dict)  # Flagged below these scores.
  split_of: dict[str, str] = dataclasses.field(default_factory=dict)  # file_name -> split, where known.
  source: str | None = None
  build_seconds: float | None = None
  source_images: dict[str, Any] | None = None  # `statistics.source_images`.
  class_weights: list[float] | None = None
  channel_mean: list[float] | None = None
  channel_std: list[float] | None = None
  note: str = ""  # A warning shown first (korean_food: the page is as private as the photos).
  counts_from_records: bool = False  # Class counts read back from the records (a config built earlier).
  data_dir: str = "DIR"  # Where it was built, for the command that writes the page again.

  @property
  def split_sizes(self) -> dict[str, int]:
    return {split: sum(row.counts.get(split, 0) for row in self.classes) for split in self.splits}


# ---------------------------------------------------------------------------
# What each section shows, capped; `wanted_thumbnails` and `render` share it.


def near_duplicate_groups(page: PageData) -> list[dict[str, Any]]:
  """Near-duplicate groups, those across classes first (label conflicts), then the larger."""
  return sorted(page.report.near_duplicates, key=lambda g: (not g["across_classes"], -len(g["files"])))


def identical_groups(page: PageData) -> list[list[str]]:
  """Byte-identical groups, those across classes first, then the larger."""
  return sorted(page.report.duplicates, key=lambda g: (len({class_folder(f) for f in g}) < 2, -len(g)))


def series_groups(page: PageData) -> list[list[str]]:
  """Series (several shots of one scene), the larger first."""
  return sorted((g["files"] for g in page.report.series), key=lambda files: -len(files))


def flag_rows(page: PageData) -> dict[str, list[dict[str, Any]]]:
  """Flagged photos per flag in display order, worst first as the scan listed them."""
  by_flag: dict[str, list[dict[str, Any]]] = {name: [] for name in page.flag_names}
  for row in page.quality_flags:
    by_flag.setdefault(row["flag"], []).append(row)
  return by_flag


def _capped_groups(groups: Sequence[Sequence[str]]) -> list[list[str]]:
  """The members shown with thumbnails: whole groups until the section's cap."""
  shown, left = [], THUMBNAILS_PER_SECTION
  for group in groups:
    if left <= 0:
      break
    shown.append(list(group)[:left])
    left -= len(shown[-1])
  return shown


def wanted_thumbnails(page: PageData) -> tuple[set[str], set[str]]:
  """(photos in the records, skipped files) whose thumbnails the page shows."""
  stored: set[str] = set()
  for group in _capped_groups([g["files"] for g in near_duplicate_groups(page)]):
    stored.update(group)
  for group in _capped_groups(identical_groups(page)):
    stored.update(group)
  for group in _capped_groups(series_groups(page)):
    stored.update(group)
  for rows in flag_rows(page).values():
    stored.update(row["file_name"] for row in rows[:THUMBNAILS_PER_SECTION])
  skipped = {s.file_name for s in page.report.skipped_files[:THUMBNAILS_PER_SECTION]}
  return stored, skipped - stored


# ---------------------------------------------------------------------------
# Thumbnails.


def thumbnail(data: bytes, side: int = THUMBNAIL_SIDE, *, box: tuple[float, float, float, float] | None = None,
              square: bool = False) -> bytes | None:
  """A small upright JPEG of the image `data`, or None where nothing of it decodes.

  With `box` (ymin, xmin, ymax, xmax, relative to the upright image) and `square`, framed as a
  sized config stores it: the box, then the centre square. A JPEG is decoded at 1/2 to 1/8
  scale (PIL's draft), so a thumbnail costs a fraction of the photo's full decode."""
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")  # PIL's warnings about odd files: the report names those already.
      with Image.open(io.BytesIO(data)) as opened:
        share = min(box[2] - box[0], box[3] - box[1]) if box else 1.0
        need = round(side * 2 / max(share, 0.05))
        opened.draft("RGB", (need, need))
        image = ImageOps.exif_transpose(opened)
        image = image.convert("RGBA").convert("RGB") if image.mode in ("P", "PA", "LA") else image.convert("RGB")
        image = images.framed(image, box, square=square)
        if square:  # Resized to the side even when smaller, as a sized config stores every photo at its size.
          image = image.resize((side, side), Image.Resampling.BILINEAR)
        image.thumbnail((side, side), Image.Resampling.BILINEAR)
        out = io.BytesIO()
        image.save(out, "JPEG", quality=70)
  except Exception:  # Anything: a skipped file may be anything.
    return None
  return out.getvalue()


def data_uris(images: Mapping[str, bytes]) -> dict[str, str]:
  """file_name -> `data:` URI of its thumbnail, for the images something decodes of."""
  uris = {}
  for name, data in images.items():
    if (small := thumbnail(data)) is not None:
      uris[name] = "data:image/jpeg;base64," + base64.b64encode(small).decode("ascii")
  return uris


# ---------------------------------------------------------------------------
# Rendering.

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans KR","Noto Sans CJK KR","Apple SD Gothic Neo",
"Malgun Gothic","NanumGothic",sans-serif;margin:0 auto;max-width:1200px;
padding:0 16px 40px;color:#222;background:#fff}
h1{font-size:24px;margin:20px 0 4px}h2{border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:32px}
h3{margin:20px 0 6px}nav a{margin-right:12px}
.note{background:#fff3cd;border:1px solid #e0b400;padding:8px 12px;border-radius:4px;font-weight:600}
table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left;
vertical-align:top}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:flex;width:260px;height:12px;background:#f3f3f3;margin-top:3px}.bar span{display:block;height:12px}
tr.low td{background:#fde2e1}.empty-classes{background:#f8c9c6;padding:4px 8px}.mark{color:#b00020;font-weight:600}
.gallery{display:flex;flex-wrap:wrap;gap:6px;margin:4px 0 10px}
figure{margin:0;width:112px;font-size:11px;word-break:break-all}figure img,.ph{display:block;max-width:96px;
max-height:96px;border:1px solid #ccc}.ph{width:96px;height:72px;background:#eee;color:#888;display:flex;
align-items:center;justify-content:center}
.group{border-left:4px solid #ccc;padding-left:8px;margin:8px 0}.group.across{border-color:#b00020}
.more{color:#666;font-style:italic}.muted{color:#666}code{font-size:12px}
"""


def _e(value: object) -> str:
  return html.escape(str(value), quote=True)


def _figure(name: str, uris: Mapping[str, str], caption: str = "") -> str:
  extra = f"<br>{_e(caption)}" if caption else ""
  if name in uris:
    image = f'<img src="{uris[name]}" alt="{_e(name)}" title="{_e(name)}">'
  else:
    image = '<div class="ph">no image</div>'
  return f"<figure>{image}<figcaption>{_e(name)}{extra}</figcaption></figure>"


def _more(shown: int, total: int, what: str, where: str = "") -> str:
  if total <= shown:
    return ""
  place = f" ({where})" if where else ""
  return f'<p class="more">… and {total - shown:,} more {what}{place}.</p>'


def _overview(page: PageData) -> str:
  report = page.report
  sizes = ", ".join(f"{split} {n:,}" for split, n in page.split_sizes.items())
  rows = [("config", f"{page.dataset}: {page.config_description}"),
          ("source", page.source or "not recorded"),
          ("examples", f"{sum(page.split_sizes.values()):,} ({sizes})"),
          ("skipped files", f"{len(report.skipped_files):,}"),
          ("non-image files ignored", f"{report.ignored_files:,}")]
  if report.empty_splits:
    rows.append(("left out (no examples)", ", ".join(report.empty_splits)))
  rows.append(("build time", f"{page.build_seconds:.1f} s (scan and conversion)" if page.build_seconds is not None
               else "not recorded (this page was written after the build)"))
  rows += [(key, f"{value:,}") for key, value in sorted(report.counts.items())]
  if page.channel_mean and page.channel_std:
    rows.append(("train channel mean / std (R, G, B, 0–255)",
                 f"{', '.join(f'{v:.1f}' for v in page.channel_mean)} / "
                 f"{', '.join(f'{v:.1f}' for v in page.channel_std)}"))
  body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
  return (f'<section id="overview"><h2>Overview</h2><table>{body}</table>'
          f'<p class="muted">The same facts as data: <code>{CSV_NAME}</code> (every flagged photo) beside this '
          "page, and <code>tfds.builder(...).info.metadata</code> (class counts per split, class weights, the "
          "train split's channel mean and std, everything on this page).</p></section>")


def _classes(page: PageData) -> str:
  totals = [row.total for row in page.classes]
  found = [total for total in totals if total]  # Classes with none are marked anyway; a sample has many.
  median = stats.median(found) if found else 0
  low = median * FAR_BELOW_MEDIAN
  widest = max(totals, default=0) or 1
  described = any(row.description for row in page.classes)
  cropped = any(row.crop_boxes for row in page.classes)
  head = ("<tr><th class=n>id</th><th>class</th>" + ("<th>English</th>" if described else "")
          + "".join(f"<th class=n>{_e(s)}</th>" for s in page.splits) + "<th class=n>total</th><th>bar</th>"
          + ("<th class=n>crop box</th>" if cropped else "")
          + ("<th class=n>weight</th>" if page.class_weights else "") + "<th></th></tr>")
  rows = []
  for row in page.classes:
    if not row.total:
      continue  # Folded into one line, below.
    kind = "low" if row.total < low else ""
    bar = "".join(f'<span style="width:{100 * row.counts.get(s, 0) / widest:.2f}%;background:'
                  f'{_SPLIT_COLOURS.get(s, "#999")}" title="{_e(s)} {row.counts.get(s, 0)}"></span>'
                  for s in page.splits)
    cells = [f"<td class=n>{row.label}</td>", f'<td class="name">{_e(row.name)}</td>']
    if described:
      cells.append(f"<td>{_e(row.description)}</td>")
    cells += [f'<td class=n data-split="{_e(s)}">{row.counts.get(s, 0)}</td>' for s in page.splits]
    cells += [f'<td class=n data-split="total">{row.total}</td>', f'<td><div class="bar">{bar}</div></td>']
    if cropped:
      share = f"{100 * (row.crop_boxes or 0) / row.total:.0f} %" if row.total else "–"
      cells.append(f"<td class=n>{share}</td>")
    if page.class_weights:
      weight = page.class_weights[row.label] if row.label < len(page.class_weights) else 0.0
      cells.append(f"<td class=n>{weight:.3g}</td>")
    mark = "far below the median" if kind == "low" else ""
    cells.append(f'<td class="mark">{mark}</td>')
    rows.append(f'<tr class="class-row {kind}" data-label="{row.label}">{"".join(cells)}</tr>')
  legend = " ".join(f'<span style="color:{_SPLIT_COLOURS.get(s, "#999")}">■</span> {_e(s)}' for s in page.splits)
  marked = sum(1 for t in found if t < low)
  origin = (" Counts read back from the records: this config was built before the report existed."
            if page.counts_from_records else "")
  empty = [_e(row.name) + (f" ({_e(row.description)})" if row.description else "")
           for row in page.classes if not row.total]
  folded = f'<p class="empty-classes"><b>Classes with no photo ({len(empty)}):</b> {", ".join(empty)}.</p>'
  fonts = ('<p class="muted">Names shown as boxes: this viewer has no font for them. Install one, e.g. Noto Sans CJK '
           "(Debian, Ubuntu: <code>apt-get install fonts-noto-cjk</code>; Fedora: <code>dnf install "
           "google-noto-sans-cjk-fonts</code>); Windows and macOS have one.</p>"
           if any(not row.name.isascii() for row in page.classes) else "")
  return (f'<section id="classes"><h2>Classes</h2><p>{len(page.classes)} classes, {len(page.classes) - len(found)} '
          f"with no photo; median {median:g} photos per class found; {marked} below {FAR_BELOW_MEDIAN:g} × the "
          f"median are marked. Bars: {legend}. Class weights: "
          f"inverse frequency in train, n_train / (n_present × count).{origin}</p>{fonts}"
          f'{folded if empty else ""}<table class="classes">{head}{"".join(rows)}</table></section>')


def _split_of_group(page: PageData, files: Sequence[str]) -> str:
  found = {page.split_of[f] for f in files if f in page.split_of}
  return ", ".join(sorted(found)) if found else "unknown"


def _groups(page: PageData, groups: Sequence[Sequence[str]], uris: Mapping[str, str], kind: str) -> str:
  shown = _capped_groups(groups)
  parts = []
  for i, files in enumerate(groups[:LISTED_PER_SECTION]):
    across = len({class_folder(f) for f in files}) > 1
    folders = sorted({class_folder(f) for f in files})
    where = f"across classes: {', '.join(folders)}" if across else f"one class: {folders[0]}"
    title = f"{len(files)} photos, {where}; split {_split_of_group(page, files)}"
    if i < len(shown):
      members = "".join(_figure(f, uris) for f in shown[i])
      rest = len(files) - len(shown[i])
      body = f'<div class="gallery">{members}</div>' + (f'<p class="more">… and {rest} more.</p>' if rest else "")
    else:
      body = f"<p>{_e(' · '.join(files))}</p>"
    parts.append(f'<div class="group {"across" if across else ""}"><b>{_e(title)}</b>{body}</div>')
  across_classes = sum(1 for g in groups if len({class_folder(f) for f in g}) > 1)
  intro = (f"{len(groups):,} series, shots of one scene within a class" if kind == "series" else
           f"{len(groups):,} {kind} groups, {across_classes:,} across classes (label conflicts, listed first)")
  return (f"<p>{intro}. Each group keeps one split.</p>"
          + "".join(parts) + _more(min(len(groups), LISTED_PER_SECTION), len(groups), "groups", "in the metadata"))


def _problems(page: PageData, uris: Mapping[str, str]) -> str:
  report = page.report
  skipped = report.skipped_files
  shown = [_figure(s.file_name, uris, s.reason) for s in skipped[:THUMBNAILS_PER_SECTION]]
  listed = "".join(f"<tr><td>{_e(s.file_name)}</td><td>{_e(s.reason)}</td></tr>"
                   for s in skipped[THUMBNAILS_PER_SECTION:LISTED_PER_SECTION])
  reasons = collections.Counter(s.reason.split(":")[0] for s in skipped)
  summary = "; ".join(f"{_e(reason)}: {n}" for reason, n in reasons.most_common(10))
  crops = report.counts.get("bad crop lines", 0)
  crop_warnings = [w for w in report.warnings if "crop" in w.lower()]
  other_warnings = [w for w in report.warnings if "crop" not in w.lower()]
  return (
      '<section id="problems"><h2>Problems</h2>'
      f'<h3 id="skipped">Skipped files: {len(skipped):,}</h3>'
      + (f"<p>{summary}</p>" if skipped else "<p>None.</p>")
      + f'<div class="gallery">{"".join(shown)}</div>'
      + (f"<table>{listed}</table>" if listed else "")
      + _more(min(len(skipped), LISTED_PER_SECTION), len(skipped), "skipped files", "in the metadata")
      + f'<h3 id="near-duplicates">Near-duplicate groups: {len(report.near_duplicates):,}</h3>'
      + _groups(page, [g["files"] for g in near_duplicate_groups(page)], uris, "near-duplicate")
      + f'<h3 id="series">Series: {len(report.series):,}</h3>'
      + "<p>Shots of one scene close in their class's order (one pot, another angle or crop; docs/splits.md).</p>"
      + _groups(page, series_groups(page), uris, "series")
      + f'<h3 id="identical">Byte-identical groups: {len(report.duplicates):,}</h3>'
      + _groups(page, identical_groups(page), uris, "byte-identical")
      + f'<h3 id="crop-lines">Rejected crop lines: {crops:,}</h3>'
      + "<p>Lines of <code>crop_area.properties</code> that could not be used (malformed, or a box outside its "
      "photo); those photos keep no crop box.</p>"
      + "".join(f"<p>{_e(w)}</p>" for w in crop_warnings)
      + f'<h3 id="warnings">Warnings: {len(other_warnings):,}</h3>'
      + "".join(f"<p>{_e(w)}</p>" for w in other_warnings[:LISTED_PER_SECTION])
      + _more(min(len(other_warnings), LISTED_PER_SECTION), len(other_warnings), "warnings", "in the metadata")
      + "</section>")


def _flags(page: PageData, uris: Mapping[str, str]) -> str:
  by_flag = flag_rows(page)
  parts = []
  for flag, rows in by_flag.items():
    figures = "".join(_figure(r["file_name"], uris, f"{r['split']} · {r['label']} · {float(r['score']):.3g}")
                      for r in rows[:THUMBNAILS_PER_SECTION])
    threshold = page.flag_thresholds.get(flag)
    rule = f" (score below {threshold:.3g})" if threshold is not None else ""
    parts.append(f'<h3 id="flag-{_e(flag)}">{_e(flag.replace("_", " "))}: {len(rows):,}{rule}</h3>'
                 f'<div class="gallery">{figures}</div>'
                 + _more(min(len(rows), THUMBNAILS_PER_SECTION), len(rows), "photos", CSV_NAME))
  if not by_flag:
    parts.append("<p>No quality flags recorded for this build.</p>")
  return ('<section id="quality"><h2>Quality flags</h2><p>Computed in the scan from the pixels it decodes; a flag '
          f"is information, nothing is removed by it. Scores follow CleanVision's convention: 0 to 1, lower is worse "
          "(definitions and thresholds: <code>photo_datasets/quality.py</code>). Worst first; every flagged photo "
          f"is in {CSV_NAME}.</p>"
          + "".join(parts) + "</section>")


def _counter_table(title: str, counts: Mapping[str, int]) -> str:
  rows = "".join(f"<tr><td>{_e(k)}</td><td class=n>{v:,}</td></tr>" for k, v in counts.items())
  return f"<h3>{_e(title)}</h3>" + (f"<table>{rows}</table>" if rows else "<p>None.</p>")


def _sizes(page: PageData) -> str:
  images = page.source_images
  if not images:
    return ('<section id="sizes"><h2>Sizes and formats</h2><p>Not recorded: this config was built before the '
            "report existed; build it again to see them.</p></section>")
  edges, counts = images["long_side"]["edges"], images["long_side"]["counts"]
  widest = max(counts, default=0) or 1
  rows = []
  for i, n in enumerate(counts):
    label = f"{edges[i]:,}–{edges[i + 1] - 1:,} px" if i + 1 < len(edges) else f"≥ {edges[i]:,} px"
    rows.append(f'<tr><td>{label}</td><td class=n>{n:,}</td><td><div class="bar"><span style="width:'
                f'{100 * n / widest:.2f}%;background:#4e79a7"></span></div></td></tr>')
  rotations = {f"orientation {k}": v for k, v in images["orientations"].items() if k != "1"}
  return ('<section id="sizes"><h2>Sizes and formats</h2><p>The source photos as they came (upright sizes).</p>'
          f'<h3>Longer side</h3><table class="histogram">{"".join(rows)}</table>'
          + _counter_table("Formats", images["formats"]) + _counter_table("Modes", images["modes"])
          + _counter_table("Conversions made (not stored as they came: re-encoded as RGB JPEG)",
                           images["conversions"])
          + _counter_table("EXIF rotations (turned upright before storing)", rotations) + "</section>")


def render(page: PageData, uris: Mapping[str, str]) -> str:
  """The page's HTML; `uris`: file_name -> thumbnail `data:` URI."""
  note = f'<p class="note">{_e(page.note)}</p>' if page.note else ""
  created = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
  again = shlex.join(["python", "-m", "photo_datasets.report", page.dataset, "--data_dir", page.data_dir])
  nav = "".join(f'<a href="#{key}">{title}</a>' for key, title in (
      ("overview", "Overview"), ("problems", "Problems"), ("classes", "Classes"), ("quality", "Quality flags"),
      ("sizes", "Sizes and formats")))
  return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          f"<title>{_e(page.dataset)}: build report</title><style>{_CSS}</style></head><body>"
          f"<h1>{_e(page.dataset)}: build report</h1><p class=\"muted\">Written {created} by photo_datasets "
          f"(<code>{_e(again)}</code> writes it again).</p>"
          f"{note}<nav>{nav}</nav>"
          + _overview(page) + _problems(page, uris) + _classes(page) + _flags(page, uris) + _sizes(page)
          + "</body></html>\n")


def write_csv(path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]]) -> None:
  """`quality.csv`: one row per flagged photo (`CSV_FIELDS`); only the header where none is flagged."""
  with open(path, "w", encoding="utf-8", newline="") as f:
    writer = csv.DictWriter(f, CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)


def write_files(folder: str | os.PathLike[str], page: PageData, images: Mapping[str, bytes]) -> str:
  """Writes `report.html` and `quality.csv` into `folder`; returns the page's path."""
  text = render(page, data_uris(images))
  path = os.path.join(os.fspath(folder), FILE_NAME)
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)
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
      tf.lookup.KeyValueTensorInitializer(tf.constant(keys), tf.ones(len(keys), tf.int32)), default_value=0)

  def pick(example: dict[str, Any]) -> tuple[Any, Any, Any]:
    name = example["file_name"]
    # Only the wanted images travel to Python.
    image = tf.where(table.lookup(name) > 0, example["image"], tf.constant(b""))
    return name, example[label_key], image

  records = _Records({}, {}, {})
  num_classes = info.features[label_key].num_classes
  for split in info.splits:
    ds = builder.as_dataset(split=split, shuffle_files=False, decoders={"image": tfds.decode.SkipDecoding()},
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


def page_data(builder: Any, split_of: Mapping[str, str] | None = None) -> PageData:
  """The page of the config `builder` has built, from its `info` (the build report and the
  statistics in `info.metadata`); classes without counts in the metadata get none (0)."""
  info = builder.info
  metadata = dict(info.metadata)
  report = BuildReport.from_metadata(metadata)
  names = list(info.features[_label_key(info)].names)
  descriptions: dict[str, str] = getattr(builder, "class_descriptions", dict)()
  splits = list(info.splits)
  counts = metadata.get("class_counts") or {}
  crops = metadata.get("crop_boxes")
  classes = [ClassRow(i, name, descriptions.get(name, ""), {s: int(counts.get(s, [0] * len(names))[i]) for s in splits},
                      int(crops[i]) if crops else None) for i, name in enumerate(names)]
  flags = list(getattr(report, "quality_flags", None) or metadata.get("quality_flags") or [])
  config = builder.builder_config
  return PageData(
      dataset=f"{info.name}/{info.config_name}", config_description=config.description if config else "",
      splits=splits, classes=classes, report=report, quality_flags=flags, flag_names=_flag_names(flags),
      flag_thresholds=dict(quality.THRESHOLDS),
      split_of=dict(split_of or {}), source=metadata.get("source"),
      source_images=metadata.get("source_images"), class_weights=metadata.get("class_weights"),
      channel_mean=metadata.get("channel_mean"), channel_std=metadata.get("channel_std"),
      note=getattr(builder, "REPORT_NOTE", ""), data_dir=os.fspath(builder.data_dir_root))


def _skipped_images(source: str | None, names: Iterable[str]) -> dict[str, bytes]:
  """The bytes of skipped files still found as files under the source folder."""
  found = {}
  for name in names:
    path = os.path.join(source, name) if source else ""
    if path and os.path.isfile(path):
      with open(path, "rb") as f:
        found[name] = f.read()
  return found


def write(builder: Any, *, split_of: Mapping[str, str] | None = None,
          source_images: ImageSource | None = None, build_seconds: float | None = None) -> str:
  """Writes `report.html` and `quality.csv` of the config `builder` has built into its
  `data_path`; returns the page's path.

  Args:
    builder: the builder of a built config.
    split_of: file_name -> split of every example, where the caller knows them (a build);
      else a pass over the records learns them (and the class counts, where the metadata
      holds none).
    source_images: reads the wanted photos, framed as stored, from the source instead of the
      records (a build: far cheaper than a pass over every record).
    build_seconds: how long the build took (a build; not kept in the metadata, which stays the
      same for the same source).
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
    images = records.images
  else:
    images = source_images(stored) if source_images and stored else {}
  images.update(_skipped_images(page.source, skipped))
  return write_files(builder.data_path, page, images)

"""The build report page's HTML, from its `PageData`: one self-contained file,
inline CSS, no script, thumbnails as `data:` URIs."""

from __future__ import annotations

import collections
import datetime
import html
import shlex
import statistics as stats
from collections.abc import Mapping, Sequence

from photo_datasets.catalog.page_data import (
    CSV_NAME,
    LISTED_PER_SECTION,
    THUMBNAILS_PER_SECTION,
    PageData,
    capped_groups,
    flag_rows,
    identical_groups,
    near_duplicate_groups,
    series_groups,
)
from photo_datasets.photos.records import class_folder

# A class whose count is below this share of the median count is marked.
FAR_BELOW_MEDIAN = 0.5
_SPLIT_COLOURS = {"train": "#4e79a7", "validation": "#f28e2b", "test": "#59a14f"}


# ---------------------------------------------------------------------------
# Rendering.

_CSS = """
body{
  font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,
    "Noto Sans KR","Noto Sans CJK KR","Apple SD Gothic Neo","Malgun Gothic","NanumGothic",
    sans-serif;
  margin:0 auto;max-width:1200px;padding:0 16px 40px;color:#222;background:#fff}
h1{font-size:24px;margin:20px 0 4px}
h2{border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:32px}
h3{margin:20px 0 6px}
nav a{margin-right:12px}
.note{background:#fff3cd;border:1px solid #e0b400;padding:8px 12px;border-radius:4px;
  font-weight:600}
table{border-collapse:collapse;margin:6px 0}
td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:flex;width:260px;height:12px;background:#f3f3f3;margin-top:3px}
.bar span{display:block;height:12px}
tr.low td{background:#fde2e1}
.empty-classes{background:#f8c9c6;padding:4px 8px}
.mark{color:#b00020;font-weight:600}
.gallery{display:flex;flex-wrap:wrap;gap:6px;margin:4px 0 10px}
figure{margin:0;width:112px;font-size:11px;word-break:break-all}
figure img,.ph{display:block;max-width:96px;max-height:96px;border:1px solid #ccc}
.ph{width:96px;height:72px;background:#eee;color:#888;display:flex;align-items:center;
  justify-content:center}
.group{border-left:4px solid #ccc;padding-left:8px;margin:8px 0}
.group.across{border-color:#b00020}
.more{color:#666;font-style:italic}
.muted{color:#666}
code{font-size:12px}
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
  rows.append(("build time", f"{page.build_seconds:.1f} s (scan and conversion)"
               if page.build_seconds is not None
               else "not recorded (this page was written after the build)"))
  rows += [(key, f"{value:,}") for key, value in sorted(report.counts.items())]
  rows.append(("fingerprint (SHA-256)",
               page.fingerprint or "not recorded (built before fingerprints)"))
  if page.channel_mean and page.channel_std:
    rows.append(("train channel mean / std (R, G, B, 0–255)",
                 f"{', '.join(f'{v:.1f}' for v in page.channel_mean)} / "
                 f"{', '.join(f'{v:.1f}' for v in page.channel_std)}"))
  body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
  return (f'<section id="overview"><h2>Overview</h2><table>{body}</table>'
          f'<p class="muted">The same facts as data: <code>{CSV_NAME}</code> (every flagged photo) '
          "beside this page, and <code>tfds.builder(...).info.metadata</code> (class counts per "
          "split, class weights, the train split's channel mean and std, everything on this page). "
          f"<code>python -m photo_datasets verify {_e(page.dataset)} "
          f"--data_dir {_e(page.data_dir)}</code> "
          "checks a copy against the fingerprint.</p></section>")


def _classes(page: PageData) -> str:
  totals = [row.total for row in page.classes]
  # Classes with none are marked anyway; a sample has many.
  found = [total for total in totals if total]
  median = stats.median(found) if found else 0
  low = median * FAR_BELOW_MEDIAN
  widest = max(totals, default=0) or 1
  described = any(row.description for row in page.classes)
  cropped = any(row.crop_boxes for row in page.classes)
  head = ("<tr><th class=n>id</th><th>class</th>" + ("<th>English</th>" if described else "")
          + "".join(f"<th class=n>{_e(s)}</th>" for s in page.splits)
          + "<th class=n>total</th><th>bar</th>"
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
    cells += [f'<td class=n data-split="total">{row.total}</td>',
              f'<td><div class="bar">{bar}</div></td>']
    if cropped:
      share = f"{100 * (row.crop_boxes or 0) / row.total:.0f} %" if row.total else "–"
      cells.append(f"<td class=n>{share}</td>")
    if page.class_weights:
      weight = page.class_weights[row.label] if row.label < len(page.class_weights) else 0.0
      cells.append(f"<td class=n>{weight:.3g}</td>")
    mark = "far below the median" if kind == "low" else ""
    cells.append(f'<td class="mark">{mark}</td>')
    rows.append(f'<tr class="class-row {kind}" data-label="{row.label}">{"".join(cells)}</tr>')
  legend = " ".join(f'<span style="color:{_SPLIT_COLOURS.get(s, "#999")}">■</span> {_e(s)}'
                    for s in page.splits)
  marked = sum(1 for t in found if t < low)
  origin = (" Counts read back from the records: this config was built before the report existed."
            if page.counts_from_records else "")
  empty = [_e(row.name) + (f" ({_e(row.description)})" if row.description else "")
           for row in page.classes if not row.total]
  folded = (f'<p class="empty-classes"><b>Classes with no photo ({len(empty)}):</b> '
            f'{", ".join(empty)}.</p>')
  fonts = ('<p class="muted">Names shown as boxes: this viewer has no font for them. Install one, '
           "e.g. Noto Sans CJK (Debian, Ubuntu: <code>apt-get install fonts-noto-cjk</code>; "
           "Fedora: <code>dnf install google-noto-sans-cjk-fonts</code>); "
           "Windows and macOS have one.</p>"
           if any(not row.name.isascii() for row in page.classes) else "")
  return (f'<section id="classes"><h2>Classes</h2><p>{len(page.classes)} classes, '
          f"{len(page.classes) - len(found)} with no photo; median {median:g} photos per class "
          f"found; {marked} below {FAR_BELOW_MEDIAN:g} × the median are marked. Bars: {legend}. "
          f"Class weights: inverse frequency in train, n_train / (n_present × count).{origin}</p>"
          f"{fonts}"
          f'{folded if empty else ""}<table class="classes">{head}{"".join(rows)}</table>'
          "</section>")


def _split_of_group(page: PageData, files: Sequence[str]) -> str:
  found = {page.split_of[f] for f in files if f in page.split_of}
  return ", ".join(sorted(found)) if found else "unknown"


def _groups(page: PageData, groups: Sequence[Sequence[str]], uris: Mapping[str, str],
            kind: str) -> str:
  shown = capped_groups(groups)
  parts = []
  for i, files in enumerate(groups[:LISTED_PER_SECTION]):
    across = len({class_folder(f) for f in files}) > 1
    folders = sorted({class_folder(f) for f in files})
    where = f"across classes: {', '.join(folders)}" if across else f"one class: {folders[0]}"
    title = f"{len(files)} photos, {where}; split {_split_of_group(page, files)}"
    if i < len(shown):
      members = "".join(_figure(f, uris) for f in shown[i])
      rest = len(files) - len(shown[i])
      body = (f'<div class="gallery">{members}</div>'
              + (f'<p class="more">… and {rest} more.</p>' if rest else ""))
    else:
      body = f"<p>{_e(' · '.join(files))}</p>"
    parts.append(f'<div class="group {"across" if across else ""}"><b>{_e(title)}</b>{body}</div>')
  across_classes = sum(1 for g in groups if len({class_folder(f) for f in g}) > 1)
  intro = (f"{len(groups):,} series, shots of one scene within a class" if kind == "series" else
           f"{len(groups):,} {kind} groups, {across_classes:,} across classes "
           "(label conflicts, listed first)")
  return (f"<p>{intro}. Each group keeps one split.</p>"
          + "".join(parts)
          + _more(min(len(groups), LISTED_PER_SECTION), len(groups), "groups", "in the metadata"))


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
      + _more(min(len(skipped), LISTED_PER_SECTION), len(skipped), "skipped files",
              "in the metadata")
      + f'<h3 id="near-duplicates">Near-duplicate groups: {len(report.near_duplicates):,}</h3>'
      + _groups(page, [g["files"] for g in near_duplicate_groups(page)], uris, "near-duplicate")
      + f'<h3 id="series">Series: {len(report.series):,}</h3>'
      + "<p>Shots of one scene close in their class's order "
      "(one pot, another angle or crop; docs/splits.md).</p>"
      + _groups(page, series_groups(page), uris, "series")
      + f'<h3 id="identical">Byte-identical groups: {len(report.duplicates):,}</h3>'
      + _groups(page, identical_groups(page), uris, "byte-identical")
      + f'<h3 id="crop-lines">Rejected crop lines: {crops:,}</h3>'
      + "<p>Lines of <code>crop_area.properties</code> that could not be used "
      "(malformed, or a box outside its photo); those photos keep no crop box.</p>"
      + "".join(f"<p>{_e(w)}</p>" for w in crop_warnings)
      + f'<h3 id="warnings">Warnings: {len(other_warnings):,}</h3>'
      + "".join(f"<p>{_e(w)}</p>" for w in other_warnings[:LISTED_PER_SECTION])
      + _more(min(len(other_warnings), LISTED_PER_SECTION), len(other_warnings), "warnings",
              "in the metadata")
      + "</section>")


def _flags(page: PageData, uris: Mapping[str, str]) -> str:
  by_flag = flag_rows(page)
  parts = []
  for flag, rows in by_flag.items():
    figures = "".join(_figure(r["file_name"], uris,
                              f"{r['split']} · {r['label']} · {float(r['score']):.3g}")
                      for r in rows[:THUMBNAILS_PER_SECTION])
    threshold = page.flag_thresholds.get(flag)
    rule = f" (score below {threshold:.3g})" if threshold is not None else ""
    parts.append(f'<h3 id="flag-{_e(flag)}">{_e(flag.replace("_", " "))}: {len(rows):,}{rule}</h3>'
                 f'<div class="gallery">{figures}</div>'
                 + _more(min(len(rows), THUMBNAILS_PER_SECTION), len(rows), "photos", CSV_NAME))
  if not by_flag:
    parts.append("<p>No quality flags recorded for this build.</p>")
  return ('<section id="quality"><h2>Quality flags</h2>'
          "<p>Computed in the scan from the pixels it decodes; a flag is information, nothing is "
          "removed by it. Scores follow CleanVision's convention: 0 to 1, lower is worse "
          "(definitions and thresholds: <code>photo_datasets/photos/quality.py</code>). "
          f"Worst first; every flagged photo is in {CSV_NAME}.</p>"
          + "".join(parts) + "</section>")


def _counter_table(title: str, counts: Mapping[str, int]) -> str:
  rows = "".join(f"<tr><td>{_e(k)}</td><td class=n>{v:,}</td></tr>" for k, v in counts.items())
  return f"<h3>{_e(title)}</h3>" + (f"<table>{rows}</table>" if rows else "<p>None.</p>")


def _sizes(page: PageData) -> str:
  images = page.source_images
  if not images:
    return ('<section id="sizes"><h2>Sizes and formats</h2>'
            "<p>Not recorded: this config was built before the report existed; "
            "build it again to see them.</p></section>")
  edges, counts = images["long_side"]["edges"], images["long_side"]["counts"]
  widest = max(counts, default=0) or 1
  rows = []
  for i, n in enumerate(counts):
    label = (f"{edges[i]:,}–{edges[i + 1] - 1:,} px" if i + 1 < len(edges)
             else f"≥ {edges[i]:,} px")
    rows.append(f'<tr><td>{label}</td><td class=n>{n:,}</td>'
                '<td><div class="bar"><span style="width:'
                f'{100 * n / widest:.2f}%;background:#4e79a7"></span></div></td></tr>')
  rotations = {f"orientation {k}": v for k, v in images["orientations"].items() if k != "1"}
  return ('<section id="sizes"><h2>Sizes and formats</h2>'
          "<p>The source photos as they came (upright sizes).</p>"
          f'<h3>Longer side</h3><table class="histogram">{"".join(rows)}</table>'
          + _counter_table("Formats", images["formats"]) + _counter_table("Modes", images["modes"])
          + _counter_table("Conversions made (not stored as they came: re-encoded as RGB JPEG)",
                           images["conversions"])
          + _counter_table("EXIF rotations (turned upright before storing)", rotations)
          + "</section>")


def render(page: PageData, uris: Mapping[str, str]) -> str:
  """The page's HTML; `uris`: file_name -> thumbnail `data:` URI."""
  note = f'<p class="note">{_e(page.note)}</p>' if page.note else ""
  created = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
  again = shlex.join(["python", "-m", "photo_datasets", "report", page.dataset,
                      "--data_dir", page.data_dir])
  nav = "".join(f'<a href="#{key}">{title}</a>' for key, title in (
      ("overview", "Overview"), ("problems", "Problems"), ("classes", "Classes"),
      ("quality", "Quality flags"), ("sizes", "Sizes and formats")))
  return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          f"<title>{_e(page.dataset)}: build report</title><style>{_CSS}</style></head><body>"
          f"<h1>{_e(page.dataset)}: build report</h1>"
          f"<p class=\"muted\">Written {created} by photo_datasets "
          f"(<code>{_e(again)}</code> writes it again).</p>"
          f"{note}<nav>{nav}</nav>"
          + _overview(page) + _problems(page, uris) + _classes(page) + _flags(page, uris)
          + _sizes(page)
          + "</body></html>\n")

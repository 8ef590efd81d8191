"""The build report page (photo_datasets/catalog/report_page.py), `quality.csv`, the statistics in
`info.metadata` (photo_datasets/catalog/build_stats.py) and `python -m photo_datasets report`.

A flowers build from the 100 bundled CC-BY photos plus the problems a web corpus
has (a byte copy and near copies filed under another class, broken and odd
files) is shared by most tests; the page is opened in headless Chromium
(Debian's `chromium`; skipped where it is not installed) as a person would.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import html.parser
import io
import json
import pathlib
import re
import shlex
import shutil
import subprocess
from typing import Any

import numpy as np
import pytest
import tensorflow_datasets as tfds
from PIL import Image

import flowers_dataset  # noqa: F401  (registers the builder)
import korean_food
from photo_datasets import testing
from photo_datasets.catalog import build_report, build_stats, page_data, page_html, report_page
from photo_datasets.catalog.build_report import BuildReport, Skipped
from photo_datasets.commands import report

REPO = pathlib.Path(__file__).resolve().parents[1]
SAMPLE = REPO / "flowers_dataset" / "sample" / "flower_photos"
# Its byte copy is in roses/.
COPIED = "daisy/" + sorted(p.name for p in (SAMPLE / "daisy").glob("*.jpg"))[0]
# Near copies in sunflowers/.
NEAR = "tulips/" + sorted(p.name for p in (SAMPLE / "tulips").glob("*.jpg"))[0]
# Files a builder skips or converts, by file_name.
EXTRA = {
    "daisy/broken_truncated.jpg": testing.broken_files(1)["truncated"],
    "daisy/broken_empty.jpg": b"",
    "roses/odd_png.jpg": testing.odd_images(2)["png_as_jpg"],
    "roses/odd_rotated.jpg": testing.odd_images(2)["exif_rotated"],
}


class _Page(html.parser.HTMLParser):
  """What a test reads of a page: class rows with their counts, images, text, links, tags."""

  def __init__(self, text: str):
    super().__init__()
    self.rows: dict[int, dict[str, Any]] = {}
    self.images: list[dict[str, str]] = []
    self.tags: set[str] = set()
    self.links: list[str] = []
    self.body_attrs: dict[str, str] = {}
    self._row: dict[str, Any] | None = None
    self._cell: str | None = None
    self._text: list[str] = []
    self.feed(text)
    self.text = " ".join("".join(self._text).split())

  def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
    attr = {k: v or "" for k, v in attrs}
    self.tags.add(tag)
    self._text.append(" ")  # Text of separate elements stays apart.
    if tag == "body":
      self.body_attrs = attr
    if tag == "tr" and "class-row" in attr.get("class", ""):
      self._row = self.rows[int(attr["data-label"])] = {"counts": {}, "cells": [],
                                                        "class": attr["class"]}
    if tag == "td" and self._row is not None:
      self._cell = attr.get("data-split", "")
      self._row["cells"].append("")
    if tag == "img":
      self.images.append(attr)
    for key in ("href", "src"):
      if key in attr and tag != "img":
        self.links.append(attr[key])

  def handle_endtag(self, tag: str) -> None:
    if tag == "tr":
      self._row = None
    if tag == "td" and self._row is not None and self._cell:
      self._row["counts"][self._cell] = int(self._row["cells"][-1])

  def handle_data(self, data: str) -> None:
    self._text.append(data)
    if self._row is not None and self._row["cells"]:
      self._row["cells"][-1] += data


def _tree(root: pathlib.Path) -> pathlib.Path:
  manual = root / "manual"
  shutil.copytree(SAMPLE, manual / "flower_photos")
  files = manual / "flower_photos"
  (files / "roses" / "copy_of_daisy.jpg").write_bytes((SAMPLE / COPIED).read_bytes())
  for kind, data in list(testing.near_copies((SAMPLE / NEAR).read_bytes()).items())[:3]:
    (files / "sunflowers" / f"near_{kind}.jpg").write_bytes(data)
  for name, data in EXTRA.items():
    (files / name).write_bytes(data)
  return manual


@pytest.fixture(scope="module")
def built(tmp_path_factory):
  """(data_dir, {config: (builder, page path, printed output, examples)}) of flowers 224 and
  full."""
  root = tmp_path_factory.mktemp("report_page")
  manual = _tree(root)
  builds = {}
  for config in ("224", "full"):
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
      builder = testing.build(f"flowers_dataset/{config}", root / "data", manual, workers=1,
                              download_dir=root / "downloads")
    page = pathlib.Path(builder.data_path) / report_page.FILE_NAME
    builds[config] = (builder, page, said.getvalue(), testing.read_examples(builder))
  return root / "data", builds


def _counts(examples: dict[str, dict[str, Any]], names: list[str]) -> dict[int, dict[str, int]]:
  counts = {i: {"train": 0, "validation": 0, "test": 0} for i in range(len(names))}
  for example in examples.values():
    counts[int(example["label"])][example["split"]] += 1
  return counts


KNOWN_FLAGS = [("sunflowers/9461693602_710f20904f.jpg", "low_information"),
               ("roses/odd_png.jpg", "blurry"), ("roses/odd_rotated.jpg", "blurry"),
               ("daisy/4820415253_15bc3b6833_n.jpg", "grayscale")]


def test_every_build_writes_the_page_and_the_csv_beside_dataset_info_and_the_summary_names_it(
    built):
  for builder, page, said, examples in built[1].values():
    folder = page.parent
    assert ((folder / "dataset_info.json").exists() and page.exists()
            and (folder / report_page.CSV_NAME).exists())
    assert f"  report: {page}" in said.splitlines()
    with open(folder / report_page.CSV_NAME, encoding="utf-8", newline="") as f:
      rows = list(csv.DictReader(f))
    assert rows == [{k: str(v) for k, v in r.items() if k in report_page.CSV_FIELDS}
                    for r in BuildReport.from_metadata(dict(builder.info.metadata)).quality_flags]
    # The small sunflower on black and the black-and-white daisy (tests/test_quality.py), the two
    # made-up odd images.
    assert [(r["file_name"], r["flag"], r["split"]) for r in rows] == [
        (name, flag, examples[name]["split"]) for name, flag in KNOWN_FLAGS]


def test_the_overview_says_how_long_the_build_took(built):
  for _, page, _, _ in built[1].values():
    assert re.search(r"build time \d+\.\d s \(scan and conversion\)",
                     _Page(page.read_text("utf-8")).text)


def test_the_printed_summary_is_short(built):
  for _, _, said, _ in built[1].values():
    lines = said.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("flowers_dataset/"))
    summary = lines[start:next(i for i, line in enumerate(lines)
                               if line.startswith("  report: ")) + 1]
    assert len(summary) <= 2 + build_report.SUMMARY_CASES + 2, summary
    assert "skipped files: 2" in summary[1] and "across classes" in summary[1]


def test_the_page_is_self_contained_without_script_and_its_sections_come_in_order(built):
  for _, page, _, _ in built[1].values():
    text = page.read_text("utf-8")
    parsed = _Page(text)
    assert "script" not in parsed.tags and "link" not in parsed.tags and "iframe" not in parsed.tags
    assert all(link.startswith("#") for link in parsed.links), parsed.links
    assert parsed.images and all(i["src"].startswith("data:image/jpeg;base64,")
                                 for i in parsed.images)
    positions = [text.index(f'<section id="{key}">')
                 for key in ("overview", "problems", "classes", "quality", "sizes")]
    assert positions == sorted(positions)
    headings = [text.index(f'<h3 id="{key}">')
                for key in ("skipped", "near-duplicates", "series", "identical", "crop-lines",
                            "warnings")]
    assert headings == sorted(headings)


def test_every_class_row_has_its_counts_per_split_as_stored(built):
  for builder, page, _, examples in built[1].values():
    names = builder.info.features["label"].names
    rows = _Page(page.read_text("utf-8")).rows
    expected = _counts(examples, names)
    assert {label: {s: n for s, n in row["counts"].items() if s != "total"}
            for label, row in rows.items()} == expected
    assert all(row["counts"]["total"] == sum(expected[label].values())
               for label, row in rows.items())
    assert [row["cells"][1] for row in rows.values()] == names


def test_problems_show_skips_with_reasons_and_groups_across_classes_with_thumbnails_and_their_split(
    built):
  _, page, _, examples = built[1]["224"]
  parsed = _Page(page.read_text("utf-8"))
  shown = {image["alt"] for image in parsed.images}
  assert "daisy/broken_empty.jpg: empty file" not in parsed.text  # Shown as name, then reason.
  assert ("daisy/broken_empty.jpg empty file" in parsed.text
          and "daisy/broken_truncated.jpg" in parsed.text)
  # Nothing decodes of them.
  assert not {"daisy/broken_empty.jpg", "daisy/broken_truncated.jpg"} & shown
  copies = {n for n in examples if n.startswith("sunflowers/near_")} | {NEAR}
  assert len(copies) == 4 and copies <= shown and {COPIED, "roses/copy_of_daisy.jpg"} <= shown
  split = examples[NEAR]["split"]
  assert f"across classes: sunflowers, tulips; split {split}" in parsed.text
  assert f"across classes: daisy, roses; split {examples[COPIED]['split']}" in parsed.text


def test_thumbnails_are_small_upright_jpegs_of_the_stored_photos(built):
  for _, page, _, _ in built[1].values():
    for image in _Page(page.read_text("utf-8")).images:
      with Image.open(io.BytesIO(base64.b64decode(image["src"].split(",", 1)[1]))) as thumb:
        assert thumb.format == "JPEG" and max(thumb.size) <= report_page.THUMBNAIL_SIDE


def _thumbnails(page: pathlib.Path) -> dict[str, Image.Image]:
  found = {}
  for image in _Page(page.read_text("utf-8")).images:
    with Image.open(io.BytesIO(base64.b64decode(image["src"].split(",", 1)[1]))) as thumb:
      found[image["alt"]] = thumb.convert("RGB")
  return found


def test_a_builds_thumbnails_from_the_source_are_framed_as_the_stored_images(built):
  """At build time thumbnails come from the source; they show what the records hold: for 224,
  the square crop of the stored image (of a wide photo, not the whole photo)."""
  for builder, page, _, examples in built[1].values():
    for name, thumb in _thumbnails(page).items():
      with Image.open(io.BytesIO(examples[name]["image"])) as stored:
        expected = stored.convert("RGB").resize(thumb.size, Image.Resampling.BILINEAR)
      difference = sum(abs(a - b) for a, b in zip(thumb.tobytes(), expected.tobytes(), strict=True))
      assert difference / len(thumb.tobytes()) < 12, (builder.builder_config.name, name)
      if builder.builder_config.name == "224":
        assert thumb.size == (report_page.THUMBNAIL_SIDE, report_page.THUMBNAIL_SIDE)


def test_metadata_holds_class_counts_weights_and_source_statistics_readable_from_a_new_builder(
    built):
  data_dir, builds = built
  builder, _, _, examples = builds["224"]
  metadata = tfds.builder("flowers_dataset/224", data_dir=str(data_dir)).info.metadata
  names = builder.info.features["label"].names
  counts = _counts(examples, names)
  assert metadata["class_counts"] == {s: [counts[i][s] for i in range(len(names))]
                                      for s in ("train", "validation", "test")}
  train = metadata["class_counts"]["train"]
  assert metadata["class_weights"] == pytest.approx([sum(train) / (len(names) * n) for n in train],
                                                    abs=1e-5)
  sources = metadata["source_images"]
  # odd_png.jpg, near_png.jpg.
  assert sources["formats"]["PNG"] == 2 and sources["orientations"]["6"] == 1
  assert sources["conversions"]["PNG RGB"] == 2
  assert sum(sources["long_side"]["counts"]) == len(examples)
  # Same source, same data.
  assert metadata["source"].endswith("flower_photos") and "build_seconds" not in metadata
  # Each train photo weighs the same; the scan's pixels are a reduced-scale decode, so within half a
  # level.
  moments = []
  for name, example in examples.items():
    if example["split"] == "train":
      with Image.open(data_dir.parent / "manual" / "flower_photos" / name) as image:
        pixels = np.asarray(image.convert("RGB"), np.float64).reshape(-1, 3)
      moments.append((pixels.mean(axis=0), (pixels**2).mean(axis=0)))
  mean = np.mean([m for m, _ in moments], axis=0)
  std = np.sqrt(np.mean([squares for _, squares in moments], axis=0) - mean**2)
  assert metadata["channel_mean"] == pytest.approx(mean, abs=0.5)
  assert metadata["channel_std"] == pytest.approx(std, abs=0.5)


def test_class_weights_are_inverse_frequency_and_zero_for_an_empty_class():
  assert build_stats.class_weights([10, 0, 30]) == [2.0, 0.0, pytest.approx(0.666667)]
  assert build_stats.class_weights([0, 0]) == [0.0, 0.0]


def _strip_to_an_old_build(folder: pathlib.Path) -> None:
  """What a config built before the page existed has: no page, no CSV, only the report in its
  metadata."""
  (folder / report_page.FILE_NAME).unlink()
  (folder / report_page.CSV_NAME).unlink()
  metadata = json.loads((folder / "metadata.json").read_text("utf-8"))
  fields = set(BuildReport.__dataclass_fields__)
  (folder / "metadata.json").write_text(
      json.dumps({k: v for k, v in metadata.items() if k in fields}), "utf-8")


def test_the_command_writes_the_page_of_a_config_built_before_and_prints_its_path(built, tmp_path,
                                                                                  capsys):
  data_dir, builds = built
  copy = tmp_path / "data"
  shutil.copytree(data_dir / "flowers_dataset" / "224", copy / "flowers_dataset" / "224")
  folder = copy / "flowers_dataset" / "224" / "1.9.0"
  _strip_to_an_old_build(folder)
  report.main(["flowers_dataset/224", "--data_dir", str(copy)])
  assert capsys.readouterr().out.splitlines() == [str(folder / report_page.FILE_NAME)]
  parsed = _Page((folder / report_page.FILE_NAME).read_text("utf-8"))
  builder, _, _, examples = builds["224"]
  assert {label: {s: n for s, n in row["counts"].items() if s != "total"}
          for label, row in parsed.rows.items()} == _counts(
              examples, builder.info.features["label"].names)
  assert ("Counts read back from the records" in parsed.text
          and "build it again to see them" in parsed.text)
  assert "build time not recorded" in parsed.text
  assert (folder / report_page.CSV_NAME).exists()


def test_a_config_reused_without_its_page_gets_it_once(built, tmp_path, capsys):
  """As after a build stopped between its records and its page (Ctrl-C): the rerun, "Reusing
  dataset", writes it."""
  data_dir, _ = built
  copy = tmp_path / "data"
  shutil.copytree(data_dir / "flowers_dataset" / "full", copy / "flowers_dataset" / "full")
  folder = copy / "flowers_dataset" / "full" / "1.9.0"
  _strip_to_an_old_build(folder)
  tfds.builder("flowers_dataset/full", data_dir=str(copy)).download_and_prepare()
  page = folder / report_page.FILE_NAME
  assert f"flowers_dataset/full: wrote the missing report page {page}" in capsys.readouterr().out
  assert ("Counts read back from the records" in page.read_text("utf-8")
          and (folder / report_page.CSV_NAME).exists())
  written = page.stat().st_mtime_ns
  tfds.builder("flowers_dataset/full", data_dir=str(copy)).download_and_prepare()
  assert page.stat().st_mtime_ns == written and "report page" not in capsys.readouterr().out


def test_the_command_the_page_names_runs_as_printed(built, tmp_path):
  _, builds = built
  _, page, _, _ = builds["224"]
  (command,) = re.findall(r"<code>(python -m photo_datasets report [^<]*)</code>",
                          page.read_text("utf-8"))
  words = shlex.split(html.unescape(command))
  assert words[-2:] == ["--data_dir", str(built[0])] and shutil.which(words[0])
  done = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True, check=False,
                        timeout=600)
  assert done.returncode == 0, done.stderr[-2000:]
  assert done.stdout.strip() == str(page)


def test_the_command_writes_elsewhere_with_out_dir_and_says_so_where_it_cannot_write(
    built, tmp_path, capsys):
  data_dir, _ = built
  copy = tmp_path / "data"
  shutil.copytree(data_dir / "flowers_dataset" / "224", copy / "flowers_dataset" / "224")
  folder = copy / "flowers_dataset" / "224" / "1.9.0"
  (folder / report_page.FILE_NAME).unlink()
  # The page cannot be written there (as in a read-only data dir).
  (folder / report_page.FILE_NAME).mkdir()
  with pytest.raises(SystemExit) as exit_info:
    report.main(["flowers_dataset/224", "--data_dir", str(copy)])
  assert str(exit_info.value.code).startswith(f"error: cannot write the report page in {folder} (")
  assert str(exit_info.value.code).endswith("give another folder with --out_dir DIR.")
  report.main(["flowers_dataset/224", "--data_dir", str(copy),
               "--out_dir", str(tmp_path / "pages")])
  assert capsys.readouterr().out.splitlines() == [str(tmp_path / "pages" / report_page.FILE_NAME)]
  assert (tmp_path / "pages" / report_page.CSV_NAME).exists()
  assert "flowers_dataset/224" in (tmp_path / "pages" / report_page.FILE_NAME).read_text("utf-8")


def test_the_command_refuses_a_config_not_built(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    report.main(["flowers_dataset/224", "--data_dir", str(tmp_path)])
  assert "not built" in str(exit_info.value.code) and "usage:" not in capsys.readouterr().err


def test_korean_food_page_lists_its_150_classes_in_korean_and_english_and_is_private(tmp_path):
  builder = testing.build("korean_food/224", tmp_path / "data", REPO / "korean_food" / "sample",
                          workers=1, download_dir=tmp_path / "downloads")
  parsed = _Page((pathlib.Path(builder.data_path) / report_page.FILE_NAME).read_text("utf-8"))
  classes = korean_food.food_classes()
  empty = [c for c in classes if c.index not in parsed.rows]
  assert [(row["cells"][1], row["cells"][2]) for row in parsed.rows.values()] == [
      (c.name, c.english_name) for c in classes if c not in empty]
  # The classes with no photo: one line naming each, before the table of the others.
  assert len(empty) > 140 and all(row["counts"]["total"] > 0 for row in parsed.rows.values())
  names = ", ".join(f"{c.name} ({c.english_name})" for c in empty)
  assert f"Classes with no photo ({len(empty)}): {names}." in parsed.text
  text = parsed.text
  assert (text.index("Skipped") < text.index("Classes with no photo")
          < text.index(classes[0].name + " "))
  assert "Names shown as boxes" in text and "fonts-noto-cjk" in text
  page = (pathlib.Path(builder.data_path) / report_page.FILE_NAME).read_text("utf-8")
  font = page[page.index("font:"):].split(";", 1)[0]  # The body's fonts: Korean ones first.
  for family in ("Noto Sans KR", "Noto Sans CJK KR", "Apple SD Gothic Neo", "Malgun Gothic",
                 "NanumGothic"):
    assert f'"{family}",' in font
  assert "as private as the photos" in parsed.text
  crops = builder.info.metadata["crop_boxes"]
  assert sum(crops) == builder.info.metadata["counts"]["images with a crop box"]
  # The sample's generated plates of 김치찌개 are alike in colour but share no keypoints: no series.
  assert builder.info.metadata["series"] == []


# ---------------------------------------------------------------------------
# The page's content from made data (no build).


def _made_page(**changes: Any) -> page_data.PageData:
  classes = [page_data.ClassRow(i, f"class_{i}", f"Class {i}", {"train": n, "validation": n // 10},
                                n // 2)
             for i, n in enumerate([100, 90, 110, 20, 0])]
  page = page_data.PageData("made/224", "made", ["train", "validation"], classes, BuildReport())
  for key, value in changes.items():
    setattr(page, key, value)
  return page


def test_classes_far_below_the_median_and_empty_ones_stand_out():
  rows = _Page(page_html.render(_made_page(), {})).rows
  parsed = _Page(page_html.render(_made_page(), {}))
  assert [row["class"].split()[1:] for row in rows.values()] == [[], [], [], ["low"]]
  assert (rows[3]["cells"][-1] == "far below the median"
          and "Classes with no photo (1): class_4 (Class 4)." in parsed.text)
  assert "Names shown as boxes" not in parsed.text  # ASCII names: no font to install.
  assert rows[0]["cells"][-2] == "45 %"  # 50 of 110 photos have a crop box.


def test_flags_show_thumbnails_worst_first_capped_with_a_count_of_the_rest():
  rows = [{"file_name": f"class_0/{i}.jpg", "split": "train", "label": "class_0", "flag": "dark",
           "score": 1 - i / 1000} for i in range(150)] + [
              {"file_name": "class_1/b.jpg", "split": "test", "label": "class_1", "flag": "blurry",
               "score": 0.5}]
  page = _made_page(quality_flags=rows, flag_names=["blurry", "dark"])
  stored, _ = page_data.wanted_thumbnails(page)
  assert len(stored) == 101
  uri = report_page.data_uris({"x": testing.jpeg(0)})["x"]
  text = page_html.render(page, dict.fromkeys(stored, uri))
  parsed = _Page(text)
  assert [i["alt"] for i in parsed.images] == (["class_1/b.jpg"]
                                               + [f"class_0/{i}.jpg" for i in range(100)])
  assert "… and 50 more photos (quality.csv)" in parsed.text
  assert text.index('id="flag-blurry"') < text.index('id="flag-dark"')


def test_groups_across_classes_come_first_and_thumbnails_stop_at_the_cap():
  groups = [{"files": [f"a/{i}.jpg", f"a/{i}b.jpg"], "across_classes": False} for i in range(60)]
  groups.append({"files": ["a/x.jpg", "b/x.jpg"], "across_classes": True})
  page = _made_page(report=BuildReport(near_duplicates=groups))
  assert page_data.near_duplicate_groups(page)[0]["files"] == ["a/x.jpg", "b/x.jpg"]
  stored, _ = page_data.wanted_thumbnails(page)
  assert len(stored) == page_data.THUMBNAILS_PER_SECTION and {"a/x.jpg", "b/x.jpg"} <= stored


def test_a_skipped_file_that_decodes_gets_a_thumbnail_and_one_that_does_not_a_placeholder(tmp_path):
  (tmp_path / "a").mkdir()
  (tmp_path / "a" / "cmyk.jpg").write_bytes(testing.odd_images(0)["cmyk"])
  (tmp_path / "a" / "html.jpg").write_bytes(testing.broken_files(0)["html"])
  report_data = BuildReport(skipped_files=[Skipped("a/cmyk.jpg", "made"),
                                           Skipped("a/html.jpg", "made")])
  page = _made_page(report=report_data, source=str(tmp_path))
  _, skipped = page_data.wanted_thumbnails(page)
  images = report_page._skipped_images(page.source, skipped)
  parsed = _Page(page_html.render(page, report_page.data_uris(images)))
  assert ([i["alt"] for i in parsed.images] == ["a/cmyk.jpg"]
          and "no image a/html.jpg" in parsed.text)


def test_a_series_is_one_row_of_its_thumbnails_with_its_split():
  files = ["class_0/Img_0001.jpg", "class_0/Img_0002.jpg", "class_0/Img_0004.jpg"]
  page = _made_page(report=BuildReport(series=[{"files": files}]),
                    split_of=dict.fromkeys(files, "test"))
  stored, _ = page_data.wanted_thumbnails(page)
  assert set(files) <= stored
  text = page_html.render(
      page, dict.fromkeys(stored, report_page.data_uris({"x": testing.jpeg(0)})["x"]))
  section = text[text.index('<h3 id="series">'):text.index('<h3 id="identical">')]
  (row,) = re.findall(r'<div class="gallery">(.*?)</div>', section)
  assert re.findall(r'<img src="data:image/jpeg;base64,[^"]+" alt="([^"]+)"', row) == files
  assert "3 photos, one class: class_0; split test" in section


def test_text_from_the_source_is_escaped():
  page = _made_page(report=BuildReport(warnings=["<script>alert(1)</script> & more"]))
  parsed = _Page(page_html.render(page, {}))
  assert "script" not in parsed.tags and "<script>alert(1)</script> & more" in parsed.text


# ---------------------------------------------------------------------------
# In a real browser.


def _chromium() -> str:
  for name in ("chromium", "chromium-browser", "google-chrome"):
    if path := shutil.which(name):
      return path
  testing.missing("chromium", "no headless Chromium (Debian: apt-get install -y chromium; "
                              ".ci/run installs it)")


# Added to a copy of the page only: after the load event, each image's natural width goes into the
# DOM that --dump-dom prints (the page itself has no script).
_PROBE = ("<script>addEventListener('load', () => { document.body.dataset.widths = JSON.stringify("
          "[...document.images].map(i => [i.alt, i.complete, i.naturalWidth])); });</script>")


def _browse(chromium: str, args: list[str], page: pathlib.Path) -> str:
  result = subprocess.run(
      [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
       "--virtual-time-budget=10000", *args, page.as_uri()],
      capture_output=True, text=True, timeout=120, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  return result.stdout


def test_in_chromium_every_thumbnail_loads_every_class_row_is_there_and_the_page_is_not_blank(
    built, tmp_path):
  chromium = _chromium()
  builder, page, _, examples = built[1]["224"]
  probed = tmp_path / "probed.html"
  probed.write_text(page.read_text("utf-8").replace("</body>", _PROBE + "</body>"), "utf-8")
  dom = _Page(_browse(chromium, ["--dump-dom"], probed))
  widths = json.loads(dom.body_attrs["data-widths"])
  assert len(widths) == len(_Page(page.read_text("utf-8")).images) > 5
  assert [alt for alt, complete, width in widths if not complete or width <= 0] == []
  names = builder.info.features["label"].names
  assert {label: {s: n for s, n in row["counts"].items() if s != "total"}
          for label, row in dom.rows.items()} == _counts(examples, names)
  shot = tmp_path / "page.png"
  _browse(chromium, [f"--screenshot={shot}", "--window-size=1200,1400"], page)
  with Image.open(shot) as image:
    grey = image.convert("L")
    histogram = grey.histogram()
  assert grey.size == (1200, 1400)
  # Text, bars and thumbnails, not a white page.
  assert sum(histogram[:200]) > 0.02 * sum(histogram)
  assert len([n for n in histogram if n]) > 50


def test_the_command_writes_a_config_not_defined_in_code_with_the_datasets_names_and_note(
    samples, tmp_path):
  """TFDS opens `korean_food/64` from its files, without the dataset's hooks; the page written again
  still has the English names and the privacy note."""
  data_dir = samples.copy(tmp_path / "data", "korean_food/64")
  page = (pathlib.Path(tfds.builder("korean_food/64", data_dir=data_dir).data_path)
          / report_page.FILE_NAME)
  page.unlink()
  report.main(["korean_food/64", "--data_dir", data_dir])
  parsed = _Page(page.read_text("utf-8"))
  english = {c.name: c.english_name for c in korean_food.food_classes()}
  assert parsed.rows and all(row["cells"][2] == english[row["cells"][1]]
                             for row in parsed.rows.values())
  assert "as private as the photos" in parsed.text

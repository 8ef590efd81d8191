"""The build report (photo_datasets/catalog/build_report.py): its summary, printed at the end
of every build, and its round trip through `builder.info.metadata`."""

from __future__ import annotations

import json

from photo_datasets.catalog.build_report import BuildReport, Skipped


def _eventful_report() -> BuildReport:
  """A report with something in every field; skips in the order workers finished."""
  report = BuildReport(ignored_files=3)
  report.skip("찌개/김치찌개/Img_119_0006.jpg", "empty file")
  report.skip("구이/갈비구이/Img_000_0007.jpg", "cannot decode JPEG: image file is truncated")
  report.skip("구이/갈비구이/Img_000_0007.jpg", "conversion failed: simulated decoder failure")
  report.warnings.append("찌개/김치찌개/Img_121_0002.jpg: prefix Img_121 is class 121, "
                         "but the folder is class 119")
  report.duplicates = [
      # One class: not listed.
      ["구이/갈비구이/Img_000_0000.jpg", "구이/갈비구이/Img_000_0001.jpg"],
      ["구이/갈비구이/Img_000_0002.jpg", "찌개/김치찌개/Img_119_0013.jpg"],
  ]
  report.empty_splits = ["test"]
  report.counts = {"images with a crop box": 9, "bad_crop_lines": 4, "images converted to JPEG": 6}
  return report


def test_summary_counts_what_was_left_out_names_the_first_cases_and_the_page():
  report = _eventful_report()
  report.near_duplicates = [{"files": ["구이/갈비구이/Img_000_0003.jpg",
                                       "찌개/김치찌개/Img_119_0014.jpg"],
                             "across_classes": True}]
  summary = report.summary("korean_food/224", {"train": 33, "validation": 3},
                           page="/data/report.html")
  assert summary.splitlines() == [
      "korean_food/224: train 33, validation 3; left out (no examples): test",
      "  skipped files: 3, byte-identical groups: 2 (1 across classes), "
      "near-duplicate groups: 1 (1 across classes), warnings: 1",
      "    skipped 찌개/김치찌개/Img_119_0006.jpg: empty file",
      "    skipped 구이/갈비구이/Img_000_0007.jpg: cannot decode JPEG: image file is truncated",
      "    skipped 구이/갈비구이/Img_000_0007.jpg: conversion failed: simulated decoder failure",
      "    across classes: 구이/갈비구이/Img_000_0002.jpg = 찌개/김치찌개/Img_119_0013.jpg",
      "    across classes: 구이/갈비구이/Img_000_0003.jpg ~ 찌개/김치찌개/Img_119_0014.jpg",
      # The warning; counts (crop boxes, ...) are on the page only.
      "    ... and 1 more on the report page",
      "  report: /data/report.html",
  ]


def test_summary_of_a_clean_build_says_only_sizes_no_skips_and_the_page():
  summary = BuildReport().summary("flowers_dataset/full",
                                  {"train": 81, "validation": 12, "test": 7},
                                  page="/data/report.html")
  assert summary.splitlines() == ["flowers_dataset/full: train 81, validation 12, test 7",
                                  "  skipped files: 0", "  report: /data/report.html"]
  with_fingerprint = BuildReport().summary("flowers_dataset/full", {"train": 81},
                                           page="/data/report.html", fingerprint="ab" * 32)
  assert with_fingerprint.splitlines()[-2:] == ["  report: /data/report.html",
                                                f"  fingerprint: {'ab' * 32}"]


def test_duplicates_within_one_class_are_counted_not_listed():
  report = BuildReport(duplicates=[["daisy/a.jpg", "daisy/b.jpg", "daisy/c.jpg"]])
  assert report.summary("flowers_dataset/224", {"train": 3}).splitlines()[-1] == (
      "  skipped files: 0, byte-identical groups: 1 (0 across classes)")


def test_metadata_round_trip_sorts_skipped_files_by_name():
  report = _eventful_report()
  metadata = json.loads(json.dumps(report.as_metadata()))  # Plain JSON, as TFDS stores it.
  assert [s["file_name"] for s in metadata["skipped_files"]] == [
      "구이/갈비구이/Img_000_0007.jpg", "구이/갈비구이/Img_000_0007.jpg",
      "찌개/김치찌개/Img_119_0006.jpg"]
  restored = BuildReport.from_metadata(metadata)
  assert restored.skipped_files == [
      Skipped("구이/갈비구이/Img_000_0007.jpg", "cannot decode JPEG: image file is truncated"),
      Skipped("구이/갈비구이/Img_000_0007.jpg", "conversion failed: simulated decoder failure"),
      Skipped("찌개/김치찌개/Img_119_0006.jpg", "empty file"),
  ]
  assert restored == BuildReport(
      skipped_files=restored.skipped_files, warnings=report.warnings, duplicates=report.duplicates,
      empty_splits=report.empty_splits, ignored_files=report.ignored_files, counts=report.counts)
  assert BuildReport.from_metadata(restored.as_metadata()) == restored


def test_from_metadata_ignores_what_tfds_stores_beside_the_report():
  metadata = {**BuildReport(ignored_files=2).as_metadata(), "tfds_extra": [1, 2]}
  assert BuildReport.from_metadata(metadata) == BuildReport(ignored_files=2)

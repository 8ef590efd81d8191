"""What the build report page shows, as plain data (no TensorFlow, no HTML):
`PageData` and what each section shows of it, capped. `report_page` fills it
from a builder; `page_html` renders it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos.records import class_folder

CSV_NAME = "quality.csv"  # Every flagged photo, beside the page.
THUMBNAILS_PER_SECTION = 100
LISTED_PER_SECTION = 1000  # Rows of text per section (skips, groups, flags) before "and N more".


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
  # Flag -> the score below which a photo gets it.
  flag_thresholds: dict[str, float] = dataclasses.field(default_factory=dict)
  # file_name -> split, where known.
  split_of: dict[str, str] = dataclasses.field(default_factory=dict)
  source: str | None = None
  build_seconds: float | None = None
  source_images: dict[str, Any] | None = None  # `build_stats.source_images`.
  class_weights: list[float] | None = None
  channel_mean: list[float] | None = None
  channel_std: list[float] | None = None
  note: str = ""  # A warning shown first (korean_food: the page is as private as the photos).
  # Class counts read back from the records (a config built earlier).
  counts_from_records: bool = False
  data_dir: str = "DIR"  # Where it was built, for the command that writes the page again.
  fingerprint: str | None = None  # `fingerprint`; None for a build made before fingerprints.

  @property
  def split_sizes(self) -> dict[str, int]:
    return {split: sum(row.counts.get(split, 0) for row in self.classes) for split in self.splits}


# ---------------------------------------------------------------------------
# What each section shows, capped; `wanted_thumbnails` and `render` share it.


def near_duplicate_groups(page: PageData) -> list[dict[str, Any]]:
  """Near-duplicate groups, those across classes first (label conflicts), then the larger."""
  return sorted(page.report.near_duplicates,
                key=lambda g: (not g["across_classes"], -len(g["files"])))


def identical_groups(page: PageData) -> list[list[str]]:
  """Byte-identical groups, those across classes first, then the larger."""
  return sorted(page.report.duplicates,
                key=lambda g: (len({class_folder(f) for f in g}) < 2, -len(g)))


def series_groups(page: PageData) -> list[list[str]]:
  """Series (several shots of one scene), the larger first."""
  return sorted((g["files"] for g in page.report.series), key=lambda files: -len(files))


def flag_rows(page: PageData) -> dict[str, list[dict[str, Any]]]:
  """Flagged photos per flag in display order, worst first as the scan listed them."""
  by_flag: dict[str, list[dict[str, Any]]] = {name: [] for name in page.flag_names}
  for row in page.quality_flags:
    by_flag.setdefault(row["flag"], []).append(row)
  return by_flag


def capped_groups(groups: Sequence[Sequence[str]]) -> list[list[str]]:
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
  for group in capped_groups([g["files"] for g in near_duplicate_groups(page)]):
    stored.update(group)
  for group in capped_groups(identical_groups(page)):
    stored.update(group)
  for group in capped_groups(series_groups(page)):
    stored.update(group)
  for rows in flag_rows(page).values():
    stored.update(row["file_name"] for row in rows[:THUMBNAILS_PER_SECTION])
  skipped = {s.file_name for s in page.report.skipped_files[:THUMBNAILS_PER_SECTION]}
  return stored, skipped - stored

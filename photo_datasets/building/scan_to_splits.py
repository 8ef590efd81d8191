"""The step from a build's source to its splits: where the scan is saved
(`scan_cache_dir`), the scan of the source or the reuse of its saved scan,
with the disk-space checks around it (`SourceScan`), what a build that found
nothing usable is told (`nothing_usable`), and the photos by split
(`by_split`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from collections.abc import Callable, Iterable
from typing import Any

import tensorflow_datasets as tfds
from absl import logging
from etils import epath

from photo_datasets.archives import storage
from photo_datasets.building import converted, disk, scan, scan_cache
from photo_datasets.building.build_state import Build
from photo_datasets.catalog import build_stats
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import records, series, splits


def manual_dir_or_none(dl_manager: tfds.download.DownloadManager) -> epath.Path | None:
  """The manual dir, or None where TFDS has none to give (it raises AssertionError)."""
  try:
    return dl_manager.manual_dir
  except AssertionError:
    return None


def scan_cache_dir(dl_manager: tfds.download.DownloadManager) -> epath.Path | None:
  """`<download dir>/scans`, unless that lies in the manual dir: user data,
  never written to (as with TFDS's test harness, where both are dummy_data)."""
  cache_dir = storage.absolute(os.path.join(os.fspath(dl_manager.download_dir), "scans"))
  manual_dir = manual_dir_or_none(dl_manager)
  if manual_dir is not None:
    manual = storage.absolute(manual_dir)
    if cache_dir == manual or cache_dir.startswith(manual.rstrip("/") + "/"):
      return None
  return epath.Path(cache_dir)


@dataclasses.dataclass(frozen=True)
class SourceScan:
  """The scan of a build's source for one config (`scan`), and what it needs of its builder:
  the dataset's hooks and the config's names, size and folders."""

  builder_type: type[Any]  # The dataset's builder class: its saved scans are its own.
  name: str  # The dataset's.
  full_name: str  # The config's, `name/config`.
  image_size: int | None  # The config's; None for `full`.
  data_dir: epath.Path  # The build's folder.
  data_dir_root: str  # The data dir, for the disk-space check.
  build: Build  # Receives the converted images and the disk check's estimate.
  say: Callable[[str], None]  # A line for the person running the build.
  list_source: Callable[[Any, BuildReport], Iterable[records.Candidate]]
  estimate_source: Callable[[Any], tuple[int, int]]
  series_order: Callable[[], Callable[[str], int | None] | None]
  # A photo's record from its stored image (`writing.RecordMaker`), where the scan's conversion
  # makes the records; None: the images alone.
  make_record: Callable[[records.Photo, bytes], bytes] | None = None

  def scan(self, source: os.PathLike[str],
           cache_dir: epath.Path | None) -> tuple[list[records.Photo], BuildReport]:
    """Scans `source`, or reuses the saved scan of the same, unchanged files;
    checks the disk space before the conversion starts. Fills the report's
    quality flags from the photos' scores either way. Builds of other configs
    scanning the same files at the same time wait for the first one's scan."""
    if not cache_dir:
      return self._scan_source(source, None)
    cache = scan_cache.saved_scan(cache_dir, self.builder_type, os.fspath(source))
    with contextlib.suppress(OSError):
      cache_dir.mkdir(parents=True, exist_ok=True)
    if not cache.exists() and (why := scan_cache.why_not_reused(cache, self.name)):
      self.say(f"{why}: scanning {source} again.")

    def wait(holder: str) -> None:
      self.say(f"another build is scanning {source} ({holder}); waiting to reuse its scan.")

    with disk.exclusive(f"{cache}.lock", wait, remove=True):
      if cache.exists() and (saved := scan_cache.load_scan(cache)) is not None:
        logging.info("Reusing the scan of %s saved in %s", source, cache)
        self.check_disk_space(len(saved[0]), sum(p.nbytes for p in saved[0]))
        # From the saved scores, by today's thresholds.
        saved[1].quality_flags = build_stats.flag_rows(saved[0])
        return saved
      return self._scan_source(source, cache)

  def _scan_source(self, source: os.PathLike[str],
                   cache: epath.Path | None) -> tuple[list[records.Photo], BuildReport]:
    size = self.image_size
    local = storage.is_local(self.data_dir)
    # A bucket (gs://) holds no temporary file of ours.
    converts_in_scan = bool(size) and local
    series_order = self.series_order()
    estimate = self.estimate_source(source)
    self.check_disk_space(*estimate, converts_in_scan=converts_in_scan,
                          keeps_keypoints=series_order is not None and local)
    # The scan's workers keep the series keypoints in the build's folder; with a bucket's, in this
    # machine's temporary folder where they run here, else with their results.
    keypoints_in = os.fspath(self.data_dir) if local else None
    scratch = None
    if series_order is not None and not local and self.build.executor.on_this_machine:
      scratch = keypoints_in = disk.scratch_folder(self.full_name,
                                                   estimate[0] * series.KEYPOINTS_BYTES)
    report = BuildReport()
    listing = self.list_source(source, report)
    if size and converts_in_scan:
      self.build.converted = converted.ConvertedImages(size, self.data_dir, self.make_record)
    try:
      photos = scan.scan(listing, report, executor=self.build.executor,
                         converted=self.build.converted, series_position=series_order,
                         folder=keypoints_in)
    finally:
      if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
    # Information only: no photo is left out for a flag.
    report.quality_flags = build_stats.flag_rows(photos)
    if cache:
      scan_cache.save_scan(cache, photos, report)
    # The images converted in the scan are on the disk already: the records are left to write.
    self.check_disk_space(len(photos), sum(p.nbytes for p in photos))
    return photos, report

  def check_disk_space(self, photos: int, source_bytes: int, *, converts_in_scan: bool = False,
                       keeps_keypoints: bool = False) -> None:
    self.build.needed_bytes = disk.needed_bytes(
        self.image_size, photos, source_bytes, converts_in_scan=converts_in_scan,
        scan_keeps=photos * series.KEYPOINTS_BYTES if keeps_keypoints else 0)
    if storage.is_local(self.data_dir_root):
      disk.preflight(self.full_name, self.data_dir_root, self.build.needed_bytes)


def nothing_usable(source: os.PathLike[str], report: BuildReport, instructions: str) -> str:
  """What a build whose source holds no usable image is told: what was found, and what was
  expected (`instructions`: the dataset's download instructions)."""
  examples = "".join([f"\n  {s.file_name}: {s.reason}" for s in report.skipped_files[:10]]
                     + [f"\n  {w}" for w in report.warnings[:10]])
  return (f"No usable image in {source}: found {report.ignored_files} non-image "
          f"files and {len(report.skipped_files)} unusable ones{examples}\n"
          f"Expected:{instructions}")


def by_split(photos: list[records.Photo], report: BuildReport,
             dataset: str) -> dict[str, list[records.Photo]]:
  """The photos of each split, empty ones too; those empty are named in `report` and in a
  warning about `dataset`: the build leaves them out."""
  split_photos: dict[str, list[records.Photo]] = {name: [] for name in splits.SPLIT_NAMES}
  for photo in photos:
    split_photos[photo.split].append(photo)
  report.empty_splits = [name for name, group in split_photos.items() if not group]
  for name in report.empty_splits:
    logging.warning("%s: split %r would be empty and is left out.", dataset, name)
  return split_photos

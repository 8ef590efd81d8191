"""What a build does once its records are generated: the build's metadata and
its fingerprint in `info.metadata` (`finish`), then the build report page and
the summary printed at the end of the build (`write_report_page`)."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

import tensorflow_datasets as tfds
from absl import logging
from etils import epath

from photo_datasets.archives import storage
from photo_datasets.building import executors, report_thumbnails
from photo_datasets.building.build_state import Build
from photo_datasets.catalog import build_stats, fingerprint
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import records


@dataclasses.dataclass(frozen=True)
class Built:
  """What a build leaves for its report page and summary (`write_report_page`)."""

  report: BuildReport
  sizes: dict[str, int]  # Examples per split.
  split_of: dict[str, str]  # file_name -> split of every example.
  source_images: Callable[[set[str]], dict[str, bytes]]  # The page's photos, read from the source.
  seconds: float  # The scan and conversion (not in the metadata, which depends on the source only).


def finish(build: Build, info: tfds.core.DatasetInfo, data_path: epath.Path) -> Built:
  """Puts the build's metadata and fingerprint in `info.metadata`, while the record files are
  still in the build's temporary folder (`data_path` until TFDS moves them); returns what its
  report page and summary need."""
  built = built_photos(build)
  info.metadata.update(build.report.as_metadata())
  info.metadata.update(build_stats.metadata(built, info.features["label"].names))
  info.metadata["source"] = build.source_path
  # For the command that builds a sibling config (`unbuilt.build_command`).
  info.metadata["manual_dir"] = build.manual_dir
  split_of = {p.file_name: split for split, group in built.items() for p in group}
  runs, (thumbnails,) = build.thumbnail_runs, build.thumbnails()
  # While the record files are still in the build's temporary folder (`data_path` until TFDS
  # moves them), on the executor: those the writer did not hash (its format is not ours).
  unhashed = [name for name in fingerprint.record_files(info)
              if name not in build.record_sha256]
  if unhashed:
    (hashes,) = build.executor.run_together([executors.Phase(
        fingerprint.file_sha256, [data_path / name for name in unhashed],
        on_crash=_unhashed)])
    build.record_sha256.update(zip(unhashed, hashes, strict=True))
  info.metadata[fingerprint.METADATA_KEY] = fingerprint.record(info, data_path,
                                                               build.record_sha256)
  sizes = {name: split.num_examples for name, split in info.splits.items()}
  # Printed by `download_and_prepare` once the page is written, with its path.
  return Built(build.report, sizes, split_of,
               report_thumbnails.by_name(runs, thumbnails, split_of),
               time.perf_counter() - build.started)


def built_photos(build: Build) -> dict[str, list[records.Photo]]:
  """The photos in each split's records: those given to generation, less those it skipped."""
  skipped = {s.file_name for s in build.report.skipped_files}
  return {split: [p for p in photos if p.file_name not in skipped]
          for split, photos in build.split_photos.items()}


def _unhashed(path: epath.Path) -> str:
  raise RuntimeError(f"hashing {path} killed its worker twice")


def write_report_page(builder: tfds.core.DatasetBuilder, built: Built | None,
                      full_name: str) -> None:
  """`report.html` and `quality.csv` beside `dataset_info.json` (`report_page`)
  after a build, then the build's summary, naming it. A config reused
  without its page (a build stopped after its records, or built before the
  page existed) gets it once, from a pass over every record (its cost:
  docs/data-quality.md#the-build-report); a read-only copy is left as it is."""
  # Its own module; TensorFlow only for the records pass.
  from photo_datasets.catalog import report_page

  folder = os.fspath(builder.data_path)
  if built is None:
    if (builder.is_prepared() and storage.is_local(folder) and os.access(folder, os.W_OK)
        and not os.path.exists(os.path.join(folder, report_page.FILE_NAME))):
      try:
        print(f"{full_name}: wrote the missing report page {report_page.write(builder)}",
              flush=True)
      except Exception as e:  # As after a build: the page never fails a load.
        logging.warning("Could not write the build report page in %s: %s: %s", folder,
                        type(e).__name__, e)
    return
  try:
    page = report_page.write(builder, split_of=built.split_of, source_images=built.source_images,
                             build_seconds=built.seconds)
  except Exception as e:  # The page is for a person to read: it never fails a build.
    logging.warning("Could not write the build report page in %s: %s: %s", folder,
                    type(e).__name__, e)
    page = ""
  print(built.report.summary(full_name, built.sizes, page=page,
                             fingerprint=fingerprint.sha256_of(builder.info.metadata)), flush=True)

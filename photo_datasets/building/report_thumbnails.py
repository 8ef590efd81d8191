"""The build report page's thumbnails: chosen from the scan's report (`runs`),
made beside generation from the photos as their config stores them
(`beside_generation`), then found by name for the page (`by_name`)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

import tensorflow_datasets as tfds
from absl import logging

from photo_datasets.building import executors, generation
from photo_datasets.building.converted import ConvertedImages
from photo_datasets.building.worker_files import Written
from photo_datasets.catalog.build_report import BuildReport, Skipped
from photo_datasets.photos import images, records

# Photos one task reads in location order through one reader, so an archive is opened once.
_THUMBNAILS_PER_TASK = 16


def runs(builder: tfds.core.DatasetBuilder, photos: list[records.Photo],
         report: BuildReport) -> list[list[records.Photo]]:
  """The report page's photos in runs of `_Thumbnails`, in location order: read from the
  source and framed as stored, a few reads instead of a pass over every record. Chosen from
  the scan's report (generation changes none of the groups and flags the page shows)."""
  # Its own module, as in `after_generation.write_report_page`.
  from photo_datasets.catalog import report_page
  from photo_datasets.catalog.page_data import wanted_thumbnails

  split_of = {photo.file_name: photo.split for photo in photos}
  try:
    wanted, _ = wanted_thumbnails(report_page.page_data(builder, split_of, report))
  except Exception as e:  # The page is for a person to read: it never fails a build.
    logging.warning("Could not choose the build report page's thumbnails: %s: %s",
                    type(e).__name__, e)
    return []
  chosen = sorted((p for p in photos if p.file_name in wanted), key=lambda p: p.location)
  return [chosen[i:i + _THUMBNAILS_PER_TASK] for i in range(0, len(chosen), _THUMBNAILS_PER_TASK)]


def beside_generation(executor: executors.Executor, thumbnail_runs: list[list[records.Photo]], *,
                      size: int | None, reader_type: type[generation.Reader],
                      converted: ConvertedImages | None = None) -> Callable[[], list[list[Any]]]:
  """The thumbnails of `thumbnail_runs`, made beside the records (on Beam: in their
  pipeline) from the images `converted` holds for the config's `size`, or from the source;
  the function returned gives them once the records are generated."""
  stored = {} if converted is None else {
      photo.file_name: image for run in thumbnail_runs for photo in run
      if (image := converted.take(photo, size)) is not None}
  make_thumbnails = _Thumbnails(size=size, reader_type=reader_type, stored=stored)
  return executor.beside_generation(
      [executors.Phase(make_thumbnails, thumbnail_runs, on_crash=_no_thumbnails)])


def by_name(thumbnail_runs: list[list[records.Photo]], made: list[list[bytes | None]],
            split_of: dict[str, str]) -> Callable[[set[str]], dict[str, bytes]]:
  """The thumbnails made of the photos in the records (`split_of`), by file name."""
  thumbnail_of = {p.file_name: small for run, run_made in zip(thumbnail_runs, made, strict=True)
                  for p, small in zip(run, run_made, strict=True)
                  if small and p.file_name in split_of}  # Not one generation skipped.
  return lambda names: {n: thumbnail_of[n] for n in names if n in thumbnail_of}


def _no_thumbnails(photos: list[records.Photo]) -> list[bytes | None]:
  return [None] * len(photos)


@dataclasses.dataclass(frozen=True)
class _Thumbnails:
  """The report page's thumbnails of a run of built photos, of each photo as its config stores
  it; None for a photo gone since or of which nothing decodes."""

  size: int | None  # A sized config's: the stored image, the box's centre square at this size.
  reader_type: type[generation.Reader]  # For a photo without a span: the builder's reader.
  # Where the scan's conversion of a photo lies, by name (read there, not made again).
  stored: dict[str, Written] = dataclasses.field(default_factory=dict)

  def __call__(self, photos: list[records.Photo]) -> list[bytes | None]:
    # Its own module, as in `after_generation.write_report_page`.
    from photo_datasets.catalog import report_page

    made: list[bytes | None] = []
    with self.reader_type() as reader:
      for photo in photos:
        image = self._as_stored(photo, reader)
        made.append(None if image is None else report_page.thumbnail(image))
    return made

  def _as_stored(self, photo: records.Photo, reader: generation.Reader) -> bytes | None:
    """The photo's stored image where it is sized (`full`: its source bytes), None where it is
    gone since or does not convert."""
    if (image := self.stored.get(photo.file_name)) is not None:
      with contextlib.suppress(OSError):  # Gone since: converted again below.
        return image.read()
    data = generation.read_or_skip(reader, photo)
    if isinstance(data, Skipped):
      return None
    if not self.size:
      return data
    try:
      return images.encode_image(data, photo.check, size=self.size, box=photo.box)
    except Exception:  # Generation skips it, and reports why.
      return None

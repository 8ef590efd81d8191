"""The scan: every candidate file read once, validated and hashed, on every core.

A builder lists its source as `records.Candidate`s (name, location, and the
bytes or the `Span` where a worker reads them), in location order in this
process. Workers read and decode each one completely
(`images.decode_and_inspect`), hash it for the split rule and score its
quality from the same pixels (`quality.measure`); what cannot be used is
skipped with its reason in the `BuildReport`. The result, a
`records.Photo` per valid photo, is saved in TFDS's download dir
(`scan_cache`), keyed by the names, sizes and times of the source files, and
reused by every config built later from the same files.

The first build of a sized config also converts each photo from the scan's
own decode (`converted.ConvertedImages`), so a photo is decoded once, not twice: the
workers write the results into their own files (`worker_files`), where they wait
until TFDS asks for each split; so do the photos' keypoints, until the series
are found. The groups are found on the workers too (`_ScanGroups`): the near
copies among every photo's hashes in one task, a class's series in another,
on Beam in the scan's own pipeline. The main process gets a few numbers a
photo, and the groups as names.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from photo_datasets import tfds_private
from photo_datasets.building import worker_files
from photo_datasets.building.converted import ConvertedImages
from photo_datasets.building.executors import Executor, Grouping, Phase
from photo_datasets.catalog.build_report import BuildReport, Skipped
from photo_datasets.photos import images, near_duplicates, quality, series, splits
from photo_datasets.photos.records import Candidate, Photo, class_folder, photo_box


@dataclasses.dataclass(frozen=True)
class _Scanned:
  photo: Photo  # With its crop box, decided here once.
  # Converted from the scan's decode (with the photo's crop box), for `size`.
  image: worker_files.Written | None
  crop_outside: bool  # Its crop file's box lies outside the photo: it has none.
  # `series.describe`, where the builder orders its photos; less `keypoints`.
  series_features: bytes = b""
  # The features' keypoints, where the worker wrote them.
  keypoints: worker_files.Written | None = None
  # Its record, made from `image` (`ConvertedImages.make_record`), which lies within it.
  record: worker_files.Written | None = None


@dataclasses.dataclass(frozen=True)
class _Inspect:
  """The per-file work of the scan (runs in a worker): the check, the hashes,
  the series features, and for a sized config the conversion from the same decode,
  written into `converted_folder`, as a record where `make_record` makes one; the features'
  keypoints into `keypoints_folder` where one is given."""

  size: int | None
  series: bool = False
  converted_folder: str = ""
  keypoints_folder: str | None = None
  make_record: Callable[[Photo, bytes], bytes] | None = None

  def __call__(self, candidate: Candidate) -> _Scanned | Skipped:
    try:
      data = candidate.read()
    except Exception as e:  # The file went away, or a damaged archive member.
      return Skipped(candidate.file_name, f"unreadable: {type(e).__name__}: {e}")
    try:
      check, pixels = images.decode_and_inspect(data)
    except images.BadImage as e:
      return Skipped(candidate.file_name, str(e))
    scores, moments = quality.measure(pixels)  # From the pixels just decoded: no second decode.
    features = series.describe(pixels) if self.series else b""
    box = photo_box(candidate.crop, check) if candidate.crop else None
    photo = Photo(candidate.file_name, candidate.location, splits.content_digest(data), check,
                  box=box, span=candidate.span, nbytes=len(data), quality=scores,
                  moments=moments)
    image = record = None
    if self.size and images.encodes_from_scan(check, self.size, box):
      with contextlib.suppress(Exception):  # Generation converts it again, and reports the failure.
        image, record = self._converted(photo, images.encode_image(
            data, check, size=self.size, box=box, decoded=pixels))
    keypoints = None
    if features and self.keypoints_folder is not None:
      keypoints = worker_files.append(self.keypoints_folder, "keypoints",
                                      features[series.HISTOGRAM_BYTES:])
      features = features[:series.HISTOGRAM_BYTES]
    return _Scanned(photo, image, bool(candidate.crop) and box is None, features, keypoints,
                    record)

  def _converted(self, photo: Photo, image: bytes
                 ) -> tuple[worker_files.Written, worker_files.Written | None]:
    """Where the stored image is written, and the record that holds it where one is made."""
    if self.make_record is None:
      return worker_files.append(self.converted_folder, "converted", image), None
    made = self.make_record(photo, image)
    record = worker_files.append(self.converted_folder, "converted", made)
    # The record holds the image's bytes as they are (a bytes feature).
    start = made.find(image)
    if start < 0:
      raise ValueError(f"{photo.file_name}: its record does not hold its image")
    return worker_files.Written(record.path, record.offset + start, len(image)), record


# Photos a worker scans per task: the pool's cost a task, in the main process
# (docs/performance.md#the-main-process), is paid once for all of them. (A class's series are one
# task, `_ScanGroups`.)
PHOTOS_PER_TASK = 64


def _second_copies(twice: dict[tuple[str, str], list[str]]) -> list[str]:
  """One warning for all the files found twice (a zip and its extracted copy: the whole corpus),
  naming where the copies read and those left out lie."""
  if not twice:
    return []
  names = sorted(name for group in twice.values() for name in group)
  kept = os.path.commonpath([k for k, _ in twice]) if len(twice) > 1 else next(iter(twice))[0]
  left = os.path.commonpath([d for _, d in twice]) if len(twice) > 1 else next(iter(twice))[1]
  return [f"{len(names):,} files appear twice in the source (e.g. {names[0]}): "
          f"read the copies in {kept}, left out those in {left}"]


# The keys under which every photo's hashes go to the near copies' tasks, a part of the search
# each (`_NEAR_COPIES` and the part's number), apart from the class folders' keys (a folder's name
# holds no "/").
_NEAR_COPIES = "near copies/"
# Workers for each part of the near copies' search: on many workers one task would take longer
# than the series' tasks on the others (docs/performance.md#on-more-cores).
_WORKERS_PER_NEAR_COPY_PART = 8


@dataclasses.dataclass(frozen=True)
class _GroupedValues:
  """A scanned photo less what only its groups need, and that keyed (`Grouping.split`): its
  hashes under the key of each of `near_copy_parts`, and with `series` its series features under
  its class folder. They go to the groups' tasks (`_ScanGroups`), not back to this process."""

  series: bool
  near_copy_parts: int = 1

  def __call__(self, result: _Scanned | Skipped
               ) -> tuple[_Scanned | Skipped, list[tuple[str, Any]]]:
    if isinstance(result, Skipped):
      return result, []
    name = result.photo.file_name
    hashes = (name, result.photo.check.hashes)
    pairs: list[tuple[str, Any]] = [(f"{_NEAR_COPIES}{part}", hashes)
                                    for part in range(self.near_copy_parts)]
    if self.series:
      pairs.append((class_folder(name), (name, result.series_features, result.keypoints)))
    return dataclasses.replace(result, series_features=b"", keypoints=None), pairs


# A photo's name, its features (`series.describe`; less the keypoints where a worker wrote those)
# and where the worker wrote its keypoints.
_SeriesFeatures = tuple[str, bytes, "worker_files.Written | None"]


@dataclasses.dataclass(frozen=True)
class _ScanGroups:
  """The groups the scan finds, as file names, from the values of one key in any order: the
  near copies that one of `near_copy_parts` of the search finds among every photo's hashes
  (`near_duplicates.groups`), or the series of one class folder (`series.groups`; its worker
  reads the keypoints itself)."""

  position: Callable[[str], int | None] | None
  near_copy_parts: int = 1

  def __call__(self, group: tuple[str, list[Any]]) -> list[list[str]]:
    key, values = group
    values = sorted(values, key=lambda value: value[0])  # By name, as the scan's photos.
    names = [value[0] for value in values]
    if key.startswith(_NEAR_COPIES):
      found = near_duplicates.groups([hashes for _, hashes in values],
                                     part=int(key.removeprefix(_NEAR_COPIES)),
                                     parts=self.near_copy_parts)
    else:
      found = self._series(names, values)
    return [[names[i] for i in members] for members in found]

  def _series(self, names: list[str], photos: list[_SeriesFeatures]) -> list[list[int]]:
    if self.position is None:
      raise ValueError("series features without a series order")
    features = series.FeatureFile()
    try:
      for _, described, kept in photos:
        if kept is None:
          features.add(described)
        else:
          features.add_written(described, kept.path, kept.offset, kept.size)
      return series.groups(names, features, self.position, class_folder)
    finally:
      features.close()


def _not_grouped(group: tuple[str, list[Any]]) -> None:
  """A key whose worker died (memory, a crash): no series in its class; the near copies are
  grouped again in this process."""
  return None


def _series_not_found(class_folders: list[str]) -> str:
  """The warning for classes whose series task killed its worker twice: their photos split one
  by one, so the splits differ from a build that found their series."""
  shown = ", ".join(class_folders[:5]) + (", ..." if len(class_folders) > 5 else "")
  return (f"no series were looked for in {len(class_folders)} class folder(s) ({shown}): the "
          "task killed its worker twice (out of memory or a crash). Their photos were split one "
          "by one, so the splits differ from a build that finds their series: build again, with "
          "more memory or fewer workers.")


def _crashed(candidate: Candidate) -> Skipped:
  return Skipped(candidate.file_name,
                 "checking or converting it killed the worker process "
                 "(out of memory or a decoder crash)")


def scan(candidates: Iterable[Candidate], report: BuildReport, *, executor: Executor,
         converted: ConvertedImages | None = None,
         series_position: Callable[[str], int | None] | None = None,
         folder: str | os.PathLike[str] | None = None) -> list[Photo]:
  """Validates and hashes every candidate, and gives the photos of a group one split.

  The per-file work runs on `executor`, and so does the grouping of the near copies
  (`_ScanGroups`; its search in parts on many workers). With `converted`, the scan also
  converts each photo for its config where the scan's decode suffices. With
  `series_position`, it also finds the series, a class a task: the workers keep the photos'
  keypoints in files of their own in `folder`; without one, the keypoints travel with the
  results.

  Args:
    candidates: the source's files, in location order. A file name seen again (a second copy
      of the source beside the first) is left out, with one warning in `report`.
    report: receives the skipped files, the byte-identical duplicates, the near-duplicate
      groups, the series and the counts.
    executor: runs the per-file work and the groups' tasks (`LocalExecutor`, or
      `beam_generation.BeamExecutor`).
    converted: where the images converted from the scan's decode go, for the first build of
      a sized config; None converts nothing.
    series_position: a file name's place in its class's natural order (None for a file that
      has none); None finds no series.
    folder: where the workers keep the keypoints, which they all see (the build's folder, or
      with a bucket's and workers on this machine, `disk.scratch_folder`); None for none.

  Returns:
    The valid photos sorted by name, each with the split of its group
    (`group_near_duplicates`).
  """
  finds_series = series_position is not None
  parts = -(-executor.known_workers // _WORKERS_PER_NEAR_COPY_PART)
  # The workers keep the keypoints in files of their own in `folder` until the series are found.
  with _keypoints_folder(folder if finds_series else None) as keypoints:
    inspect = _Inspect(converted.size if converted is not None else None,
                       series=finds_series,
                       converted_folder=converted.folder if converted is not None else "",
                       keypoints_folder=keypoints,
                       make_record=converted.make_record if converted is not None else None)
    phase = Phase(inspect, _first_copies(candidates, report), on_crash=_crashed,
                  chunk=PHOTOS_PER_TASK)
    results, grouped = executor.map_and_group(
        phase, Grouping(_GroupedValues(series=finds_series, near_copy_parts=parts),
                        _ScanGroups(series_position, near_copy_parts=parts),
                        on_crash=_not_grouped))
    photos = _taken_results(results, report, converted)
  _count(photos, report)
  return _grouped(sorted(photos, key=lambda p: p.file_name), grouped, report)


def _first_copies(candidates: Iterable[Candidate], report: BuildReport) -> Iterator[Candidate]:
  """The candidates less a file name seen again; those go into one warning, once the last
  candidate is read."""
  kept_at: dict[str, str] = {}  # file_name -> where its first copy lies.
  # (kept, left out) -> names.
  twice: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
  for candidate in tfds_private.progress_bar(candidates, desc="Scanning", unit=" files"):
    if candidate.file_name in kept_at:
      twice[kept_at[candidate.file_name], candidate.location[0]].append(candidate.file_name)
      continue
    kept_at[candidate.file_name] = candidate.location[0]
    yield candidate
  report.warnings += _second_copies(twice)


@contextlib.contextmanager
def _keypoints_folder(folder: str | os.PathLike[str] | None) -> Iterator[str | None]:
  """A new folder in `folder` where the workers keep the keypoints, removed at the end; None
  without `folder`."""
  keypoints = tempfile.mkdtemp(prefix="keypoints.", dir=folder) if folder is not None else None
  try:
    yield keypoints
  finally:
    if keypoints is not None:
      worker_files.close(keypoints)  # This process's, with one worker.
      shutil.rmtree(keypoints, ignore_errors=True)


def _taken_results(results: Iterable[_Scanned | Skipped], report: BuildReport,
                   converted: ConvertedImages | None) -> list[Photo]:
  """The scanned photos, in the order they came; the skipped files, the crop boxes outside
  their photo and the converted images go where they are kept."""
  photos = []
  for result in results:
    if isinstance(result, Skipped):
      report.skipped_files.append(result)
      continue
    photos.append(result.photo)
    if result.crop_outside:
      report.counts["bad crop lines"] = report.counts.get("bad crop lines", 0) + 1
    if converted is not None and result.image is not None:
      converted.add(result.photo.file_name, result.image, result.photo.box, result.record)
  return photos


def _count(photos: list[Photo], report: BuildReport) -> None:
  """The report's byte-identical duplicates and its counts of the photos."""
  by_digest = collections.defaultdict(list)
  for photo in photos:
    by_digest[photo.digest].append(photo.file_name)
  report.duplicates = sorted(sorted(group) for group in by_digest.values() if len(group) > 1)
  report.counts["images converted to JPEG"] = sum(not p.check.is_clean_jpeg for p in photos)
  # Flagged `padded_jpeg`.
  report.counts["padded JPEGs kept"] = sum(p.check.padding > 0 for p in photos)
  if "bad crop lines" in report.counts:  # The listing read crop files.
    report.counts["images with a crop box"] = sum(p.box is not None for p in photos)


def _grouped(photos: list[Photo], grouped: dict[str, list[list[str]] | None],
             report: BuildReport) -> list[Photo]:
  """`photos` (sorted by name) with the split of their group: the groups the workers found, by
  name, as indexes of `photos`."""
  index_of = {p.file_name: i for i, p in enumerate(photos)}
  parts = [grouped.pop(key) for key in sorted(grouped) if key.startswith(_NEAR_COPIES)]
  # The parts' groups joined where they share a photo; where a part's worker died, or no photo
  # was scanned, the near copies are found again here.
  near = None if not parts or None in parts else splits.components(
      len(photos), [(index_of[group[0]], index_of[name])
                    for part in parts for group in part or () for name in group[1:]])
  if lost := sorted(key for key, groups in grouped.items() if groups is None):
    report.warnings.append(_series_not_found(lost))
  found = sorted(sorted(index_of[name] for name in group)
                 for groups in grouped.values() if groups for group in groups)
  return group_near_duplicates(photos, report, found, near=near)


def group_near_duplicates(photos: list[Photo], report: BuildReport,
                          series_groups: Iterable[list[int]] = (),
                          near: list[list[int]] | None = None) -> list[Photo]:
  """Gives every group of near-duplicate photos and every series the split of its leader.

  The groups and series are joined where they touch, and each joined group takes the split
  of its leader (`splits.group_leader`). `report` lists the near-copy groups that are more
  than byte-identical copies, and the series.

  Args:
    photos: the scanned photos.
    report: receives the near-copy groups, the series and their counts.
    series_groups: the series (`series.groups`), as indices of `photos`.
    near: the groups of near copies as indices of `photos`, where a worker found them; None
      finds them here (`near_duplicates.groups`).

  Returns:
    `photos` in the same order, each with its group's digest (`group_digest`), which decides
    its split.
  """
  series_groups = list(series_groups)
  if near is None:
    near = near_duplicates.groups([p.check.hashes for p in photos])
  report.near_duplicates = []
  for members in near:
    if len({photos[i].digest for i in members}) > 1:
      names = [photos[i].file_name for i in members]
      report.near_duplicates.append(
          {"files": names, "across_classes": len({class_folder(n) for n in names}) > 1})
  report.series = [{"files": [photos[i].file_name for i in members]} for members in series_groups]
  grouped = list(photos)
  moved = 0
  chains = [(members[0], other) for members in near + series_groups for other in members[1:]]
  for members in splits.components(len(photos), chains):
    group_digest = splits.group_leader(photos[i].digest for i in members)
    for i in members:
      grouped[i] = dataclasses.replace(photos[i], group_digest=group_digest)
      moved += grouped[i].split != photos[i].split
  report.counts["photos in near-duplicate groups"] = sum(
      len(g["files"]) for g in report.near_duplicates)
  report.counts["photos in series"] = sum(len(g["files"]) for g in report.series)
  report.counts["photos moved to their group's split"] = moved
  return grouped



"""The base class of the package's builders: size configs, scanning, reporting.

A builder subclasses `PhotoBuilder` and says three things: where its source is
(`_find_source`), which files it holds (`_candidates`), and the features of
one validated photo (`_example_maker`). The scan here reads every
candidate once, validates it (`images.inspect_image`), hashes it for the split
rule, and records what was skipped. The result is saved in TFDS's download
dir, keyed by the names, sizes and times of the source files, and reused by
every config built later from the same files, so a corpus is walked once.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import logging
import os
from collections.abc import Iterator
from typing import Any

import tensorflow_datasets as tfds
from etils import epath
from tensorflow_datasets.core.utils import tqdm_utils

from photo_datasets import images, splits

CHECKSUMS_DIR = epath.Path(__file__).parent.parent / "checksums"
DEFAULT_IMAGE_SIZE = 224


@dataclasses.dataclass
class ImageSizeConfig(tfds.core.BuilderConfig):
  """`image_size` None stores images at source size; N stores N×N crops."""

  image_size: int | None = None


def size_config(name: str) -> ImageSizeConfig:
  if name == "full":
    return ImageSizeConfig(
        name="full",
        description="Images at source size; clean JPEGs stored byte for byte.",
    )
  size = int(name)
  if not 16 <= size <= 4096:
    raise ValueError(f"Image size must be between 16 and 4096, got {name!r}.")
  return ImageSizeConfig(
      name=str(size),
      image_size=size,
      description=f"Images centre-cropped to a square and resized to {size}x{size}.",
  )


@dataclasses.dataclass(frozen=True)
class Photo:
  """One valid source image, as learned by the scan."""

  file_name: str  # Example key and `file_name` feature: "<...>/<class>/<file>".
  location: tuple[str, ...]  # How the builder reads the bytes again.
  digest: str  # SHA-256 of the source bytes.
  check: images.ImageCheck
  box: tuple[float, float, float, float] | None = None  # Upright, relative.

  @property
  def split(self) -> str:
    return splits.split_of(self.digest)

  @property
  def folder(self) -> str:
    return self.file_name.rsplit("/", 2)[-2]


@dataclasses.dataclass
class BuildReport:
  """What a build skipped or noticed; stored in `builder.info.metadata`."""

  skipped_files: list[dict[str, str]] = dataclasses.field(default_factory=list)
  warnings: list[str] = dataclasses.field(default_factory=list)
  duplicates: list[list[str]] = dataclasses.field(default_factory=list)
  empty_splits: list[str] = dataclasses.field(default_factory=list)
  ignored_files: int = 0
  counts: dict[str, int] = dataclasses.field(default_factory=dict)

  def skip(self, file_name: str, reason: str) -> None:
    self.skipped_files.append({"file_name": file_name, "reason": reason})

  def as_metadata(self) -> dict[str, Any]:
    return dataclasses.asdict(self)


def format_report(name: str, metadata: dict[str, Any], split_sizes: dict[str, int]) -> str:
  """A short human summary of a build, from `builder.info.metadata`."""
  lines = [f"{name}: " + ", ".join(f"{s} {n}" for s, n in split_sizes.items())]
  skipped = metadata.get("skipped_files", [])
  lines.append(f"  skipped files: {len(skipped)}")
  lines += [f"    {s['file_name']}: {s['reason']}" for s in skipped]
  if metadata.get("empty_splits"):
    lines.append("  left out (no examples): " + ", ".join(metadata["empty_splits"]))
  for key, value in sorted(metadata.get("counts", {}).items()):
    lines.append(f"  {key.replace('_', ' ')}: {value}")
  duplicates = metadata.get("duplicates", [])
  if duplicates:
    lines.append(f"  byte-identical groups (same split each): {len(duplicates)}")
    lines += [f"    across classes: {' = '.join(g)}" for g in duplicates
              if len({f.rsplit('/', 2)[-2] for f in g}) > 1]
  lines += [f"  warning: {w}" for w in metadata.get("warnings", [])]
  if metadata.get("ignored_files"):
    lines.append(f"  non-image files ignored: {metadata['ignored_files']}")
  return "\n".join(lines)


# Bump when the scan learns something new or checks differently.
_SCAN_FORMAT = 1


def _source_fingerprint(root: str) -> str:
  """Changes whenever a file under `root` is added, removed, resized or touched."""
  digest = hashlib.sha256(f"{_SCAN_FORMAT}\0{root}".encode())
  for folder, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(files):
      stat = os.stat(os.path.join(folder, name))
      digest.update(f"\0{folder}/{name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode(
          "utf-8", "surrogateescape"))
  return digest.hexdigest()


def _save_scan(path: epath.Path, photos: list[Photo], report: BuildReport) -> None:
  rows = [[p.file_name, list(p.location), p.digest, dataclasses.astuple(p.check), p.box]
          for p in photos]
  partial = path.with_suffix(".partial")
  partial.write_text(json.dumps({"photos": rows, "report": report.as_metadata()}))
  partial.replace(path)


def _load_scan(path: epath.Path) -> tuple[list[Photo], BuildReport]:
  saved = json.loads(path.read_text())
  photos = [Photo(name, tuple(location), digest, images.ImageCheck(*check),
                  tuple(box) if box else None)
            for name, location, digest, check, box in saved["photos"]]
  return photos, BuildReport(**saved["report"])


@dataclasses.dataclass(frozen=True)
class ExampleMaker:
  """Turns one photo and its source bytes into an example of one config.

  Holds plain data only, so that Beam workers can run it. A builder subclasses
  it and adds its features in `fields`.
  """

  image_size: int | None  # The config's size; None stores the source size.

  def fields(self, photo: Photo) -> dict[str, Any]:
    """Every feature but `image`."""
    raise NotImplementedError

  def __call__(self, photo: Photo, data: bytes) -> dict[str, Any]:
    size = self.image_size
    # The crop box shapes sized images only; `full` keeps it as a feature.
    image = images.encode_image(data, photo.check, size=size, box=photo.box if size else None)
    return {"image": image, **self.fields(photo)}


class FileReader:
  """Reads sources whose location is a plain file path."""

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    pass

  def read(self, location: tuple[str, ...]) -> bytes:
    (path,) = location
    with open(path, "rb") as f:
      return f.read()


def _scan_cache_dir(dl_manager) -> epath.Path | None:
  """`<download dir>/scans`, unless that lies in the manual dir: user data,
  never written to (as with TFDS's test harness, where both are dummy_data)."""
  cache_dir = os.path.abspath(os.path.join(dl_manager.download_dir, "scans"))
  try:
    manual_dir = os.path.abspath(dl_manager.manual_dir)
  except AssertionError:  # No manual dir.
    return epath.Path(cache_dir)
  if cache_dir == manual_dir or cache_dir.startswith(manual_dir + os.sep):
    return None
  return epath.Path(cache_dir)


_WORKER_READERS: dict[type, Any] = {}


def _beam_example(photo: Photo, reader_type: type, make: ExampleMaker):
  """Beam's per-photo step: each worker keeps one open reader per type."""
  if reader_type not in _WORKER_READERS:
    _WORKER_READERS[reader_type] = reader_type().__enter__()
  try:
    yield photo.file_name, make(photo, _WORKER_READERS[reader_type].read(photo.location))
  except Exception as e:  # Already validated: no single file may stop a build.
    logging.warning("%s: skipped, conversion failed: %s", photo.file_name, e)


class PhotoBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
  """Shared behaviour of the package's image builders."""

  VERSION = tfds.core.Version("1.0.0")
  BUILDER_CONFIGS = [size_config(str(DEFAULT_IMAGE_SIZE)), size_config("full")]
  DEFAULT_CONFIG_NAME = str(DEFAULT_IMAGE_SIZE)

  @classmethod
  def get_builder_config(cls, name, version=None):
    """Any square size is a config: `tfds.load('name/160')` builds 160×160."""
    config = super().get_builder_config(name, version)
    if config is None and name.isdigit():
      config = size_config(name)
    return config

  @tfds.core.utils.classproperty
  @classmethod
  def _checksums_path(cls) -> epath.Path:
    return CHECKSUMS_DIR / f"{cls.name}.tsv"

  def image_feature(self) -> tfds.features.Image:
    size = self.builder_config.image_size
    shape = (size, size, 3) if size else (None, None, 3)
    return tfds.features.Image(shape=shape, encoding_format="jpeg")

  # To be provided by each builder.
  def _find_source(self, dl_manager) -> Any:
    raise NotImplementedError

  def _candidates(self, source, report: BuildReport) -> Iterator[tuple[str, tuple[str, ...], bytes]]:
    """Yields (file_name, location, bytes) for every file that may be an image."""
    raise NotImplementedError

  # How the bytes of a photo are read back from its `location`.
  READER: type = FileReader

  def _example_maker(self, source) -> ExampleMaker:
    """The builder's `ExampleMaker` for this config and source."""
    raise NotImplementedError

  def _annotate(self, photos: list[Photo], report: BuildReport) -> list[Photo]:
    """Adds what is known only once the whole source was walked (crop boxes)."""
    return photos

  def _scan(self, source, cache_dir: epath.Path | None) -> tuple[list[Photo], BuildReport]:
    """Scans `source`, or reuses the saved scan of the same, unchanged files."""
    cache = cache_dir and cache_dir / f"{self.name}-{_source_fingerprint(os.fspath(source))[:20]}.json"
    if cache and cache.exists():
      logging.info("Reusing the scan of %s saved in %s", source, cache)
      return _load_scan(cache)
    report = BuildReport()
    photos: dict[str, Photo] = {}
    candidates = self._candidates(source, report)
    for file_name, location, data in tqdm_utils.tqdm(candidates, desc="Scanning", unit=" files"):
      if file_name in photos:
        report.warnings.append(f"{file_name} appears twice in the source; kept the first copy")
        continue
      try:
        check = images.inspect_image(data)
      except images.BadImage as e:
        report.skip(file_name, str(e))
        continue
      photos[file_name] = Photo(file_name, location, splits.content_digest(data), check)
    by_digest = collections.defaultdict(list)
    for photo in photos.values():
      by_digest[photo.digest].append(photo.file_name)
    report.duplicates = sorted(sorted(g) for g in by_digest.values() if len(g) > 1)
    report.counts["images converted to JPEG"] = sum(
        not p.check.is_clean_jpeg for p in photos.values())
    ordered = self._annotate(sorted(photos.values(), key=lambda p: p.file_name), report)
    if cache:
      try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        _save_scan(cache, ordered, report)
      except OSError as e:  # A read-only download dir only costs a rescan later.
        logging.warning("Could not save the scan in %s: %s", cache_dir, e)
    return ordered, report

  def _split_generators(self, dl_manager):
    source = self._find_source(dl_manager)
    photos, report = self._scan(source, _scan_cache_dir(dl_manager))
    by_split = {name: [] for name in splits.SPLIT_NAMES}
    for photo in photos:
      by_split[photo.split].append(photo)
    report.empty_splits = [name for name, group in by_split.items() if not group]
    if not photos:
      examples = "".join(
          [f"\n  {s['file_name']}: {s['reason']}" for s in report.skipped_files[:10]]
          + [f"\n  {w}" for w in report.warnings[:10]])
      raise ValueError(
          f"No usable image in {source}: found {report.ignored_files} non-image "
          f"files and {len(report.skipped_files)} unusable ones{examples}\n"
          f"Expected:{self.MANUAL_DOWNLOAD_INSTRUCTIONS}")
    for name in report.empty_splits:
      logging.warning("%s: split %r would be empty and is left out.", self.name, name)
    self.info.metadata.update(report.as_metadata())
    return {name: self._generate_examples(source, group)
            for name, group in by_split.items() if group}

  def _generate_examples(self, source, photos: list[Photo]):
    """Examples in location order (each archive opened once); with Beam
    options (`tfds build --beam_pipeline_options=...`), a Beam transform."""
    make = self._example_maker(source)
    photos = sorted(photos, key=lambda p: p.location)
    if self._use_beam:
      beam = tfds.core.lazy_imports.apache_beam
      return beam.Create(photos) | beam.FlatMap(_beam_example, self.READER, make)
    return self._examples(photos, make)

  def _examples(self, photos: list[Photo], make: ExampleMaker):
    with self.READER() as reader:
      for photo in photos:
        try:
          example = make(photo, reader.read(photo.location))
        except Exception as e:  # Already validated: no single file may stop a build.
          logging.warning("%s: skipped, conversion failed: %s", photo.file_name, e)
          self.info.metadata["skipped_files"].append(
              {"file_name": photo.file_name, "reason": f"conversion failed: {e}"})
          continue
        yield photo.file_name, example

  _use_beam = False

  def download_and_prepare(self, *args, **kwargs):
    config = kwargs.get("download_config")
    self._use_beam = bool(config and (config.beam_runner or config.beam_options))
    super().download_and_prepare(*args, **kwargs)
    sizes = {name: info.num_examples for name, info in self.info.splits.items()}
    print(format_report(f"{self.name}/{self.builder_config.name}",
                        dict(self.info.metadata or {}), sizes), flush=True)

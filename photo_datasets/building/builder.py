"""`PhotoBuilder`, the base class of the package's builders.

A dataset subclasses it and provides, besides TFDS's `_info` (which may take its
image feature from `image_feature()`):

* `MANUAL_DOWNLOAD_INSTRUCTIONS`: where the user puts the source.
* `DOWNLOADS_ITS_SOURCE`: True where the builder downloads its source when
  the manual dir has none: the build then goes on without one, and the build
  command shown for a config not built yet (`unbuilt.build_command`) names no
  manual dir. Default: False.
* `READER`: the `generation.Reader` type that reads a photo back from its
  location (default: plain file paths).
* `REPORT_NOTE`: optional; shown first on the build report page, e.g. who may
  see it (default: nothing).
* `_find_source(dl_manager)`: the folder holding the source (download it, or
  find it in the manual dir), or a record of what was found there that names
  the folder (`os.fspath`): the other hooks get it, so it is searched once.
* `_list_source(source, report)`: an iterable of `records.Candidate`s, every
  file that may be an image, in location order, each with its crop box where
  the source gives one (the scan decides the photo's box from it, once). Files
  it rejects outright go into the report (`report.skip`, `report.ignored_files`,
  `report.warnings`); a source with crop files counts their bad lines in
  `report.counts["bad crop lines"]`, to which the scan adds the boxes that lie
  outside their photo.
* `_series_order()`: optional; a function giving a file name's place in its
  class's natural order (the order the photos were collected in), or None for
  a name without one: photos close in it that show one scene are a series and
  share a split (`series`). Default: None, no series.
* `_example_maker(source)`: the `generation.ExampleMaker` of this config.
* `_estimate_source(source)`: optional; (image files, their bytes) found in
  seconds, without reading them, for the disk-space check before the scan
  (default: the files with an image suffix under `source`).
* `class_descriptions()`: optional classmethod; class name -> what the build
  report page, `train`'s classes.json and `show`'s captions give beside or
  instead of it, e.g. an English name (default: nothing).

Everything else is shared: the size configs, the scan on every core and its
reuse across configs, the split rule, generation and the records' writing on
every core (`writing`; or on Apache Beam with `--beam_pipeline_options`), the
build report, printed at the end of every build and kept in
`builder.info.metadata`, and `croissant.json`, the Croissant description of
the built config (`croissant.py`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import tensorflow_datasets as tfds
from absl import logging
from etils import epath

from photo_datasets import tfds_private
from photo_datasets.archives import storage
from photo_datasets.building import (
  after_generation,
  beam_or_local,
  build_state,
  cli,
  configs,
  disk,
  generation,
  parallel,
  report_thumbnails,
  scan_to_splits,
  sharding,
  tfrecord_files,
  unbuilt,
  writing,
)
from photo_datasets.building.scan_to_splits import manual_dir_or_none
from photo_datasets.catalog import croissant
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import images, records

CHECKSUMS_DIR = epath.Path(__file__).parent.parent.parent / "checksums"
# What `_find_source` found: the folder holding the source, or a dataset's own record of it
# that names the folder (`os.fspath`) and carries what it found there on to the other hooks, so
# the folder is searched once per build.
Source = TypeVar("Source", bound=os.PathLike[str])


# `skip_registration` goes to TFDS's `__init_subclass__`, which mypy cannot see (tfds is untyped).
class PhotoBuilder(tfds.core.GeneratorBasedBuilder, Generic[Source],  # type: ignore[call-arg]
                   skip_registration=True):
  """The base class of the package's image datasets: a TFDS builder that scans its
  source on every core, splits it and writes the records.

  Its configs are image sizes: `224` (the default), `full` (images at source
  size), or any square size in pixels (`tfds.load('name/160')` builds
  160×160). A dataset subclasses it as `PhotoBuilder[T]`, `T` being the type
  its `_find_source` returns, and provides the hooks listed in this module's
  docstring; the scan, the split rule, the writing of the records, the build
  report and `croissant.json` are shared.

  Args:
    workers: processes for the per-photo work of a build; default
      `$PHOTO_DATASETS_WORKERS`, else every core the process may use. 1 runs
      everything in this process.
    **kwargs: TFDS's builder arguments (`data_dir`, `config`, `version`, ...).

  Raises:
    ValueError: `workers` is not a whole number >= 1, or the config is no
      image size.
  """

  VERSION = tfds.core.Version("1.0.0")
  BUILDER_CONFIGS = [configs.size_config(str(configs.DEFAULT_IMAGE_SIZE)),
                     configs.size_config("full")]
  DEFAULT_CONFIG_NAME = str(configs.DEFAULT_IMAGE_SIZE)

  # The hooks a dataset provides; see the module docstring.
  READER: type[generation.Reader] = generation.FileReader
  # Shown first on the build report page (`report_page`), e.g. who may see it.
  REPORT_NOTE = ""
  DOWNLOADS_ITS_SOURCE = False
  # Records serialised and written by the workers (`writing`); False: by TFDS's writer, in this
  # process.
  WRITE_IN_WORKERS = True
  _build: build_state.Build  # The build in progress (`download_and_prepare`).
  _built: after_generation.Built | None = None  # The build just made, until its page is written.

  def _find_source(self, dl_manager: tfds.download.DownloadManager) -> Source:
    raise NotImplementedError

  def _list_source(self, source: Source, report: BuildReport) -> Iterable[records.Candidate]:
    raise NotImplementedError

  def _example_maker(self, source: Source) -> generation.ExampleMaker:
    raise NotImplementedError

  def _series_order(self) -> Callable[[str], int | None] | None:
    return None

  def _estimate_source(self, source: Source) -> tuple[int, int]:
    files = total = 0
    for folder, _, names in storage.walk(source):
      for name in names:
        if name.lower().endswith(images.IMAGE_SUFFIXES):
          files, total = files + 1, total + storage.size(os.path.join(folder, name))
    return files, total

  # The shared machinery.

  def __init_subclass__(cls, **kwargs: Any):
    super().__init_subclass__(**kwargs)
    cli.quiet(cls.__module__.split(".")[0])  # Under `tfds build` only.

  def __init__(self, *, workers: int | None = None, **kwargs: Any):
    super().__init__(**kwargs)
    # TFDS 4.9.10 drops them for configs in code.
    configs.restore_alternative_file_formats(self.info)
    self.workers = (parallel.default_workers() if workers is None
                    else parallel.check_workers(workers))
    tfds_private.keep_init_argument(self, "workers", workers)

  @classmethod
  def get_builder_config(cls, name: str,
                         version: str | None = None) -> configs.ImageSizeConfig | None:
    """Any square size is a config: `tfds.load('name/160')` builds 160×160."""
    config: configs.ImageSizeConfig | None = super().get_builder_config(name, version)
    if config is None and name.isdigit():
      config = configs.size_config(name)
    return config

  def _create_builder_config(self, builder_config: Any, version: Any) -> Any:
    # A name that is no config gets the valid forms, not TFDS's list of close matches (empty
    # for '224px').
    if (isinstance(builder_config, str)
        and self.get_builder_config(builder_config.split(":")[0]) is None):
      configs.size_config(builder_config.split(":")[0])
    return super()._create_builder_config(builder_config, version)

  def dataset_info_from_configs(self, **kwargs: Any) -> tfds.core.DatasetInfo:
    """TFDS's, with the README's first paragraph as the description: `tfds build` prints
    the description of every config it builds, and the README (the catalog's page) keeps the
    whole text."""
    info = super().dataset_info_from_configs(**kwargs)
    info.as_proto.description = (info.description or "").strip().split("\n\n")[0]
    return info

  @tfds_private.classproperty
  @classmethod
  def _checksums_path(cls) -> epath.Path:
    return CHECKSUMS_DIR / f"{cls.name}.tsv"

  def image_feature(self) -> tfds.features.Image:
    size = self.builder_config.image_size
    shape = (size, size, 3) if size else (None, None, 3)
    return tfds.features.Image(shape=shape, encoding_format="jpeg")

  def download_and_prepare(self, **kwargs: Any) -> None:
    """TFDS's, then `croissant.json` beside `dataset_info.json`: after TFDS has
    moved the files to their final folder, so its checksums are theirs. Also
    for a dataset built earlier without one; a no-op when it is there.

    A second build of the config in the same data dir waits for the first
    (`disk.config_lock`), then reuses what it built. Before, what interrupted
    builds of this config left behind is removed (`disk.remove_leftovers`); a
    disk that fills up anyway ends the build with `disk.NotEnoughDiskSpace`,
    in the words of the check made before it."""
    parallel.refuse_in_a_starting_worker(f"{self._full_name}: building")
    with build_state.loaded_objects_frozen():
      config_dir = os.path.dirname(os.fspath(self.data_path))
      self._build = build_state.Build()
      # Only before a build: a built copy still loads read-only.
      if storage.is_local(config_dir) and not self.data_path.exists():
        disk.check_writable(self._full_name, config_dir)
      waited = []

      def wait(holder: str) -> None:
        waited.append(holder)
        self._say(f"another build of this config is running in {config_dir} ({holder}); "
                  "waiting for it to end, then reusing what it built.")

      def take_over(holder: str) -> None:
        self._say(f"the build of {holder} ended without finishing (killed?); "
                  "this build takes over.")

      local = storage.is_local(config_dir)
      with (disk.config_lock(config_dir, wait, take_over) if local
            else contextlib.nullcontext(False)) as locked:
        if locked and (note := disk.remove_leftovers(config_dir)):
          self._say(note)
        if waited and self.data_path.exists():
          # Built meanwhile: TFDS reuses it; its info is that build's.
          self.info.read_from_directory(self.data_path)
        try:
          super().download_and_prepare(**kwargs)
        except Exception as e:
          if disk.is_out_of_space(e) and not isinstance(e, disk.NotEnoughDiskSpace):
            raise disk.out_of_space(self._full_name, os.fspath(tfds_private.data_dir_root(self)),
                                   self._build.needed_bytes) from e
          raise
        # Under the lock: a build waiting for this one finds them written and keeps them.
        if not (self.data_path / croissant.FILE_NAME).exists():
          try:
            path = croissant.write(self.info, self.data_path)
          except OSError as e:  # A read-only copy of a dataset still loads.
            logging.warning("Could not write the Croissant description in %s: %s",
                            self.data_path, e)
          else:
            logging.debug("Wrote the Croissant description %s", path)
        self._write_report_page()

  def _example_writer(self) -> tfds.core.ExampleWriter:
    # TFDS's writes TFRecord files with TensorFlow, which each Beam worker writing shards imports.
    # On Beam, each file's hash is left where `_process_pipeline_result` reads it.
    beam = getattr(self, "_build", build_state.Build()).beam  # TFDS may ask before a build.
    hashes = beam_or_local.hashes_folder(beam, self._generation_dir)
    return tfrecord_files.ExampleWriter(file_format=self.info.file_format, hashes_folder=hashes)

  def is_prepared(self) -> bool:
    # TFDS's own warns that a version folder never made "has no dataset_info.json".
    return bool(self.data_path.exists() and super().is_prepared())

  def _log_download_bytes(self) -> None:
    """Nothing: TFDS prints "Downloading and preparing dataset Unknown size" before the build
    looks for its source (a refusal then follows it); the build's summary says where it went."""

  def not_built_message(self, name: str | None = None) -> str:
    """What a reader of this config, not built in its data dir, is told (`unbuilt.message`): the
    other versions built there and how to read them, and the command that builds this one."""
    return unbuilt.message(self, name)

  def _say(self, note: str) -> None:
    """A line for the person running the build, named by config (printed once: not logged too)."""
    print(f"{self._full_name}: {note}", flush=True)

  def _write_report_page(self) -> None:
    """The build report page and the summary (`after_generation.write_report_page`)."""
    built, self._built = self._built, None
    after_generation.write_report_page(self, built, self._full_name)

  def _download_and_prepare(self, dl_manager: tfds.download.DownloadManager,
                            download_config: tfds.download.DownloadConfig) -> None:
    # Made by `download_and_prepare`, which reads its disk estimate when the disk fills up.
    build = self._build
    build.beam = bool(download_config.beam_runner or download_config.beam_options)
    if self.MANUAL_DOWNLOAD_INSTRUCTIONS and not self.DOWNLOADS_ITS_SOURCE and \
        manual_dir_or_none(dl_manager) is None:  # Where TFDS looks for it, as TFDS computes it.
      manual_dir = (download_config.manual_dir
                    or os.path.join(os.fspath(dl_manager.download_dir), "manual"))
      raise unbuilt.SourceNotFound(f"{unbuilt.message(self, manual_dir=os.fspath(manual_dir))}\n"
                                   f"What to put there:{self.MANUAL_DOWNLOAD_INSTRUCTIONS}")
    build.executor, download_config = beam_or_local.executor(
        build.beam, self.workers, download_config, self._beam_work_dir)
    try:
      super()._download_and_prepare(dl_manager, download_config)
      # The report page's thumbnails read the images the scan converted.
      self._built = after_generation.finish(build, self.info, self.data_path)
    finally:
      if build.converted is not None:
        build.converted.close()

  @classmethod
  def class_descriptions(cls) -> dict[str, str]:
    """Class name -> what the build report page, `train`'s classes.json and
    `show`'s captions give beside or instead of it (e.g. an English name)."""
    return {}

  def _generate_splits(self, dl_manager: tfds.download.DownloadManager,
                       download_config: tfds.download.DownloadConfig) -> Any:
    # Our count of record files per split (`sharding`), unless --num_shards says.
    download_config = sharding.with_policy(download_config)
    beam_or_local.use_writers(self._build.beam)
    if beam_or_local.tfds_writes(self._build.beam, self.WRITE_IN_WORKERS, download_config,
                                 self.info):
      return super()._generate_splits(dl_manager, download_config)
    self._build.workers_write = True  # The scan's workers make the records they can.
    made = self._split_generators(dl_manager)
    if not all(isinstance(split, generation.LocalSplit) for split in made.values()):
      # `_generate_examples` wrapped (TFDS's test harness checks the keys so):
      # TFDS's writer, on what was made (`_split_generators` gives it again).
      return super()._generate_splits(dl_manager, download_config)
    shard_config = download_config.get_shard_config()
    example_writer = tfds_private.example_writer(self)
    return [writing.write_split(split, name,
                                filename_template=tfds_private.filename_template(self, name),
                                features=self.info.features, shard_config=shard_config,
                                example_writer=example_writer,
                                ignore_duplicates=download_config.ignore_duplicates,
                                sha256=self._build.record_sha256)
            for name, split in made.items()]

  def _split_generators(self, dl_manager: tfds.download.DownloadManager) -> dict[str, Any]:
    # Once a build: the scan's splits, whoever asks (`_generate_splits`, then TFDS's).
    if self._build.split_generators is None:
      self._build.split_generators = self._scanned_splits(dl_manager)
    return self._build.split_generators

  def _scanned_splits(self, dl_manager: tfds.download.DownloadManager) -> dict[str, Any]:
    source = self._find_source(dl_manager)
    manual_dir = manual_dir_or_none(dl_manager)
    if manual_dir is not None and storage.absolute(source).startswith(
        storage.absolute(manual_dir)):
      self._build.manual_dir = storage.absolute(manual_dir)
    make_record = (writing.RecordMaker(self._example_maker(source), self.info.features)
                   if self._build.workers_write and self.builder_config.image_size else None)
    photos, self._build.report = self._source_scan(make_record).scan(
        source, scan_to_splits.scan_cache_dir(dl_manager))
    if not photos:
      raise ValueError(scan_to_splits.nothing_usable(source, self._build.report,
                                                     self.MANUAL_DOWNLOAD_INSTRUCTIONS))
    split_photos = scan_to_splits.by_split(photos, self._build.report, self.name)
    # The report page's thumbnails, made beside the records (on Beam: in their pipeline).
    runs = self._build.thumbnail_runs = report_thumbnails.runs(self, photos, self._build.report)
    self._build.thumbnails = report_thumbnails.beside_generation(
        self._build.executor, runs, size=self.builder_config.image_size,
        reader_type=self.READER, converted=self._build.converted)
    return {name: self._generate_examples(source, group, name)
            for name, group in split_photos.items() if group}

  def _source_scan(self, make_record: writing.RecordMaker | None = None
                   ) -> scan_to_splits.SourceScan:
    """The scan of this build's source (`scan_to_splits.SourceScan`); with `make_record`, its
    workers make the records of the photos they convert."""
    return scan_to_splits.SourceScan(
        type(self), self.name, self._full_name, self.builder_config.image_size, self.data_dir,
        os.fspath(tfds_private.data_dir_root(self)), self._build, self._say, self._list_source,
        self._estimate_source, self._series_order, make_record)

  def _generate_examples(self, source: Source, photos: list[records.Photo], split: str) -> Any:
    """Examples in location order (each archive opened once)."""
    make = self._example_maker(source)
    photos = sorted(photos, key=lambda p: p.location)
    self._build.split_photos[split] = photos
    self._build.source_path = os.fspath(source)
    return beam_or_local.split_examples(self._build, photos, make, self.READER,
                                        self._generation_dir, split, self.workers)

  @property
  def _beam_work_dir(self) -> epath.Path:
    # In the build's temporary folder: the workers read it.
    return epath.Path(self.data_dir) / "beam-work"

  @property
  def _generation_dir(self) -> epath.Path:
    # The `ConvertSplit`s' files, and the record files' hashes.
    return self._beam_work_dir / "generation"

  def _process_pipeline_result(self, pipeline_result: Any) -> None:
    beam_or_local.read_beam_results(self._build, self._generation_dir)

  @property
  def _full_name(self) -> str:
    return f"{self.name}/{self.builder_config.name}"

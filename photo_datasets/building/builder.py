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
import dataclasses
import gc
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

import tensorflow_datasets as tfds
from absl import logging
from etils import epath

from photo_datasets import tfds_private
from photo_datasets.archives import storage
from photo_datasets.building import (
  cli,
  configs,
  converted,
  disk,
  executors,
  generation,
  parallel,
  reproducible,
  scan,
  scan_cache,
  sharding,
  tfrecord_files,
  unbuilt,
  writing,
)
from photo_datasets.catalog import build_stats, croissant, fingerprint
from photo_datasets.catalog.build_report import BuildReport, Skipped
from photo_datasets.photos import images, records, series, splits

CHECKSUMS_DIR = epath.Path(__file__).parent.parent.parent / "checksums"
# What `_find_source` found: the folder holding the source, or a dataset's own record of it
# that names the folder (`os.fspath`) and carries what it found there on to the other hooks, so
# the folder is searched once per build.
Source = TypeVar("Source", bound=os.PathLike[str])


def manual_dir_or_none(dl_manager: tfds.download.DownloadManager) -> epath.Path | None:
  """The manual dir, or None where TFDS has none to give (it raises AssertionError)."""
  try:
    return dl_manager.manual_dir
  except AssertionError:
    return None


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
  _build: _Build  # The build in progress (`download_and_prepare`).
  _built: _Built | None = None  # The build just made, until its page is written.

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
    with _loaded_objects_frozen():
      config_dir = os.path.dirname(os.fspath(self.data_path))
      self._build = _Build()
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
    beam = getattr(self, "_build", _Build()).beam  # TFDS may ask before a build.
    hashes = os.fspath(self._generation_dir / _HASHES) if beam else None
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
    """`report.html` and `quality.csv` beside `dataset_info.json` (`report_page`)
    after a build, then the build's summary, naming it. A config reused
    without its page (a build stopped after its records, or built before the
    page existed) gets it once, from a pass over every record (its cost:
    docs/data-quality.md#the-build-report); a read-only copy is left as it is."""
    # Its own module; TensorFlow only for the records pass.
    from photo_datasets.catalog import report_page

    built, self._built = self._built, None
    folder = os.fspath(self.data_path)
    if built is None:
      if (self.is_prepared() and storage.is_local(folder) and os.access(folder, os.W_OK)
          and not os.path.exists(os.path.join(folder, report_page.FILE_NAME))):
        try:
          print(f"{self._full_name}: wrote the missing report page {report_page.write(self)}",
                flush=True)
        except Exception as e:  # As after a build: the page never fails a load.
          logging.warning("Could not write the build report page in %s: %s: %s", folder,
                          type(e).__name__, e)
      return
    try:
      page = report_page.write(self, split_of=built.split_of, source_images=built.source_images,
                               build_seconds=built.seconds)
    except Exception as e:  # The page is for a person to read: it never fails a build.
      logging.warning("Could not write the build report page in %s: %s: %s", folder,
                      type(e).__name__, e)
      page = ""
    print(built.report.summary(self._full_name, built.sizes, page=page,
                               fingerprint=fingerprint.sha256_of(self.info.metadata)), flush=True)

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
    build.executor = executors.LocalExecutor(self.workers)
    if build.beam:
      from photo_datasets.building import beam_generation, beam_logs  # Need apache_beam.
      runner = beam_logs.quiet(download_config.beam_options, download_config.beam_runner)
      download_config = dataclasses.replace(download_config, beam_runner=runner)
      build.executor = beam_generation.BeamExecutor(
          runner, download_config.beam_options, self._beam_work_dir)
    try:
      super()._download_and_prepare(dl_manager, download_config)
    finally:
      if build.converted is not None:
        build.converted.close()

    built = self._built_photos()
    self.info.metadata.update(build.report.as_metadata())
    self.info.metadata.update(build_stats.metadata(built, self.info.features["label"].names))
    self.info.metadata["source"] = build.source_path
    # For the command that builds a sibling config (`unbuilt.build_command`).
    self.info.metadata["manual_dir"] = build.manual_dir
    split_of = {p.file_name: split for split, group in built.items() for p in group}
    runs, (thumbnails,) = build.thumbnail_runs, build.thumbnails()
    # While the record files are still in the build's temporary folder (`data_path` until TFDS
    # moves them), on the executor: those the writer did not hash (its format is not ours).
    unhashed = [name for name in fingerprint.record_files(self.info)
                if name not in build.record_sha256]
    if unhashed:
      (hashes,) = build.executor.run_together([executors.Phase(
          fingerprint.file_sha256, [self.data_path / name for name in unhashed],
          on_crash=_unhashed)])
      build.record_sha256.update(zip(unhashed, hashes, strict=True))
    self.info.metadata[fingerprint.METADATA_KEY] = fingerprint.record(self.info, self.data_path,
                                                                      build.record_sha256)
    sizes = {name: split.num_examples for name, split in self.info.splits.items()}
    thumbnail_of = {p.file_name: small for run, made in zip(runs, thumbnails, strict=True)
                    for p, small in zip(run, made, strict=True)
                    if small and p.file_name in split_of}  # Not one generation skipped.
    # Printed by `download_and_prepare` once the page is written, with its path.
    self._built = _Built(build.report, sizes, split_of,
                         lambda names: {n: thumbnail_of[n] for n in names if n in thumbnail_of},
                         time.perf_counter() - build.started)

  def _built_photos(self) -> dict[str, list[records.Photo]]:
    """The photos in each split's records: those given to generation, less those it skipped."""
    skipped = {s.file_name for s in self._build.report.skipped_files}
    return {split: [p for p in photos if p.file_name not in skipped]
            for split, photos in self._build.split_photos.items()}

  def _thumbnail_runs(self, photos: list[records.Photo]) -> list[list[records.Photo]]:
    """The report page's photos in runs of `_Thumbnails`, in location order: read from the
    source and framed as stored, a few reads instead of a pass over every record. Chosen from
    the scan's report (generation changes none of the groups and flags the page shows)."""
    from photo_datasets.catalog import report_page  # Its own module, as in `_write_report_page`.
    from photo_datasets.catalog.page_data import wanted_thumbnails

    split_of = {photo.file_name: photo.split for photo in photos}
    try:
      wanted, _ = wanted_thumbnails(report_page.page_data(self, split_of, self._build.report))
    except Exception as e:  # The page is for a person to read: it never fails a build.
      logging.warning("Could not choose the build report page's thumbnails: %s: %s",
                      type(e).__name__, e)
      return []
    chosen = sorted((p for p in photos if p.file_name in wanted), key=lambda p: p.location)
    return [chosen[i:i + _THUMBNAILS_PER_TASK] for i in range(0, len(chosen), _THUMBNAILS_PER_TASK)]

  @classmethod
  def class_descriptions(cls) -> dict[str, str]:
    """Class name -> what the build report page, `train`'s classes.json and
    `show`'s captions give beside or instead of it (e.g. an English name)."""
    return {}

  def _generate_splits(self, dl_manager: tfds.download.DownloadManager,
                       download_config: tfds.download.DownloadConfig) -> Any:
    # Our count of record files per split (`sharding`), unless --num_shards says.
    download_config = sharding.with_policy(download_config)
    reproducible.use_in_tfds()  # TFDS's writers too, where they write.
    if self._build.beam:  # And its Beam writer cuts shards where the local writer does.
      from photo_datasets.building import beam_writing  # Needs apache_beam.
      beam_writing.use_in_tfds()
    if (self._build.beam or not self.WRITE_IN_WORKERS
        or download_config.max_examples_per_split is not None
        or download_config.nondeterministic_order or self.info.disable_shuffling):
      return super()._generate_splits(dl_manager, download_config)
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
    photos, self._build.report = self._scan(source, _scan_cache_dir(dl_manager))
    if not photos:
      raise ValueError(self._nothing_usable(source))
    by_split: dict[str, list[records.Photo]] = {name: [] for name in splits.SPLIT_NAMES}
    for photo in photos:
      by_split[photo.split].append(photo)
    self._build.report.empty_splits = [name for name, group in by_split.items() if not group]
    for name in self._build.report.empty_splits:
      logging.warning("%s: split %r would be empty and is left out.", self.name, name)
    # The report page's thumbnails, made beside the records (on Beam: in their pipeline).
    runs = self._build.thumbnail_runs = self._thumbnail_runs(photos)
    make_thumbnails = _Thumbnails(square=bool(self.builder_config.image_size),
                                  reader_type=self.READER)
    self._build.thumbnails = self._build.executor.beside_generation(
        [executors.Phase(make_thumbnails, runs, on_crash=_no_thumbnails)])
    return {name: self._generate_examples(source, group, name)
            for name, group in by_split.items() if group}

  def _generate_examples(self, source: Source, photos: list[records.Photo], split: str) -> Any:
    """Examples in location order (each archive opened once)."""
    make = self._example_maker(source)
    photos = sorted(photos, key=lambda p: p.location)
    self._build.split_photos[split] = photos
    self._build.source_path = os.fspath(source)
    if self._build.beam:
      from photo_datasets.building import beam_generation  # Needs apache_beam.
      executor = cast(beam_generation.BeamExecutor, self._build.executor)
      return beam_generation.ConvertSplit(photos, make, self.READER, self._generation_dir, split,
                                          self._build.converted, beside=executor.take_beside())
    return generation.LocalSplit(photos, make, self.READER(), self._build.report.skipped_files,
                                 self.workers, self._build.converted)

  @property
  def _beam_work_dir(self) -> epath.Path:
    # In the build's temporary folder: the workers read it.
    return epath.Path(self.data_dir) / "beam-work"

  @property
  def _generation_dir(self) -> epath.Path:
    # The `ConvertSplit`s' files, and the record files' hashes.
    return self._beam_work_dir / "generation"

  def _process_pipeline_result(self, pipeline_result: Any) -> None:
    from photo_datasets.building import beam_generation
    folder = self._generation_dir
    self._build.record_sha256.update(beam_generation.written_hashes(folder / _HASHES))
    self._build.report.skipped_files += beam_generation.read_skips(folder)

  def _scan(self, source: Source,
            cache_dir: epath.Path | None) -> tuple[list[records.Photo], BuildReport]:
    """Scans `source`, or reuses the saved scan of the same, unchanged files;
    checks the disk space before the conversion starts. Fills the report's
    quality flags from the photos' scores either way. Builds of other configs
    scanning the same files at the same time wait for the first one's scan."""
    if not cache_dir:
      return self._scan_source(source, None)
    cache = scan_cache.saved_scan(cache_dir, type(self), os.fspath(source))
    with contextlib.suppress(OSError):
      cache_dir.mkdir(parents=True, exist_ok=True)
    if not cache.exists() and (why := scan_cache.why_not_reused(cache, self.name)):
      self._say(f"{why}: scanning {source} again.")

    def wait(holder: str) -> None:
      self._say(f"another build is scanning {source} ({holder}); waiting to reuse its scan.")

    with disk.exclusive(f"{cache}.lock", wait, remove=True):
      if cache.exists() and (saved := scan_cache.load_scan(cache)) is not None:
        logging.info("Reusing the scan of %s saved in %s", source, cache)
        self._check_disk_space(len(saved[0]), sum(p.nbytes for p in saved[0]))
        # From the saved scores, by today's thresholds.
        saved[1].quality_flags = build_stats.flag_rows(saved[0])
        return saved
      return self._scan_source(source, cache)

  def _scan_source(self, source: epath.Path,
                   cache: epath.Path | None) -> tuple[list[records.Photo], BuildReport]:
    size = self.builder_config.image_size
    local = storage.is_local(self.data_dir)
    # A bucket (gs://) holds no temporary file of ours.
    converts_in_scan = bool(size) and local
    series_order = self._series_order()
    estimate = self._estimate_source(source)
    self._check_disk_space(*estimate, converts_in_scan=converts_in_scan,
                           keeps_keypoints=series_order is not None and local)
    # The scan's workers keep the series keypoints in the build's folder; with a bucket's, in this
    # machine's temporary folder where they run here, else with their results.
    keypoints_in = os.fspath(self.data_dir) if local else None
    scratch = None
    if series_order is not None and not local and self._build.executor.on_this_machine:
      scratch = keypoints_in = disk.scratch_folder(self._full_name,
                                                   estimate[0] * series.KEYPOINTS_BYTES)
    report = BuildReport()
    listing = self._list_source(source, report)
    if size and converts_in_scan:
      self._build.converted = converted.ConvertedImages(size, self.data_dir)
    try:
      photos = scan.scan(listing, report, executor=self._build.executor,
                         converted=self._build.converted, series_position=series_order,
                         folder=keypoints_in)
    finally:
      if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)
    # Information only: no photo is left out for a flag.
    report.quality_flags = build_stats.flag_rows(photos)
    if cache:
      scan_cache.save_scan(cache, photos, report)
    # The images converted in the scan are on the disk already: the records are left to write.
    self._check_disk_space(len(photos), sum(p.nbytes for p in photos))
    return photos, report

  @property
  def _full_name(self) -> str:
    return f"{self.name}/{self.builder_config.name}"

  def _check_disk_space(self, photos: int, source_bytes: int, *, converts_in_scan: bool = False,
                        keeps_keypoints: bool = False) -> None:
    self._build.needed_bytes = disk.needed_bytes(
        self.builder_config.image_size, photos, source_bytes, converts_in_scan=converts_in_scan,
        scan_keeps=photos * series.KEYPOINTS_BYTES if keeps_keypoints else 0)
    data_dir_root = os.fspath(tfds_private.data_dir_root(self))
    if storage.is_local(data_dir_root):
      disk.preflight(self._full_name, data_dir_root, self._build.needed_bytes)

  def _nothing_usable(self, source: Source) -> str:
    report = self._build.report
    examples = "".join([f"\n  {s.file_name}: {s.reason}" for s in report.skipped_files[:10]]
                       + [f"\n  {w}" for w in report.warnings[:10]])
    return (f"No usable image in {source}: found {report.ignored_files} non-image "
            f"files and {len(report.skipped_files)} unusable ones{examples}\n"
            f"Expected:{self.MANUAL_DOWNLOAD_INSTRUCTIONS}")


@contextlib.contextmanager
def _loaded_objects_frozen() -> Iterator[None]:
  """The garbage collector's full passes skip every object loaded before (TensorFlow's): a
  build makes many passes as its records of the photos accumulate, and each would walk all of
  those objects again (docs/performance.md#the-main-process)."""
  if gc.get_freeze_count():  # Frozen by the caller: left as it is.
    yield
    return
  gc.freeze()
  try:
    yield
  finally:
    gc.unfreeze()


def _unhashed(path: epath.Path) -> str:
  raise RuntimeError(f"hashing {path} killed its worker twice")


def _scan_cache_dir(dl_manager: tfds.download.DownloadManager) -> epath.Path | None:
  """`<download dir>/scans`, unless that lies in the manual dir: user data,
  never written to (as with TFDS's test harness, where both are dummy_data)."""
  cache_dir = storage.absolute(os.path.join(os.fspath(dl_manager.download_dir), "scans"))
  manual_dir = manual_dir_or_none(dl_manager)
  if manual_dir is not None:
    manual = storage.absolute(manual_dir)
    if cache_dir == manual or cache_dir.startswith(manual.rstrip("/") + "/"):
      return None
  return epath.Path(cache_dir)


def _no_thumbnails(photos: list[records.Photo]) -> list[bytes | None]:
  return [None] * len(photos)


# Photos one task reads in location order through one reader, so an archive is opened once.
_THUMBNAILS_PER_TASK = 16
# Where a Beam build's writers leave each record file's SHA-256, in `_generation_dir`.
_HASHES = "sha256"


@dataclasses.dataclass(frozen=True)
class _Thumbnails:
  """The report page's thumbnails of a run of built photos, from their source bytes, framed as
  stored; None for a photo gone since or of which nothing decodes."""

  square: bool  # A sized config's centre square, of the photo's crop box.
  reader_type: type[generation.Reader]  # For a photo without a span: the builder's reader.

  def __call__(self, photos: list[records.Photo]) -> list[bytes | None]:
    from photo_datasets.catalog import report_page  # Its own module, as in `_write_report_page`.

    made: list[bytes | None] = []
    with self.reader_type() as reader:
      for photo in photos:
        data = generation.read_or_skip(reader, photo)
        made.append(None if isinstance(data, Skipped)  # Gone since.
                    else report_page.thumbnail(data, box=photo.box if self.square else None,
                                               square=self.square))
    return made


@dataclasses.dataclass
class _Build:
  """A build in progress, from `download_and_prepare` to its end: what TFDS's
  hooks (`_split_generators`, `_generate_examples`, ...) learn and share."""

  beam: bool = False  # Whether Beam runs the phases.
  executor: executors.Executor = executors.LocalExecutor(1)  # What runs the phases.
  started: float = dataclasses.field(default_factory=time.perf_counter)
  report: BuildReport = dataclasses.field(default_factory=BuildReport)
  # Given to generation.
  split_photos: dict[str, list[records.Photo]] = dataclasses.field(default_factory=dict)
  source_path: str | None = None
  manual_dir: str | None = None  # Where the source was found; None when it was downloaded.
  converted: converted.ConvertedImages | None = None  # What the scan converted already.
  needed_bytes: int = 0  # The disk check's estimate, for the out-of-space message.
  split_generators: dict[str, Any] | None = None  # What `_split_generators` made.
  # File name -> SHA-256 of the record files the workers wrote, for the fingerprint.
  record_sha256: dict[str, str] = dataclasses.field(default_factory=dict)
  # The report page's photos in runs, and the function that gives their thumbnails once the
  # records are generated (`Executor.beside_generation`).
  thumbnail_runs: list[list[records.Photo]] = dataclasses.field(default_factory=list)
  thumbnails: Callable[[], list[list[Any]]] = lambda: [[]]


@dataclasses.dataclass(frozen=True)
class _Built:
  """What a build leaves for its report page and summary (`PhotoBuilder._write_report_page`)."""

  report: BuildReport
  sizes: dict[str, int]  # Examples per split.
  split_of: dict[str, str]  # file_name -> split of every example.
  source_images: Callable[[set[str]], dict[str, bytes]]  # The page's photos, read from the source.
  seconds: float  # The scan and conversion (not in the metadata, which depends on the source only).

"""Whether a build runs on this machine's workers or on Apache Beam
(`--beam_pipeline_options`), and what follows from it: the executor of its
phases (`executor`), who writes the records (`tfds_writes`, `use_writers`),
each split's generation (`split_examples`), and what Beam's writers leave for
the build (`hashes_folder`, `read_beam_results`)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, cast

import tensorflow_datasets as tfds
from etils import epath

from photo_datasets.building import executors, generation, reproducible
from photo_datasets.building.build_state import Build
from photo_datasets.photos import records

# Where a Beam build's writers leave each record file's SHA-256, in the builder's
# `_generation_dir`.
_HASHES = "sha256"


def executor(beam: bool, workers: int, download_config: tfds.download.DownloadConfig,
             beam_work_dir: epath.Path
             ) -> tuple[executors.Executor, tfds.download.DownloadConfig]:
  """What runs the build's phases: `workers` processes of this machine, or with `beam` Beam's
  workers; and `download_config`, on Beam with its runner quietened."""
  chosen: executors.Executor = executors.LocalExecutor(workers)
  if beam:
    from photo_datasets.building import beam_generation, beam_logs  # Need apache_beam.
    runner = beam_logs.quiet(download_config.beam_options, download_config.beam_runner)
    download_config = dataclasses.replace(download_config, beam_runner=runner)
    chosen = beam_generation.BeamExecutor(runner, download_config.beam_options, beam_work_dir)
  return chosen, download_config


def use_writers(beam: bool) -> None:
  """TFDS's writers, where they write, write the records as the package's workers do."""
  reproducible.use_in_tfds()  # TFDS's writers too, where they write.
  if beam:  # And its Beam writer cuts shards where the local writer does.
    from photo_datasets.building import beam_writing  # Needs apache_beam.
    beam_writing.use_in_tfds()


def tfds_writes(beam: bool, write_in_workers: bool,
                download_config: tfds.download.DownloadConfig,
                info: tfds.core.DatasetInfo) -> bool:
  """Whether TFDS's writer writes the records, not the package's workers (`writing`)."""
  return bool(beam or not write_in_workers
              or download_config.max_examples_per_split is not None
              or download_config.nondeterministic_order or info.disable_shuffling)


def split_examples(build: Build, photos: list[records.Photo], make: generation.ExampleMaker,
                   reader_type: type[generation.Reader], generation_dir: epath.Path,
                   split: str, workers: int) -> Any:
  """A split's examples, made by Beam's workers (`beam_generation.ConvertSplit`) or by this
  machine's (`generation.LocalSplit`)."""
  if build.beam:
    from photo_datasets.building import beam_generation  # Needs apache_beam.
    beam_executor = cast(beam_generation.BeamExecutor, build.executor)
    return beam_generation.ConvertSplit(photos, make, reader_type, generation_dir, split,
                                        build.converted, beside=beam_executor.take_beside())
  return generation.LocalSplit(photos, make, reader_type(), build.report.skipped_files,
                               workers, build.converted)


def hashes_folder(beam: bool, generation_dir: epath.Path) -> str | None:
  """Where each record file's hash is left, on Beam, for `read_beam_results`; None locally."""
  return os.fspath(generation_dir / _HASHES) if beam else None


def read_beam_results(build: Build, generation_dir: epath.Path) -> None:
  """The record files' hashes and the photos skipped that Beam's workers left, into `build`."""
  from photo_datasets.building import beam_generation
  build.record_sha256.update(beam_generation.written_hashes(generation_dir / _HASHES))
  build.report.skipped_files += beam_generation.read_skips(generation_dir)

"""Generation as an Apache Beam transform, for `tfds build --beam_pipeline_options=...`.

Imported only when a build runs on Beam. Each Beam worker opens its reader in
`setup` and closes it in `teardown`, and converts batches of photos that are
consecutive in location order, so an archive is opened once per batch. The
per-photo step is `generation.convert_or_skip`, as in a local build. Skipped
photos leave the pipeline as a side output, written as JSON lines into a
folder the builder reads back (`read_skips`) once the pipeline has run.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterator, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, WorkerOptions
from etils import epath

from photo_datasets.building.generation import Example, ExampleMaker, Reader, convert_or_skip, read_or_skip
from photo_datasets.catalog.build_report import Skipped
from photo_datasets.photos.records import Photo

_BATCH = 64


class ConvertPhotos(beam.DoFn):
  """Reads and converts a batch of photos; skips go to the "skipped" output."""

  def __init__(self, make: ExampleMaker, reader_type: type[Reader]):
    super().__init__()
    self._make, self._reader_type = make, reader_type
    self._reader: Reader | None = None

  def setup(self) -> None:
    self._reader = self._reader_type().__enter__()

  def teardown(self) -> None:
    if self._reader is not None:
      self._reader.__exit__(None, None, None)

  def process(self, batch: list[Photo]) -> Iterator[tuple[str, Example] | beam.pvalue.TaggedOutput]:
    if self._reader is None:
      raise RuntimeError("ConvertPhotos.process ran before setup")
    for photo in batch:
      result = convert_or_skip(self._make, photo, read_or_skip(self._reader, photo))
      if isinstance(result, Skipped):
        yield beam.pvalue.TaggedOutput("skipped", json.dumps(dataclasses.asdict(result)))
      else:
        yield result


class ConvertSplit(beam.PTransform):
  """`(key, example)` pairs of one split, for TFDS's Beam writer."""

  def __init__(self, photos: Sequence[Photo], make: ExampleMaker, reader_type: type[Reader],
               skips_dir: epath.PathLike, split: str):
    super().__init__()
    self._batches = [list(photos[i:i + _BATCH]) for i in range(0, len(photos), _BATCH)]
    self._convert = ConvertPhotos(make, reader_type)
    self._skips_prefix = os.path.join(os.fspath(skips_dir), f"skipped-{split}")

  def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection:
    results = (begin
               | "Batches" >> beam.Create(self._batches)
               | "Convert" >> beam.ParDo(self._convert).with_outputs("skipped", main="examples"))
    _ = results.skipped | "WriteSkipped" >> beam.io.WriteToText(self._skips_prefix)
    return results.examples


def quiet_logs(options: PipelineOptions | None) -> None:
  """Beam's INFO lines off, as quiet as a local build, unless the pipeline's options ask for
  them: `default_sdk_harness_log_level` (WARNING where unset) sets the level of this process's
  Beam loggers, where the program has not set one, and of the SDK workers of the runners that
  pass the options on to them."""
  if options is not None:
    harness = options.view_as(WorkerOptions)
    if harness.default_sdk_harness_log_level is None:
      harness.default_sdk_harness_log_level = "WARNING"
    level = harness.default_sdk_harness_log_level
  else:
    level = "WARNING"
  beam_logger = logging.getLogger("apache_beam")
  if beam_logger.level == logging.NOTSET:
    beam_logger.setLevel(int(level) if str(level).isdecimal() else str(level).upper())


def read_skips(folder: epath.PathLike) -> list[Skipped]:
  """What every `ConvertSplit` writing into `folder` skipped; removes the folder."""
  folder = epath.Path(folder)
  skipped = []
  for path in sorted(folder.glob("skipped-*")):
    skipped += [Skipped(**json.loads(line)) for line in path.read_text().splitlines() if line]
  folder.rmtree(missing_ok=True)
  return skipped

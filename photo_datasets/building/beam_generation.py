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
import pickle
from collections.abc import Iterator, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, WorkerOptions
from etils import epath

from photo_datasets.building.generation import Example, ExampleMaker, Reader, convert_or_skip, read_or_skip
from photo_datasets.catalog.build_report import Skipped
from photo_datasets.photos.records import Photo

_BATCH = 64


class ConvertPhotos(beam.DoFn):
  """Reads and converts a batch of photos, read from the split's batch file by its place there
  (`_write_batches`); skips go to the "skipped" output."""

  def __init__(self, make: ExampleMaker, reader_type: type[Reader], batches_path: str):
    super().__init__()
    self._make, self._reader_type, self._batches_path = make, reader_type, batches_path
    self._reader: Reader | None = None

  def setup(self) -> None:
    self._reader = self._reader_type().__enter__()

  def teardown(self) -> None:
    if self._reader is not None:
      self._reader.__exit__(None, None, None)

  def process(self, place: tuple[int, int]
              ) -> Iterator[tuple[str, Example] | beam.pvalue.TaggedOutput]:
    if self._reader is None:
      raise RuntimeError("ConvertPhotos.process ran before setup")
    start, length = place
    with epath.Path(self._batches_path).open("rb") as f:
      f.seek(start)
      batch: list[Photo] = pickle.loads(f.read(length))
    for photo in batch:
      result = convert_or_skip(self._make, photo, read_or_skip(self._reader, photo))
      if isinstance(result, Skipped):
        yield beam.pvalue.TaggedOutput("skipped", json.dumps(dataclasses.asdict(result)))
      else:
        yield result


class ConvertSplit(beam.PTransform):
  """`(key, example)` pairs of one split, for TFDS's Beam writer. The photos wait in a file in
  `work_dir` (the build's folder, which the workers can read), not in the job graph: a runner
  refuses a graph past a few megabytes (Dataflow: 10 MB), and a photo's record is about 1 KB."""

  def __init__(self, photos: Sequence[Photo], make: ExampleMaker, reader_type: type[Reader],
               work_dir: epath.PathLike, split: str):
    super().__init__()
    batches_path = os.path.join(os.fspath(work_dir), f"photos-{split}.pickle")
    self._places = _write_batches(photos, batches_path)
    self._convert = ConvertPhotos(make, reader_type, batches_path)
    self._skips_prefix = os.path.join(os.fspath(work_dir), f"skipped-{split}")

  def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection:
    results = (begin
               | "Batches" >> beam.Create(self._places)
               | "Convert" >> beam.ParDo(self._convert).with_outputs("skipped", main="examples"))
    _ = results.skipped | "WriteSkipped" >> beam.io.WriteToText(self._skips_prefix)
    return results.examples


def _write_batches(photos: Sequence[Photo], path: str) -> list[tuple[int, int]]:
  """Writes `photos` to `path` in pickled batches of `_BATCH`; each batch's (start, length)."""
  places = []
  epath.Path(path).parent.mkdir(parents=True, exist_ok=True)
  with epath.Path(path).open("wb") as f:
    start = 0
    for i in range(0, len(photos), _BATCH):
      data = pickle.dumps(list(photos[i:i + _BATCH]), protocol=pickle.HIGHEST_PROTOCOL)
      f.write(data)
      places.append((start, len(data)))
      start += len(data)
  return places


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
  """What every `ConvertSplit` working in `folder` skipped; removes the folder, its photos'
  batch files too."""
  folder = epath.Path(folder)
  skipped = []
  for path in sorted(folder.glob("skipped-*")):
    skipped += [Skipped(**json.loads(line)) for line in path.read_text().splitlines() if line]
  folder.rmtree(missing_ok=True)
  return skipped

"""A build's phases on Apache Beam, for `tfds build --beam_pipeline_options=...`.

Imported only when a build runs on Beam. `BeamExecutor` runs a build's phases
(`executors`) as two pipelines of their own: the scan with its groups (the
near copies, each class's series), and once the records are written, their
hashes and the report page's thumbnails. `ConvertSplit` is the generation, in
TFDS's pipeline. Neither puts
photos in the job graph: they wait in files in the build's folder, which the
workers read, and the graph holds each batch's place there (a runner refuses a
graph past a few megabytes; Dataflow: 10 MB).

Each Beam worker opens its reader in `setup` and closes it in `teardown`, and
converts batches of photos that are consecutive in location order, so an
archive is opened once per batch. The per-photo step is
`generation.convert_or_skip`, as in a local build; a photo the scan converted
already is read back, not converted again. Each bundle writes what comes back
to the builder (a phase's results, the skipped photos) into a file of its own
in the build's folder (`_BundleLines`), read once the pipeline has run. A
bundle the runner ran again wrote a file per attempt, which may differ (a read
that failed once is a skip): the bundle's output names its file, and only the
files named by the outputs the runner committed are read (`_Committed`).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import apache_beam as beam
from apache_beam.options.pipeline_options import DebugOptions, PipelineOptions
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue
from etils import epath

from photo_datasets import tfds_private
from photo_datasets.building import parallel
from photo_datasets.building.converted import ConvertedImages
from photo_datasets.building.executors import Grouping, Phase
from photo_datasets.building.generation import (
  Converted,
  Example,
  ExampleMaker,
  Reader,
  convert_or_skip,
  read_or_skip,
)
from photo_datasets.building.worker_files import Written
from photo_datasets.catalog.build_report import Skipped
from photo_datasets.photos.records import Photo

_BATCH = 64
Item = TypeVar("Item")
Result = TypeVar("Result")
Value = TypeVar("Value")
GroupResult = TypeVar("GroupResult")


WRITTEN = "written"  # The output of a `_BundleLines`'s bundle: the name of the file it wrote.


class _BundleLines(beam.DoFn):
  """A DoFn that writes lines of text, a file of its own per bundle attempt (`<prefix>-<unique>`
  in `folder`) when the bundle ends, and outputs its name (tagged `WRITTEN`), which
  `_Committed` keeps for the attempt the runner commits. Lighter than a sink (`WriteToText`),
  whose stages and finalisation a job graph and its workers carry for each."""

  def __init__(self, folder: str, prefix: str):
    super().__init__()
    self._folder, self._prefix = folder, prefix
    self._lines: list[str] = []

  def start_bundle(self) -> None:
    self._lines = []

  def finish_bundle(self) -> Iterator[beam.pvalue.TaggedOutput]:
    if self._lines:
      name = f"{self._prefix}-{uuid.uuid4().hex}"
      written = epath.Path(self._folder, f".{name}.incomplete")
      written.write_text("".join(f"{line}\n" for line in self._lines))
      written.rename(epath.Path(self._folder, name))  # Whole, or not there.
      self._lines = []
      yield beam.pvalue.TaggedOutput(WRITTEN, WindowedValue(name, MIN_TIMESTAMP, [GlobalWindow()]))


class _Committed(beam.PTransform):
  """The names of the files that the committed attempts of `_BundleLines`'s bundles wrote,
  written as one file `committed-<prefix>-<unique>` in `folder` (a retry of this step writes
  the same names again); none where no bundle wrote one. One `GroupByKey`: lighter to build
  and run than a global combine (`ToList`), whose default for an empty input takes stages of
  its own."""

  def __init__(self, folder: str, prefix: str):
    super().__init__()
    self._folder, self._prefix = folder, prefix

  def expand(self, names: beam.PCollection) -> beam.PCollection:
    return (names
            | "Keyed" >> beam.WithKeys(0)
            | "AllNames" >> beam.GroupByKey()
            | "Write" >> beam.Map(_write_committed, self._folder, self._prefix))


def _write_committed(keyed: tuple[int, Iterable[str]], folder: str, prefix: str) -> None:
  names = keyed[1]
  name = f"committed-{prefix}-{uuid.uuid4().hex}"
  written = epath.Path(folder, f".{name}.incomplete")
  written.write_text("".join(f"{line}\n" for line in sorted(names)))
  written.rename(epath.Path(folder, name))


def _committed_files(folder: epath.Path, prefix: str) -> list[epath.Path]:
  """The files of `prefix` (`results`, `skipped`, ...) that committed attempts wrote in `folder`
  (a phase's reader counts its batches and keys: one missing stops the build)."""
  lists = sorted(folder.glob(f"committed-{prefix}-*")) if folder.exists() else []
  names = {name for path in lists for name in path.read_text().split()}
  return [folder / name for name in sorted(names)]


class ConvertPhotos(_BundleLines):
  """Reads and converts a batch of photos, read from the split's batch file by its place there
  (`_write_batches`); the skips go into files `skipped-<split>-*` in `folder`."""

  def __init__(self, make: ExampleMaker, reader_type: type[Reader], batches_path: str,
               folder: str, split: str):
    super().__init__(folder, f"skipped-{split}")
    self._make, self._reader_type, self._batches_path = make, reader_type, batches_path
    self._reader: Reader | None = None

  def setup(self) -> None:
    self._reader = self._reader_type().__enter__()

  def teardown(self) -> None:
    if self._reader is not None:
      self._reader.__exit__(None, None, None)

  def process(self, place: tuple[int, int]) -> Iterator[tuple[str, Example]]:
    if self._reader is None:
      raise RuntimeError("ConvertPhotos.process ran before setup")
    start, length = place
    batch: list[tuple[Photo, Written | None]] = _read_batch(self._batches_path, start, length)
    for photo, image in batch:
      source = Converted(image) if image is not None else read_or_skip(self._reader, photo)
      result = convert_or_skip(self._make, photo, source)
      if isinstance(result, Skipped):
        self._lines.append(json.dumps(dataclasses.asdict(result)))
      else:
        yield result


class ConvertSplit(beam.PTransform):
  """`(key, example)` pairs of one split, for TFDS's Beam writer.

  The photos wait in a file in `work_dir` (the build's folder, which the workers can read),
  not in the job graph: a runner refuses a graph past a few megabytes (Dataflow: 10 MB), and
  the photos' records would grow it with the corpus (docs/building.md#apache-beam). A photo in
  `converted` (the scan's conversion) is read back from there. Each worker converts batches of
  photos that are consecutive in location order (`generation.convert_or_skip`); the photos it
  skips go into files `skipped-<split>-*` in `work_dir`, which `read_skips` reads once the
  pipeline has run.

  Args:
    photos: the split's photos, in location order.
    make: turns a photo and its bytes into an example of the config.
    reader_type: the builder's reader; each worker makes one and opens it in `setup`.
    work_dir: a folder in the build's folder, which every worker can read and write.
    split: the split's name, which names its files in `work_dir`.
    converted: the images the scan converted for the config, or None.
    beside: phases (`BeamExecutor.take_beside`) to run in the same pipeline.
  """

  def __init__(self, photos: Sequence[Photo], make: ExampleMaker, reader_type: type[Reader],
               work_dir: epath.PathLike, split: str, converted: ConvertedImages | None = None,
               beside: Sequence[RunPhase] = ()):
    super().__init__()
    self._beside = list(beside)
    batches_path = os.path.join(os.fspath(work_dir), f"photos-{split}.pickle")
    sources = [(photo, converted.take(photo, make.image_size) if converted is not None else None)
               for photo in photos]
    self._places = _write_batches(sources, batches_path)
    self._work_dir = os.fspath(work_dir)
    self._convert = ConvertPhotos(make, reader_type, batches_path, self._work_dir, split)

  def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection:
    converted = (begin
                 | "Batches" >> beam.Create(self._places)
                 | "Convert" >> beam.ParDo(self._convert).with_outputs(WRITTEN, main="examples"))
    _ = converted[WRITTEN] | "Skips" >> _Committed(self._work_dir, "skipped")
    for phase in self._beside:
      if phase.places:  # As `BeamExecutor._run`: a phase of no items adds no stage.
        _ = begin | phase
    return converted.examples


def _write_batches(items: Iterable[Any], path: str, batch: int = _BATCH) -> list[tuple[int, int]]:
  """Writes `items` to `path` in pickled batches of `batch`; each batch's (start, length)."""
  places = []
  epath.Path(path).parent.mkdir(parents=True, exist_ok=True)
  with epath.Path(path).open("wb") as f:
    start = 0
    for part in _batched(items, batch):
      data = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
      f.write(data)
      places.append((start, len(data)))
      start += len(data)
  return places


def _batched(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
  part: list[Item] = []
  for item in items:
    part.append(item)
    if len(part) == size:
      yield part
      part = []
  if part:
    yield part


def _read_batch(path: str, start: int, length: int) -> Any:
  with epath.Path(path).open("rb") as f:
    f.seek(start)
    return pickle.loads(f.read(length))


class _RunBatches(_BundleLines):
  """A phase's function over a batch of its items, both read from the phase's folder; a line
  per batch into the folder's files `results-*`: its index and results, pickled. With a
  grouping, the results it keeps and their keys, and their (key, value) pairs as output."""

  def __init__(self, folder: str):
    super().__init__(folder, "results")
    self._task: Callable[[Any], Any] | None = None
    self._on_crash: Callable[[Any], Any] | None = None
    self._grouping: Grouping[Any, Any, Any] | None = None

  def setup(self) -> None:
    self._task, self._on_crash = pickle.loads(
        epath.Path(self._folder, "task.pickle").read_bytes())
    if (grouping := epath.Path(self._folder, "grouping.pickle")).exists():
      self._grouping = pickle.loads(grouping.read_bytes())

  def process(self, place: tuple[int, int, int]) -> Iterator[tuple[str, Any]]:
    if self._task is None or self._on_crash is None:
      raise RuntimeError("_RunBatches.process ran before setup")
    index, start, length = place
    batch = _read_batch(os.path.join(self._folder, "items.pickle"), start, length)
    results = _run_or_isolate(self._folder, f"batch-{index}", self._task, batch, self._on_crash)
    if self._grouping is None:
      self._lines.append(_result_line(index, (results, [])))
      return
    kept, keys = [], set()
    for result in results:
      result, pairs = self._grouping.split(result)
      kept.append(result)
      for key, value in pairs:
        keys.add(key)
        yield key, value
    self._lines.append(_result_line(index, (kept, sorted(keys))))


class _RunGroups(_BundleLines):
  """A grouping's task over one key and its values; a line into the folder's files `groups-*`:
  the key and the result."""

  def __init__(self, folder: str):
    super().__init__(folder, "groups")
    self._grouping: Grouping[Any, Any, Any] | None = None

  def setup(self) -> None:
    self._grouping = pickle.loads(epath.Path(self._folder, "grouping.pickle").read_bytes())

  def process(self, group: tuple[str, Iterable[Any]]) -> Iterator[None]:
    if self._grouping is None:
      raise RuntimeError("_RunGroups.process ran before setup")
    key, values = group
    name = f"group-{hashlib.sha256(key.encode()).hexdigest()[:32]}"
    (result,) = _run_or_isolate(self._folder, name, self._grouping.task, [(key, list(values))],
                                self._grouping.on_crash)
    self._lines.append(_result_line(key, result))
    yield from ()  # Its output is the line; Beam types a DoFn's output by what process returns.


@dataclasses.dataclass
class BeamExecutor:
  """The phases of a build (`executors`) as Beam pipelines, on the build's runner and options.

  Each call runs its phases as one pipeline: a phase's function and its items wait in pickled
  files in a folder of `work_dir` of their own, the job graph holds each batch's place there,
  and the workers write each batch's results (and each group's) into files beside them, read
  back once the pipeline has run. The runner retries a batch whose worker failed (`on_crash`
  is not used); the results are kept by batch, so a batch run twice counts once, and a batch
  or a group missing stops the build with a `RuntimeError` that names the phase.

  Args:
    runner: the build's Beam runner (`DownloadConfig.beam_runner`), or None for the one the
      options name.
    options: the build's pipeline options (`tfds build --beam_pipeline_options=...`).
    work_dir: a folder in the build's folder, which every worker can read and write; each
      phase's folder in it is removed once its pipeline has run, and `work_dir` itself once
      empty.
  """

  runner: Any
  options: PipelineOptions | None
  work_dir: epath.PathLike  # In the build's folder, which the workers read and write.
  _phases: int = 0
  # The phases `beside_generation` gave, until a `ConvertSplit` takes them into TFDS's pipeline.
  _beside: list[RunPhase] = dataclasses.field(default_factory=list)

  on_this_machine = False  # Whatever the runner: a cluster's workers share the build's folder only.
  known_workers = 1  # The runner decides how many.

  def map(self, task: Callable[[Item], Result], items: Iterable[Item], *,
          on_crash: Callable[[Item], Result], chunk: int) -> Iterator[Result]:
    return iter(self.run_together([Phase(task, items, on_crash, chunk)])[0])

  def run_together(self, phases: Sequence[Phase[Any, Any]]) -> list[list[Any]]:
    return self._run([self.phase(phase) for phase in phases])[0]

  def map_and_group(self, phase: Phase[Item, Result], grouping: Grouping[Result, Value, GroupResult]
                    ) -> tuple[list[Result], dict[str, GroupResult]]:
    (results,), groups = self._run([self.phase(phase, grouping)])
    return results, groups[0]

  def beside_generation(self, phases: Sequence[Phase[Any, Any]]
                        ) -> Callable[[], list[list[Any]]]:
    transforms = [self.phase(phase) for phase in phases]
    self._beside += transforms
    return lambda: self._results(transforms)[0]

  def take_beside(self) -> list[RunPhase]:
    """The phases waiting to run beside generation, for the `ConvertSplit` that adds them."""
    taken, self._beside = self._beside, []
    return taken

  def _run(self, transforms: list[RunPhase]) -> tuple[list[list[Any]], list[dict[str, Any]]]:
    """Runs the phases in one pipeline (`on_crash` unused: the runner retries a failed batch,
    then fails the pipeline); their results, and their groupings' by key."""
    try:
      if any(transform.places for transform in transforms):
        with beam.Pipeline(runner=self.runner, options=self.options) as pipeline:
          for transform in transforms:
            if transform.places:
              _ = pipeline | transform
        _submission_environment_staged(self.options)
    except BaseException:
      self._remove(transforms)
      raise
    return self._results(transforms)

  def _results(self, transforms: list[RunPhase]
                ) -> tuple[list[list[Any]], list[dict[str, Any]]]:
    """The results of the phases whose pipeline has run, and their groupings' by key; their
    folders removed."""
    try:
      results, groups = [], []
      for transform in transforms:
        phase_results, keys = _gathered(transform.folder, len(transform.places),
                                        transform.phase_name)
        results.append(phase_results)
        groups.append(_gathered_groups(transform, keys) if transform.grouping else {})
      return results, groups
    finally:
      self._remove(transforms)

  def _remove(self, transforms: list[RunPhase]) -> None:
    for transform in transforms:
      transform.folder.rmtree(missing_ok=True)
    # Empty once its last phase has run; not yet while another phase's folder is there
    # (etils raises ValueError for a bucket's folder that is not empty).
    with contextlib.suppress(OSError, ValueError):
      epath.Path(self.work_dir).rmdir()

  def phase(self, phase: Phase[Item, Result],
            grouping: Grouping[Result, Any, Any] | None = None) -> RunPhase:
    """The transform that maps the phase's task over its items, `chunk` a batch (and groups
    the results' values by `grouping`), once all are written into a folder of the work dir
    of their own."""
    self._phases += 1
    folder = epath.Path(self.work_dir) / f"phase-{self._phases}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.pickle").write_bytes(
        pickle.dumps((phase.task, phase.on_crash), protocol=pickle.HIGHEST_PROTOCOL))
    if grouping is not None:
      (folder / "grouping.pickle").write_bytes(
          pickle.dumps(grouping, protocol=pickle.HIGHEST_PROTOCOL))
    places = _write_batches(phase.items, os.fspath(folder / "items.pickle"), phase.chunk)
    task = phase.task
    name = getattr(task, "__qualname__", type(task).__qualname__)
    return RunPhase(f"{name}-{self._phases}", folder, places, grouping)


class RunPhase(beam.PTransform):
  """A phase's batches run on the workers, each batch's results written as a line of text
  into the phase's folder; with a grouping, the results' values grouped by key and each
  group's result written beside. The graph holds the batches' places, not the items."""

  def __init__(self, name: str, folder: epath.Path, places: list[tuple[int, int]],
               grouping: Grouping[Any, Any, Any] | None = None):
    super().__init__(name)
    self.phase_name, self.folder, self.places, self.grouping = name, folder, places, grouping

  def expand(self, pipeline: beam.pvalue.PBegin) -> beam.PCollection:
    places = [(index, start, length) for index, (start, length) in enumerate(self.places)]
    folder = os.fspath(self.folder)
    run = (pipeline
           | "Batches" >> beam.Create(places)
           | "Run" >> beam.ParDo(_RunBatches(folder)).with_outputs(WRITTEN, main="pairs"))
    done = run[WRITTEN] | "Results" >> _Committed(folder, "results")
    if self.grouping is None:
      return done
    grouped = (run.pairs
               | "GroupByKey" >> beam.GroupByKey()
               | "RunGroups" >> beam.ParDo(_RunGroups(folder)).with_outputs(WRITTEN))
    return grouped[WRITTEN] | "Groups" >> _Committed(folder, "groups")


def _run_or_isolate(folder: str, name: str, task: Callable[[Item], Result], items: list[Item],
                    on_crash: Callable[[Item], Result]) -> list[Result]:
  """`task` over `items` (a batch, or a group), here; where an earlier attempt of `name`
  began (its worker died and the runner retries it, or the runner ran it again), each item in
  a process of its own, and `on_crash`'s result for one that kills it twice, as a local build
  does. The processes start by forkserver: this one runs the harness's gRPC threads, which a
  fork would copy mid-call."""
  began = epath.Path(folder, f".began-{name}")
  if not began.exists():
    began.touch()
    return [task(item) for item in items]
  return list(parallel.ordered_map(task, items, workers=2, on_crash=on_crash, chunk=1,
                                   start_method="forkserver"))


def _submission_environment_staged(options: PipelineOptions | None) -> None:
  """The build's later pipelines, TFDS's among them, run in the environment its first one
  staged the list of (Beam runs `pip freeze` for each pipeline a runner stages files for)."""
  if options is not None:
    options.view_as(DebugOptions).add_experiment("disable_logging_submission_environment")


def _result_line(index: int | str, results: Any) -> str:
  """A batch's results (or a group's) as `_RunBatches` (`_RunGroups`) writes them: one line."""
  return base64.b64encode(pickle.dumps((index, results), protocol=pickle.HIGHEST_PROTOCOL)).decode()


def _gathered_groups(phase: RunPhase, keys: set[str]) -> dict[str, Any]:
  """The results of a phase's grouping by key, from the lines its pipeline wrote in the
  phase's folder; a group written twice (its bundle retried) is kept once, one missing stops
  the build."""
  by_key = dict(_lines(phase.folder, "groups"))
  if by_key.keys() != keys:
    raise RuntimeError(f"{phase.phase_name} on Beam grouped {len(by_key.keys() & keys)} of "
                       f"{len(keys)} keys")
  return {key: by_key[key] for key in sorted(by_key)}


def _gathered(folder: epath.Path, batches: int, name: str) -> tuple[list[Any], set[str]]:
  """The results of a phase's `batches` batches, in order, from the lines its pipeline wrote in
  `folder`, and the keys of their grouping; a batch written twice (its bundle retried) is kept
  once."""
  by_batch = dict(_lines(folder, "results"))
  if len(by_batch) != batches:
    raise RuntimeError(f"{name} on Beam returned {len(by_batch)} of {batches} batches")
  results, keys = [], set()
  for index in range(batches):
    batch_results, batch_keys = by_batch[index]
    results += batch_results
    keys.update(batch_keys)
  return results, keys


def _lines(folder: epath.Path, prefix: str) -> Iterator[tuple[Any, Any]]:
  """The (index or key, results) of the lines `_result_line` wrote in the committed files of
  `prefix`."""
  for path in _committed_files(folder, prefix):
    for line in path.read_text().splitlines():
      yield pickle.loads(base64.b64decode(line))


def written_hashes(folder: epath.PathLike) -> dict[str, str]:
  """Record file name -> SHA-256, from the files that `tfrecord_files.ExampleWriter` wrote in
  `folder`, each named as TFDS's Beam writer named the file before it renamed it. A file that
  two attempts (a retried bundle) hashed differently is left out, and hashed again."""
  found: dict[str, set[str]] = {}
  if epath.Path(folder).exists():
    for path in epath.Path(folder).iterdir():
      found.setdefault(tfds_private.final_file_name(path.name), set()).add(path.read_text())
  return {name: next(iter(hashes)) for name, hashes in sorted(found.items()) if len(hashes) == 1}


def read_skips(folder: epath.PathLike) -> list[Skipped]:
  """What every `ConvertSplit` working in `folder` skipped; removes the folder, its photos'
  batch files too."""
  folder = epath.Path(folder)
  skipped: dict[Skipped, None] = {}
  for path in _committed_files(folder, "skipped"):
    skipped.update((Skipped(**json.loads(line)), None)
                   for line in path.read_text().splitlines() if line)
  folder.rmtree(missing_ok=True)
  return sorted(skipped, key=lambda s: (s.file_name, s.reason))

"""With Beam options the builders run as a Beam pipeline and give the same dataset."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import multiprocessing
import os
import pathlib
import re
import signal
import uuid
from typing import Any

import apache_beam as beam
import pytest
from etils import epath

import korean_food
from photo_datasets.photos import images
from photo_datasets.testing import build, read_examples

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"


def _examples(builder) -> dict[str, tuple]:
  """file_name -> (split, label, stored image bytes)."""
  return {name: (ex["split"], ex["label"], ex["image"])
          for name, ex in read_examples(builder).items()}


def _thumbnails(builder) -> list[str]:
  page = (pathlib.Path(builder.data_dir) / "report.html").read_text()
  return sorted(re.findall(r"data:image/jpeg;base64,[A-Za-z0-9+/=]+", page))


def _direct_runner() -> beam.options.pipeline_options.PipelineOptions:
  return beam.options.pipeline_options.PipelineOptions(["--runner=DirectRunner"])


def test_beam_build_equals_the_single_process_build(tmp_path, monkeypatch):
  from photo_datasets.building import beam_writing

  built, beam_writes = {}, {}
  splits_written: list[object] = []
  real_write = beam_writing.RankCutBeamWriter.write_from_pcollection
  monkeypatch.setattr(beam_writing.RankCutBeamWriter, "write_from_pcollection",
                      lambda self, examples: splits_written.append(self) or real_write(self,
                                                                                       examples))
  for mode, options in [("single", None), ("beam", _direct_runner())]:
    built[mode] = build("korean_food/64", tmp_path / mode, SAMPLE, beam_options=options)
    beam_writes[mode] = len(splits_written)
    splits_written.clear()

  assert beam_writes == {"single": 0, "beam": 3}  # One per split.
  single, with_beam = _examples(built["single"]), _examples(built["beam"])
  assert len(single) == 40
  assert with_beam.keys() == single.keys()
  for name, (split, label, image) in single.items():
    assert with_beam[name][:2] == (split, label), name
    assert with_beam[name][2] == image, name
  assert (dict(built["beam"].info.metadata)["skipped_files"]
          == dict(built["single"].info.metadata)["skipped_files"])
  # The report page's thumbnails, made on the workers, are the local build's.
  assert _thumbnails(built["beam"]) == _thumbnails(built["single"]) != []
  # Each record file's SHA-256, hashed by its writer as it wrote it, is its bytes'.
  for mode in ("beam", "single"):
    folder = pathlib.Path(built[mode].data_dir)
    croissant = json.loads((folder / "croissant.json").read_text())
    described = {file["contentUrl"]: file["sha256"] for file in croissant["distribution"]
                 if "sha256" in file}
    assert described == {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
                         for path in folder.glob("*.tfrecord-*")}, mode


def test_a_conversion_failure_is_reported_as_in_a_local_build(tmp_path, monkeypatch):
  victim = "구이/갈비구이/Img_000_0001.jpg"
  real_encode = images.encode_image
  victim_bytes = []

  def fail_on_victim(data, check, **kwargs):
    if data in victim_bytes:
      raise OSError("simulated decoder failure")
    return real_encode(data, check, **kwargs)

  for file, read in korean_food.corpus.walk(SAMPLE):
    if "/".join(file.parts[-3:]) == victim:
      victim_bytes.append(read())
  assert victim_bytes
  monkeypatch.setattr(images, "encode_image", fail_on_victim)
  local = build("korean_food/64", tmp_path / "local", SAMPLE)
  beam_build = build("korean_food/64", tmp_path / "beam", SAMPLE, beam_options=_direct_runner())

  expected = {"file_name": victim, "reason": "conversion failed: simulated decoder failure"}
  assert expected in local.info.metadata["skipped_files"]
  assert dict(beam_build.info.metadata) == dict(local.info.metadata)
  assert _examples(beam_build).keys() == _examples(local).keys()
  assert victim not in _examples(beam_build)
  assert not list(pathlib.Path(beam_build.data_dir).glob("*skipped*"))  # Nothing left over.


def test_a_split_of_several_files_is_cut_as_in_a_local_build(tmp_path, monkeypatch):
  """TFDS's `BeamWriter` cuts a split's records, in their keys' hash order, by hash value; its
  `Writer`, which the local build matches, by rank. A Beam build's files are the local
  build's, with a few photos a file (the defaults give the sample's splits one file each)."""
  from photo_datasets.building import sharding

  monkeypatch.setattr(sharding, "EXAMPLES_PER_FILE", 2)
  local = build("korean_food/64", tmp_path / "local", SAMPLE)
  beam_build = build("korean_food/64", tmp_path / "beam", SAMPLE, beam_options=_fn_api_runner())

  def splits(builder) -> dict[str, tuple[list[int], int]]:
    return {name: (split.shard_lengths, split.num_bytes)
            for name, split in builder.info.splits.items()}

  def record_files(builder) -> dict[str, bytes]:
    return {path.name: path.read_bytes()
            for path in pathlib.Path(builder.data_dir).glob("*.tfrecord-*")}

  assert [len(lengths) for lengths, _ in splits(local).values()] == [16, 2, 2]
  assert splits(beam_build) == splits(local)
  assert record_files(beam_build) == record_files(local)


def test_shard_ends_cut_sorted_keys_as_tfds_writer_does():
  import random

  from photo_datasets import tfds_private
  from photo_datasets.building import beam_writing

  rng = random.Random(0)
  for count, num_shards in [(1, 1), (2, 2), (7, 3), (40, 7), (1_000, 64), (999, 998)]:
    keys = list({rng.getrandbits(128) for _ in range(count)})  # TFDS's hashes are 128-bit.
    assert len(keys) == count
    ends = beam_writing.shard_ends(keys, num_shards)
    cut = [0, *tfds_private.get_shard_boundaries(count, num_shards)]
    by_rank = [sorted(keys)[start:end] for start, end in zip(cut, cut[1:], strict=False)]
    by_shard_of: list[list[int]] = [[] for _ in range(num_shards)]
    for key in sorted(keys):
      by_shard_of[beam_writing.shard_of(key, ends)].append(key)
    assert by_shard_of == by_rank and all(by_rank), (count, num_shards)
  with pytest.raises(AssertionError, match="< number_of_shards"):  # As the local writer.
    beam_writing.shard_ends([1, 2], 3)


def test_tfds_makes_its_beam_writer_as_beam_writing_reads_it():
  """`beam_writing.use_in_tfds` works because TFDS's split builder looks `BeamWriter` up in
  its writer module when it writes a split; the steps `tfds_private.BeamWriter` names take
  what they took when read."""
  import inspect

  from tensorflow_datasets.core import split_builder
  from tensorflow_datasets.core import writer as tfds_writer

  from photo_datasets import tfds_private

  assert "writer_lib.BeamWriter(" in inspect.getsource(
      split_builder.SplitBuilder._build_from_pcollection)
  tfds_beam_writer = tfds_private.BeamWriter.__bases__[0]  # A Beam build replaces the name.
  assert (tfds_beam_writer.__module__, tfds_beam_writer.__name__) == (tfds_writer.__name__,
                                                                     "BeamWriter")
  steps = {"_serialize_example": ["self", "key_example"],
           "_check_num_examples": ["self", "num_examples"],
           "_number_of_shards": ["self", "num_examples", "total_size"],
           "_write_final_shard": ["self", "shardid_examples", "non_empty_shard_ids"],
           "_store_split_info": ["self", "shard_infos"]}
  for name, params in steps.items():
    method = getattr(tfds_beam_writer, name)
    assert list(inspect.signature(method).parameters) == params, name
  assert "non_empty_shard_ids.index(" in inspect.getsource(tfds_beam_writer._write_final_shard)


def _beam_info(records: list[logging.LogRecord]) -> list[str]:
  return [r.getMessage() for r in records
          if r.name.startswith("apache_beam") and r.levelno < logging.WARNING]


def test_beam_logs_are_as_quiet_as_a_local_build_unless_the_options_ask(tmp_path, caplog):
  beam_logger = logging.getLogger("apache_beam")
  caplog.set_level(logging.INFO)  # As TFDS's `tfds build` sets it.
  try:
    beam_logger.setLevel(logging.NOTSET)  # As in a fresh process.
    build("korean_food/64", tmp_path / "quiet", SAMPLE, beam_options=_direct_runner())
    assert not _beam_info(caplog.records)
    assert beam_logger.level == logging.WARNING
    beam_logger.setLevel(logging.NOTSET)
    caplog.clear()
    asked = beam.options.pipeline_options.PipelineOptions(
        ["--runner=DirectRunner", "--default_sdk_harness_log_level=INFO"])
    build("korean_food/64", tmp_path / "asked", SAMPLE, beam_options=asked)
    assert _beam_info(caplog.records)
  finally:
    beam_logger.setLevel(logging.NOTSET)


def test_fn_api_runner_worker_processes_start_without_beams_import_warning(capfd):
  """Beam's import logs `apitools not found` where `google-apitools` is missing (as here), and
  the root handler Python then gives a worker prints its start-up line too."""
  from apache_beam.testing import util as testing_util

  from photo_datasets.building import beam_logs

  options = _fn_api_runner("--direct_running_mode=multi_processing", "--direct_num_workers=2")
  runner = beam_logs.quiet(options, None)
  with beam.Pipeline(runner=runner, options=options) as pipeline:
    # A lambda: cloudpickle sends it by value (a worker cannot import the tests).
    mains = pipeline | beam.Create([1, 2]) | beam.Map(
        lambda _: __import__("sys").modules["__main__"].__spec__.name)
    testing_util.assert_that(
        mains, testing_util.equal_to(["photo_datasets.building.beam_worker"] * 2))
  printed = capfd.readouterr().err
  assert "apitools not found" not in printed and "Logging handler created" not in printed


def test_the_job_graph_does_not_grow_with_the_corpus(tmp_path):
  """The photos wait in a file in the build's folder, not in the graph: a runner refuses a large
  job request (Dataflow: 10 MB), and a photo's record is about 1 KB."""
  import dataclasses

  from etils import epath

  from photo_datasets.building import beam_generation, scan_cache

  builder = build("korean_food/64", tmp_path / "data", SAMPLE)
  (saved,) = (tmp_path / "data" / "downloads" / "scans").glob("korean_food-*.json")
  scanned, _ = scan_cache.load_scan(epath.Path(saved))
  corpus = [dataclasses.replace(scanned[i % len(scanned)],
                                file_name=f"구이/갈비구이/Img_000_{i:06d}.jpg",
                                digest=hashlib.sha256(str(i).encode()).hexdigest())
            for i in range(150_513)]
  sizes = {}
  for count in (1_000, len(corpus)):
    pipeline = beam.Pipeline()
    _ = pipeline | beam_generation.ConvertSplit(corpus[:count], builder._example_maker(SAMPLE),
                                                builder.READER, tmp_path / f"work-{count}", "train")
    sizes[count] = len(pipeline.to_runner_api().SerializeToString())
  assert sizes[len(corpus)] < 5_000_000, sizes
  assert sizes[len(corpus)] - sizes[1_000] < 200_000, sizes  # About 20 bytes a batch of 64 photos.


def test_every_phase_runs_on_beam_and_each_photo_is_decoded_once(tmp_path, monkeypatch):
  from photo_datasets.building import beam_generation

  pipelines: list[list[str]] = []  # The executor's, by their phases' tasks (and groupings').
  real_run = beam_generation.BeamExecutor._run

  def recorded(self, transforms):
    pipelines.append([t.phase_name.split("-")[0]
                      + (f"/{type(t.grouping.task).__name__}" if t.grouping else "")
                      for t in transforms])
    return real_run(self, transforms)

  monkeypatch.setattr(beam_generation.BeamExecutor, "_run", recorded)
  opened: list[int] = []
  real_open = images._open
  monkeypatch.setattr(images, "_open", lambda data: opened.append(len(data)) or real_open(data))
  scanned: list[int] = []
  real_inspect = images.decode_and_inspect
  monkeypatch.setattr(images, "decode_and_inspect",
                      lambda data: scanned.append(len(data)) or real_inspect(data))
  beam_build = build("korean_food/224", tmp_path / "beam", SAMPLE, beam_options=_direct_runner())

  # The scan with the near copies and each class's series: the executor's one pipeline. The
  # report page's thumbnails run in TFDS's, and its writers hash the record files they write.
  assert pipelines == [["_Inspect/_ScanGroups"]]
  photos = sum(split.num_examples for split in beam_build.info.splits.values())
  # The scan opens every image file once and converts it from that decode; generation opens none.
  assert len(scanned) > photos > 30 and opened == scanned
  assert not list(pathlib.Path(beam_build.data_dir).glob("beam-*"))  # Nothing left over.


def test_a_batch_a_runner_ran_twice_counts_once_and_a_lost_one_stops_the_build(tmp_path):
  from photo_datasets.building import beam_generation

  executor = beam_generation.BeamExecutor(None, _direct_runner(), tmp_path / "work")
  mapped = executor.map(len, (["a"] * i for i in range(200)), on_crash=len, chunk=64)
  assert list(mapped) == list(range(200))
  folder = tmp_path / "phase"
  folder.mkdir()
  line = beam_generation._result_line(0, ([1, 2], ["a"]))
  (folder / "results-00000-of-00002").write_text(
      f"{line}\n{beam_generation._result_line(1, ([3], ['b']))}\n")
  (folder / "committed-results-0").write_text("results-00000-of-00002\n")
  assert beam_generation._gathered(epath.Path(folder), 2, "phase") == ([1, 2, 3], {"a", "b"})
  with pytest.raises(RuntimeError, match="returned 2 of 3 batches"):
    beam_generation._gathered(epath.Path(folder), 3, "phase")


@dataclasses.dataclass(frozen=True)
class _AnswerByAttempt:
  """An item (or a group) and which run of it this is, counted in files of `folder`, which
  every process sees: the answer differs from one attempt to the next."""

  folder: str

  def __call__(self, item: Any) -> tuple[Any, int]:
    key = item[0] if isinstance(item, tuple) else item
    pathlib.Path(self.folder, f"{key}-{uuid.uuid4().hex}").touch()
    return (sum(item[1]) if isinstance(item, tuple) else item,
            len(list(pathlib.Path(self.folder).glob(f"{key}-*"))))


def _by_remainder(result: tuple[int, int]) -> tuple[tuple[int, int], list[tuple[str, int]]]:
  return result, [(f"r{result[0] % 3}", 1)]


def test_only_the_attempt_the_runner_commits_counts(tmp_path):
  """A runner that runs each bundle twice (a retry) and commits the second run's output: each
  batch's results and each group's are the second attempt's, which differ from the first's,
  never whichever attempt's file is read last (which one that is, is chance: three builds)."""
  from photo_datasets.building import beam_generation, executors

  for build_number in range(3):
    counts = tmp_path / f"attempts{build_number}"
    counts.mkdir()
    answer = _AnswerByAttempt(os.fspath(counts))
    grouping = executors.Grouping(split=_by_remainder, task=answer, on_crash=answer)
    executor = beam_generation.BeamExecutor(
        None, _fn_api_runner("--direct_runner_bundle_repeat=1"), tmp_path / f"work{build_number}")
    results, groups = executor.map_and_group(executors.Phase(answer, range(300), answer, 16),
                                             grouping)
    assert results == [(item, 2) for item in range(300)]
    assert groups == {"r0": (100, 2), "r1": (100, 2), "r2": (100, 2)}


def _dies_on_13_when_alone(item: int) -> int:
  """Kills its process on 13 where it runs apart (a worker's retry of its batch)."""
  if item == 13 and multiprocessing.parent_process() is not None:
    os.kill(os.getpid(), signal.SIGKILL)
  return item * 2


def _crashed(item: int) -> int:
  return -item


def test_a_task_that_kills_its_worker_on_a_retry_gets_the_crash_result_as_locally(tmp_path):
  """As a local build: an item that kills its process, once its batch is retried (each item
  then runs in a process of its own), gets `on_crash`'s result, and the others theirs. The
  runner here runs each bundle twice, the first time in this process, where nothing dies."""
  from photo_datasets.building import beam_generation

  executor = beam_generation.BeamExecutor(
      None, _fn_api_runner("--direct_runner_bundle_repeat=1"), tmp_path / "work")
  mapped = executor.map(_dies_on_13_when_alone, range(40), on_crash=_crashed, chunk=8)
  assert list(mapped) == [-13 if item == 13 else item * 2 for item in range(40)]


def test_a_phase_s_job_graph_does_not_grow_with_the_corpus(tmp_path):
  """The scan's 150,513 candidates wait in the phase's folder; the graph holds each batch's
  place."""
  from photo_datasets.building import beam_generation, executors, scan

  executor = beam_generation.BeamExecutor(None, None, tmp_path / "work")
  candidate = "x" * 1_000  # About a candidate's pickled size.
  sizes = {}
  for count in (1_000, 150_513):
    pipeline = beam.Pipeline()
    _ = pipeline | executor.phase(executors.Phase(len, [candidate] * count, len,
                                                  scan.PHOTOS_PER_TASK))
    sizes[count] = len(pipeline.to_runner_api().SerializeToString())
  assert sizes[150_513] < 5_000_000, sizes
  assert sizes[150_513] - sizes[1_000] < 200_000, sizes


def _fn_api_runner(*options: str) -> beam.options.pipeline_options.PipelineOptions:
  """Beam's local runner named itself: `DirectRunner` may hand the job to Prism, which ignores
  the FnApiRunner's options (`direct_runner_bundle_repeat`, `direct_running_mode`)."""
  return beam.options.pipeline_options.PipelineOptions(["--runner=FnApiRunner", *options])


# The sample's local build, shared with the session (`samples`); the real photos' is this
# module's (`_real_local_224`).
_SOURCES = ["sample", pytest.param("real", marks=pytest.mark.real_photos)]


@pytest.fixture(scope="module")
def _real_local_224(tmp_path_factory, real_kfood):
  return build("korean_food/224", tmp_path_factory.mktemp("real_local"), real_kfood)


def _local_224(request, source: str):
  """The source's folder, and its local build of `korean_food/224`."""
  if source == "sample":
    return SAMPLE, request.getfixturevalue("samples").builder("korean_food/224")
  return request.getfixturevalue("real_kfood"), request.getfixturevalue("_real_local_224")


def _assert_same_dataset(beam_build, local, shows: str) -> None:
  """The same record files (the fingerprint), skips, groups and series as the local build."""
  from photo_datasets.catalog import fingerprint

  assert local.info.metadata[shows]
  assert (fingerprint.sha256_of(beam_build.info.metadata)
          == fingerprint.sha256_of(local.info.metadata))
  for key in ("skipped_files", "series", "near_duplicates", "duplicates"):
    assert beam_build.info.metadata[key] == local.info.metadata[key], key


@pytest.mark.parametrize("source", _SOURCES)
def test_bundles_on_threads_of_one_process_give_the_local_build(tmp_path, request, monkeypatch,
                                                                source):
  """As Beam's SDK harness runs bundles (here four at once, on threads of this process; also
  under Flink, Spark and Dataflow): the files the workers append to (the converted images, the
  keypoints) are each one thread's."""
  from photo_datasets.building import scan

  # A batch a photo: the sources hold a batch of the default size or less, which one thread
  # would scan alone.
  monkeypatch.setattr(scan, "PHOTOS_PER_TASK", 1)
  manual_dir, local = _local_224(request, source)
  threaded = build("korean_food/224", tmp_path, manual_dir, beam_options=_fn_api_runner(
      "--direct_num_workers=4", "--direct_running_mode=multi_threading"))
  _assert_same_dataset(threaded, local, "skipped_files" if source == "sample" else "series")


@pytest.mark.parametrize("source", _SOURCES)
def test_bundles_a_runner_runs_again_count_once(tmp_path, request, monkeypatch, source):
  """As a runner retries a bundle whose worker was lost: the FnApiRunner's
  `direct_runner_bundle_repeat` runs every bundle once more first, its side effects (files
  written, photos converted) and all. Every bundle wrote its file twice, one of them read (the
  committed attempt's), and the records, the skips and the series are the local build's: the
  sample's skips, and the series among the real photos."""
  from photo_datasets.building import beam_generation

  written: list[tuple[int, int]] = []  # Per read: the files every attempt wrote, those read.
  real_committed_files = beam_generation._committed_files

  def counted(folder, prefix):
    read = real_committed_files(folder, prefix)
    written.append((len(list(folder.glob(f"{prefix}-*"))), len(read)))
    return read

  monkeypatch.setattr(beam_generation, "_committed_files", counted)
  manual_dir, local = _local_224(request, source)
  repeated = build("korean_food/224", tmp_path, manual_dir,
                   beam_options=_fn_api_runner("--direct_runner_bundle_repeat=1"))
  _assert_same_dataset(repeated, local, "skipped_files" if source == "sample" else "series")
  assert written and any(read for _, read in written)
  assert all(files == 2 * read for files, read in written), written

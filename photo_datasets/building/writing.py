"""A split's records written on every core, byte for byte what TFDS's own writer writes.

Without Beam, TFDS (`tfds.core.writer.Writer`) encodes, serialises, shuffles
and writes every example of a split in the main process, one core for the
whole build. Here the worker processes do it, in two passes over the split:

1. Each worker converts its photos (`generation.convert_or_skip`), encodes and
   serialises each example with the config's features (`RecordMaker`: TFDS's
   `ExampleSerializer`, deterministically: `reproducible`) and appends the
   record to its own spill files, one per range of the key's hash: the MD5
   of the split's name and the example's key (`hashing.Hasher`), TFDS's
   shuffle order. The main process keeps four numbers per record. A photo
   the scan converted has its record made there already, in the scan's
   worker files (`converted.ConvertedImages`): it only gets its hash, here,
   and a split whose every photo is such starts no workers for this pass.
2. The main process sorts those by hash, counts the shards as TFDS does
   (`ShardConfig.get_number_shards` on the records' total size: the package's
   `sharding` policy, or `--num_shards`), cuts them where TFDS cuts
   (`shard_utils.get_shard_boundaries`), and the workers write whole shards,
   each in the config's file format (TFRecord without TensorFlow:
   `tfrecord_files`, which hashes each file as it writes it; the others with TFDS's
   `ExampleWriter`, read back for the hash while still in memory's cache: SHA-256, for
   `croissant.json` and the fingerprint). A hash range's spill files are
   removed once every shard that reads them is written, and a sixteenth of a
   split's shards at most are written at once, so the disk holds the split
   about once, as with TFDS's shuffle buckets.

Same order, same cuts, same names and sizes: the same files, and the same
`SplitInfo` (`shard_lengths`, `num_bytes`). The spill files lie in the build's
`incomplete.*` folder, which TFDS removes when a build fails or is stopped,
and the next build when it was killed (`disk.remove_leftovers`).

This relies on private parts of tensorflow-datasets (pinned in setup.py;
tests/test_writing.py checks their shape and compares the files both writers
make).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import tensorflow_datasets as tfds

from photo_datasets import tfds_private
from photo_datasets.archives import storage
from photo_datasets.building import (
  disk,
  generation,
  parallel,
  reproducible,
  tfrecord_files,
  worker_files,
)
from photo_datasets.catalog import fingerprint
from photo_datasets.catalog.build_report import Skipped
from photo_datasets.photos.records import Photo

# Spill files per worker and split: hash ranges the second pass removes one by one.
SPILL_RANGES = 64
# Photos a worker serialises per task: the pool's cost a task, in the main process
# (docs/performance.md#the-main-process), is paid once for all of them.
PHOTOS_PER_TASK = 64
# Shards being written at once, at most, as a share of a split's: the spill files
# they read are still there, so the disk holds this much of the split twice.
SHARDS_IN_FLIGHT = 1 / 16

# A record in the spill files: (hash of its key, spill file's number, offset, size).
_Entry = tuple[int, int, int, int]


# Where a worker put one serialised example: (hash of its key, spill file, offset, size).
# A tuple: the main process unpickles one per photo.
_Spilled = tuple[int, str, int, int]


def _spill(folder: str, hkey: int, record: bytes) -> tuple[str, int]:
  written = worker_files.append(folder, f"{tfds_private.get_bucket_number(hkey, SPILL_RANGES):03d}",
                                record)
  return written.path, written.offset


@dataclasses.dataclass(frozen=True)
class RecordMaker:
  """A photo's record: its example (`make`, with its stored image) encoded with the config's
  features and serialised as every writer of the package serialises it (`reproducible`). Made
  in the worker that has the image: the scan's, where it converted the photo, or `_Serialize`'s.
  """

  make: generation.ExampleMaker
  features: Any  # The config's `tfds.features.FeaturesDict`.

  @functools.cached_property
  def _serializer(self) -> reproducible.DeterministicExampleSerializer:
    return reproducible.DeterministicExampleSerializer(self.features.get_serialized_info())

  def __call__(self, photo: Photo, image: bytes) -> bytes:
    return self.serialize(photo.file_name, self.make.with_image(photo, image))

  def serialize(self, key: str, example: generation.Example) -> bytes:
    try:
      record: bytes = self._serializer.serialize_example(self.features.encode_example(example))
    except Exception as e:
      # As TFDS's writer: a feature that does not encode is a bug, not a bad photo.
      raise ValueError(f"Failed to encode the example of {key}: {type(e).__name__}: {e}") from e
    return record


@dataclasses.dataclass(frozen=True)
class _Serialize:
  """Pass 1, in a worker: one photo converted, encoded, serialised and spilled."""

  photos: Sequence[Photo]  # Forked workers share the list; items are indices into it.
  records: RecordMaker
  salt: str  # The split's name, as TFDS salts the key's hash.
  folder: str

  @functools.cached_property
  def _hasher(self) -> tfds_private.Hasher:
    return tfds_private.Hasher(self.salt)

  def __call__(self, item: tuple[int, generation.Source | None]) -> _Spilled | Skipped:
    index, data = item
    photo = self.photos[index]
    if data is None:  # The worker reads it (`Photo.span`).
      data = generation.read_or_skip(None, photo)  # type: ignore[arg-type]
    result = generation.convert_or_skip(self.records.make, photo, data)
    if isinstance(result, Skipped):
      return result
    key, example = result
    record = self.records.serialize(key, example)
    hkey = self._hasher.hash_key(key)
    path, offset = _spill(self.folder, hkey, record)
    return hkey, path, offset, len(record)

  def crashed(self, item: tuple[int, generation.Source | None]) -> Skipped:
    return generation.crashed((self.photos[item[0]], b""))


# One shard: its path, and its records' place in the sorted entries (start, end).
_Shard = tuple[str, int, int]


@dataclasses.dataclass(frozen=True)
class _WriteShard:
  """Pass 2, in a worker: one whole shard, its records read back from the spill files."""

  example_writer: Any  # The config's `tfds.core.writer.ExampleWriter`.
  entries: list[_Entry]  # Every record of the split, sorted by hash; forked workers share them.
  spills: list[str]  # The spill files' paths, by number.

  def __call__(self, shard: _Shard) -> tuple[str, str]:
    """The shard's path and SHA-256."""
    path, start, end = shard
    files: dict[int, BinaryIO] = {}

    def records() -> Iterator[tuple[int, bytes]]:
      for hkey, spill, offset, size in self.entries[start:end]:
        if (file := files.get(spill)) is None:
          file = files[spill] = open(self.spills[spill], "rb")  # noqa: SIM115 (closed below)
        data = os.pread(file.fileno(), size, offset)
        if len(data) != size:
          raise OSError(f"{self.spills[spill]} ends before the record at {offset}")
        yield hkey, data

    sha256 = None  # Hashed as it is written, where the writer is ours.
    try:
      if self.example_writer.file_format == tfds.core.FileFormat.TFRECORD:
        # Not TFDS's writer, which imports TensorFlow in every worker for it.
        sha256 = tfrecord_files.write(path, (record for _, record in records()))
        record_keys = None
      else:
        record_keys = self.example_writer.write(path, records())
    finally:
      for file in files.values():
        file.close()
    if record_keys:  # Formats with an index (ArrayRecord, Riegeli): written as TFDS writes it.
      if len(record_keys) != end - start:
        raise RuntimeError(f"{path}: {len(record_keys)} record keys for {end - start} records")
      tfds_private.write_record_index(path, record_keys)
    return path, sha256 or fingerprint.file_sha256(path)


def _shard_crashed(shard: _Shard) -> tuple[str, str]:
  raise RuntimeError(f"Writing {shard[0]} killed its worker process twice")


def write_split(
    split: generation.LocalSplit,
    name: str,
    *,
    filename_template: Any,
    features: Any,
    shard_config: tfds_private.ShardConfig,
    example_writer: Any,
    ignore_duplicates: bool = False,
    sha256: dict[str, str] | None = None,
) -> tfds.core.SplitInfo:
  """Writes the split's shards on `split.workers` processes; returns its `SplitInfo`
  as TFDS's writer gives it. Skipped photos go to `split.skipped`; each shard's
  SHA-256 (hex) to `sha256`, by file name."""
  folder = _spill_folder(split, name, os.fspath(filename_template.data_dir))
  try:
    entries, spills = _serialize(split, name, folder, features, ignore_duplicates)
    shard_lengths = _write_shards(entries, spills, folder, split.workers, filename_template,
                                  shard_config, example_writer, {} if sha256 is None else sha256)
    return tfds.core.SplitInfo(name=name, shard_lengths=shard_lengths,
                               num_bytes=sum(e[3] for e in entries),
                               filename_template=filename_template)
  finally:
    shutil.rmtree(folder, ignore_errors=True)


def _spill_folder(split: generation.LocalSplit, name: str, data_dir: str) -> str:
  """Beside the record files; where those go to a bucket, which holds no temporary file of
  ours, in this machine's temporary folder."""
  if storage.is_local(data_dir):
    folder = os.path.join(data_dir, f"{name}.spill")
    os.makedirs(folder, exist_ok=True)
    return folder
  source_bytes = sum(photo.nbytes for photo in split.photos)
  return disk.scratch_folder(
      "/".join(data_dir.rstrip("/").split("/")[-3:-1]),  # DATASET/CONFIG of TFDS's layout.
      disk.stored_bytes(split.make.image_size, len(split.photos), source_bytes),
      what=f"its writer keeps the {name} split's examples,")


def _serialize(split: generation.LocalSplit, name: str, folder: str, features: Any,
               ignore_duplicates: bool) -> tuple[list[_Entry], list[str]]:
  """Pass 1: every photo spilled, or its record the scan made taken where it lies; their
  entries sorted by hash, and the files that hold them."""
  serialize = _Serialize(split.photos, RecordMaker(split.make, features), name, folder)
  converted, image_size = split.converted, split.make.image_size
  made = [converted.take_record(photo, image_size) if converted is not None else None
          for photo in split.photos]
  # The keys of those are hashed here, by a hasher of this process's: `serialize`'s, made here,
  # would travel with it to workers that start after (spawn), and a hash object does not pickle.
  hasher = tfds_private.Hasher(name)

  def items() -> Iterator[tuple[int, generation.Source | None]]:
    # The scan made the record of every photo it converted for this writer: the rest are read.
    for index, photo in enumerate(split.photos):
      if made[index] is not None:
        continue
      if photo.span is None:  # Only the builder's reader can read it: here.
        yield index, generation.read_or_skip(split.reader, photo)
      else:
        yield index, None

  entries: list[_Entry] = []
  spill_numbers: dict[str, int] = {}
  seen: set[int] = set()
  try:
    with split.reader:
      left = made.count(None)
      # In the photos' order, as TFDS's writer meets them (`ignore_duplicates` keeps the first).
      spilled = iter(parallel.ordered_map(
          serialize, items(), workers=split.workers, on_crash=serialize.crashed,
          chunk=PHOTOS_PER_TASK, size=left) if left else ())
      for photo, record in zip(split.photos, made, strict=True):
        result = next(spilled) if record is None else (
            hasher.hash_key(photo.file_name), record.path, record.offset, record.size)
        if isinstance(result, Skipped):
          split.skipped.append(result)
          continue
        hkey, path, offset, size = result
        if hkey in seen:
          if ignore_duplicates:  # As TFDS: the first one stays.
            continue
          raise tfds_private.DuplicatedKeysError(path, offset)
        seen.add(hkey)
        entries.append((hkey, spill_numbers.setdefault(path, len(spill_numbers)), offset, size))
  finally:
    worker_files.close(folder)
  if not entries:
    raise AssertionError("No examples were yielded.")  # TFDS's words.
  entries.sort()
  return entries, list(spill_numbers)


def _write_shards(entries: list[_Entry], spills: list[str], folder: str, workers: int,
                  filename_template: Any, shard_config: tfds_private.ShardConfig,
                  example_writer: Any, sha256: dict[str, str]) -> list[int]:
  """Pass 2: the shards, cut and named as TFDS's `Writer` does; returns their lengths."""
  num_shards = shard_config.get_number_shards(sum(e[3] for e in entries), len(entries))
  ends = tfds_private.get_shard_boundaries(len(entries), num_shards)
  starts = [0, *ends[:-1]]

  def shards() -> Iterator[_Shard]:
    for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
      yield os.fspath(filename_template.sharded_filepath(
          shard_index=index, num_shards=num_shards)), start, end

  by_range: dict[int, list[str]] = {}  # Hash range -> its spill files (named by `_spill`).
  for spill in spills:
    if os.path.dirname(spill) == folder:  # Not the scan's files, which the build removes.
      by_range.setdefault(int(os.path.basename(spill)[:3]), []).append(spill)
  removed = 0  # Hash ranges whose spill files are gone.
  write = _WriteShard(example_writer, entries, spills)
  in_flight = max(2, int(num_shards * SHARDS_IN_FLIGHT))
  for index, (path, digest) in enumerate(parallel.ordered_map(
      write, shards(), workers=workers, on_crash=_shard_crashed, chunk=1, size=num_shards,
      in_flight=in_flight)):
    sha256[os.path.basename(path)] = digest
    # The shards still to come start at the next one's first hash: the ranges below it are read.
    below = (tfds_private.get_bucket_number(entries[ends[index]][0], SPILL_RANGES)
             if index + 1 < num_shards else SPILL_RANGES)
    for hash_range in range(removed, below):
      for spill in by_range.pop(hash_range, []):
        os.remove(spill)
    removed = max(removed, below)
  return [end - start for start, end in zip(starts, ends, strict=True)]

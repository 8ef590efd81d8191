"""A Beam build's record files, cut into shards where a local build cuts them.

Both writers order a split's records by the hash of their key (the split's
name and the example's key, `hashing.Hasher`). The local one (`writing`, as
TFDS's `Writer`) then cuts them by rank: shard i ends at the
`get_shard_boundaries(num_examples, num_shards)[i]`-th record. TFDS 4.9.10's
`BeamWriter` cuts them by hash value instead (`shuffle.get_bucket_number`:
shard = hash * num_shards // largest hash), so with several shards per split
its files hold other counts of records, and are other files.

`RankCutBeamWriter` is TFDS's `BeamWriter` with the rank cut: the hashed keys
of the split's records (those that reach the writer: workers skip photos, so
the count is the pipeline's) are gathered into one sorted list, a few MB for
150,000 photos, and turned into the largest key of each shard but the last;
each record goes to the first shard whose largest key is not below its own.
The serialisation, the count of shards (`sharding`'s policy, or
`--num_shards`), the writing of a shard and the split's info are TFDS's own
steps (`tfds_private.BeamWriter`). Every shard holds at least one record: a
split has at least as many records as shards (`sharding.number_of_files`;
with `--num_shards` above that, TFDS's `get_shard_boundaries` refuses, as in
a local build), and the ends are distinct keys.

Imported only when a build runs on Beam (`use_in_tfds`, from the builder);
TFDS's `SplitBuilder` then makes this writer for every split, and Beam's
workers unpickle it from this module.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any

import apache_beam as beam

from photo_datasets import tfds_private


def shard_ends(hashed_keys: Sequence[int], num_shards: int) -> list[int]:
  """The largest key of each shard but the last, as the local writer cuts
  `hashed_keys` (distinct; any order) into `num_shards`."""
  ordered = sorted(hashed_keys)
  ends = tfds_private.get_shard_boundaries(len(ordered), num_shards)
  return [ordered[end - 1] for end in ends[:-1]]


def shard_of(hashed_key: int, ends: Sequence[int]) -> int:
  """The shard of the record with `hashed_key`, given `shard_ends`."""
  return bisect.bisect_left(ends, hashed_key)


class RankCutBeamWriter(tfds_private.BeamWriter):
  """TFDS's `BeamWriter`, cutting a split's shards where its `Writer` does."""

  def write_from_pcollection(self, examples: Any) -> Any:
    # TFDS's graph (`BeamWriter.write_from_pcollection`, its shared steps' labels) built again,
    # as its shard assignment is given only the largest key and the count of shards, not the
    # ends the rank cut needs. Left out: the largest key, and the ids of the shards that got
    # records (every shard gets some here).
    serialized = examples | "Serialize" >> beam.Map(self.serialize)  # (hashed key, record)
    # The keys and the total size in one combine, of one key: each step is the launcher's work
    # to build and submit, and a global combine adds steps for its default, which no record
    # would read in an empty split.
    ends = beam.pvalue.AsSingleton(
        serialized
        | "OneKey" >> beam.WithKeys(0)
        | "KeysAndSize" >> beam.CombinePerKey(_KeysAndSize())
        | "ShardEnds" >> beam.Map(self._shard_ends))
    return (serialized
            | "AssignShard" >> beam.Map(self._with_shard, ends=ends)
            | "GroupShards" >> beam.GroupByKey()
            | "WriteFinalShards" >> beam.Map(self._write, ends=ends)
            | "CollectShardInfo" >> beam.combiners.ToList()
            | "CalculateSplitInfo" >> beam.ParDo(self.store_split_info))

  def _shard_ends(self, keyed: tuple[int, tuple[set[int], int]]) -> list[int]:
    _, (hashed_keys, total_size) = keyed
    return shard_ends(list(hashed_keys), self.number_of_shards(len(hashed_keys), total_size))

  def _with_shard(self, record: tuple[int, bytes], ends: list[int]) -> tuple[int, Any]:
    return shard_of(record[0], ends), record

  def _write(self, shard: tuple[int, Any], ends: list[int]) -> Any:
    return self.write_shard(shard, len(ends) + 1)


class _KeysAndSize(beam.CombineFn):  # type: ignore[misc]
  """A split's hashed keys and its records' total size, in bytes. A set: a repeated key is one
  record (`ignore_duplicates`) or TFDS's error, later."""

  def create_accumulator(self) -> tuple[set[int], int]:
    return set(), 0

  def add_input(self, keys_and_size: tuple[set[int], int],
                record: tuple[int, bytes]) -> tuple[set[int], int]:
    keys, size = keys_and_size
    keys.add(record[0])
    return keys, size + len(record[1])

  def merge_accumulators(self, accumulators: Iterable[tuple[set[int], int]]
                         ) -> tuple[set[int], int]:
    keys: set[int] = set()
    size = 0
    for more, more_size in accumulators:
      keys |= more
      size += more_size
    return keys, size

  def extract_output(self, keys_and_size: tuple[set[int], int]) -> tuple[set[int], int]:
    return keys_and_size


def use_in_tfds() -> None:
  """Makes TFDS's Beam builds in this process write their splits with `RankCutBeamWriter`."""
  tfds_private.write_beam_splits_with(RankCutBeamWriter)

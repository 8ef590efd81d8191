"""How many record files each split gets: whole files for every host of a
multi-host training.

`tfds` gives an input pipeline whole files only when a split has at least as
many files as there are pipelines; otherwise every pipeline reads every file
and keeps each n-th example (more reading, and an order close to the stored
one). TFDS's own rule makes few large files (64 MiB to 1 GiB each), so a
`korean_food/224` train split would get 32. Ours:

* a split of `MANY_HOSTS_EXAMPLES` (6,400) examples or more gets at least
  `MANY_HOSTS_FILES` (64) files, so 8, 16, 32 and 64 hosts all read whole
  files (more where TFDS's size rule asks for more: files stay under 1 GiB);
* a smaller split gets about one file per `EXAMPLES_PER_FILE` (100) examples,
  never fewer than 1 nor more than it has examples;
* `tfds build --num_shards N` (`DownloadConfig.num_shards`) still decides.

Many small files cost nothing on reading (docs/performance.md, "Reading: from photo files to
batches").
"""

from __future__ import annotations

import dataclasses

import tensorflow_datasets as tfds

from photo_datasets import tfds_private

MANY_HOSTS_EXAMPLES = 6400
MANY_HOSTS_FILES = 64
EXAMPLES_PER_FILE = 100


def number_of_files(num_examples: int, total_size: int) -> int:
  """The record files of a split of `num_examples` serialized into `total_size` bytes."""
  if num_examples >= MANY_HOSTS_EXAMPLES:
    by_size: int = tfds_private.ShardConfig.calculate_number_shards(total_size, num_examples)
    return min(max(MANY_HOSTS_FILES, by_size), num_examples)
  return min(max(1, round(num_examples / EXAMPLES_PER_FILE)), max(num_examples, 1))


@dataclasses.dataclass(frozen=True)
class ShardPolicy(tfds_private.ShardConfig):
  """TFDS's shard settings with our count of files, unless `num_shards` is set."""

  def get_number_shards(self, total_size: int, num_examples: int,
                        uses_precise_sharding: bool = True) -> int:
    if self.num_shards:
      return int(self.num_shards)
    return number_of_files(num_examples, total_size)


@dataclasses.dataclass(eq=False)
class _DownloadConfigWithPolicy(tfds.download.DownloadConfig):

  def get_shard_config(self) -> tfds_private.ShardConfig:
    return ShardPolicy(num_shards=self.num_shards, min_shard_size=self.min_shard_size,
                       max_shard_size=self.max_shard_size)


def with_policy(config: tfds.download.DownloadConfig) -> tfds.download.DownloadConfig:
  """`config`, whose writers count files by `number_of_files`."""
  fields = {field.name: getattr(config, field.name) for field in dataclasses.fields(config)
            if field.init}
  return _DownloadConfigWithPolicy(**fields)

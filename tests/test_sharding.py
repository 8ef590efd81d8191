"""The shard policy: whole files for 8 to 64 hosts once a split is large,
about one file per 100 examples below that, and `--num_shards` decides."""

from __future__ import annotations

import os
import pathlib

import pytest
import tensorflow_datasets as tfds

import flowers_dataset
from photo_datasets.building import sharding

FLOWERS_SAMPLE = pathlib.Path(flowers_dataset.__file__).parent / "sample"
MB = 2**20


@pytest.mark.parametrize("examples, size, files", [
    (1, 100_000, 1),
    (49, 5 * MB, 1),           # half a file rounds down, never to none
    (151, 5 * MB, 2),
    (1_234, 30 * MB, 12),
    (6_399, 150 * MB, 64),
    (6_400, 150 * MB, 64),     # from here on: whole files for 8, 16, 32 and 64 hosts
    (120_400, 2_700 * MB, 64),  # korean_food/224's train split
    # korean_food/full's: TFDS's size rule (under 1 GiB a file) asks for more
    (120_400, 12_600 * MB, 128),
])
def test_the_count_of_files(examples, size, files):
  assert sharding.number_of_files(examples, size) == files


def test_every_large_split_divides_among_64_hosts():
  for examples in (6_400, 10_000, 50_000, 150_513):
    for size in (examples * 25_000, examples * 105_000):  # 224 and full
      files = sharding.number_of_files(examples, size)
      assert files >= 64 and files % 64 == 0 and files <= examples


def _num_shards(tmp_path: pathlib.Path, name: str,
                **download: object) -> dict[str, tuple[int, int, int]]:
  """(files recorded, files on disk, examples) per split of a build of the flowers sample."""
  builder = tfds.builder(name, data_dir=os.fspath(tmp_path))
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
      manual_dir=os.fspath(FLOWERS_SAMPLE), **download))  # type: ignore[arg-type]
  on_disk = {split: len(list(pathlib.Path(builder.data_dir).glob(f"*-{split}.tfrecord-*")))
             for split in builder.info.splits}
  return {split: (info.num_shards, on_disk[split], info.num_examples)
          for split, info in builder.info.splits.items()}


def test_a_build_writes_the_files_the_policy_counts(tmp_path, monkeypatch):
  monkeypatch.setattr(sharding, "EXAMPLES_PER_FILE", 10)  # the 100 sample photos in several files
  shards = _num_shards(tmp_path, "flowers_dataset/32")
  assert {split: (recorded, on_disk) for split, (recorded, on_disk, _) in shards.items()} == {
      split: (max(1, round(examples / 10)),) * 2 for split, (_, _, examples) in shards.items()}
  assert shards["train"][0] >= 7
  # Every example is read back once, whatever the files.
  names = [example["file_name"] for example in
           tfds.as_numpy(tfds.load("flowers_dataset/32", split="train",
                                   data_dir=os.fspath(tmp_path)))]
  assert len(names) == len(set(names)) == shards["train"][2]


def test_num_shards_still_decides(tmp_path):
  shards = _num_shards(tmp_path, "flowers_dataset/32", num_shards=3)
  assert {(recorded, on_disk) for recorded, on_disk, _ in shards.values()} == {(3, 3)}

"""Whole builds for the tests: a photo's split is a function of its bytes
(`split_counts`, `photos_in_splits`: fixtures that need every split draw until
they get it), a `tfds build` in-process (`build`) and every stored example read
back (`read_examples`), and prerequisites a test may lack (`missing`)."""


from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

import tensorflow_datasets as tfds

from photo_datasets.photos import splits
from photo_datasets.testing.images import PathLike


def split_of_bytes(data: bytes) -> str:
  return splits.split_of(splits.content_digest(data))


def split_counts(photos: Iterable[bytes]) -> dict[str, int]:
  """Photos per split, every split named (0 where none)."""
  counts = dict.fromkeys(splits.SPLIT_NAMES, 0)
  for data in photos:
    counts[split_of_bytes(data)] += 1
  return counts


def photos_in_splits(plan: Mapping[str, str], draw: Callable[[str, int], bytes],
                     first_seed: int = 0) -> dict[str, bytes]:
  """name -> bytes, each file in the split `plan` (name -> split) wants.

  `draw(name, seed)` draws the file for `name`; each file is drawn from
  successive seeds until its bytes fall in its split, and the next file goes
  on from the seed after. The counts per split are then those of the plan,
  whatever encoder version draws the files.
  """
  files = {}
  seed = first_seed
  for name, split in plan.items():
    if split not in splits.SPLIT_NAMES:
      raise ValueError(f"{name}: unknown split {split!r}")
    while split_of_bytes(data := draw(name, seed)) != split:
      seed += 1
    files[name] = data
    seed += 1
  return files


def build(name: str, data_dir: PathLike, manual_dir: PathLike | None = None, *,
          workers: int | None = None, download_dir: PathLike | None = None,
          beam_options: Any = None) -> tfds.core.DatasetBuilder:
  """Builds `name` ("korean_food/224") from `manual_dir` into `data_dir`, as
  `tfds build` does, and returns the builder; `workers` as the builders take it."""
  builder_args = {} if workers is None else {"workers": workers}
  builder = tfds.builder(name, data_dir=os.fspath(data_dir), **builder_args)
  builder.download_and_prepare(
      download_dir=None if download_dir is None else os.fspath(download_dir),
      download_config=tfds.download.DownloadConfig(
          manual_dir=None if manual_dir is None else os.fspath(manual_dir),
          beam_options=beam_options))
  return builder


# Prerequisites a test may lack: "real_photos" (../shared/realdata), "chromium".
REQUIRE_ENV = "PHOTO_DATASETS_REQUIRE"


def missing(prerequisite: str, reason: str) -> NoReturn:
  """Skips the calling test for want of `prerequisite`, or fails it where CI requires it.

  The comma-separated `PHOTO_DATASETS_REQUIRE` names the prerequisites that
  must be there (as `.ci/run` sets it: CI is meant to have them, and a skip
  there would hide that it lost one); docs/testing.md lists them.

  Args:
    prerequisite: the prerequisite's name, e.g. "real_photos" or "chromium".
    reason: what is missing, in words: the skip's or the failure's message.

  Raises:
    pytest.fail.Exception: `PHOTO_DATASETS_REQUIRE` names `prerequisite`.
    pytest.skip.Exception: it does not.
  """
  import pytest  # Only tests call this; the scripts that use this module need no pytest.
  required = {name.strip() for name in os.environ.get(REQUIRE_ENV, "").split(",")}
  if prerequisite in required:
    pytest.fail(f"{reason}, and {REQUIRE_ENV} requires {prerequisite}", pytrace=False)
  pytest.skip(reason)


def read_examples(builder: tfds.core.DatasetBuilder) -> dict[str, dict[str, Any]]:
  """file_name -> every stored example as numpy, with its "split": the image
  still encoded (the stored bytes), text features as `str`."""
  text = {key for key, feature in builder.info.features.items()
          if isinstance(feature, tfds.features.Text)}
  examples: dict[str, dict[str, Any]] = {}
  for split in builder.info.splits:
    ds = builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()})
    for example in tfds.as_numpy(ds):
      example = {key: value.decode() if key in text else value for key, value in example.items()}
      name = example["file_name"]
      assert name not in examples, f"{name} is stored twice"
      examples[name] = {**example, "split": split}
  return examples

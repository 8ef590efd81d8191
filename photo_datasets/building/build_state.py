"""A build in progress: what it learns and shares (`Build`), made by
`PhotoBuilder.download_and_prepare`, filled by TFDS's hooks and read at its
end; and the garbage collector's full passes kept off what was loaded before it
(`loaded_objects_frozen`)."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import time
from collections.abc import Callable, Iterator
from typing import Any

from photo_datasets.building import converted, executors
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import records


@dataclasses.dataclass
class Build:
  """A build in progress, from `download_and_prepare` to its end: what TFDS's
  hooks (`_split_generators`, `_generate_examples`, ...) learn and share."""

  beam: bool = False  # Whether Beam runs the phases.
  executor: executors.Executor = executors.LocalExecutor(1)  # What runs the phases.
  started: float = dataclasses.field(default_factory=time.perf_counter)
  report: BuildReport = dataclasses.field(default_factory=BuildReport)
  # Given to generation.
  split_photos: dict[str, list[records.Photo]] = dataclasses.field(default_factory=dict)
  source_path: str | None = None
  manual_dir: str | None = None  # Where the source was found; None when it was downloaded.
  converted: converted.ConvertedImages | None = None  # What the scan converted already.
  workers_write: bool = False  # The package's workers write the records, not TFDS's writer.
  needed_bytes: int = 0  # The disk check's estimate, for the out-of-space message.
  split_generators: dict[str, Any] | None = None  # What `_split_generators` made.
  # File name -> SHA-256 of the record files the workers wrote, for the fingerprint.
  record_sha256: dict[str, str] = dataclasses.field(default_factory=dict)
  # The report page's photos in runs, and the function that gives their thumbnails once the
  # records are generated (`Executor.beside_generation`).
  thumbnail_runs: list[list[records.Photo]] = dataclasses.field(default_factory=list)
  thumbnails: Callable[[], list[list[Any]]] = lambda: [[]]


@contextlib.contextmanager
def loaded_objects_frozen() -> Iterator[None]:
  """The garbage collector's full passes skip every object loaded before (TensorFlow's): a
  build makes many passes as its records of the photos accumulate, and each would walk all of
  those objects again (docs/performance.md#the-main-process)."""
  if gc.get_freeze_count():  # Frozen by the caller: left as it is.
    yield
    return
  gc.freeze()
  try:
    yield
  finally:
    gc.unfreeze()

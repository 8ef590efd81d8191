"""The two ways a build's phases run: on this machine's cores, or on Apache Beam's workers.

A phase is written once, as a picklable function over one item: a candidate
file (the scan's `_Inspect`), a run of series pairs (`series.RunMatcher`), a
record file (`fingerprint.file_sha256`). An `Executor` maps it over the items
and yields the results in the items' order, so a build is the same bytes
whichever runs it:

* `LocalExecutor`: a pool of worker processes (`parallel.ordered_map`).
* `beam_generation.BeamExecutor`: one Beam pipeline per phase, on the runner
  of `tfds build --beam_pipeline_options=...`; the items and the function
  wait in files in the build's folder, the job graph holds their places.

What stays in the launching process is what needs every photo at once and
costs little: the listing, the near-copy grouping over the gathered hashes,
the split assignment.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

from photo_datasets.building import parallel

Item = TypeVar("Item")
Result = TypeVar("Result")


class Executor(Protocol):
  """Maps a phase's function over its items, results in order."""

  def map(self, task: Callable[[Item], Result], items: Iterable[Item], *,
          on_crash: Callable[[Item], Result], chunk: int) -> Iterator[Result]:
    """`task(item)` for every item, in order. `chunk` items travel together (1 for large
    tasks); `on_crash` gives the result of an item whose worker died twice, where the executor
    does not retry it itself."""
    ...


@dataclasses.dataclass(frozen=True)
class LocalExecutor:
  """The phases on `workers` processes of this machine (1: in this process)."""

  workers: int

  def map(self, task: Callable[[Item], Result], items: Iterable[Item], *,
          on_crash: Callable[[Item], Result], chunk: int) -> Iterator[Result]:
    return parallel.ordered_map(task, items, workers=self.workers, on_crash=on_crash,
                                chunk=chunk)

"""The two ways a build's phases run: on this machine's cores, or on Apache Beam's workers.

A phase is written once, as a picklable function over one item: a candidate
file (the scan's `_Inspect`), a key and its values (the scan's `_ScanGroups`:
every photo's hashes for the near copies, a class's features for its series),
a record file (`fingerprint.file_sha256`, where the writer did not hash it), a
run of the report page's photos (`report_thumbnails._Thumbnails`). An `Executor`
maps it over the items and yields the results in the items' order, so a
build is the same bytes whichever runs it:

* `LocalExecutor`: a pool of worker processes (`parallel.ordered_map`).
* `beam_generation.BeamExecutor`: Beam pipelines on the runner of `tfds
  build --beam_pipeline_options=...`, one for the phases that run together
  (`run_together`, `map_and_group`: a phase and the grouping of its results'
  values by key, on the workers), and none for those that run beside the
  records' generation (`beside_generation`: in TFDS's pipeline); the items and
  the functions wait in files in the build's folder, the job graph holds
  their places.

Generation and the records' writing run on the same workers: through
`LocalSplit` and `writing`, or as `beam_generation.ConvertSplit` in TFDS's
Beam pipeline. What stays in the launching process is what needs every
photo at once and costs little: the listing, the groups' components, the
split assignment, the metadata (docs/building.md#apache-beam measures it).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar

from photo_datasets.building import parallel

Item = TypeVar("Item")
Result = TypeVar("Result")
Value = TypeVar("Value")
GroupResult = TypeVar("GroupResult")


@dataclasses.dataclass(frozen=True)
class Phase(Generic[Item, Result]):
  """A phase's function and its items, for `Executor.run_together`."""

  task: Callable[[Item], Result]
  items: Iterable[Item]
  on_crash: Callable[[Item], Result]  # The result of an item whose worker died twice.
  chunk: int = 1  # Items that travel together (1 for large tasks).


@dataclasses.dataclass(frozen=True)
class Grouping(Generic[Result, Value, GroupResult]):
  """What `Executor.map_and_group` does with a phase's results: `split` gives the result
  kept and its (key, value) pairs, and `task` maps a key with all its values (in no order)
  to one result."""

  split: Callable[[Result], tuple[Result, list[tuple[str, Value]]]]
  task: Callable[[tuple[str, list[Value]]], GroupResult]
  on_crash: Callable[[tuple[str, list[Value]]], GroupResult]  # Where its worker died twice.


class Executor(Protocol):
  """Maps a phase's function over its items, results in order."""

  def map(self, task: Callable[[Item], Result], items: Iterable[Item], *,
          on_crash: Callable[[Item], Result], chunk: int) -> Iterator[Result]:
    """`task(item)` for every item, in order. `chunk` items travel together (1 for large
    tasks); `on_crash` gives the result of an item whose worker died twice, where the executor
    does not retry it itself."""
    ...

  def run_together(self, phases: Sequence[Phase[Any, Any]]) -> list[list[Any]]:
    """The results of independent phases, each in its items' order (on Beam: one pipeline)."""
    ...

  def map_and_group(self, phase: Phase[Item, Result], grouping: Grouping[Result, Value, GroupResult]
                    ) -> tuple[list[Result], dict[str, GroupResult]]:
    """The phase's results in its items' order, and by key, the grouping's result over the
    values its results gave (on Beam: one pipeline, the values grouped on the workers)."""
    ...

  def beside_generation(self, phases: Sequence[Phase[Any, Any]]
                        ) -> Callable[[], list[list[Any]]]:
    """Independent phases that need nothing of the records; the function returned gives their
    results as `run_together` does, once the records are generated (on Beam: run in TFDS's
    pipeline, which `ConvertSplit` adds them to, so they start no pipeline of their own)."""
    ...

  @property
  def on_this_machine(self) -> bool:
    """Whether the workers share this machine's disk (its temporary folders)."""
    ...

  @property
  def known_workers(self) -> int:
    """How many tasks run at once, where the executor decides it; 1 where it does not (on Beam,
    the runner)."""
    ...


@dataclasses.dataclass(frozen=True)
class LocalExecutor:
  """The phases on `workers` processes of this machine (1: in this process).

  Maps a phase's function over its items with `parallel.ordered_map`, the results in the
  items' order. The items of a worker that died are run again one by one, each in a fresh
  process; an item that kills its process again gets the phase's `on_crash` result. A
  grouping runs one task a key, the keys in sorted order.

  Args:
    workers: the worker processes; 1 runs every phase in this process, with no subprocess.
  """

  workers: int

  def map(self, task: Callable[[Item], Result], items: Iterable[Item], *,
          on_crash: Callable[[Item], Result], chunk: int) -> Iterator[Result]:
    return parallel.ordered_map(task, items, workers=self.workers, on_crash=on_crash,
                                chunk=chunk)

  def run_together(self, phases: Sequence[Phase[Any, Any]]) -> list[list[Any]]:
    results = []
    for phase in phases:
      items = list(phase.items)  # An empty phase starts no pool.
      results.append(list(self.map(phase.task, items, on_crash=phase.on_crash, chunk=phase.chunk))
                     if items else [])
    return results

  def map_and_group(self, phase: Phase[Item, Result], grouping: Grouping[Result, Value, GroupResult]
                    ) -> tuple[list[Result], dict[str, GroupResult]]:
    results = []
    by_key: dict[str, list[Value]] = collections.defaultdict(list)
    for result in self.map(phase.task, phase.items, on_crash=phase.on_crash, chunk=phase.chunk):
      kept, pairs = grouping.split(result)
      results.append(kept)
      for key, value in pairs:
        by_key[key].append(value)
    keys = sorted(by_key)
    grouped = self.map(grouping.task, [(key, by_key[key]) for key in keys],
                       on_crash=grouping.on_crash, chunk=1) if keys else iter(())
    return results, dict(zip(keys, grouped, strict=True))

  def beside_generation(self, phases: Sequence[Phase[Any, Any]]
                        ) -> Callable[[], list[list[Any]]]:
    return functools.partial(self.run_together, list(phases))  # Run when asked: after it.

  @property
  def on_this_machine(self) -> bool:
    return True

  @property
  def known_workers(self) -> int:
    return self.workers

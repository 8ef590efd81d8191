"""The build report: what a build skipped or noticed, kept in `builder.info.metadata`
and printed as the build's summary; `report_page` shows it to people."""

from __future__ import annotations

import dataclasses
from typing import Any

from photo_datasets.photos.records import class_folder

# Cases (skipped files, label conflicts, warnings) the printed summary names before
# "... and N more".
SUMMARY_CASES = 5


@dataclasses.dataclass(frozen=True)
class Skipped:
  """A source file left out of the dataset, and why."""

  file_name: str
  reason: str


@dataclasses.dataclass
class BuildReport:
  """What a build skipped or noticed. Stored in `builder.info.metadata` and
  printed at the end of every build."""

  skipped_files: list[Skipped] = dataclasses.field(default_factory=list)
  warnings: list[str] = dataclasses.field(default_factory=list)
  duplicates: list[list[str]] = dataclasses.field(default_factory=list)
  # Groups of near copies (resized, re-encoded, cropped, ...), each sharing one
  # split: {"files": [...], "across_classes": bool}.
  near_duplicates: list[dict[str, Any]] = dataclasses.field(default_factory=list)
  # Series: shots of one scene close in a class's order (`series`), each
  # sharing one split with its near copies: {"files": [...]}.
  series: list[dict[str, Any]] = dataclasses.field(default_factory=list)
  empty_splits: list[str] = dataclasses.field(default_factory=list)
  ignored_files: int = 0
  counts: dict[str, int] = dataclasses.field(default_factory=dict)
  # One row per quality flag of a photo (`quality.flag_rows`): {"file_name",
  # "split", "label", "flag", "score"}, worst first within each flag. Information only.
  quality_flags: list[dict[str, Any]] = dataclasses.field(default_factory=list)

  def skip(self, file_name: str, reason: str) -> None:
    self.skipped_files.append(Skipped(file_name, reason))

  def as_metadata(self) -> dict[str, Any]:
    """Plain JSON data; skipped files sorted by name, so the record does not
    depend on the order in which workers finished."""
    metadata = dataclasses.asdict(self)
    metadata["skipped_files"] = sorted(
        metadata["skipped_files"], key=lambda s: (s["file_name"], s["reason"]))
    return metadata

  @classmethod
  def from_metadata(cls, metadata: dict[str, Any]) -> BuildReport:
    fields = {f.name for f in dataclasses.fields(cls)}
    report = cls(**{k: v for k, v in metadata.items() if k in fields})
    report.skipped_files = [Skipped(**s) for s in metadata.get("skipped_files", [])]
    return report

  def summary(self, title: str, split_sizes: dict[str, int], page: str = "",
              fingerprint: str | None = None) -> str:
    """A short human summary: examples per split, what was left out or noticed
    (counts, and the first few cases), the report page (`report_page`) that
    shows all of it, and the config's fingerprint (`fingerprint`)."""
    sizes = ", ".join(f"{s} {n}" for s, n in split_sizes.items())
    left_out = (f"; left out (no examples): {', '.join(self.empty_splits)}" if self.empty_splits
                else "")
    identical_across = [g for g in self.duplicates if len({class_folder(f) for f in g}) > 1]
    near_across = [g["files"] for g in self.near_duplicates if g["across_classes"]]
    flags = self.quality_flags
    counts = [f"skipped files: {len(self.skipped_files)}"]
    if self.duplicates:
      counts.append(f"byte-identical groups: {len(self.duplicates)} "
                    f"({len(identical_across)} across classes)")
    if self.near_duplicates:
      counts.append(f"near-duplicate groups: {len(self.near_duplicates)} "
                    f"({len(near_across)} across classes)")
    if self.series:
      counts.append(f"series: {len(self.series)} "
                    f"({sum(len(g['files']) for g in self.series)} photos)")
    if flags:
      counts.append(f"photos flagged: {len({row['file_name'] for row in flags})}")
    if self.warnings:
      counts.append(f"warnings: {len(self.warnings)}")
    cases = ([f"skipped {s.file_name}: {s.reason}" for s in self.skipped_files]
             + [f"across classes: {' = '.join(g)}" for g in identical_across]
             + [f"across classes: {' ~ '.join(g)}" for g in near_across]
             + [f"warning: {w}" for w in self.warnings])
    lines = [f"{title}: {sizes}{left_out}", "  " + ", ".join(counts)]
    lines += [f"    {case}" for case in cases[:SUMMARY_CASES]]
    if len(cases) > SUMMARY_CASES:
      lines.append(f"    ... and {len(cases) - SUMMARY_CASES} more"
                   + (" on the report page" if page else ""))
    if page:
      lines.append(f"  report: {page}")
    if fingerprint:
      lines.append(f"  fingerprint: {fingerprint}")
    return "\n".join(lines)

"""The build report: what a build skipped or noticed, kept in `builder.info.metadata`."""

from __future__ import annotations

import dataclasses
from typing import Any


def class_folder(file_name: str) -> str:
  """The class folder of an example's `file_name` ("<...>/<class>/<file>")."""
  return file_name.rsplit("/", 2)[-2]


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
  empty_splits: list[str] = dataclasses.field(default_factory=list)
  ignored_files: int = 0
  counts: dict[str, int] = dataclasses.field(default_factory=dict)

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

  def summary(self, title: str, split_sizes: dict[str, int]) -> str:
    """A short human summary: examples per split, then what was left out and why."""
    lines = [f"{title}: " + ", ".join(f"{s} {n}" for s, n in split_sizes.items())]
    lines.append(f"  skipped files: {len(self.skipped_files)}")
    lines += [f"    {s.file_name}: {s.reason}" for s in self.skipped_files]
    if self.empty_splits:
      lines.append("  left out (no examples): " + ", ".join(self.empty_splits))
    for key, value in sorted(self.counts.items()):
      lines.append(f"  {key.replace('_', ' ')}: {value}")
    if self.duplicates:
      lines.append(f"  byte-identical groups (same split each): {len(self.duplicates)}")
      lines += [f"    across classes: {' = '.join(group)}" for group in self.duplicates
                if len({class_folder(f) for f in group}) > 1]
    if self.near_duplicates:
      across = [g["files"] for g in self.near_duplicates if g["across_classes"]]
      lines.append(f"  near-duplicate groups (same split each): {len(self.near_duplicates)}, "
                   f"{len(across)} across classes")
      lines += [f"    across classes: {' ~ '.join(files)}" for files in across]
    lines += [f"  warning: {w}" for w in self.warnings]
    if self.ignored_files:
      lines.append(f"  non-image files ignored: {self.ignored_files}")
    return "\n".join(lines)

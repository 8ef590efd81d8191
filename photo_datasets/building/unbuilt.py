"""What a reader of a config that is not built is told (`message`): the other
versions of it that the data dir holds and how to read them as they are, and
the `tfds build` command that builds it, with whether the saved scan can be
reused and roughly how long that takes. The tools say it through
`PhotoBuilder.not_built_message`; a plain `tfds.load` through `SourceNotFound`."""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import json
import os
import pathlib
import shlex
from typing import Any

import tensorflow_datasets as tfds

from photo_datasets.building import parallel, scan_cache

# Stands for the manual dir in a command where no build recorded one.
MANUAL_DIR = "MANUAL_DIR"
# A build's CPU seconds a photo when it scans the photos, and when it reuses the saved scan,
# rounded up from the full-size rehearsal's time per config (docs/performance.md#the-whole-corpus):
# the rough time a reader is told.
_SCAN_CPU_SECONDS = 0.020
_RECORDS_CPU_SECONDS = 0.003


class SourceNotFound(AssertionError):
  """A config that is neither built nor buildable from what TFDS would read.

  Raised when a build starts (`tfds.load`, `tfds build`, `download_and_prepare`) for a
  dataset read from a manual download whose manual dir is missing or empty. An
  AssertionError, as TFDS's own for a missing manual dir, so code that catches TFDS's catches
  this one; its message is `message`'s (the other versions built in the data dir and the
  `tfds build` command that builds the config), then the download instructions.
  """


@dataclasses.dataclass(frozen=True)
class OtherBuild:
  """A build of the same config at another version, in the same data dir."""

  version: str
  photos: int  # Examples in all its splits.
  source: str | None  # What it was built from (`info.metadata["source"]`), where it says.


def other_builds(builder: tfds.core.DatasetBuilder) -> list[OtherBuild]:
  """The builds of `builder`'s config at other versions in its data dir, the newest first."""
  config_dir = os.path.join(os.fspath(builder.data_dir_root), builder.name,
                            builder.builder_config.name)
  found = []
  for info_path in glob.glob(os.path.join(glob.escape(config_dir), "*", "dataset_info.json")):
    version = os.path.basename(os.path.dirname(info_path))
    if version == str(builder.version) or not tfds.core.Version.is_valid(version):
      continue
    with contextlib.suppress(OSError, ValueError):
      info = json.loads(pathlib.Path(info_path).read_text("utf-8"))
      photos = sum(sum(map(int, split.get("shardLengths", []))) for split in info.get("splits", []))
      source = _metadata(os.path.dirname(info_path)).get("source")
      found.append(OtherBuild(version, photos, source if isinstance(source, str) else None))
  return sorted(found, key=lambda build: tfds.core.Version(build.version), reverse=True)


def _metadata(version_dir: str) -> dict[str, Any]:
  with contextlib.suppress(OSError, ValueError):
    metadata = json.loads(pathlib.Path(version_dir, "metadata.json").read_text("utf-8"))
    if isinstance(metadata, dict):
      return metadata
  return {}


def build_command(builder: tfds.core.DatasetBuilder) -> str:
  """The `tfds build` command that builds `builder`'s config, as it runs from any folder
  (`--imports` registers the builder). The manual dir is the one another config of the dataset
  in the same data dir was built from (`info.metadata["manual_dir"]`, the latest build's), else
  TFDS's default where it holds something, else `MANUAL_DIR`, to be replaced (`message` says
  so). A dataset that downloads its source itself gets none unless a sibling was built from one."""
  root = os.fspath(builder.data_dir_root)
  words = ["tfds", "build", builder.name, "--imports", type(builder).__module__.split(".")[0],
           "--config", builder.builder_config.name, "--data_dir", root]
  if builder.MANUAL_DOWNLOAD_INSTRUCTIONS:
    recorded = _recorded_manual_dir(builder)
    default = os.path.join(root, "downloads", "manual")
    if recorded:
      words += ["--manual_dir", recorded]
    elif recorded is None and not getattr(builder, "DOWNLOADS_ITS_SOURCE", False):
      filled = os.path.isdir(default) and os.listdir(default)
      words += ["--manual_dir", default if filled else MANUAL_DIR]
  return shlex.join(words)


def _recorded_manual_dir(builder: tfds.core.DatasetBuilder) -> str | None:
  """The manual dir the latest built config of the dataset was built from ("" for a downloaded
  source), where it still exists; None where no config records one."""
  builds = []
  pattern = os.path.join(glob.escape(os.fspath(builder.data_dir_root)), builder.name, "*", "*",
                         "metadata.json")
  for path in glob.glob(pattern):
    metadata = _metadata(os.path.dirname(path))
    manual_dir = metadata.get("manual_dir")
    if "manual_dir" in metadata and (not manual_dir or os.path.isdir(manual_dir)):
      builds.append((os.path.getmtime(path), manual_dir or ""))
  return max(builds)[1] if builds else None


def message(builder: tfds.core.DatasetBuilder, name: str | None = None, *,
            manual_dir: str | None = None) -> str:
  """What a reader of `builder`'s config, not built in its data dir, is told: the other versions
  built there and how to read them, and the command that builds it. `name` is the config as the
  reader named it; `manual_dir`, where TFDS looked for the download and found nothing."""
  name = name or f"{builder.name}/{builder.builder_config.name}"
  root = os.fspath(builder.data_dir_root)
  lines = [f"{name} is not built in {root} at version {builder.version}"
           + (f", and {manual_dir} holds no download to build it from." if manual_dir else ".")]
  others = other_builds(builder)
  config = f"{builder.name}/{builder.builder_config.name}"
  for other in others:
    lines.append(f"It holds {config} at version {other.version} ({other.photos:,} photos), built "
                 f"by an earlier version of the package{_changes(builder, other.version)}.")
  if others:
    lines.append(f"Read it as it is: {config}:{others[0].version} (tfds.load and every tool of the "
                 "package accept NAME/CONFIG:VERSION), or build this version:")
  else:
    lines[0] += " Build it first:"
  command = build_command(builder)
  lines.append(f"  {command}")
  if MANUAL_DIR in shlex.split(command):
    lines.append(f"(replace {MANUAL_DIR} by the folder holding the download: see "
                 f"`tfds.builder_cls({builder.name!r}).MANUAL_DOWNLOAD_INSTRUCTIONS`)")
  if others:
    lines.append(_cost(builder, others[0]))
  return "\n".join(lines)


def _changes(builder: tfds.core.DatasetBuilder, version: str) -> str:
  """What the release notes since `version` say of the splits."""
  notes = getattr(type(builder), "RELEASE_NOTES", None) or {}
  since = [v for v in notes if tfds.core.Version.is_valid(v)
           and tfds.core.Version(version) < tfds.core.Version(v) <= builder.version]
  may = [v for v in since if notes[v].startswith("Splits may change")]
  changed = [v for v in since if notes[v].startswith("Splits") and v not in may]
  if not since:
    return ""
  if not changed and not may:
    return f"; the release notes of {', '.join(since)} keep its splits"
  said = [f"changed in {', '.join(changed)}"] if changed else []
  said += [f"may have changed in {', '.join(may)}"] if may else []
  return (f"; the splits {' and '.join(said)} "
          f"(`tfds.builder_cls({builder.name!r}).RELEASE_NOTES`)")


def _cost(builder: tfds.core.DatasetBuilder, other: OtherBuild) -> str:
  """Whether the saved scan is reused by a build of this version, and about how long it takes."""
  workers = parallel.default_workers()
  saved = (scan_cache.saved_scan(_scans_dir(builder), type(builder), other.source)
           if other.source else None)
  reused = saved is not None and saved.exists()
  seconds = other.photos * (_RECORDS_CPU_SECONDS if reused else _SCAN_CPU_SECONDS) / workers
  scan = ("reuses the saved scan" if reused else
          f"scans its {other.photos:,} photos again (no saved scan of them is of this version)")
  return f"The build {scan}: {_duration(seconds)} on {workers} cores."


def _scans_dir(builder: tfds.core.DatasetBuilder) -> str:
  return os.path.join(os.fspath(builder.data_dir_root), "downloads", "scans")


def _duration(seconds: float) -> str:
  if seconds < 60:
    return "under a minute"
  minutes = round(seconds / 60)
  return (f"roughly {minutes} minute{'s' * (minutes > 1)}" if minutes < 120
          else f"roughly {minutes / 60:.0f} hours")

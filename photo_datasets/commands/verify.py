"""Checks that TFDS reads a copy of a built config as it was built: its fingerprint.

  python -m photo_datasets verify NAME [--data_dir DIR] [--fingerprint SHA256]
  python -m photo_datasets verify FOLDER [--fingerprint SHA256]

makes the config's fingerprint again from what the copy says (`korean_food/224`
in `--data_dir`, or the config's own folder, the one holding its
`dataset_info.json`, wherever a copy lies): its `dataset_info.json` as TFDS
reads it (the splits, their shard lengths and record files, and the fields
that change what a reader gets), and the SHA-256 of every record file and
features file it reads (`catalog.fingerprint`). It compares them with the
record its build kept in `metadata.json` and, with `--fingerprint`, with the
fingerprint given (a colleague's, say). It prints the fingerprint and exits 0
when the copy is intact and is that build; otherwise it names each file and
field that differs and exits 1. A copy without `metadata.json` (all that
`tfds.load` needs is there without it) can only be checked against
`--fingerprint`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

INFO_FILE = "dataset_info.json"
METADATA_FILE = "metadata.json"


def _folder_metadata(folder: str) -> dict[str, Any] | None:
  """The `metadata.json` in a built config's folder (a local path or a bucket's), read as
  JSON; None where it has none."""
  from etils import epath

  path = epath.Path(folder) / METADATA_FILE
  if not path.exists() and (epath.Path(folder) / INFO_FILE).exists():
    return None
  try:
    metadata = json.loads(path.read_text(encoding="utf-8"))
  except (OSError, ValueError) as e:
    sys.exit(f"error: {folder} is not a built config's folder: cannot read {path} ({e})")
  if not isinstance(metadata, dict):
    sys.exit(f"error: {path} is not a JSON object")
  return metadata


def _metadata(name: str, data_dir: str | None) -> tuple[str, dict[str, Any] | None]:
  """The config's folder (`built.locate`'s rule; a folder anywhere) and its `metadata.json`
  (None where it has none)."""
  from photo_datasets.reading import built

  if os.path.isfile(os.path.join(name, METADATA_FILE)):  # A build's record, whatever else is there.
    return name, _folder_metadata(name)
  try:
    found = built.version_folder(name, data_dir)
    folder = os.fspath(found if found is not None else built.open_built(name, data_dir).data_path)
  except built.NotBuiltError as e:
    sys.exit(f"error: {e}")
  return folder, _folder_metadata(folder)


def _build_command(folder: str) -> str:
  """The command that builds the package's version of the config in `folder`, as a line to
  add to a message about a build by an earlier version; "" where it cannot be said (a
  folder outside TFDS's layout, a dataset not installed)."""
  import tensorflow_datasets as tfds

  from photo_datasets.building import unbuilt
  from photo_datasets.reading import built

  try:
    located = built.locate(folder)
    built.open_built(located.name, located.data_dir)  # Imports the dataset's package.
    builder = tfds.builder(located.name.split(":")[0], data_dir=located.data_dir)
  except Exception:  # TFDS raises several kinds (not registered, unknown config).
    return ""
  return (f"\nThe package's version {builder.version} builds it with:\n"
          f"  {unbuilt.build_command(builder)}")


def _sha256(value: str) -> str:
  if not re.fullmatch(r"[0-9a-fA-F]{64}", value.strip()):
    raise argparse.ArgumentTypeError(f"a fingerprint is 64 hexadecimal digits, got {value!r}")
  return value.strip().lower()


def main(argv: list[str] | None = None) -> None:
  """`python -m photo_datasets verify NAME`: a built config checked against its fingerprint."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("name", help="a built config (e.g. korean_food/224) or its folder")
  parser.add_argument("--data_dir",
                      help="where it was built (default: TFDS's, ~/tensorflow_datasets)")
  parser.add_argument("--fingerprint", type=_sha256,
                      help="the fingerprint the copy should have (e.g. a colleague's); the only "
                           "check of a copy without metadata.json")
  args = parser.parse_args(argv)
  from photo_datasets.catalog import fingerprint

  folder, metadata = _metadata(args.name, args.data_dir)
  kept = (metadata or {}).get(fingerprint.METADATA_KEY)
  older = metadata is not None and (not isinstance(kept, dict) or "reader" not in kept)
  try:
    found = fingerprint.verify(folder, metadata, args.fingerprint,
                               progress=lambda line: print(line, file=sys.stderr, flush=True))
  except fingerprint.Mismatch as e:
    print(f"error: {e}{_build_command(folder) if older else ''}", file=sys.stderr, flush=True)
    sys.exit(1)
  if older:
    print(_build_command(folder).lstrip("\n"), file=sys.stderr, flush=True)
  given = "" if metadata is not None else " (the one given: without metadata.json, the only check)"
  print(f"{folder}: intact, fingerprint {found}{given}", flush=True)


if __name__ == "__main__":
  main()

"""Checks a built config against its fingerprint.

  python -m photo_datasets.verify NAME [--data_dir DIR] [--fingerprint SHA256]
  python -m photo_datasets.verify FOLDER [--fingerprint SHA256]

reads every record file and `features.json` of the config (`korean_food/224`
in `--data_dir`, or the config's own folder, the one holding its
`dataset_info.json`, wherever a copy lies) and compares their SHA-256 with
those its build kept (`catalog.fingerprint`). It prints the fingerprint and
exits 0 when the copy is intact and, with `--fingerprint`, is the build that
fingerprint names (a colleague's, say); otherwise it names each file that
differs and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any


def _metadata(name: str, data_dir: str | None) -> tuple[str, dict[str, Any]]:
  """The config's folder and its `info.metadata`."""
  if os.path.isdir(name):
    path = os.path.join(name, "metadata.json")
    try:
      with open(path, encoding="utf-8") as f:
        return name, json.load(f)
    except (OSError, ValueError) as e:
      sys.exit(f"error: {name} is not a built config's folder: cannot read {path} ({e})")
  from photo_datasets.reading import built  # Here: TensorFlow loads only for a config's name.

  try:
    builder = built.open_built(name, data_dir)
  except built.NotBuiltError as e:
    sys.exit(f"error: {e}")
  return os.fspath(builder.data_path), dict(builder.info.metadata)


def _sha256(value: str) -> str:
  if not re.fullmatch(r"[0-9a-fA-F]{64}", value.strip()):
    raise argparse.ArgumentTypeError(f"a fingerprint is 64 hexadecimal digits, got {value!r}")
  return value.strip().lower()


def main(argv: list[str] | None = None) -> None:
  """`python -m photo_datasets.verify NAME`: a built config checked against its fingerprint."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("name", help="a built config (e.g. korean_food/224) or its folder")
  parser.add_argument("--data_dir",
                      help="where it was built (default: TFDS's, ~/tensorflow_datasets)")
  parser.add_argument("--fingerprint", type=_sha256,
                      help="the fingerprint the copy should have (e.g. a colleague's)")
  args = parser.parse_args(argv)
  from photo_datasets.catalog import fingerprint

  folder, metadata = _metadata(args.name, args.data_dir)
  try:
    found = fingerprint.verify(folder, metadata, args.fingerprint,
                               progress=lambda line: print(line, file=sys.stderr, flush=True))
  except fingerprint.Mismatch as e:
    print(f"error: {e}", file=sys.stderr, flush=True)
    sys.exit(1)
  print(f"{folder}: intact, fingerprint {found}", flush=True)


if __name__ == "__main__":
  main()

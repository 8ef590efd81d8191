"""The build report page of a built config, written again.

  python -m photo_datasets report NAME [--data_dir DIR] [--out_dir DIR]   # e.g. korean_food/224

writes the config's report page and `quality.csv` again
(`catalog.report_page`), also for a config built before the page existed, and
prints the page's path: beside the config's records, or in `--out_dir` (a data
dir that cannot be written, a copy to look at elsewhere). What a build reports:
`catalog.build_report`.
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> None:
  """`python -m photo_datasets report NAME --data_dir DIR`: the page of a built config, again."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("name", help="a built config, e.g. korean_food/224 "
                      "(the dataset's default config without /)")
  parser.add_argument("--data_dir",
                      help="where it was built (default: TFDS's, ~/tensorflow_datasets)")
  parser.add_argument("--out_dir",
                      help="where to write the page (default: beside the config's records)")
  args = parser.parse_args(argv)
  # Imported here: TensorFlow loads only when the command runs.
  from photo_datasets.catalog import report_page
  from photo_datasets.reading import built

  try:
    builder = built.open_built(args.name, args.data_dir)
  except built.NotBuiltError as e:
    sys.exit(f"error: {e}")
  out_dir = args.out_dir or os.fspath(builder.data_path)
  try:
    os.makedirs(out_dir, exist_ok=True)
    path = report_page.write(builder, out_dir=out_dir)
  except OSError as e:
    sys.exit(f"error: cannot write the report page in {out_dir} ({e.strerror or e}): "
             + ("give another folder with --out_dir DIR." if not args.out_dir
                else "give a folder you can write to."))
  print(path, file=sys.stdout, flush=True)


if __name__ == "__main__":
  main()

"""The build report page of a built config, written again.

  python -m photo_datasets.report NAME [--data_dir DIR]   # e.g. korean_food/224

writes the config's report page and `quality.csv` again
(`catalog.report_page`), also for a config built before the page existed, and
prints the page's path. What a build reports: `catalog.build_report`.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> None:
  """`python -m photo_datasets.report NAME --data_dir DIR`: the page of a built config, again."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("name", help="a built config, e.g. korean_food/224 (the dataset's default config without /)")
  parser.add_argument("--data_dir", help="where it was built (default: TFDS's, ~/tensorflow_datasets)")
  args = parser.parse_args(argv)
  from photo_datasets.catalog import report_page  # Here: TensorFlow loads only when the command runs.
  from photo_datasets.reading import built

  try:
    builder = built.open_built(args.name, args.data_dir)
  except built.NotBuiltError as e:
    parser.error(str(e))
  print(report_page.write(builder), file=sys.stdout, flush=True)


if __name__ == "__main__":
  main()

"""`python -m korean_food repair kfood.zip`: puts a kfood.zip joined in name order in order,
in place."""

from __future__ import annotations

import argparse

from korean_food import download, repair


def main() -> None:
  parser = argparse.ArgumentParser(prog="python -m korean_food", description=__doc__)
  parser.add_argument("command", choices=["repair"])
  parser.add_argument("zip", help="the kfood.zip to repair")
  args = parser.parse_args()
  try:
    print(repair.repair(args.zip))
  except (download.DownloadError, OSError) as e:
    raise SystemExit(str(e)) from None


if __name__ == "__main__":
  main()

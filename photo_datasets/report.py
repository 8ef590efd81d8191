"""Moved: `photo_datasets.commands.report`, run as `python -m photo_datasets report`.

This old path runs it still, and imports it."""

import sys

from photo_datasets.commands import report

if __name__ == "__main__":
  report.main()
else:  # The moved module itself, private names and all, for code that imports the old path.
  sys.modules[__name__] = report

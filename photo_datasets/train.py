"""Moved: `photo_datasets.commands.train`, run as `python -m photo_datasets train`.

This old path runs it still, and imports it."""

import sys

from photo_datasets.commands import train

if __name__ == "__main__":
  train.main()
else:  # The moved module itself, private names and all, for code that imports the old path.
  sys.modules[__name__] = train

"""Moved: `photo_datasets.commands.show`, run as `python -m photo_datasets show`.

This old path runs it still, and imports it."""

import sys

from photo_datasets.commands import show

if __name__ == "__main__":
  show.main()
else:  # The moved module itself, private names and all, for code that imports the old path.
  sys.modules[__name__] = show

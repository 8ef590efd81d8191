"""Moved: `photo_datasets.commands.demo`, run as `python -m photo_datasets demo`.

This old path runs it still, and imports it."""

import sys

from photo_datasets.commands import demo

if __name__ == "__main__":
  demo.main()
else:  # The moved module itself, private names and all, for code that imports the old path.
  sys.modules[__name__] = demo

"""Moved: `photo_datasets.commands.verify`, run as `python -m photo_datasets verify`.

This old path runs it still, and imports it."""

import sys

from photo_datasets.commands import verify

if __name__ == "__main__":
  verify.main()
else:  # The moved module itself, private names and all, for code that imports the old path.
  sys.modules[__name__] = verify

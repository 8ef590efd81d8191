"""Moved: `photo_datasets.reading.random_access`, run as `python -m photo_datasets random_access`.

This old path runs it still, and imports it."""

import sys

from photo_datasets.reading import random_access

if __name__ == "__main__":
  random_access.main()
else:  # The moved module itself, private names and all, for code that imports the old path.
  sys.modules[__name__] = random_access

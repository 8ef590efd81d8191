"""Moved: `photo_datasets.reading.data_service`, run as `python -m photo_datasets data_service`.

This old path runs it still, and imports it."""

import sys

from photo_datasets.reading import data_service

if __name__ == "__main__":
  data_service.main()
else:  # The moved module itself, private names and all, for code that imports the old path.
  sys.modules[__name__] = data_service

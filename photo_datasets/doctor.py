"""Moved: `photo_datasets.commands.doctor`, run as `python -m photo_datasets doctor`.

This old path runs it still, and imports it."""

import sys

from photo_datasets.commands import doctor

if __name__ == "__main__":
  doctor.main()
else:  # The moved module itself, private names and all, for code that imports the old path.
  sys.modules[__name__] = doctor

"""Moved to `photo_datasets.reading.pipeline`; this old path imports it."""

import sys

from photo_datasets.reading import pipeline

# The moved module itself, private names and all, for code that imports the old path.
sys.modules[__name__] = pipeline

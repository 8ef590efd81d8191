"""Moved to `photo_datasets.commands.models`; this old path imports it."""

import sys

from photo_datasets.commands import models

# The moved module itself, private names and all, for code that imports the old path.
sys.modules[__name__] = models

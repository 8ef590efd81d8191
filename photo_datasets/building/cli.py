"""What the package changes in TFDS's `tfds build` command, and only there.

`tfds build` runs the builders in its own process, so what the package does
to that process it may do only where TFDS's CLI is the program running
(`is_tfds_cli`): a user who calls `download_and_prepare` from Python keeps
their own excepthook, progress bars and logging. There, `quiet` is installed
when a builder module is imported (`tfds build --imports`):

* a refusal (a `ValueError` or `OSError` the package raises on purpose, such
  as a cut download, a full disk, a data dir that cannot be written, a bad
  config name) prints as its last line only, as the traceback would have
  ended; an error of any other kind, a bug, keeps its whole traceback, and
  `PHOTO_DATASETS_TRACEBACK=1` keeps it for all;
* Ctrl-C prints one line (the worker processes ignore it: `parallel`);
* TFDS's progress bars are off when its output is not a terminal (a log
  file, a pipe, CI), as tqdm's own `disable=None` would have it; in a
  terminal they redraw in place and stay.

TensorFlow's start-up lines are printed as TFDS's CLI imports TensorFlow,
before any module of the package is imported: only the environment can cut
them (`TF_CPP_MIN_LOG_LEVEL=2`, docs/building.md).
"""

from __future__ import annotations

import linecache
import os
import sys
import traceback
import types

import tensorflow_datasets as tfds

# The packages whose `raise` statements refuse: this one and each dataset's (`quiet`).
_PACKAGES = {__name__.split(".")[0]}
TRACEBACK_ENV = "PHOTO_DATASETS_TRACEBACK"
_installed = False


def is_tfds_cli() -> bool:
  """Whether this process is TFDS's `tfds` command."""
  return (os.path.basename(sys.argv[0]) == "tfds" if sys.argv else False) and \
      "tensorflow_datasets.scripts.cli.main" in sys.modules


def is_refusal(error: BaseException) -> bool:
  """A `ValueError` or `OSError` raised by a `raise` statement of the package's own code: a
  message for the user, not a bug."""
  if not isinstance(error, (ValueError, OSError)) or error.__traceback__ is None:
    return False
  tb = error.__traceback__
  while tb.tb_next is not None:
    tb = tb.tb_next
  package = str(tb.tb_frame.f_globals.get("__name__", "")).split(".")[0]
  return package in _PACKAGES and linecache.getline(
      tb.tb_frame.f_code.co_filename, tb.tb_lineno).lstrip().startswith("raise ")


def _excepthook(kind: type[BaseException], error: BaseException,
                tb: types.TracebackType | None) -> None:
  if os.environ.get(TRACEBACK_ENV) != "1":
    if isinstance(error, KeyboardInterrupt):
      print("\nInterrupted. Nothing half-built is kept: the next build of the config removes "
            "what this one left and starts again.", file=sys.stderr)
      return
    if is_refusal(error):
      print("".join(traceback.format_exception_only(kind, error)).rstrip(), file=sys.stderr)
      return
  sys.__excepthook__(kind, error, tb)


def quiet(package: str) -> None:
  """Installs the above, once, where TFDS's CLI runs; `raise` statements of `package` (a
  dataset's) refuse."""
  global _installed
  _PACKAGES.add(package)
  if _installed or not is_tfds_cli():
    return
  _installed = True
  sys.excepthook = _excepthook
  if not sys.stderr.isatty():
    tfds.disable_progress_bar()

"""The SDK worker process `FnApiRunner` starts for a build: Beam's own worker,
without the warning Beam's import logs where `google-apitools` is not installed.

Beam logs that warning through the root logger before the worker has a log
handler of its own. Python then gives the root logger a handler that prints to
stderr, which also prints the worker's next line (`Logging handler created`)
and from then on each of its lines beside the runner's copy. Here the import's
other warnings still print; once Beam is imported the root logger is left as
a Beam with `google-apitools` leaves it.

  python -m photo_datasets.building.beam_worker  (as `beam_logs.runner_for` starts it)
"""

from __future__ import annotations

import logging
import sys

_NO_APITOOLS = "apitools not found"


def _not_apitools(record: logging.LogRecord) -> bool:
  return not record.getMessage().startswith(_NO_APITOOLS)


def main() -> None:
  root = logging.getLogger()
  while_importing = logging.StreamHandler()
  while_importing.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
  while_importing.addFilter(_not_apitools)
  root.addHandler(while_importing)
  try:
    from apache_beam.runners.worker import sdk_worker_main
  finally:
    root.removeHandler(while_importing)
  sdk_worker_main.main(sys.argv)


if __name__ == "__main__":
  main()

"""A Beam build as quiet as a local one, unless its options ask for more.

Imported only when a build runs on Beam. Beam's INFO lines go to the level of
the build's `default_sdk_harness_log_level` option (WARNING where unset), in
this process and in the SDK workers: `FnApiRunner` passes no options on to the
worker processes it starts, so a runner named `FnApiRunner` in the options is
made here with the options its workers read (`runner_for`); its worker
processes start as `beam_worker`, without Beam's import-time warning. Lines that say
nothing to the person building are left out: TFDS's INFO lines of each Beam
split (which a local build does not print), and the SDK workers' warning that
they have no `semi_persistent_directory` (true of every local worker).
"""

from __future__ import annotations

import logging
import shlex
import sys
from typing import Any

from apache_beam.options.pipeline_options import (
  DirectOptions,
  PipelineOptions,
  StandardOptions,
  WorkerOptions,
)

# TFDS's INFO lines of a Beam split, by the file that logs them.
_TFDS_BEAM_LINES = {
    "split_builder.py": ("Deterministic ordering is enabled", "Retrieving split info"),
    "writer.py": ("Writing ",),
}
_NO_SEMI_PERSISTENT = "No semi_persistent_directory found"
# The SDK worker's own logger (`sdk_worker_main`, run by `beam_worker`): its start-up warning.
_WORKER_OVERRIDES = {"apache_beam.runners.worker.sdk_worker_main": "ERROR"}
_WORKER = "photo_datasets.building.beam_worker"


def quiet(options: PipelineOptions | None, runner: Any) -> Any:
  """Sets the build's log levels; returns the runner to build with (`runner_for`).

  Args:
    options: the build's pipeline options, given `default_sdk_harness_log_level=WARNING`
      where they do not set it; None sets WARNING for this process's Beam loggers only.
    runner: the build's runner (`DownloadConfig.beam_runner`), or None for the options'.
  """
  level = "WARNING"
  if options is not None:
    harness = options.view_as(WorkerOptions)
    if harness.default_sdk_harness_log_level is None:
      harness.default_sdk_harness_log_level = level
    level = harness.default_sdk_harness_log_level
  beam_logger = logging.getLogger("apache_beam")
  if beam_logger.level == logging.NOTSET:
    beam_logger.setLevel(int(level) if str(level).isdecimal() else str(level).upper())
  if beam_logger.getEffectiveLevel() > logging.INFO:
    _add_once(logging.getLogger("absl"), _drop_tfds_beam_lines)
    _add_once(logging.getLogger("apache_beam.runners.portability.local_job_service"),
              _drop_no_semi_persistent)
  return runner_for(options, runner, level)


def runner_for(options: PipelineOptions | None, runner: Any, level: str) -> Any:
  """`runner`; where it is None and the options name `FnApiRunner`, one made with provision
  info that gives its worker processes the log level `level`, and that starts them as
  `beam_worker` where the options ask for worker processes (`direct_running_mode`, which
  the runner would otherwise read to start Beam's own)."""
  if runner is not None or options is None or options.view_as(StandardOptions).runner != (
      "FnApiRunner"):
    return runner
  from apache_beam.portability.api import beam_provision_api_pb2
  from apache_beam.runners.job import utils
  from apache_beam.runners.portability.fn_api_runner.fn_runner import (
    ExtendedProvisionInfo,
    FnApiRunner,
  )
  from apache_beam.transforms import environments

  worker_options = utils.dict_to_struct({"default_sdk_harness_log_level": str(level),
                                         "sdk_harness_log_level_overrides": _WORKER_OVERRIDES})
  info = beam_provision_api_pb2.ProvisionInfo(pipeline_options=worker_options)
  direct = options.view_as(DirectOptions)
  if direct.direct_running_mode != "multi_processing":
    return FnApiRunner(provision_info=ExtendedProvisionInfo(info))
  direct.direct_running_mode = None
  workers = environments.SubprocessSDKEnvironment.from_command_string(
      f"{shlex.quote(sys.executable)} -m {_WORKER}")
  return FnApiRunner(default_environment=workers, provision_info=ExtendedProvisionInfo(info))


def _add_once(logger: logging.Logger, drop: Any) -> None:
  if drop not in logger.filters:
    logger.addFilter(drop)


def _drop_tfds_beam_lines(record: logging.LogRecord) -> bool:
  starts = _TFDS_BEAM_LINES.get(record.filename)
  return not (starts and record.levelno <= logging.INFO and str(record.msg).startswith(starts))


def _drop_no_semi_persistent(record: logging.LogRecord) -> bool:
  return _NO_SEMI_PERSISTENT not in record.getMessage()

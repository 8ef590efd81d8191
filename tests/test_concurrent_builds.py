"""Builds at once on one data dir: one build of a config at a time (the second
waits, then reuses what the first built), one scan of a source for all configs,
and a lock left by a dead build taken over."""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import korean_food
from photo_datasets.building import disk
from photo_datasets.testing import build, read_examples

VERSION = str(korean_food.Builder.VERSION)

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"

# `tfds build` as the CLI runs it, its scan's save held until the file argv[1] appears, and its
# report page written slowly: a build waiting for it would find its records done and its page
# not yet written.
_HELD_BUILD = """
import os, sys, time
from photo_datasets.building import scan_cache
from photo_datasets.catalog import report_page
from tensorflow_datasets.scripts.cli import main
real, go = scan_cache.save_scan, sys.argv[1]
def held(*args):
  print("SCANNED", flush=True)
  while not os.path.exists(go):
    time.sleep(0.1)
  real(*args)
scan_cache.save_scan = held
real_write = report_page.write
def slow_write(*args, **kwargs):
  time.sleep(3)
  return real_write(*args, **kwargs)
report_page.write = slow_write
sys.argv = ["tfds", *sys.argv[2:]]
main.launch_cli()
"""


def _tfds_build(config: str, data_dir: pathlib.Path, *,
                held_until: pathlib.Path | None = None) -> subprocess.Popen[str]:
  args = ["build", "korean_food", "--imports", "korean_food", "--config", config,
          "--manual_dir", os.fspath(SAMPLE), "--data_dir", os.fspath(data_dir)]
  command = ([sys.executable, "-c", _HELD_BUILD, os.fspath(held_until), *args] if held_until
             else ["tfds", *args])
  return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PHOTO_DATASETS_WORKERS": "1"})


def _read_until(process: subprocess.Popen[str], text: str) -> str:
  assert process.stdout is not None
  seen = ""
  for line in process.stdout:
    seen += line
    if text in line:
      return seen
  raise AssertionError(f"never printed {text!r}:\n{seen[-3000:]}")


def _finish(process: subprocess.Popen[str], seen: str) -> str:
  out, _ = process.communicate(timeout=300)
  assert process.returncode == 0, (seen + out)[-3000:]
  return seen + out


def test_builds_at_once_wait_for_the_one_that_builds_and_share_its_scan(tmp_path):
  data_dir, go = tmp_path / "data", tmp_path / "go"
  first = _tfds_build("224", data_dir, held_until=go)
  second = other = None
  try:
    first_said = _read_until(first, "SCANNED")
    second = _tfds_build("224", data_dir)
    second_said = _read_until(second, "waiting for it to end")
    other = _tfds_build("64", data_dir)
    other_said = _read_until(other, "waiting to reuse its scan")
    go.touch()
    first_said, second_said, other_said = (
        _finish(first, first_said), _finish(second, second_said), _finish(other, other_said))
  finally:
    for process in (first, second, other):
      if process is not None and process.poll() is None:
        process.kill()
        process.wait()

  holder = f"pid {first.pid} on {socket.gethostname()}, since "
  assert ("korean_food/224: another build of this config is running in "
          f"{data_dir / 'korean_food' / '224'} ({holder}") in second_said
  assert second_said.count("waiting for it to end") == 1
  assert f"korean_food/64: another build is scanning {SAMPLE} ({holder}" in other_said
  # One build's work: one scan (the first's; the 64 reuses it), one set of records written,
  # reused by the second.
  assert "Reusing the scan" not in first_said and "Reusing the scan" in other_said
  assert "korean_food/224: train " in first_said and "korean_food/224: train " not in second_said
  assert "Reusing dataset korean_food" in second_said and "Reusing the scan" not in second_said
  assert "SplitInfo num_examples=" in second_said  # Its info is the build's it reused.
  # The page is the first build's, with its build time: the waiting build left it as it was.
  assert "wrote the missing report page" not in second_said
  page = (data_dir / "korean_food" / "224" / VERSION / "report.html").read_text(encoding="utf-8")
  assert "s (scan and conversion)" in page and \
      "not recorded (this page was written after" not in page
  config_dir = data_dir / "korean_food" / "224"
  assert sorted(p.name for p in config_dir.iterdir()) == [".photo_datasets.lock", VERSION]
  assert not list((data_dir / "downloads" / "scans").glob("*.lock"))

  alone = build("korean_food/224", tmp_path / "alone", SAMPLE, workers=1)
  both = build("korean_food/224", data_dir, SAMPLE, workers=1)
  assert read_examples(both) == read_examples(alone)
  assert sorted(p.name for p in (config_dir / VERSION).iterdir()) == sorted(
      p.name for p in (tmp_path / "alone" / "korean_food" / "224" / VERSION).iterdir())
  small = build("korean_food/64", tmp_path / "alone", SAMPLE, workers=1)
  assert read_examples(build("korean_food/64", data_dir, SAMPLE, workers=1)) == read_examples(small)


# Holds a config's lock and says so; then waits for a line on stdin, or kills itself where argv[2]
# says.
_HOLDER = """
import os, signal, sys
from photo_datasets.building import disk
with disk.config_lock(sys.argv[1]) as held:
  print("HELD" if held else "NOT HELD", flush=True)
  if sys.argv[2] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
  sys.stdin.readline()
"""


def _holder(config_dir: pathlib.Path, then: str) -> subprocess.Popen[str]:
  holder = subprocess.Popen([sys.executable, "-c", _HOLDER, os.fspath(config_dir), then],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
  assert holder.stdout is not None and holder.stdout.readline() == "HELD\n"
  return holder


def test_a_second_holder_waits_and_is_told_once_who_holds_the_config(tmp_path):
  config_dir = tmp_path / "korean_food" / "224"
  holder = _holder(config_dir, "wait")
  told: list[str] = []

  def release_soon(holding: str) -> None:
    told.append(holding)
    assert holder.stdin is not None
    holder.stdin.write("\n")
    holder.stdin.flush()

  started = time.monotonic()
  with disk.config_lock(os.fspath(config_dir), release_soon) as held:
    assert held and holder.wait(timeout=60) == 0
  assert len(told) == 1 and told[0].startswith(
      f"pid {holder.pid} on {socket.gethostname()}, since ")
  assert time.monotonic() - started < 60
  assert (config_dir / ".photo_datasets.lock").read_text() == ""  # Let go: nobody is named.


def test_the_lock_of_a_killed_build_is_taken_over_at_once(tmp_path):
  config_dir = tmp_path / "korean_food" / "224"
  killed = _holder(config_dir, "kill")
  assert killed.wait(timeout=60) == -9
  waited: list[str] = []
  taken: list[str] = []
  with disk.config_lock(os.fspath(config_dir), waited.append, taken.append) as held:
    assert held and not waited
  assert len(taken) == 1 and taken[0].startswith(f"pid {killed.pid} on ")


def test_a_config_folder_that_cannot_be_written_only_skips_the_cleanup(tmp_path):
  (tmp_path / "not_a_folder").write_text("")
  with disk.config_lock(os.fspath(tmp_path / "not_a_folder" / "64")) as held:
    assert not held  # As for a read-only copy of a built dataset: it still loads.


def test_ctrl_c_during_tfds_build_is_one_line(tmp_path):
  go = tmp_path / "never"
  build_process = _tfds_build("224", tmp_path / "data", held_until=go)
  try:
    said = _read_until(build_process, "SCANNED")
    build_process.send_signal(signal.SIGINT)
    out, _ = build_process.communicate(timeout=120)
  finally:
    if build_process.poll() is None:
      build_process.kill()
  said += out
  assert build_process.returncode != 0
  assert "Traceback" not in said and "KeyboardInterrupt" not in said, said[-3000:]
  assert said.rstrip().endswith("Interrupted. Nothing half-built is kept: the next build of the "
                                "config removes what this one left and starts again.")

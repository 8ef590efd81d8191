"""Builds on every core: the same dataset whatever the worker count, and a
worker process that dies costs only the photo that killed it."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
import tensorflow_datasets as tfds

import flowers_dataset
import korean_food
from photo_datasets.photos import images
from photo_datasets.testing import build, read_examples

KFOOD_SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"
FLOWERS_SAMPLE = pathlib.Path(flowers_dataset.__file__).parent / "sample"


def written_files(builder) -> dict[str, bytes]:
  """Every record file and the metadata of a built config, by name."""
  folder = pathlib.Path(builder.data_dir)
  return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
          if ".tfrecord-" in p.name or p.name == "metadata.json"}


@pytest.mark.parametrize("name, manual_dir", [
    ("korean_food/64", KFOOD_SAMPLE),
    ("korean_food/full", KFOOD_SAMPLE),
    ("flowers_dataset/32", FLOWERS_SAMPLE),
])
def test_any_worker_count_writes_the_same_bytes(tmp_path, name, manual_dir):
  one = build(name, tmp_path / "one", manual_dir, workers=1)
  three = build(name, tmp_path / "three", manual_dir, workers=3)
  assert one.workers == 1 and three.workers == 3
  files = written_files(one)
  assert len([f for f in files if ".tfrecord-" in f]) == 3 and "metadata.json" in files
  assert written_files(three) == files
  assert ({s: i.num_examples for s, i in three.info.splits.items()}
          == {s: i.num_examples for s, i in one.info.splits.items()})


def test_workers_come_from_the_environment_and_are_checked(monkeypatch):
  monkeypatch.setenv("PHOTO_DATASETS_WORKERS", "5")
  assert tfds.builder("korean_food/64").workers == 5
  assert tfds.builder("korean_food/64", workers=2).workers == 2
  with pytest.raises(ValueError, match="workers must be a whole number >= 1, got 0"):
    tfds.builder("korean_food/64", workers=0)


def _flowers(tmp_path) -> tuple[pathlib.Path, bytes, str]:
  manual = tmp_path / "manual"
  for label in ("daisy", "tulips"):
    shutil.copytree(FLOWERS_SAMPLE / "flower_photos" / label, manual / "flower_photos" / label)
  victim = sorted((manual / "flower_photos" / "tulips").iterdir())[3]
  return manual, victim.read_bytes(), f"tulips/{victim.name}"


def _kill_on(victim: bytes, real):
  def kill_or_run(data, *args, **kwargs):
    if data == victim:
      os.kill(os.getpid(), signal.SIGKILL)  # As the kernel's out-of-memory killer does.
    return real(data, *args, **kwargs)
  return kill_or_run


@pytest.mark.parametrize("scan_saved, reason", [
    # A first build converts in the scan, from the scan's decode.
    (False, "checking or converting it killed the worker process "
            "(out of memory or a decoder crash)"),
    # A build that reuses the saved scan converts in generation.
    (True, "conversion killed the worker process (out of memory or a decoder crash)"),
])
def test_a_worker_killed_while_converting_skips_that_photo(tmp_path, monkeypatch, scan_saved,
                                                          reason):
  manual, victim, victim_name = _flowers(tmp_path)
  if scan_saved:
    build("flowers_dataset/full", tmp_path / "data", manual, workers=2)
  monkeypatch.setattr(images, "encode_image", _kill_on(victim, images.encode_image))
  builder = build("flowers_dataset/64", tmp_path / "data", manual, workers=2)
  skipped = builder.info.metadata["skipped_files"]
  assert skipped == [{"file_name": victim_name, "reason": reason}]
  assert set(read_examples(builder)) == {
      f"{p.parent.name}/{p.name}" for p in manual.glob("*/*/*.jpg")} - {victim_name}


def test_a_worker_killed_while_scanning_skips_that_photo(tmp_path, monkeypatch):
  manual, victim, victim_name = _flowers(tmp_path)
  monkeypatch.setattr(images, "decode_and_inspect", _kill_on(victim, images.decode_and_inspect))
  builder = build("flowers_dataset/64", tmp_path / "data", manual, workers=2)
  assert builder.info.metadata["skipped_files"] == [{
      "file_name": victim_name,
      "reason": "checking or converting it killed the worker process "
                "(out of memory or a decoder crash)"}]
  assert len(read_examples(builder)) == 39


def _children(pid: int) -> set[int]:
  found: set[int] = set()
  for task in pathlib.Path(f"/proc/{pid}/task").glob("*"):
    found |= {int(child) for child in (task / "children").read_text().split()}
  return found


def _alive(pid: int) -> bool:
  try:
    state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
  except (FileNotFoundError, ProcessLookupError):
    return False
  return state not in ("Z", "X")  # A zombie has ended; only its exit status waits to be read.


# A build whose scan keeps its workers busy: each photo takes a minute.
_SLOW_BUILD = """
import sys, time
import flowers_dataset
from photo_datasets.photos import images
from photo_datasets import testing
real = images.decode_and_inspect
images.decode_and_inspect = lambda data: time.sleep(60) or real(data)
testing.build("flowers_dataset/64", sys.argv[1], sys.argv[2], workers=2)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_no_worker_outlives_a_build_whose_main_process_is_killed(tmp_path):
  manual, _, _ = _flowers(tmp_path)
  build_process = subprocess.Popen([sys.executable, "-c", _SLOW_BUILD, str(tmp_path / "data"),
                                    str(manual)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    deadline = time.monotonic() + 60
    while len(workers := _children(build_process.pid)) < 2:
      assert time.monotonic() < deadline and build_process.poll() is None, \
          "the build started no workers"
      time.sleep(0.2)
    assert all(_alive(pid) for pid in workers)
    # SIGKILL, as the out-of-memory killer does: no cleanup runs in the main process.
    build_process.kill()
    build_process.wait()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
      time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)], "workers outlived their build"
  finally:
    build_process.kill()


def _numbered(file_name: str) -> int | None:
  """`NNNN.jpg`'s number; None for the near copies' names."""
  stem = file_name.rsplit("/", 1)[-1].removesuffix(".jpg")
  return int(stem) if stem.isdigit() else None


def _flowers_with_near_copies() -> dict[str, bytes]:
  """24 sample flowers, numbered, and every kind of near copy of the first."""
  from photo_datasets.testing import duplicates

  photos = sorted((FLOWERS_SAMPLE / "flower_photos").glob("*/*.jpg"))[:24]
  files = {f"flowers/{p.parent.name}/{i:04d}.jpg": p.read_bytes() for i, p in enumerate(photos)}
  for kind, data in duplicates.near_copies(photos[0].read_bytes()).items():
    files[f"flowers/{photos[0].parent.name}/{kind}.jpg"] = data
  return files


def _scanned(files: dict[str, bytes], workers: int) -> tuple[list[Any], Any]:
  """The scan's photos of `files` on `workers`, and its report."""
  from photo_datasets.building import executors, scan
  from photo_datasets.catalog.build_report import BuildReport
  from photo_datasets.photos import records

  candidates = [records.Candidate(name, (name,), data) for name, data in sorted(files.items())]
  report = BuildReport()
  found = scan.scan(candidates, report, executor=executors.LocalExecutor(workers),
                    series_position=_numbered)
  return found, report


def test_the_near_copies_searched_in_parts_are_those_of_one_search(monkeypatch, tmp_path):
  """On many workers the near copies' search is shared out (`scan._ScanGroups`, a part a
  task): the same groups and splits as one task's, also where a part's worker dies (the main
  process searches again)."""
  from photo_datasets.building import scan
  from photo_datasets.photos import near_duplicates
  from photo_datasets.testing import duplicates

  files = _flowers_with_near_copies()
  # Pairs too, which one part alone may not find.
  for name in sorted(n for n in files if _numbered(n) is not None)[1:24:3]:
    files[name.replace(".jpg", "_resized.jpg")] = duplicates.near_copies(files[name])["resized_30"]
  expected, expected_report = _scanned(files, 1)
  assert len(expected_report.near_duplicates) == 9
  monkeypatch.setattr(scan, "_WORKERS_PER_NEAR_COPY_PART", 1)  # 3 workers: 3 parts.
  real = near_duplicates.groups
  searched = tmp_path / "parts"

  def groups_of_a_part(photos, *args, **kwargs):
    with searched.open("a") as parts:  # From the workers.
      parts.write(f"{kwargs.get('part')} of {kwargs.get('parts')}\n")
    return real(photos, *args, **kwargs)

  monkeypatch.setattr(near_duplicates, "groups", groups_of_a_part)
  found, report = _scanned(files, 3)
  assert sorted(searched.read_text().splitlines()) == ["0 of 3", "1 of 3", "2 of 3"]
  assert found == expected  # Every photo, with its split.
  assert report.near_duplicates == expected_report.near_duplicates
  assert report.series == expected_report.series
  main = os.getpid()

  def killed_in_part_one(photos, *args, **kwargs):
    if os.getpid() != main and kwargs.get("part") == 1:
      os.kill(os.getpid(), signal.SIGKILL)
    return real(photos, *args, **kwargs)

  monkeypatch.setattr(near_duplicates, "groups", killed_in_part_one)
  found, report = _scanned(files, 3)
  assert found == expected
  assert report.near_duplicates == expected_report.near_duplicates


def test_a_worker_killed_while_grouping_loses_no_photo_and_no_near_copy(monkeypatch):
  """The scan's groups are tasks of the pool too (`scan._ScanGroups`): a worker killed while
  grouping the near copies leaves them to the main process; one killed while finding a class's
  series costs that class its series, never a photo."""
  from photo_datasets.photos import near_duplicates, series

  files = _flowers_with_near_copies()

  def scanned(workers: int) -> tuple[list[str], Any]:
    found, report = _scanned(files, workers)
    return [p.file_name for p in found], report

  expected_names, expected = scanned(1)
  assert expected.near_duplicates and expected.near_duplicates[0]["files"][0].endswith("/0000.jpg")
  main = os.getpid()

  def killed_in_a_worker(real):
    def kill_or_run(*args, **kwargs):
      if os.getpid() != main:
        os.kill(os.getpid(), signal.SIGKILL)
      return real(*args, **kwargs)
    return kill_or_run

  monkeypatch.setattr(near_duplicates, "groups", killed_in_a_worker(near_duplicates.groups))
  monkeypatch.setattr(series, "groups", killed_in_a_worker(series.groups))
  names, report = scanned(2)
  assert names == expected_names
  assert report.near_duplicates == expected.near_duplicates
  assert report.series == []
  # Said, in the report and so the metadata: the splits are not those of a build that found them.
  (warning,) = [w for w in report.warnings if w.startswith("no series were looked for")]
  classes = sorted({name.split("/")[-2] for name in files})
  assert f"in {len(classes)} class folder(s) ({', '.join(classes)}): the task killed" in warning

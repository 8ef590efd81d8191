"""What a build needs of the disk and what an interrupted build leaves on it
(photo_datasets/building/disk.py): the space checked before the conversion, a disk
that fills up anyway, and the leftovers of a killed build removed by the next."""

from __future__ import annotations

import errno
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest
from tensorflow_datasets.core import file_adapters

import flowers_dataset
from photo_datasets.building import disk, tfrecord_files
from photo_datasets.testing import build, read_examples

FLOWERS = pathlib.Path(flowers_dataset.__file__).parent / "sample"


def _config_dir(data_dir: pathlib.Path, name: str) -> pathlib.Path:
  return data_dir / name.replace("/", os.sep)


# The README's figures, restated: records of `full` are the source photos and
# of a sized config 0.55 bytes a pixel, a tenth on top for TFDS's shuffle,
# the images a first sized build converts in the scan as much again, and 8 MiB.
SLACK = 8 << 20


def _records(image_size: int | None, photos: int, source_bytes: int) -> int:
  return (int(source_bytes * 1.1) if image_size is None
          else int(photos * image_size * image_size * 0.55 * 1.1))


def _sample_with_a_broken_file(root: pathlib.Path) -> tuple[pathlib.Path, list[pathlib.Path]]:
  """The flowers sample plus a truncated photo: the check before the scan
  counts it (an image file), the one after does not (skipped)."""
  shutil.copytree(FLOWERS, root)
  (root / "flower_photos" / "daisy" / "broken.jpg").write_bytes(b"\xff\xd8\xff" + b"\0" * 5000)
  return root, sorted((root / "flower_photos").glob("*/*.jpg"))


class _Disk:
  """`disk.free_bytes` with a figure per call (the last repeats), and every check's demand."""

  def __init__(self, monkeypatch: pytest.MonkeyPatch, *free: int):
    self.free, self.asked = list(free), []
    real_preflight = disk.preflight
    monkeypatch.setattr(disk, "free_bytes",
                        lambda path: self.free.pop(0) if len(self.free) > 1 else self.free[0])
    monkeypatch.setattr(disk, "preflight",
                        lambda name, data_dir, needed: self.asked.append(needed) or
                        real_preflight(name, data_dir, needed))


@pytest.mark.parametrize("config", ["224", "full"])
def test_the_check_before_the_scan_asks_for_the_estimate_and_stops_one_byte_short(
    tmp_path, monkeypatch, config):
  manual, files = _sample_with_a_broken_file(tmp_path / "manual")
  size = None if config == "full" else int(config)
  records = _records(size, len(files), sum(f.stat().st_size for f in files))
  # 224 converts in the scan: its images wait on disk.
  needed = records + (records if size else 0) + SLACK
  checks = _Disk(monkeypatch, needed - 1)
  start = time.monotonic()
  with pytest.raises(disk.NotEnoughDiskSpace) as raised:
    build(f"flowers_dataset/{config}", tmp_path / "data", manual)
  assert time.monotonic() - start < 30
  assert checks.asked == [needed]
  assert str(raised.value) == (
      f"[Errno 28] Not enough disk space to build flowers_dataset/{config}: "
      f"it needs about {needed / 1e6:.0f} MB in {tmp_path / 'data'} "
      "(its records, and their temporary copies while they are sorted into shards), and "
      f"{(needed - 1) / 1e6:.0f} MB is free there. "
      "Free some space, build into another folder with --data_dir, "
      "or build fewer configs (--config 224 needs far less than full).")
  # Nothing half-built is left, and nothing was scanned (no saved scan).
  assert not list(_config_dir(tmp_path / "data", f"flowers_dataset/{config}").glob("*/*.tfrecord*"))
  assert not list(_config_dir(tmp_path / "data", f"flowers_dataset/{config}").glob("incomplete.*"))
  assert not list((tmp_path / "data").rglob("scans/*.json"))


def test_with_exactly_enough_space_the_build_runs_and_checks_again_from_the_scan(
    tmp_path, monkeypatch):
  manual, files = _sample_with_a_broken_file(tmp_path / "manual")
  photos = [f for f in files if f.name != "broken.jpg"]
  records = _records(224, len(files), 0)
  before_scan = 2 * records + SLACK
  # The converted images are on disk: the records are left.
  after_scan = _records(224, len(photos), 0) + SLACK
  checks = _Disk(monkeypatch, before_scan)
  builder = build("flowers_dataset/224", tmp_path / "data", manual)
  assert checks.asked == [before_scan, after_scan]
  assert sum(split.num_examples for split in builder.info.splits.values()) == len(photos)

  # `full` from the saved scan: one check, from the scan's photos (the broken file is not one).
  full_needed = _records(None, len(photos), sum(f.stat().st_size for f in photos)) + SLACK
  checks = _Disk(monkeypatch, full_needed - 1)
  with pytest.raises(disk.NotEnoughDiskSpace, match=f"it needs about {full_needed / 1e6:.0f} MB"):
    build("flowers_dataset/full", tmp_path / "data", manual)
  assert checks.asked == [full_needed]
  checks = _Disk(monkeypatch, full_needed)
  build("flowers_dataset/full", tmp_path / "data", manual)
  assert checks.asked == [full_needed]


def test_the_check_after_the_scan_stops_the_build_before_the_records(tmp_path, monkeypatch):
  """Space taken between the two checks (by the scan's converted images, or anything else)."""
  checks = _Disk(monkeypatch, 10**12, 1_000_000)
  with pytest.raises(disk.NotEnoughDiskSpace, match="and 1 MB is free there"):
    build("flowers_dataset/224", tmp_path / "data", FLOWERS)
  assert len(checks.asked) == 2
  # Scanned, and the scan kept for next time ...
  assert list((tmp_path / "data").rglob("scans/*.json"))
  assert not list((tmp_path / "data").rglob("*.tfrecord*"))  # ... but no record written.


def test_a_writer_out_of_space_ends_the_build_in_the_same_words(tmp_path, monkeypatch):
  """ENOSPC from the record writers (the workers' and TFDS's), as a full disk raises it, where no
  small filesystem can be mounted."""
  def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")

  monkeypatch.setattr(file_adapters.TfRecordFileAdapter, "write_examples", full_disk)
  monkeypatch.setattr(tfrecord_files, "write", full_disk)
  with pytest.raises(disk.NotEnoughDiskSpace) as raised:
    build("flowers_dataset/full", tmp_path / "data", FLOWERS)
  assert str(raised.value).startswith("[Errno 28] The disk filled up. "
                                      "Not enough disk space to build "
                                      "flowers_dataset/full: it needs about")
  # As TFDS passes the writer's on.
  assert "[Errno 28] No space left on device" in str(raised.value.__cause__)
  assert not list((tmp_path / "data").rglob("*.tfrecord*"))


def test_the_estimate_is_close_to_what_a_build_writes(samples):
  for config in ("224", "full"):
    builder = samples.builder(f"flowers_dataset/{config}")
    written = sum(p.stat().st_size for p in pathlib.Path(builder.data_dir).glob("*.tfrecord*"))
    photos = sum(split.num_examples for split in builder.info.splits.values())
    source = sum(p.stat().st_size for p in (FLOWERS / "flower_photos").glob("*/*.jpg"))
    estimate = disk.stored_bytes(builder.builder_config.image_size, photos, source)
    assert estimate == _records(builder.builder_config.image_size, photos, source)
    assert written <= estimate <= 1.6 * written, config


def _tmpfs(path: pathlib.Path, size: str) -> pathlib.Path:
  path.mkdir()
  if not sys.platform.startswith("linux") or subprocess.run(
      ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
      capture_output=True).returncode:
    pytest.skip("cannot mount a small filesystem here (needs Linux and root)")
  return path


def test_a_disk_that_fills_up_anyway_ends_the_build_in_the_same_words(tmp_path, monkeypatch):
  data_dir = _tmpfs(tmp_path / "small", "2m")  # The sample's full config needs ~6 MB.
  try:
    # The check is fooled: the disk fills up.
    monkeypatch.setattr(disk, "free_bytes", lambda path: 10**12)
    with pytest.raises(disk.NotEnoughDiskSpace) as raised:
      build("flowers_dataset/full", data_dir, FLOWERS, download_dir=tmp_path / "downloads")
    assert str(raised.value).startswith("[Errno 28] The disk filled up. "
                                        "Not enough disk space to build "
                                        "flowers_dataset/full: it needs about")
    assert not list(data_dir.rglob("*.tfrecord*"))  # Nothing half-built is left behind.
  finally:
    subprocess.run(["umount", str(data_dir)], check=True)


# A build killed (SIGKILL) in the middle of writing its train split.
_KILLED_BUILD = """
import sys, time
import flowers_dataset
from photo_datasets.building import tfrecord_files
from photo_datasets import testing
real = tfrecord_files.write
def slow(path, records):
  if "-train." in path:
    print("WRITING", flush=True)
    time.sleep(600)
  return real(path, records)
tfrecord_files.write = slow
testing.build("flowers_dataset/64", sys.argv[1], sys.argv[2], workers=2)
"""


def test_the_next_build_removes_and_reports_what_a_killed_build_left(tmp_path, capsys):
  data_dir = tmp_path / "data"
  killed = subprocess.Popen([sys.executable, "-c", _KILLED_BUILD, str(data_dir), str(FLOWERS)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
  try:
    assert killed.stdout is not None
    assert any("WRITING" in line for line in killed.stdout), \
        "the build never reached its train split"
  finally:
    killed.kill()
    killed.wait()
  config_dir = _config_dir(data_dir, "flowers_dataset/64")
  (leftover,) = config_dir.glob("incomplete.*")
  # As TFDS's shuffle spills (> 1 GB).
  (leftover / "bucket_0_000.tmp").write_bytes(os.urandom(2_000_000))

  rebuilt = build("flowers_dataset/64", data_dir, FLOWERS, workers=2)

  said = capsys.readouterr().out
  assert (f"flowers_dataset/64: removed what an interrupted build left in {config_dir}: "
          f"{leftover.name} (2 MB freed)") in said
  assert f"flowers_dataset/64: the build of pid {killed.pid} on " in said  # Its lock, taken over.
  assert not list(config_dir.glob("incomplete.*"))
  clean = build("flowers_dataset/64", tmp_path / "clean", FLOWERS, workers=2)
  assert read_examples(rebuilt) == read_examples(clean)


def test_a_bucket_builds_scratch_folder_is_checked_and_a_killed_builds_is_removed(tmp_path,
                                                                                   monkeypatch):
  """Where the data dir is a bucket's, the scan's keypoints wait in this machine's temporary
  folder: its space is checked first, and what a killed build left there is removed."""
  monkeypatch.setattr("tempfile.tempdir", os.fspath(tmp_path))
  ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                         capture_output=True, text=True, check=True)
  killed = tmp_path / f"photo_datasets-scratch-{ended.stdout.strip()}-abc"
  running = tmp_path / f"photo_datasets-scratch-{os.getppid()}-def"  # Its process lives.
  for folder in (killed, running):
    (folder / "keypoints.x").mkdir(parents=True)
  made = pathlib.Path(disk.scratch_folder("korean_food/224", needed=1))
  assert made.parent == tmp_path and made.name.startswith(f"photo_datasets-scratch-{os.getpid()}-")
  assert not killed.exists() and running.exists()
  with pytest.raises(disk.NotEnoughDiskSpace, match="this machine's temporary folder"):
    disk.scratch_folder("korean_food/224", needed=disk.free_bytes(tmp_path) + 10**12)

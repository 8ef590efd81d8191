"""The corpus walk runs once per source: every later config reuses its result."""

from __future__ import annotations

import json
import logging
import os
import pathlib
import shutil
import types

import pytest
import tensorflow_datasets as tfds

import korean_food
from photo_datasets.building import report_thumbnails, scan_cache, scan_to_splits, unbuilt
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import images, near_duplicates
from photo_datasets.photos.records import Photo
from photo_datasets.testing import build, read_examples

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"


def _content_metadata(builder) -> dict:
  """What the scan decides, the same for every config: the metadata less the config's own
  fingerprint."""
  return {key: value for key, value in builder.info.metadata.items() if key != "fingerprint"}


def _build_in_this_process(config, manual_dir, data_dir):
  """One worker: every decode happens in this process, where the test counts them."""
  return build(f"korean_food/{config}", data_dir, manual_dir, workers=1)


def test_later_configs_reuse_the_scan_until_the_source_changes(tmp_path, monkeypatch):
  manual_dir = tmp_path / "manual"
  shutil.copytree(SAMPLE, manual_dir)
  inspected = []
  real_inspect = images.decode_and_inspect
  monkeypatch.setattr(images, "decode_and_inspect",
                      lambda data: inspected.append(len(data)) or real_inspect(data))

  first = _build_in_this_process("224", manual_dir, tmp_path / "data")
  scanned = len(inspected)
  assert scanned > 30

  second = _build_in_this_process("full", manual_dir, tmp_path / "data")
  assert len(inspected) == scanned  # No file decoded again for the scan.
  assert _content_metadata(second) == _content_metadata(first)
  assert ({s: i.num_examples for s, i in second.info.splits.items()}
          == {s: i.num_examples for s, i in first.info.splits.items()})

  os.utime(manual_dir / "kfood.zip", ns=(1, 1))  # The source changed: scan again.
  _build_in_this_process("96", manual_dir, tmp_path / "data")
  assert len(inspected) == 2 * scanned


def _record_files(builder) -> list[tuple[str, bytes]]:
  return [(path.name, path.read_bytes())
          for path in sorted(pathlib.Path(builder.data_dir).glob("*.tfrecord-*"))]


def test_a_config_built_over_the_saved_scan_has_a_fresh_scans_bytes(tmp_path):
  """`224` then `full` over its scan, and `full` then `224` over its scan: each config's
  record files and fingerprint, from a fresh scan and from a saved one, are the same."""
  manual_dir = tmp_path / "manual"
  shutil.copytree(SAMPLE, manual_dir)
  one_way = {config: build(f"korean_food/{config}", tmp_path / "224 first", manual_dir)
             for config in ("224", "full")}
  other_way = {config: build(f"korean_food/{config}", tmp_path / "full first", manual_dir)
               for config in ("full", "224")}
  for config in ("224", "full"):
    files = _record_files(one_way[config])
    assert len(files) == 3 and files == _record_files(other_way[config]), config
    assert (one_way[config].info.metadata["fingerprint"]["sha256"]
            == other_way[config].info.metadata["fingerprint"]["sha256"])


def test_the_fingerprint_changes_with_a_name_a_size_or_a_time(tmp_path):
  folder = tmp_path / "구이"
  folder.mkdir()
  photo = folder / "1.jpg"
  photo.write_bytes(b"x" * 100)
  moment = (10**18, 10**18)
  os.utime(photo, ns=moment)

  def fingerprint() -> str:
    return scan_cache.source_fingerprint(os.fspath(tmp_path))

  seen = [fingerprint()]
  assert fingerprint() == seen[0]  # The same files: the same fingerprint, the saved scan reused.
  photo.write_bytes(b"x" * 101)
  os.utime(photo, ns=moment)  # Resized, its time put back.
  seen.append(fingerprint())
  os.utime(photo, ns=(moment[0] + 1, moment[1] + 1))  # Touched.
  seen.append(fingerprint())
  photo = photo.rename(folder / "2.jpg")  # Renamed: same size and time.
  seen.append(fingerprint())
  (folder / "3.jpg").write_bytes(b"")  # Added.
  seen.append(fingerprint())
  assert len(set(seen)) == len(seen) == 5
  (folder / "3.jpg").unlink()  # Removed again: as before.
  assert fingerprint() == seen[3]


def test_scan_is_never_written_into_the_manual_dir(tmp_path):
  manual_dir = tmp_path / "manual"
  shutil.copytree(SAMPLE, manual_dir)
  def files():  # TFDS itself adds an empty `extracted/` folder to a download dir.
    return sorted(p.relative_to(manual_dir) for p in manual_dir.rglob("*") if p.is_file())

  before = files()
  # As in TFDS's test harness: downloads and manual data in one folder.
  builder = build("korean_food/64", tmp_path / "data", manual_dir, download_dir=manual_dir)
  assert builder.info.splits["train"].num_examples > 0
  assert files() == before


def _count_decodes(monkeypatch) -> list[int]:
  """Every image the build opens to decode, by size of its bytes."""
  opened: list[int] = []
  real_open = images._open
  monkeypatch.setattr(images, "_open", lambda data: opened.append(len(data)) or real_open(data))
  return opened


def test_a_first_build_decodes_each_photo_once_and_equals_a_build_from_the_saved_scan(
    tmp_path, monkeypatch):
  manual_dir = tmp_path / "manual"
  shutil.copytree(SAMPLE, manual_dir)
  opened = _count_decodes(monkeypatch)
  scanned: list[int] = []
  real_inspect = images.decode_and_inspect
  monkeypatch.setattr(images, "decode_and_inspect",
                      lambda data: scanned.append(len(data)) or real_inspect(data))
  first = _build_in_this_process("224", manual_dir, tmp_path / "data")
  photos = sum(split.num_examples for split in first.info.splits.values())
  # The scan opens every image file once; generation and the report page's thumbnails open
  # none again (a photo whose crop box needs more pixels than the scan decoded would be: none
  # here).
  assert len(scanned) > photos > 30 and opened == scanned

  # Same download dir, another data dir: the saved scan, and every photo converted in generation,
  # and those of the report page's thumbnails for them.
  opened.clear()
  for_the_page: list[str] = []
  as_stored = report_thumbnails._Thumbnails._as_stored
  monkeypatch.setattr(report_thumbnails._Thumbnails, "_as_stored",
                      lambda self, photo, reader: for_the_page.append(photo.file_name)
                      or as_stored(self, photo, reader))
  again = build("korean_food/224", tmp_path / "again", manual_dir, workers=1,
                download_dir=tmp_path / "data" / "downloads")
  assert for_the_page and len(opened) == photos + len(for_the_page)
  assert read_examples(again) == read_examples(first)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "row cut short", "empty"])
def test_an_unusable_saved_scan_is_ignored_scanned_again_and_saved_anew(tmp_path, monkeypatch,
                                                                        caplog, damage):
  manual_dir = tmp_path / "manual"
  shutil.copytree(SAMPLE, manual_dir)
  scanned: list[int] = []
  real_inspect = images.decode_and_inspect
  monkeypatch.setattr(images, "decode_and_inspect",
                      lambda data: scanned.append(1) or real_inspect(data))
  first = _build_in_this_process("64", manual_dir, tmp_path / "data")
  first_scan = len(scanned)
  (saved,) = (tmp_path / "data" / "downloads" / "scans").glob("*.json")
  text = saved.read_text()
  saved.write_bytes({
      "truncated": text[: len(text) // 2].encode(),  # A copy cut short, a tail lost on power loss.
      "garbage": bytes(range(256)) * 10,
      "row cut short": json.dumps({**json.loads(text),
                                   "photos": [row[:-1] for row in json.loads(text)["photos"]]}
                                  ).encode(),
      "empty": b"",
  }[damage])
  scanned.clear()

  with caplog.at_level(logging.WARNING):
    second = _build_in_this_process("full", manual_dir, tmp_path / "data")

  assert len(scanned) == first_scan > 30  # Scanned again, every file ...
  # ... saying why, once.
  assert len([r for r in caplog.records if "Ignoring the saved scan" in r.message]) == 1
  # ... and saved anew.
  assert json.loads(saved.read_text())["photos"] == json.loads(text)["photos"]
  assert _content_metadata(second) == _content_metadata(first)
  assert ({s: i.num_examples for s, i in second.info.splits.items()}
          == {s: i.num_examples for s, i in first.info.splits.items()})


def test_a_bucket_download_dir_keeps_the_saved_scan_in_the_bucket(tmp_path, monkeypatch):
  """`--data_dir gs://...`: the saved scan is written to and read from the bucket, under the
  name a later build (and the upgrade message, `unbuilt`) looks for; nothing lands in the
  launcher's working directory."""
  monkeypatch.chdir(tmp_path)
  manager = types.SimpleNamespace(download_dir="gs://bucket/data/downloads", manual_dir=None)
  with tfds.testing.MockFs() as fs:
    cache_dir = scan_to_splits.scan_cache_dir(manager)
    assert os.fspath(cache_dir) == "gs://bucket/data/downloads/scans"
    built_in = types.SimpleNamespace(data_dir_root="gs://bucket/data")
    assert unbuilt._scans_dir(built_in) == os.fspath(cache_dir)
    path = scan_cache.saved_scan(cache_dir, tfds.builder_cls("korean_food"), os.fspath(SAMPLE))
    photo = Photo("구이/갈비구이/Img_000_0000.jpg", ("kfood.zip",), "0" * 64,
                  images.ImageCheck("JPEG", "RGB", 4, 4, 1, bytes(near_duplicates.HASH_BYTES
                                                              * len(near_duplicates.REGIONS)), 0),
                  None, None, None, 10, {}, ())
    scan_cache.save_scan(path, [photo], BuildReport())
    assert (fs._tmp_dir / "big" "store" / "bucket" / "data" / "downloads" / "scans").is_dir()
    loaded = scan_cache.load_scan(path)
    assert loaded is not None and loaded[0] == [photo]
  assert list(tmp_path.iterdir()) == []

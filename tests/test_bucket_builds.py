"""A build whose data dir and manual dir are buckets (`gs://...`), under TFDS's own `MockFs`:
the record files are the local build's, byte for byte, and nothing is written outside the
bucket (the working directory and the temporary folder are left as they were)."""

from __future__ import annotations

import contextlib
import os
import pathlib
import tempfile
import types
from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pytest
import tensorflow_datasets as tfds
from etils import epath
from tensorflow_datasets.testing import test_utils

import flowers_dataset  # noqa: F401 (registers the builder)
import korean_food
from photo_datasets.archives import storage
from photo_datasets.testing.builds import build

SAMPLE = pathlib.Path(korean_food.__file__).parent / "sample"
# The extracted flower_photos/ folder, as a manual dir holds it.
FLOWERS_SAMPLE = pathlib.Path(korean_food.__file__).parents[1] / "flowers_dataset" / "sample"


class BucketFs(tfds.testing.MockFs):
  """TFDS's `MockFs` for `gs://` paths alone: this machine's paths (the package's own files,
  the temporary folders) stay where they are, as a real bucket leaves them."""

  def _to_tmp(self, p: Any, *, with_state: bool = False) -> Any:
    if storage.is_local(p):
      local = pathlib.Path(os.fspath(p))
      return (local, types.SimpleNamespace(is_gcs=False)) if with_state else local
    return super()._to_tmp(p, with_state=with_state)

  def _to_abs(self, p: Any, *, state: Any) -> Any:
    return super()._to_abs(p, state=state) if state.is_gcs else p

  @contextlib.contextmanager
  def _mock(self) -> Iterator[None]:
    # A bucket's files have a size (the Croissant metadata states each record file's).
    with super()._mock(), test_utils.mock_gfile(stat=self._mock_stat):
      yield

  def _mock_stat(self, original_fn: Any, p: Any, **kwargs: Any) -> Any:
    return original_fn(self._to_tmp(p), **kwargs)

  def _mock_walk(self, original_fn: Any, p: Any, **kwargs: Any) -> Any:
    # `epath` passes `topdown`; `MockFs`'s own walk takes no keyword.
    p, state = self._to_tmp(p, with_state=True)
    for root, subdirs, filenames in original_fn(p, **kwargs):
      yield self._to_abs(root, state=state), subdirs, filenames


def _record_files(version_dir: epath.PathLike) -> dict[str, bytes]:
  return {path.name: path.read_bytes() for path in epath.Path(version_dir).iterdir()
          if ".tfrecord" in path.name}


def _upload(folder: pathlib.Path, bucket: str) -> None:
  for path in folder.rglob("*"):
    if path.is_file():
      target = epath.Path(bucket) / path.relative_to(folder).as_posix()
      target.parent.mkdir(parents=True, exist_ok=True)
      target.write_bytes(path.read_bytes())


@pytest.mark.parametrize(("name", "executor"), [("korean_food/224", "local"),
                                               ("korean_food/224", "beam"),
                                               ("flowers_dataset/224", "local")])
def test_a_build_from_and_into_a_bucket_equals_the_local_build(tmp_path, monkeypatch, name,
                                                                executor):
  beam_options = (beam.options.pipeline_options.PipelineOptions(["--runner=DirectRunner"])
                  if executor == "beam" else None)
  sample = SAMPLE if name.startswith("korean_food") else FLOWERS_SAMPLE
  local = build(name, tmp_path / "local", sample, workers=1, beam_options=beam_options)
  expected = _record_files(local.data_dir)
  assert expected

  temporary = tmp_path / "tmp"
  workdir = tmp_path / "cwd"
  temporary.mkdir()
  workdir.mkdir()
  monkeypatch.setattr(tempfile, "tempdir", os.fspath(temporary))
  monkeypatch.setenv("TMPDIR", os.fspath(temporary))
  monkeypatch.chdir(workdir)
  with BucketFs() as fs:
    _upload(sample, "gs://bucket/manual")
    bucket_build = build(name, "gs://bucket/data", "gs://bucket/manual", workers=1,
                         beam_options=beam_options)
    assert os.fspath(bucket_build.data_dir).startswith(f"gs://bucket/data/{name}/")
    assert _record_files(bucket_build.data_dir) == expected
    assert bucket_build.info.metadata["manual_dir"] == "gs://bucket/manual"
    assert bucket_build.info.splits["train"].num_examples == local.info.splits[
        "train"].num_examples
    assert (epath.Path(bucket_build.data_dir) / "report.html").exists()
    outside = [p for p in fs._tmp_dir.iterdir() if p.name != "big" "store"]
    assert outside == []
  assert list(workdir.iterdir()) == []
  # Beam and TFDS's `DatasetInfo.initialize_from_bucket` leave empty folders of their own.
  left = [p for p in temporary.rglob("*") if p.is_file() or "photo_datasets" in p.name]
  assert left == []


def test_a_bucket_s_zip_is_read_through_a_buffer(monkeypatch):
  """A zip's directory and its members are many small reads: on a bucket, each read of the
  backend is a request, so they are served from `storage`'s buffer: fewer backend reads for the
  whole walk than the zip has members."""
  from korean_food import corpus

  local = [(file.parts, read()) for file, read in corpus.walk(SAMPLE)]
  reads = []
  ranged_read = storage._Ranges.readinto
  monkeypatch.setattr(storage._Ranges, "readinto",
                      lambda self, buffer: reads.append(len(buffer)) or ranged_read(self, buffer))
  with BucketFs():
    _upload(SAMPLE, "gs://bucket/manual")
    walked = [(file.parts, read()) for file, read in corpus.walk("gs://bucket/manual")]
  assert walked == local and len(local) > 40
  assert 0 < len(reads) < len(local) / 2


def test_a_name_order_join_in_a_bucket_is_read_in_order_and_repaired_only_on_a_disk(tmp_path):
  """A `kfood.zip` joined in name order, uploaded as it is: read in the right order from the
  bucket, with a warning whose repair needs a copy on a disk, and `repair` says so."""
  from korean_food import corpus, download, repair
  from photo_datasets import testing

  joined = tmp_path / "joined" / "kfood.zip"
  joined.parent.mkdir()
  testing.join_in_name_order(
      testing.write_pieces(SAMPLE / "kfood.zip", tmp_path / "pieces", 16 << 10), joined)
  local = [(file.parts, read()) for file, read in corpus.walk(SAMPLE)]
  with BucketFs():
    _upload(joined.parent, "gs://bucket/joined")
    (archive,) = download.locate("gs://bucket/joined").archives
    assert "joined in name order" in archive.note
    assert "a copy of it on a disk" in archive.note
    assert [(file.parts, read()) for file, read in corpus.walk("gs://bucket/joined")] == local
    with pytest.raises(OSError, match="lies in a bucket"):
      repair.repair("gs://bucket/joined/kfood.zip")

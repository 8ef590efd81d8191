"""Every form AIHub's download arrives in (korean_food/download.py): pieces
named by offset, the API's download.tar, a kfood.zip joined in name order, a
cut transfer, a missing or short piece.

Each form is made from one kfood.zip and walked (`corpus.walk`), every file
read three ways (the walker, its `records.Span` as a worker reads it, the
builder's `corpus.Reader` by location), on two archives: realistic photos in
the real layout (1 MiB pieces, more than 10), and a ZIP64 archive of 12 GiB
whose group zips lie past 12 GiB, in AIHub's 1 GiB pieces, all as sparse
files (the holes are never written).
The end of the module builds each form and compares the examples.
"""

from __future__ import annotations

import itertools
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import zipfile
from typing import NamedTuple

import pytest

import korean_food
from korean_food import corpus, download, names, repair
from photo_datasets import testing
from photo_datasets.archives import pieces as pieced
from photo_datasets.archives.pieces import Extent
from photo_datasets.testing import build, read_examples

import benchmark_corpus

SAMPLE_ZIP = pathlib.Path(korean_food.__file__).parent / "sample" / "kfood.zip"
def is_padding(parts: tuple[str, ...]) -> bool:
  return parts[0] == "padding"  # The ZIP64 archive's holes: never read.


class Source(NamedTuple):
  zip: pathlib.Path  # The whole kfood.zip, in its own folder.
  piece_size: int


@pytest.fixture(scope="module")
def realistic(tmp_path_factory) -> Source:
  root = tmp_path_factory.mktemp("realistic")
  benchmark_corpus.write_kfood_zip(root, 80)
  return Source(root / "kfood.zip", 1 << 20)


@pytest.fixture(scope="module")
def zip64(tmp_path_factory) -> Source:
  """The sample's group zips after a hole, so that they start past 12 GiB and
  a boundary of AIHub's 1 GiB pieces falls inside them."""
  root = tmp_path_factory.mktemp("zip64")
  with zipfile.ZipFile(SAMPLE_ZIP) as zf:
    members = {info.filename: zf.read(info) for info in zf.infolist()}
  testing.sparse_zip64(root / "kfood.zip", 12 * (1 << 30) - 100_000, members)
  return Source(root / "kfood.zip", 1 << 30)


@pytest.fixture(params=["realistic", "zip64"])
def source(request) -> Source:
  return request.getfixturevalue(request.param)


def walked(root: pathlib.Path) -> dict[tuple[str, ...], bytes]:
  """Every file but the padding, read by the walker, checked against its span
  and the builder's reader."""
  files = {}
  with corpus.Reader() as reader:
    for file, read in corpus.walk(root):
      if is_padding(file.parts):
        continue
      data = read()
      if file.span is not None:
        assert file.span.read() == data, file.parts
      assert reader.read(file.location) == data, file.parts
      files[file.parts] = data
  return files


@pytest.fixture(scope="module")
def expected(realistic, zip64) -> dict[Source, dict[tuple[str, ...], bytes]]:
  return {s: walked(s.zip.parent) for s in (realistic, zip64)}


def pieces(source: Source, folder: pathlib.Path) -> list[pathlib.Path]:
  written = testing.write_pieces(source.zip, folder, source.piece_size)
  assert len(written) > 10
  assert [p.name for p in sorted(written, key=lambda p: p.name)] != [p.name for p in written]  # Text order differs.
  return written


# ---------------------------------------------------------------------------
# Read as they are.


def test_pieces_at_any_depth_read_as_the_zip(source, expected, tmp_path):
  pieces(source, tmp_path / "downloads" / "21.한국음식")
  assert walked(tmp_path) == expected[source]
  spans = [file.span for file, _ in corpus.walk(tmp_path) if not is_padding(file.parts)]
  assert all(span.path.rsplit(".part", 1)[1].isdigit() for span in spans if span)  # Workers read the pieces.


def test_a_photo_across_a_piece_boundary_reads_correctly(source, expected, tmp_path):
  pieces(source, tmp_path / "21.한국음식")
  with zipfile.ZipFile(source.zip) as outer:
    starts = {info.filename: info.header_offset for info in outer.infolist()}
  across = []
  for file, read in corpus.walk(tmp_path):
    if file.span is None and not is_padding(file.parts):
      across.append(file.parts)
      assert read() == expected[source][file.parts]
  assert across  # Some photos straddle two pieces, and read whole.
  if source.piece_size == 1 << 30:  # The ZIP64 archive: past 4 GiB.
    assert min(offset for name, offset in starts.items() if not name.startswith("padding/")) > 4 << 30


def test_download_tar_read_at_its_members_offsets(source, expected, tmp_path):
  written = pieces(source, tmp_path / "untarred")
  tar = tmp_path / "manual" / "download.tar"
  tar.parent.mkdir()
  testing.write_tar(written, tar, "21.한국음식")
  assert walked(tar.parent) == expected[source]
  spans = {file.span.path for file, _ in corpus.walk(tar.parent) if file.span}
  assert spans == {os.fspath(tar)}  # Read in the tar, nothing extracted.


def test_a_tar_and_its_untarred_pieces_are_read_once(source, expected, tmp_path):
  written = pieces(source, tmp_path / "21.한국음식")
  testing.write_tar(written, tmp_path / "download.tar", "21.한국음식")
  archives = download.find(tmp_path)
  assert [bool(a.extents) for a in archives] == [True, False]
  assert "holds the same kfood.zip" in archives[1].note
  assert walked(tmp_path) == expected[source]


def test_a_name_order_join_is_read_in_order_with_a_warning(source, expected, tmp_path):
  written = pieces(source, tmp_path / "pieces")
  manual = tmp_path / "manual"
  manual.mkdir()
  testing.join_in_name_order(written, manual / "kfood.zip")
  with pytest.raises(zipfile.BadZipFile):
    zipfile.ZipFile(manual / "kfood.zip")  # What other tools see.
  (archive,) = download.find(manual)
  assert "joined in name order" in archive.note
  assert f"python -m korean_food repair {manual / 'kfood.zip'}" in archive.note
  assert pieced.runs(archive.extents) == pieced.runs(_true_places(written, manual / "kfood.zip"))
  assert walked(manual) == expected[source]


def test_repair_puts_a_name_order_join_in_order_in_place(realistic, tmp_path):
  written = pieces(realistic, tmp_path / "pieces")
  joined = tmp_path / "kfood.zip"
  testing.join_in_name_order(written, joined)
  # The command the warning gives.
  done = subprocess.run([sys.executable, "-m", "korean_food", "repair", os.fspath(joined)],
                        check=True, capture_output=True, text=True,
                        cwd=pathlib.Path(korean_food.__file__).parents[1])
  assert "is in order" in done.stdout
  assert joined.read_bytes() == realistic.zip.read_bytes()
  assert "nothing to do" in repair.repair(os.fspath(joined))


# Any piece size from 1 MiB to 4 GiB, not only AIHub's 1 GiB: a power of two, whole MiB, whole MB.
@pytest.mark.parametrize("piece_size", [256 << 20, 300 << 20, 100_000_000])
def test_the_piece_size_of_a_name_order_join_is_worked_out(zip64, expected, tmp_path, piece_size):
  written = testing.write_pieces(zip64.zip, tmp_path / "pieces", piece_size)
  joined = tmp_path / "manual" / "kfood.zip"
  joined.parent.mkdir()
  testing.join_in_name_order(written, joined)
  (archive,) = download.find(joined.parent)
  assert pieced.runs(archive.extents) == pieced.runs(_true_places(written, joined))
  assert walked(joined.parent) == expected[zip64]


def _true_places(written: list[pathlib.Path], joined: pathlib.Path) -> list[Extent]:
  """Where each piece, in offset order, lies in its name-order join."""
  at, places = 0, {}
  for piece in sorted(written, key=lambda p: p.name):
    places[piece] = Extent(os.fspath(joined), at, os.path.getsize(piece))
    at += os.path.getsize(piece)
  return [places[p] for p in written]


# ---------------------------------------------------------------------------
# Refused before any scan.


def _cut_point(source: Source, group: int) -> tuple[int, list[str]]:
  """A cut in the middle of the `group`-th group zip, and the group zips before it."""
  with zipfile.ZipFile(source.zip) as zf:
    groups = [i for i in zf.infolist() if i.filename.endswith(".zip") and "__MACOSX" not in i.filename]
  cut = groups[group].header_offset + groups[group].compress_size // 2
  return cut, [names.member_name(g) for g in groups[:group]]


def _assert_cut(error: pytest.ExceptionInfo[download.DownloadError], size: int, whole: list[str]) -> None:
  message = str(error.value)
  assert f"ends at {size:,} bytes" in message and "the transfer was cut" in message
  assert download.DOWNLOAD_COMMAND in message and "curl -C -" in message
  assert f"arrived whole: {', '.join(whole)} ({len(whole)} of 27)" in message


def test_a_cut_kfood_zip_is_refused_naming_the_group_zips_that_arrived(source, tmp_path):
  cut, whole = _cut_point(source, 2)
  shutil.copyfile(source.zip, tmp_path / "kfood.zip") if cut < 1 << 30 else _sparse_copy(source.zip, tmp_path)
  os.truncate(tmp_path / "kfood.zip", cut)
  with pytest.raises(download.DownloadError) as error:
    download.find(tmp_path)
  _assert_cut(error, cut, whole)


def test_cut_pieces_and_a_cut_tar_are_refused(source, tmp_path):
  cut, whole = _cut_point(source, 1)
  written = pieces(source, tmp_path / "all")
  tar = tmp_path / "tar" / "download.tar"
  tar.parent.mkdir()
  testing.write_tar(written, tar, "21.한국음식")
  (tmp_path / "cut").mkdir()
  last = max((p for p in written if _offset(p) < cut), key=_offset)
  for piece in written:  # The pieces that arrived, the last of them cut short.
    if _offset(piece) <= _offset(last):
      shutil.move(piece, tmp_path / "cut" / piece.name)
  os.truncate(tmp_path / "cut" / last.name, cut - _offset(last))
  with pytest.raises(download.DownloadError) as error:
    download.find(tmp_path / "cut")
  _assert_cut(error, cut, whole)
  with tarfile.open(tar, "r:") as opened:
    data_start = next(m.offset_data for m in opened if m.name.endswith(last.name))
  os.truncate(tar, data_start + cut - _offset(last))
  with pytest.raises(download.DownloadError) as error:
    download.find(tar.parent)
  message = str(error.value)
  ends = data_start + cut - _offset(last)
  assert f"{tar} is cut: it ends at byte {ends:,}, in its member 21.한국음식/{last.name}" in message
  assert download.DOWNLOAD_COMMAND in message and "curl -C -" in message
  assert f"arrived whole: {', '.join(whole)} ({len(whole)} of 27)" in message


# AIHub's tar in any member order: offset order, name order (as a tool that sorts names writes it), and the order
# of a plain `tar -cf` of a folder (the directory's order).
@pytest.mark.parametrize("order", ["offset", "name", "shuffled"])
def test_a_cut_tar_is_named_as_cut_whatever_its_members_order(realistic, tmp_path, order):
  written = pieces(realistic, tmp_path / "21.한국음식")
  members = {"offset": written, "name": sorted(written, key=lambda p: p.name),
             "shuffled": sorted(written, key=lambda p: hash(p.name) % 97)}[order]
  tar = tmp_path / "manual" / "download.tar"
  tar.parent.mkdir()
  testing.write_tar(members, tar, "21.한국음식")
  stop = members[len(members) // 2]  # The tar ends halfway through this member's data.
  with tarfile.open(tar, "r:") as opened:
    data_start = next(m.offset_data for m in opened if m.name.endswith("/" + stop.name))
  os.truncate(tar, data_start + 1000)
  with pytest.raises(download.DownloadError) as error:
    download.find(tar.parent)
  message = str(error.value)
  assert (f"{tar} is cut: it ends at byte {data_start + 1000:,}, in its member 21.한국음식/{stop.name} "
          f"(1,000 of its {stop.stat().st_size:,} bytes)") in message
  arrived = [p.name for p in sorted(members[:len(members) // 2], key=_offset)]
  assert f"The pieces that arrived whole: {', '.join(arrived)} ({len(arrived)})." in message
  assert "missing" not in message and "curl -C -" in message  # Real pieces only, and the resume hint.


def test_a_tar_cut_in_a_header_is_named_as_cut(realistic, tmp_path):
  written = pieces(realistic, tmp_path / "21.한국음식")
  tar = tmp_path / "manual" / "download.tar"
  tar.parent.mkdir()
  testing.write_tar(written, tar, "21.한국음식")
  with tarfile.open(tar, "r:") as opened:
    header = next(m.offset for m in opened if m.name.endswith("/" + written[3].name))
  os.truncate(tar, header + 100)
  with pytest.raises(download.DownloadError, match=rf"is cut: it ends at byte {header + 100:,}, in the header "
                                                   rf"after 21.한국음식/{written[2].name}"):
    download.find(tar.parent)


# A join in name order of pieces of any size, 1 MiB and smaller included: found from the bytes, and named
# with the user's own piece names and size.
@pytest.mark.parametrize("piece_size", [1 << 20, 256 << 10, 300_000])
def test_a_name_order_join_of_small_pieces_is_found_and_named_as_it_arrived(realistic, expected, tmp_path,
                                                                           piece_size):
  written = testing.write_pieces(realistic.zip, tmp_path / "pieces", piece_size)
  joined = tmp_path / "manual" / "kfood.zip"
  joined.parent.mkdir()
  testing.join_in_name_order(written, joined)
  (archive,) = download.find(joined.parent)
  assert pieced.runs(archive.extents) == pieced.runs(_true_places(written, joined))
  assert f"is the download's {len(written)} pieces of {pieced.size_in_words(piece_size)} joined in name order" in (
      archive.note)
  by_name = sorted(p.name for p in written)
  out_of_order = next((a, b) for a, b in itertools.pairwise(by_name)
                      if _offset(pathlib.Path(a)) > _offset(pathlib.Path(b)))
  assert f"(as text, {out_of_order[0]} sorts before {out_of_order[1]})" in archive.note
  assert walked(joined.parent) == expected[realistic]
  assert "is in order" in repair.repair(os.fspath(joined))
  assert joined.read_bytes() == realistic.zip.read_bytes()


def _offset(piece: pathlib.Path) -> int:
  return int(piece.name.rsplit(".part", 1)[1])


def _sparse_copy(src: pathlib.Path, folder: pathlib.Path) -> None:
  (copy,) = testing.write_pieces(src, folder, os.path.getsize(src))
  copy.rename(folder / "kfood.zip")


@pytest.mark.parametrize("form", ["pieces", "tar"])
def test_a_missing_piece_is_named_with_its_byte_range(source, tmp_path, form):
  written = pieces(source, tmp_path / "21.한국음식")
  gone = written[5]
  offset = _offset(gone)
  gone.unlink()
  root = tmp_path
  if form == "tar":
    root = tmp_path / "manual"
    root.mkdir()
    testing.write_tar([p for p in written if p != gone], root / "download.tar", "21.한국음식")
  with pytest.raises(download.DownloadError) as error:
    download.find(root)
  message = str(error.value)
  assert (f"kfood.zip.part{offset} (bytes {offset:,}–{offset + source.piece_size - 1:,}) is missing" in message)
  assert f"The other {len(written) - 1} pieces are fine" in message


def test_a_short_piece_is_named_with_its_byte_range(source, tmp_path):
  written = pieces(source, tmp_path / "21.한국음식")
  short = written[3]
  offset = _offset(short)
  os.truncate(short, 1000)
  with pytest.raises(download.DownloadError) as error:
    download.find(tmp_path)
  message = str(error.value)
  assert (f"{short} is short: 1,000 of its {source.piece_size:,} bytes "
          f"(bytes {offset:,}–{offset + source.piece_size - 1:,})") in message
  assert f"The other {len(written) - 1} pieces are fine" in message


def test_a_cut_group_zip_is_still_skipped_not_refused(tmp_path):
  """Only the download itself (a zip of zips) is refused when cut: a cut
  group zip is skipped and reported, as before."""
  cut = testing.zip_bytes({"국/미역국/Img_017_0000.jpg": testing.jpeg(1, (64, 48))})[:-30]
  (tmp_path / "국.zip").write_bytes(cut)
  assert download.find(tmp_path) == []
  assert [file.bad_archive for file, _ in corpus.walk(tmp_path)] == [True]


# ---------------------------------------------------------------------------
# Builds: each form gives the examples of the whole kfood.zip.


def _examples(builder) -> dict[str, tuple[bytes, int, str]]:
  return {name: (e["image"], int(e["label"]), e["split"]) for name, e in read_examples(builder).items()}


@pytest.fixture(scope="module")
def plain_build(realistic, tmp_path_factory) -> dict[str, tuple[bytes, int, str]]:
  return _examples(build("korean_food/224", tmp_path_factory.mktemp("data"), realistic.zip.parent, workers=2))


@pytest.mark.parametrize("form", ["pieces", "tar", "name_order"])
def test_every_form_builds_the_examples_of_the_whole_zip(realistic, plain_build, tmp_path, form):
  manual = tmp_path / "manual"
  written = pieces(realistic, (manual if form == "pieces" else tmp_path / "pieces") / "21.한국음식")
  manual.mkdir(exist_ok=True)
  if form == "tar":
    testing.write_tar(written, manual / "download.tar", "21.한국음식")
  elif form == "name_order":
    testing.join_in_name_order(written, manual / "kfood.zip")
  builder = build("korean_food/224", tmp_path / "data", manual, workers=2)
  assert _examples(builder) == plain_build
  warnings = builder.info.metadata["warnings"]
  assert any("joined in name order" in w for w in warnings) == (form == "name_order")


def test_a_cut_download_stops_the_build_before_the_scan_with_nothing_built(realistic, tmp_path):
  manual = tmp_path / "manual"
  manual.mkdir()
  cut, _ = _cut_point(realistic, 1)
  (manual / "kfood.zip").write_bytes(realistic.zip.read_bytes()[:cut])
  with pytest.raises(download.DownloadError, match="the transfer was cut"):
    build("korean_food/224", tmp_path / "data", manual, download_dir=tmp_path / "downloads", workers=2)
  config_dir = tmp_path / "data" / "korean_food" / "224"
  assert not config_dir.exists()  # No version, whole or half-built, and no lock: it was never built.
  assert not (tmp_path / "downloads" / "scans").exists()  # No scan was made.

"""Every form AIHub's download arrives in (korean_food/download.py): pieces
named by offset, the API's download.tar, a kfood.zip joined in name order, a
cut transfer, a missing or short piece; and damaged archives, each a skip or
one line, never a traceback, in a photo's memory (the fuzzing of the same is
`test_archive_fuzz.py`).

Each form is made from one kfood.zip and walked (`corpus.walk`), every file
read three ways (the walker, its `records.Span` as a worker reads it, the
builder's `corpus.Reader` by location), on two archives: realistic photos in
the real layout (1 MiB pieces, more than 10), and a ZIP64 archive of 12 GiB
whose group zips lie past 12 GiB, in AIHub's 1 GiB pieces, all as sparse
files (the holes are never written).
The end of the module builds each form and compares the examples.
"""

from __future__ import annotations

import functools
import io
import itertools
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tarfile
import tracemalloc
import zipfile
from collections.abc import Callable
from typing import NamedTuple

import pytest

import korean_food
from korean_food import corpus, download, listing, names, repair
from korean_food.names import decode_name
from photo_datasets import testing
from photo_datasets.archives import pieces as pieced
from photo_datasets.archives import tars, zips
from photo_datasets.archives.pieces import Extent
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.testing import build, read_examples

import benchmark_corpus

SAMPLE_ZIP = pathlib.Path(korean_food.__file__).parent / "sample" / "kfood.zip"
FLOWERS = (pathlib.Path(korean_food.__file__).parents[1] / "flowers_dataset" / "sample"
           / "flower_photos")


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
  """Every file but the padding and what cannot be read (`problem`), read by
  the walker, checked against its span and the builder's reader."""
  files = {}
  with corpus.Reader() as reader:
    for file, read in corpus.walk(root):
      if is_padding(file.parts) or file.problem:
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
  # Text order differs.
  assert [p.name for p in sorted(written, key=lambda p: p.name)] != [p.name for p in written]
  return written


# ---------------------------------------------------------------------------
# Read as they are.


def test_pieces_at_any_depth_read_as_the_zip(source, expected, tmp_path):
  pieces(source, tmp_path / "downloads" / "21.한국음식")
  assert walked(tmp_path) == expected[source]
  spans = [file.span for file, _ in corpus.walk(tmp_path) if not is_padding(file.parts)]
  # Workers read the pieces.
  assert all(span.path.rsplit(".part", 1)[1].isdigit() for span in spans if span)


def test_a_photo_across_a_piece_boundary_reads_correctly(source, expected, tmp_path):
  pieces(source, tmp_path / "21.한국음식")
  with zipfile.ZipFile(source.zip) as outer:
    starts = {info.filename: info.header_offset for info in outer.infolist()}
  across = []
  for file, read in corpus.walk(tmp_path):
    if file.span is None and not is_padding(file.parts) and not file.problem:
      across.append(file.parts)
      assert read() == expected[source][file.parts]
  assert across  # Some photos straddle two pieces, and read whole.
  if source.piece_size == 1 << 30:  # The ZIP64 archive: past 4 GiB.
    assert min(offset for name, offset in starts.items()
               if not name.startswith("padding/")) > 4 << 30


def test_download_tar_read_at_its_members_offsets(source, expected, tmp_path):
  written = pieces(source, tmp_path / "untarred")
  tar = tmp_path / "manual" / "download.tar"
  tar.parent.mkdir()
  testing.write_tar(written, tar, "21.한국음식")
  assert walked(tar.parent) == expected[source]
  spans = {file.span.path for file, _ in corpus.walk(tar.parent) if file.span}
  assert spans == {os.fspath(tar)}  # Read in the tar, nothing extracted.


def test_a_tar_of_one_piece_reads_as_the_zip(tmp_path):
  """`download.tar` holding `kfood.zip.part0` alone: its photos read at the member's offset in
  the tar, as the zip itself."""
  (tmp_path / "piece").mkdir()
  shutil.copy(SAMPLE_ZIP, tmp_path / "piece" / "kfood.zip.part0")
  (tmp_path / "manual").mkdir()
  testing.write_tar([tmp_path / "piece" / "kfood.zip.part0"], tmp_path / "manual" / "download.tar",
                    "21.한국음식")
  spans = {file.span.path for file, _ in corpus.walk(tmp_path / "manual") if file.span}
  assert spans == {os.fspath(tmp_path / "manual" / "download.tar")}
  from_tar = build("korean_food/224", tmp_path / "from_tar", tmp_path / "manual")
  from_zip = build("korean_food/224", tmp_path / "from_zip", SAMPLE_ZIP.parent)
  assert read_examples(from_tar) == read_examples(from_zip)
  assert from_tar.info.metadata["skipped_files"] == from_zip.info.metadata["skipped_files"]


def test_a_tar_and_its_untarred_pieces_are_read_once(source, expected, tmp_path):
  written = pieces(source, tmp_path / "21.한국음식")
  testing.write_tar(written, tmp_path / "download.tar", "21.한국음식")
  archives = download.locate(tmp_path).archives
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
  (archive,) = download.locate(manual).archives
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
  (archive,) = download.locate(joined.parent).archives
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
    groups = [i for i in zf.infolist()
              if i.filename.endswith(".zip") and "__MACOSX" not in i.filename]
  cut = groups[group].header_offset + groups[group].compress_size // 2
  return cut, [names.member_name(g) for g in groups[:group]]


def _assert_cut(error: pytest.ExceptionInfo[download.DownloadError], size: int,
                whole: list[str]) -> None:
  message = str(error.value)
  assert f"ends at {size:,} bytes" in message and "the transfer was cut" in message
  assert download.DOWNLOAD_COMMAND in message and "curl -C -" in message
  assert f"arrived whole: {', '.join(whole)} ({len(whole)} of 27)" in message


def test_a_cut_kfood_zip_is_refused_naming_the_group_zips_that_arrived(source, tmp_path):
  cut, whole = _cut_point(source, 2)
  (shutil.copyfile(source.zip, tmp_path / "kfood.zip") if cut < 1 << 30
   else _sparse_copy(source.zip, tmp_path))
  os.truncate(tmp_path / "kfood.zip", cut)
  with pytest.raises(download.DownloadError) as error:
    download.locate(tmp_path)
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
    download.locate(tmp_path / "cut")
  _assert_cut(error, cut, whole)
  with tarfile.open(tar, "r:") as opened:
    data_start = next(m.offset_data for m in opened if m.name.endswith(last.name))
  os.truncate(tar, data_start + cut - _offset(last))
  with pytest.raises(download.DownloadError) as error:
    download.locate(tar.parent)
  message = str(error.value)
  ends = data_start + cut - _offset(last)
  assert f"{tar} is cut: it ends at byte {ends:,}, in its member 21.한국음식/{last.name}" in message
  assert download.DOWNLOAD_COMMAND in message and "curl -C -" in message
  assert f"arrived whole: {', '.join(whole)} ({len(whole)} of 27)" in message


# AIHub's tar in any member order: offset order, name order (as a tool that sorts names writes
# it), and the order of a plain `tar -cf` of a folder (the directory's order).
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
    download.locate(tar.parent)
  message = str(error.value)
  assert (f"{tar} is cut: it ends at byte {data_start + 1000:,}, in its member "
          f"21.한국음식/{stop.name} (1,000 of its {stop.stat().st_size:,} bytes)") in message
  arrived = [p.name for p in sorted(members[:len(members) // 2], key=_offset)]
  assert f"The pieces that arrived whole: {', '.join(arrived)} ({len(arrived)})." in message
  # Real pieces only, and the resume hint.
  assert "missing" not in message and "curl -C -" in message


def test_a_tar_cut_in_a_header_is_named_as_cut(realistic, tmp_path):
  written = pieces(realistic, tmp_path / "21.한국음식")
  tar = tmp_path / "manual" / "download.tar"
  tar.parent.mkdir()
  testing.write_tar(written, tar, "21.한국음식")
  with tarfile.open(tar, "r:") as opened:
    header = next(m.offset for m in opened if m.name.endswith("/" + written[3].name))
  os.truncate(tar, header + 100)
  with pytest.raises(download.DownloadError,
                     match=rf"is cut: it ends at byte {header + 100:,}, in the header "
                           rf"after 21.한국음식/{written[2].name}"):
    download.locate(tar.parent)


# A join in name order of pieces of any size, 1 MiB and smaller included: found from the bytes,
# and named with the user's own piece names and size.
@pytest.mark.parametrize("piece_size", [1 << 20, 256 << 10, 300_000])
def test_a_name_order_join_of_small_pieces_is_found_and_named_as_it_arrived(
    realistic, expected, tmp_path, piece_size):
  written = testing.write_pieces(realistic.zip, tmp_path / "pieces", piece_size)
  joined = tmp_path / "manual" / "kfood.zip"
  joined.parent.mkdir()
  testing.join_in_name_order(written, joined)
  (archive,) = download.locate(joined.parent).archives
  assert pieced.runs(archive.extents) == pieced.runs(_true_places(written, joined))
  assert (f"is the download's {len(written)} pieces of {pieced.size_in_words(piece_size)} "
          f"joined in name order" in archive.note)
  by_name = sorted(p.name for p in written)
  out_of_order = next((a, b) for a, b in itertools.pairwise(by_name)
                      if _offset(pathlib.Path(a)) > _offset(pathlib.Path(b)))
  assert f"(as text, {out_of_order[0]} sorts before {out_of_order[1]})" in archive.note
  assert walked(joined.parent) == expected[realistic]
  assert "is in order" in repair.repair(os.fspath(joined))
  assert joined.read_bytes() == realistic.zip.read_bytes()


def test_a_name_order_join_whose_last_piece_stays_last_is_found(tmp_path):
  """14 pieces of 512 KiB: the last by name is also the last by offset, so the
  end record lies at the file's end whatever the piece size, and only the
  round sizes tried first can find it (those below 1 MiB included)."""
  photos = {f"구이/갈비구이/Img_000_{i:04d}.jpg": path.read_bytes()
            for i, path in enumerate(sorted(FLOWERS.glob("*/*.jpg")))}
  group = testing.zip_bytes(photos)

  def kfood(padding: int) -> bytes:
    return testing.zip_bytes({"구이.zip": group, "padding/pad.bin": bytes(padding)}, dirs=False)

  whole = tmp_path / "whole" / "kfood.zip"
  whole.parent.mkdir()
  whole.write_bytes(kfood(7_000_000 - len(kfood(0))))  # Stored: the padding adds its length.
  piece_size = 512 << 10
  order = pieced.text_order(7_000_000, piece_size)
  assert (os.path.getsize(whole) == 7_000_000 and order[-1] == 13 * piece_size
          and order != sorted(order))
  written = testing.write_pieces(whole, tmp_path / "pieces", piece_size)
  joined = tmp_path / "manual" / "kfood.zip"
  joined.parent.mkdir()
  testing.join_in_name_order(written, joined)
  (archive,) = download.locate(joined.parent).archives
  assert pieced.runs(archive.extents) == pieced.runs(_true_places(written, joined))
  assert f"14 pieces of {pieced.size_in_words(piece_size)} joined in name order" in archive.note
  assert walked(joined.parent) == walked(whole.parent) and len(walked(whole.parent)) == len(photos)


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
    download.locate(root)
  message = str(error.value)
  assert (f"kfood.zip.part{offset} (bytes {offset:,}–{offset + source.piece_size - 1:,}) "
          f"is missing" in message)
  assert f"The other {len(written) - 1} pieces are fine" in message


def test_a_short_piece_is_named_with_its_byte_range(source, tmp_path):
  written = pieces(source, tmp_path / "21.한국음식")
  short = written[3]
  offset = _offset(short)
  os.truncate(short, 1000)
  with pytest.raises(download.DownloadError) as error:
    download.locate(tmp_path)
  message = str(error.value)
  assert (f"{short} is short: 1,000 of its {source.piece_size:,} bytes "
          f"(bytes {offset:,}–{offset + source.piece_size - 1:,})") in message
  assert f"The other {len(written) - 1} pieces are fine" in message


def test_a_cut_group_zip_is_still_skipped_not_refused(tmp_path):
  """Only the download itself (a zip of zips) is refused when cut: a cut
  group zip is skipped and reported, as before."""
  cut = testing.zip_bytes({"국/미역국/Img_017_0000.jpg": testing.jpeg(1, (64, 48))})[:-30]
  (tmp_path / "국.zip").write_bytes(cut)
  assert download.locate(tmp_path).archives == ()
  assert [file.bad_archive for file, _ in corpus.walk(tmp_path)] == [True]


# ---------------------------------------------------------------------------
# Builds: each form gives the examples of the whole kfood.zip.


def _examples(builder) -> dict[str, tuple[bytes, int, str]]:
  return {name: (e["image"], int(e["label"]), e["split"])
          for name, e in read_examples(builder).items()}


@pytest.fixture(scope="module")
def plain_build(realistic, tmp_path_factory) -> dict[str, tuple[bytes, int, str]]:
  return _examples(build("korean_food/224", tmp_path_factory.mktemp("data"), realistic.zip.parent,
                         workers=2))


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
    build("korean_food/224", tmp_path / "data", manual, download_dir=tmp_path / "downloads",
          workers=2)
  config_dir = tmp_path / "data" / "korean_food" / "224"
  # No version, whole or half-built, and no lock: it was never built.
  assert not config_dir.exists()
  assert not (tmp_path / "downloads" / "scans").exists()  # No scan was made.


# ---------------------------------------------------------------------------
# Damaged archives: a kept photo set and a skip, or one line; never a traceback, never an
# archive's memory.


def _peak(read: Callable[[], object]) -> int:
  """The most memory `read` allocates at once (tracemalloc)."""
  tracemalloc.start()
  try:
    read()
  except (OSError, zipfile.BadZipFile):
    pass
  finally:
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
  return peak


def _skips(root: pathlib.Path) -> dict[str, str]:
  report = BuildReport()
  list(listing.CorpusListing(download.locate(root), report))
  return {s.file_name: s.reason for s in report.skipped_files}


def test_an_empty_or_folders_only_zip_beside_kfood_zip_is_skipped_and_reported(tmp_path):
  shutil.copyfile(SAMPLE_ZIP, tmp_path / "kfood.zip")
  zipfile.ZipFile(tmp_path / "empty.zip", "w").close()  # The end record alone.
  (tmp_path / "folders.zip").write_bytes(testing.zip_bytes({"구이/갈비구이/": b""}))
  assert download.locate(tmp_path).archives == ()  # No traceback: both read in place, as zips.
  skips = _skips(tmp_path)
  no_files = "a zip archive that holds no files (empty, or folders only)"
  assert skips["empty.zip"] == skips["folders.zip"] == no_files
  assert walked(tmp_path) == walked(SAMPLE_ZIP.parent)


def _zip_at(path: pathlib.Path, offset: int, members: dict[str, bytes]) -> None:
  """A zip as `zipfile` writes it `offset` bytes into a sparse file (the hole never written)."""
  with open(path, "wb") as f:
    f.seek(offset)
    with zipfile.ZipFile(f, "w") as zf:
      for name, data in members.items():
        zf.writestr(zipfile.ZipInfo(name, testing.DATE_TIME), data)


def test_zip64_end_records_are_found_whatever_the_classic_fields_hold(tmp_path):
  """`zipfile` writes ZIP64 end records with normal classic values for a
  directory between 2 and 4 GiB: such a zip reads, in place and in pieces."""
  with zipfile.ZipFile(SAMPLE_ZIP) as zf:
    members = {info.filename: zf.read(info) for info in zf.infolist()}
  (tmp_path / "whole").mkdir()
  kfood = tmp_path / "whole" / "kfood.zip"
  _zip_at(kfood, 3 << 30, members)
  size = os.path.getsize(kfood)
  with open(kfood, "rb") as f:
    end = zips.read_at(f, size - zips.END.size, zips.END.size)
    assert zips.read_at(f, size - zips.END.size - 20, 4) == b"PK\x06\x07"  # A ZIP64 locator...
    _, _, _, _, entries, _, directory_offset, _ = zips.END.unpack(end)
    # ...and normal classic values.
    assert entries == len(members) and 2 << 30 < directory_offset < 4 << 30
    assert [m.name for m in zips.members(f, size, decode_name, 64)] == list(members)
  expected = walked(kfood.parent)
  assert len(expected) > 20
  testing.write_pieces(kfood, tmp_path / "pieces" / "21.한국음식", 1 << 30)
  # Checked through its pieces, and whole.
  assert len(download.locate(tmp_path / "pieces").archives) == 1
  assert walked(tmp_path / "pieces") == expected


def test_zip64_end_records_of_many_entries_are_read(tmp_path):
  """More than 65,535 entries: the cheap real case of `zipfile`'s ZIP64 end
  records, classic fields full."""
  path = tmp_path / "many.zip"
  with zipfile.ZipFile(path, "w") as zf:
    for i in range(0x10000 + 10):
      zf.writestr(zipfile.ZipInfo(f"{i}", testing.DATE_TIME), b"")
  with open(path, "rb") as f:
    found = zips.members(f, os.path.getsize(path), decode_name, 64)
    assert isinstance(found, list) and len(found) == 0x10000 + 10


def _group_with_a_bad_extra_field() -> tuple[bytes, dict[str, bytes]]:
  """A group zip as `zipfile` writes it, one member's ZIP64 extra field
  claiming 16 bytes and holding 8."""
  good = {f"국/미역국/Img_017_000{i}.jpg": testing.jpeg(i, (64, 48)) for i in range(2)}
  out = io.BytesIO()
  with zipfile.ZipFile(out, "w") as zf:
    for name, data in good.items():
      zf.writestr(zipfile.ZipInfo(name, testing.DATE_TIME), data)
    bad = zipfile.ZipInfo("국/미역국/Img_017_0009.jpg", testing.DATE_TIME)
    bad.extra = struct.pack("<2HQ", 1, 16, 0)
    zf.writestr(bad, testing.jpeg(9, (64, 48)))
  return out.getvalue(), good


def test_a_zip64_extra_field_longer_than_its_bytes_costs_its_member_only(tmp_path):
  data, good = _group_with_a_bad_extra_field()
  (tmp_path / "국.zip").write_bytes(data)
  with pytest.raises(zipfile.BadZipFile, match="Corrupt extra field"):
    zipfile.ZipFile(tmp_path / "국.zip")  # `zipfile` refuses the whole group zip.
  with open(tmp_path / "국.zip", "rb") as f:
    assert len(list(zips.local_members(f, len(data), decode_name))) == 3
  files = {file.parts: file for file, _ in corpus.walk(tmp_path)}
  bad = files.pop(("국", "미역국", "Img_017_0009.jpg"))
  assert ("a damaged entry in its zip's directory (Corrupt extra field 0001 (size=16))"
          in bad.problem)
  assert {"/".join(p) for p in files} == set(good)
  assert walked(tmp_path) == {tuple(name.split("/")): photo for name, photo in good.items()}
  assert "a damaged entry" in _skips(tmp_path)["국/미역국/Img_017_0009.jpg"]
  kfood = testing.zip_bytes({"국.zip": data}, "utf-8", dirs=False)
  (tmp_path / "cut").mkdir()
  (tmp_path / "cut" / "kfood.zip").write_bytes(kfood[:len(kfood) - 200])
  with pytest.raises(download.DownloadError, match="the transfer was cut"):  # Not a struct.error.
    download.locate(tmp_path / "cut")


def _with_declared_size(data: bytes, name: str, size: int) -> bytes:
  """The zip `data` with member `name` declaring `size` bytes, in its local
  header and its directory."""
  out = bytearray(data)
  with zipfile.ZipFile(io.BytesIO(data)) as zf:
    struct.pack_into("<L", out, zf.getinfo(name).header_offset + 22, size)
    pos = zf.start_dir
  while out[pos:pos + 4] == b"PK\x01\x02":
    name_len, extra_len, comment_len = struct.unpack_from("<3H", out, pos + 28)
    if out[pos + 46:pos + 46 + name_len] == name.encode():
      struct.pack_into("<L", out, pos + 24, size)
    pos += 46 + name_len + extra_len + comment_len
  return bytes(out)


BOMB = "국/미역국/Img_017_0002.jpg"


def _bomb_group(declared: int) -> bytes:
  """A group zip with a photo and a member of 64 MiB of zeros, deflated to
  kilobytes, declaring `declared` bytes."""
  members = {"국/미역국/Img_017_0001.jpg": testing.jpeg(1, (64, 48)), BOMB: bytes(64 << 20)}
  data = testing.zip_bytes(members, compression=zipfile.ZIP_DEFLATED, dirs=False)
  return _with_declared_size(data, BOMB, declared)


@pytest.mark.parametrize("declared, refusal", [
    (1000, "inflates past its declared 1,000 bytes"),  # Headers that lie.
    (0, "inflates past its declared 0 bytes"),  # zlib's `max_length` of 0 is no limit at all.
    (3 << 30, "more than any photo can be"),  # A zip bomb that says so.
])
def test_a_member_inflating_past_what_it_declares_or_any_photo_is_refused(tmp_path, declared,
                                                                          refusal):
  (tmp_path / "국.zip").write_bytes(_bomb_group(declared))
  for file, read in corpus.walk(tmp_path):  # The reader is valid until the next file.
    if file.name == BOMB.rsplit("/", 1)[1]:
      assert file.span is not None and file.span.file_size == declared
      with pytest.raises(OSError, match=refusal):
        file.span.read()  # As a worker reads it.
      with corpus.Reader() as reader:
        for how in (file.span.read, read, functools.partial(reader.read, file.location)):
          assert _peak(how) < 4 << 20  # Not the 64 MiB it inflates to.
  # The listing leaves it to the worker that reads it.
  assert "unreadable" not in str(_skips(tmp_path))


def _small_tar(tmp_path: pathlib.Path,
               directory: bool = False) -> tuple[pathlib.Path, list[pathlib.Path]]:
  """download.tar of the sample's pieces of 16 KiB, as `tarfile` writes it
  (with a folder entry first)."""
  written = testing.write_pieces(SAMPLE_ZIP, tmp_path / "pieces", 16 << 10)
  tar = tmp_path / "manual" / "download.tar"
  tar.parent.mkdir()
  with tarfile.open(tar, "w", format=tarfile.GNU_FORMAT) as out:
    if directory:
      info = tarfile.TarInfo("21.한국음식")
      info.type = tarfile.DIRTYPE
      out.addfile(info)
    for piece in written:
      out.add(piece, f"21.한국음식/{piece.name}")
  return tar, written


def _damage_header(tar: pathlib.Path, index: int) -> int:
  with tarfile.open(tar) as opened:
    at = opened.getmembers()[index].offset
  with open(tar, "r+b") as f:
    f.seek(at + 100)  # Its mode: the checksum no longer matches.
    f.write(b"9")
  return at


def test_a_damaged_tar_header_is_named_and_the_members_after_it_found(tmp_path):
  tar, written = _small_tar(tmp_path)
  at = _damage_header(tar, 3)
  found = tars.read(os.fspath(tar))
  names = [m.name.rsplit("/", 1)[1] for m in found.members]
  assert names == [p.name for p in written if p != written[3]]
  assert found.cut is None and [d.at for d in found.damage] == [at]
  assert str(found.damage[0]).startswith(
      f"an unreadable header at byte {at:,}, after its member 21.한국음식/{written[2].name} "
      f"(bad checksum); its members are read again")
  with pytest.raises(download.DownloadError) as error:
    download.locate(tar.parent)
  message = str(error.value)
  assert f"{tar} is damaged: an unreadable header at byte {at:,}" in message
  assert f"{written[3].name} (bytes" in message and "is missing" in message
  assert download.DOWNLOAD_COMMAND in message


def test_a_damaged_tar_header_is_read_past_in_a_chunks_memory(tmp_path):
  tar, written = _small_tar(tmp_path)
  _damage_header(tar, 1)
  # Past the damage, more of the tar than any chunk: never read into memory at once.
  with open(tar, "ab") as f:
    f.write(os.urandom(8 << 20))
  assert _peak(lambda: tars.read(os.fspath(tar))) < 4 << 20


def test_a_damaged_header_that_loses_no_piece_is_a_warning(tmp_path):
  tar, written = _small_tar(tmp_path, directory=True)
  at = _damage_header(tar, 0)  # The folder's entry.
  (archive,) = download.locate(tar.parent).archives
  assert f"{tar} has an unreadable header at byte {at:,}, before its first member" in archive.note
  assert "Every piece of kfood.zip was found all the same" in archive.note
  assert walked(tar.parent) == walked(SAMPLE_ZIP.parent)


def test_damaged_archives_build_with_their_photos_kept_and_skips_reported(realistic, plain_build,
                                                                          tmp_path):
  """A build beside an empty zip, a folders-only zip, a group zip with a
  damaged directory entry and a member that inflates past its declared size."""
  manual = tmp_path / "manual"
  manual.mkdir()
  shutil.copyfile(realistic.zip, manual / "kfood.zip")
  zipfile.ZipFile(manual / "empty.zip", "w").close()
  (manual / "folders.zip").write_bytes(testing.zip_bytes({"구이/": b""}))
  (manual / "bad extra").mkdir()
  (manual / "bad extra" / "국.zip").write_bytes(_group_with_a_bad_extra_field()[0])
  (manual / "bomb").mkdir()
  (manual / "bomb" / "국.zip").write_bytes(_bomb_group(1000))
  builder = build("korean_food/224", tmp_path / "data", manual, workers=2)
  examples = _examples(builder)
  extra = {"국/미역국/Img_017_0000.jpg", "국/미역국/Img_017_0001.jpg"}
  assert set(examples) - set(plain_build) == extra
  assert {n: e for n, e in examples.items() if n not in extra} == plain_build
  skipped = {s["file_name"]: s["reason"] for s in builder.info.metadata["skipped_files"]}
  assert skipped["empty.zip"] == skipped["folders.zip"] == ("a zip archive that holds no files "
                                                            "(empty, or folders only)")
  assert "a damaged entry in its zip's directory" in skipped["국/미역국/Img_017_0009.jpg"]
  assert "inflates past its declared 1,000 bytes" in skipped[BOMB]

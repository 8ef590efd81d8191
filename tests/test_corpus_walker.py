"""The corpus walker (korean_food/corpus.py): name encodings and every
nesting of zips and folders a user may hold the corpus in.

No dataset is built here; `test_korean_food_builder.py` builds the same forms.
"""

from __future__ import annotations

import os
import pathlib
import sys
import unicodedata
import zipfile

import pytest

import korean_food
from korean_food import corpus, names
from photo_datasets import testing

GALBI = "구이/갈비구이/Img_000_0000.jpg"

# ---------------------------------------------------------------------------
# Name encodings


# CP949 has no code for the loose jamo of NFD, so NFD names come in UTF-8 only.
@pytest.mark.parametrize("encoding, flagged, form", [
    ("utf-8-flag", True, "NFC"), ("utf-8", False, "NFC"), ("cp949", False, "NFC"),
    ("utf-8-flag", True, "NFD"), ("utf-8", False, "NFD"),
])
def test_zip_name_encodings_resolve_to_nfc(tmp_path, encoding, flagged, form):
  name = unicodedata.normalize(form, GALBI)
  path = tmp_path / "구이.zip"
  path.write_bytes(testing.zip_bytes({name: b"x"}, encoding, dirs=False))
  with zipfile.ZipFile(path) as zf:
    (info,) = zf.infolist()
    raw = info.filename.encode("utf-8" if flagged else "cp437")
  # The fixture writes what it claims: the flag, and the raw bytes.
  assert bool(info.flag_bits & 0x800) == flagged
  assert raw == name.encode("utf-8" if encoding.startswith("utf-8") else "cp949")
  assert names.member_name(info) == unicodedata.normalize("NFC", GALBI)


def test_raw_name_bytes_try_utf8_then_cp949():
  assert names.decode_name("김치찌개".encode()) == "김치찌개"
  assert names.decode_name("김치찌개".encode("cp949")) == "김치찌개"
  assert names.decode_name(testing.nfd("김치찌개").encode("utf-8")) == "김치찌개"


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that keeps name bytes")
def test_disk_names_nfd_and_cp949_resolve_to_nfc(tmp_path):
  nfd_dir = tmp_path / testing.nfd("구이") / testing.nfd("갈치구이")
  nfd_dir.mkdir(parents=True)
  (nfd_dir / "Img_001_0000.jpg").write_bytes(b"a")
  cp949_dir = os.path.join(os.fsencode(tmp_path), "찌개".encode("cp949"),
                           "김치찌개".encode("cp949"))
  os.makedirs(cp949_dir)
  with open(os.path.join(cp949_dir, b"Img_119_0000.jpg"), "wb") as f:
    f.write(b"b")
  assert testing.nfd("구이") in os.listdir(tmp_path)  # the disk really holds NFD
  found = {file.parts: read() for file, read in corpus.walk(tmp_path)}
  assert found == {("구이", "갈치구이", "Img_001_0000.jpg"): b"a",
                   ("찌개", "김치찌개", "Img_119_0000.jpg"): b"b"}


# ---------------------------------------------------------------------------
# Nesting


def _group_members() -> dict[str, dict[str, bytes]]:
  return {
      "구이": {"구이/갈비구이/Img_000_0000.jpg": b"galbi-0",
              "구이/갈비구이/Img_000_0001.jpg": b"galbi-1",
              "구이/갈비구이/crop_area.properties": b"Img_000_0000=1,2,3,4\r\n"},
      "찌개": {"찌개/김치찌개/Img_119_0000.jpg": b"kimchi-0"},
  }


def test_nesting_forms_walk_to_the_same_files(tmp_path):
  expected = {name.split("/", 1)[1]: data
              for m in _group_members().values() for name, data in m.items()}
  for form, root in testing.write_layouts(tmp_path, _group_members()).items():
    found = {"/".join(file.parts[-2:]): read() for file, read in corpus.walk(root)}
    assert found == expected, form


def test_nested_members_read_again_by_location(tmp_path):
  root = testing.write_layouts(tmp_path, _group_members())["kfood_zip"]
  files = [(file.location, read()) for file, read in corpus.walk(root)]
  assert [len(location) for location, _ in files] == [3] * 4  # disk zip / inner zip / member
  with corpus.Reader() as reader:
    for location, data in sorted(files, reverse=True):
      assert reader.read(location) == data


def test_unreadable_zip_inside_zip_does_not_stop_the_walk(tmp_path):
  inner = testing.layouts(_group_members())["group_zips"]
  inner["__MACOSX/._구이.zip"] = testing.JUNK["apple_double"]  # macOS AppleDouble: not a zip
  (tmp_path / "kfood.zip").write_bytes(testing.zip_bytes(inner, "utf-8", dirs=False))
  names = ["/".join(file.parts) for file, _ in corpus.walk(tmp_path)]
  assert "__MACOSX/._구이.zip" in names
  assert "구이/갈비구이/Img_000_0001.jpg" in names and "찌개/김치찌개/Img_119_0000.jpg" in names


# ---------------------------------------------------------------------------
# Where the bytes lie: workers read each file themselves (`records.Span`).

SAMPLE_ZIP = pathlib.Path(korean_food.__file__).parent / "sample" / "kfood.zip"


def test_every_file_of_nested_stored_zips_reads_the_same_through_its_span():
  spans = 0
  for file, read in corpus.walk(SAMPLE_ZIP.parent):
    if file.span is not None:
      spans += 1
      data = read()
      assert file.span.read() == data and file.size == len(data), file.parts
  assert spans > 40  # kfood.zip > stored group zips > members.


def test_deflated_members_and_tree_files_read_through_their_span(tmp_path):
  photo = testing.jpeg(1)
  (tmp_path / "구이.zip").write_bytes(testing.zip_bytes({GALBI: photo}, "utf-8-flag", dirs=False))
  with zipfile.ZipFile(tmp_path / "deflated.zip", "w", zipfile.ZIP_DEFLATED) as zf:
    zf.writestr("찌개/김치찌개/Img_119_0000.jpg", photo)
  testing.write_tree(tmp_path / "tree", {"밥/김밥/Img_069_0000.jpg": photo})
  read = {file.parts[-1]: file.span.read() for file, _ in corpus.walk(tmp_path) if file.span}
  assert read == {name: photo
                  for name in ("Img_000_0000.jpg", "Img_119_0000.jpg", "Img_069_0000.jpg")}


def test_a_damaged_member_fails_its_crc_check(tmp_path):
  photo = testing.jpeg(2)
  path = tmp_path / "구이.zip"
  path.write_bytes(testing.zip_bytes({GALBI: photo}, "utf-8-flag", dirs=False))
  ((file, _),) = list(corpus.walk(tmp_path))
  data = bytearray(path.read_bytes())
  at = data.index(photo[100:120]) + 5
  data[at] ^= 0xFF  # One flipped byte inside the stored photo.
  path.write_bytes(bytes(data))
  with pytest.raises(OSError, match="bad CRC-32"):
    file.span.read()


def test_a_member_in_a_compressed_inner_zip_has_no_span(tmp_path):
  inner = testing.zip_bytes({GALBI: testing.jpeg(3)}, "utf-8-flag", dirs=False)
  with zipfile.ZipFile(tmp_path / "kfood.zip", "w", zipfile.ZIP_DEFLATED) as zf:
    zf.writestr("구이.zip", inner)
  walked = [(file.span, file.size, read()) for file, read in corpus.walk(tmp_path)]
  assert walked == [(None, len(testing.jpeg(3)), testing.jpeg(3))]  # The listing reads it instead.


def test_a_build_walks_the_manual_dir_once(tmp_path, monkeypatch):
  """The folders found by `download.locate` are the ones the disk estimate and the
  listing read: the manual dir is walked once per build, however many readers."""
  from korean_food import download, listing
  from photo_datasets.catalog.build_report import BuildReport

  inner = testing.zip_bytes({GALBI: b"x", "찌개/김치찌개/Img_119_0000.jpg": b"y"},
                            "utf-8-flag")
  (tmp_path / "a" / "b").mkdir(parents=True)
  (tmp_path / "a" / "b" / "kfood.zip").write_bytes(inner)
  (tmp_path / "구이" / "갈치구이").mkdir(parents=True)
  (tmp_path / "구이" / "갈치구이" / "Img_001_0000.jpg").write_bytes(b"z")
  walks = []
  real_walk = os.walk
  monkeypatch.setattr(os, "walk", lambda top, *a, **k: walks.append(top) or real_walk(top, *a, **k))
  source = download.locate(tmp_path)
  builder = korean_food.Builder(data_dir=tmp_path / "data", workers=1)
  estimated = builder._estimate_source(source)
  listed = [c.file_name for c in listing.CorpusListing(source, BuildReport())]
  assert walks == [os.fspath(tmp_path)]
  assert estimated == (3, 3) and len(listed) == 3

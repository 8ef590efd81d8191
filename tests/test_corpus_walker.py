"""Unit tests of the Korean food corpus quirks: crop files, names, nesting.

No dataset is built here; `test_korean_food_dataset.py` checks the same quirks
end to end.
"""

from __future__ import annotations

import os
import pathlib
import sys
import unicodedata
import zipfile

import pytest

from korean_food import corpus, crop_areas

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "scripts"))
import make_korean_food_data as kdata  # noqa: E402

GALBI = "구이/갈비구이/Img_000_0000.jpg"

# ---------------------------------------------------------------------------
# crop_area.properties


CROP_LINES = [
    "[sections]",
    "# a comment",
    "! another comment style",
    "",
    "   ",
    "Img_000_0001=45,76,538,404",
    "  Img_000_0002 = 228 , 270 , 431 , 218  ",  # stray spaces
    "Img_000_0003=1,2,3,4 (checked by kim)",  # trailing text after the numbers
    "Img_000_0004=5,6,7,8,9",  # a fifth number is trailing junk too
    "IMG_000_0005=1,1,10,10",  # key case differs from the file
    "Img_000_0999=3,3,30,30",  # a key whose image is not there
    "=,986,590",
    "Img_000_0006=dissimilar,1,2,3",
    "Img_000_0007=open",
    "Img_000_0008=12,30",  # two numbers
    "Img_000_0009=10,10,0,50",  # zero area
    "Img_000_0010=1,,2,3",  # empty field
    "Img_000_0011",  # no value at all
]
GOOD_BOXES = {
    "img_000_0001": (45, 76, 538, 404),
    "img_000_0002": (228, 270, 431, 218),
    "img_000_0003": (1, 2, 3, 4),
    "img_000_0004": (5, 6, 7, 8),
    "img_000_0005": (1, 1, 10, 10),
    "img_000_0999": (3, 3, 30, 30),
}
BAD_LINES = [
    "=,986,590", "Img_000_0006=dissimilar,1,2,3", "Img_000_0007=open", "Img_000_0008=12,30",
    "Img_000_0009=10,10,0,50", "Img_000_0010=1,,2,3", "Img_000_0011",
]


@pytest.mark.parametrize("newline", ["\r\n", "\n"], ids=["crlf", "lf"])
@pytest.mark.parametrize("bom", [False, True], ids=["no_bom", "bom"])
def test_crop_lines_parse_with_any_line_ending_and_bom(newline, bom):
  parsed = crop_areas.parse_crop_areas(kdata.properties(CROP_LINES, newline=newline, bom=bom))
  assert parsed.boxes == GOOD_BOXES
  assert parsed.bad_lines == BAD_LINES


def test_crop_lines_without_section_line():
  parsed = crop_areas.parse_crop_areas(b"Img_001_0006=30,105,870,367\nImg_001_0007=0,196,900,327")
  assert parsed.boxes == {"img_001_0006": (30, 105, 870, 367), "img_001_0007": (0, 196, 900, 327)}
  assert parsed.bad_lines == []


def test_crop_key_with_image_extension_names_the_same_image():
  parsed = crop_areas.parse_crop_areas(b"Img_001_0006.JPG=30,105,870,367\nImg_001_0007.png=1,2,3,4\n")
  assert parsed.boxes == {"img_001_0006": (30, 105, 870, 367), "img_001_0007": (1, 2, 3, 4)}


def test_crop_lines_not_utf8_do_not_crash():
  parsed = crop_areas.parse_crop_areas("Img_000_0001=1,2,3,4\r\n# 설명\r\n".encode("cp949") + b"\xff\xfe=1\r\n")
  assert parsed.boxes == {"img_000_0001": (1, 2, 3, 4)}
  assert len(parsed.bad_lines) == 1


def test_crop_box_inside_image_is_relative_ymin_xmin_ymax_xmax():
  assert crop_areas.relative_box((45, 76, 538, 404), 640, 480) == pytest.approx(
      (76 / 480, 45 / 640, 480 / 480, 583 / 640))


def test_crop_box_running_past_image_is_clipped():
  assert crop_areas.relative_box((100, 50, 500, 400), 180, 240) == pytest.approx((50 / 240, 100 / 180, 1.0, 1.0))
  assert crop_areas.relative_box((-10, -20, 60, 70), 100, 100) == pytest.approx((0.0, 0.0, 0.5, 0.5))


def test_crop_box_outside_image_is_no_box():
  assert crop_areas.relative_box((500, 500, 10, 10), 320, 240) is None
  assert crop_areas.relative_box((0, 240, 10, 10), 320, 240) is None


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
  path.write_bytes(kdata.zip_bytes({name: b"x"}, encoding, dirs=False))
  with zipfile.ZipFile(path) as zf:
    (info,) = zf.infolist()
    raw = info.filename.encode("utf-8" if flagged else "cp437")
  # The fixture writes what it claims: the flag, and the raw bytes.
  assert bool(info.flag_bits & 0x800) == flagged
  assert raw == name.encode("utf-8" if encoding.startswith("utf-8") else "cp949")
  assert corpus.member_name(info) == unicodedata.normalize("NFC", GALBI)


def test_raw_name_bytes_try_utf8_then_cp949():
  assert corpus.decode_name("김치찌개".encode("utf-8")) == "김치찌개"
  assert corpus.decode_name("김치찌개".encode("cp949")) == "김치찌개"
  assert corpus.decode_name(kdata.nfd("김치찌개").encode("utf-8")) == "김치찌개"


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system that keeps name bytes")
def test_disk_names_nfd_and_cp949_resolve_to_nfc(tmp_path):
  nfd_dir = tmp_path / kdata.nfd("구이") / kdata.nfd("갈치구이")
  nfd_dir.mkdir(parents=True)
  (nfd_dir / "Img_001_0000.jpg").write_bytes(b"a")
  cp949_dir = os.path.join(os.fsencode(tmp_path), "찌개".encode("cp949"), "김치찌개".encode("cp949"))
  os.makedirs(cp949_dir)
  with open(os.path.join(cp949_dir, b"Img_119_0000.jpg"), "wb") as f:
    f.write(b"b")
  assert kdata.nfd("구이") in os.listdir(tmp_path)  # the disk really holds NFD
  found = {file.parts: read() for file, read in corpus.walk(tmp_path)}
  assert found == {("구이", "갈치구이", "Img_001_0000.jpg"): b"a", ("찌개", "김치찌개", "Img_119_0000.jpg"): b"b"}


# ---------------------------------------------------------------------------
# Nesting


def _group_members() -> dict[str, dict[str, bytes]]:
  return {
      "구이": {"구이/갈비구이/Img_000_0000.jpg": b"galbi-0", "구이/갈비구이/Img_000_0001.jpg": b"galbi-1",
              "구이/갈비구이/crop_area.properties": b"Img_000_0000=1,2,3,4\r\n"},
      "찌개": {"찌개/김치찌개/Img_119_0000.jpg": b"kimchi-0"},
  }


def test_nesting_forms_walk_to_the_same_files(tmp_path):
  expected = {name.split("/", 1)[1]: data for m in _group_members().values() for name, data in m.items()}
  for form, root in kdata.write_layouts(tmp_path, _group_members()).items():
    found = {"/".join(file.parts[-2:]): read() for file, read in corpus.walk(root)}
    assert found == expected, form


def test_nested_members_read_again_by_location(tmp_path):
  root = kdata.write_layouts(tmp_path, _group_members())["kfood_zip"]
  files = [(file.location, read()) for file, read in corpus.walk(root)]
  assert [len(location) for location, _ in files] == [3] * 4  # disk zip / inner zip / member
  with corpus.Reader() as reader:
    for location, data in sorted(files, reverse=True):
      assert reader.read(location) == data


def test_unreadable_zip_inside_zip_does_not_stop_the_walk(tmp_path):
  inner = kdata.layouts(_group_members())["group_zips"]
  inner["__MACOSX/._구이.zip"] = kdata.JUNK["apple_double"]  # macOS AppleDouble: not a zip
  (tmp_path / "kfood.zip").write_bytes(kdata.zip_bytes(inner, "utf-8", dirs=False))
  names = ["/".join(file.parts) for file, _ in corpus.walk(tmp_path)]
  assert "__MACOSX/._구이.zip" in names
  assert "구이/갈비구이/Img_000_0001.jpg" in names and "찌개/김치찌개/Img_119_0000.jpg" in names

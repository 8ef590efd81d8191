"""crop_area.properties (korean_food/crop_areas.py): the lines the corpus
holds, well-formed or not, and the boxes they give on an image.

`test_korean_food_builder.py` checks the same lines end to end.
"""

from __future__ import annotations

import pytest

from korean_food import crop_areas
from photo_datasets import testing
from photo_datasets.photos import images

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
  parsed = crop_areas.parse_crop_areas(testing.properties(CROP_LINES, newline=newline, bom=bom))
  assert parsed.boxes == GOOD_BOXES
  assert parsed.bad_lines == BAD_LINES


def test_crop_lines_without_section_line():
  parsed = crop_areas.parse_crop_areas(b"Img_001_0006=30,105,870,367\nImg_001_0007=0,196,900,327")
  assert parsed.boxes == {"img_001_0006": (30, 105, 870, 367), "img_001_0007": (0, 196, 900, 327)}
  assert parsed.bad_lines == []


def test_crop_key_with_image_extension_names_the_same_image():
  parsed = crop_areas.parse_crop_areas(b"Img_001_0006.JPG=30,105,870,367\n"
                                       b"Img_001_0007.png=1,2,3,4\n")
  assert parsed.boxes == {"img_001_0006": (30, 105, 870, 367), "img_001_0007": (1, 2, 3, 4)}


def test_crop_lines_not_utf8_do_not_crash():
  parsed = crop_areas.parse_crop_areas("Img_000_0001=1,2,3,4\r\n# 설명\r\n".encode("cp949")
                                       + b"\xff\xfe=1\r\n")
  assert parsed.boxes == {"img_000_0001": (1, 2, 3, 4)}
  assert len(parsed.bad_lines) == 1


def test_crop_box_inside_image_is_relative_ymin_xmin_ymax_xmax():
  assert images.relative_box((45, 76, 538, 404), 640, 480) == pytest.approx(
      (76 / 480, 45 / 640, 480 / 480, 583 / 640))


def test_crop_box_running_past_image_is_clipped():
  assert images.relative_box((100, 50, 500, 400), 180, 240) == pytest.approx(
      (50 / 240, 100 / 180, 1.0, 1.0))
  assert images.relative_box((-10, -20, 60, 70), 100, 100) == pytest.approx((0.0, 0.0, 0.5, 0.5))


def test_crop_box_outside_image_is_no_box():
  assert images.relative_box((500, 500, 10, 10), 320, 240) is None
  assert images.relative_box((0, 240, 10, 10), 320, 240) is None

"""The class table `korean_food/classes.tsv`: its order, and clear errors when it is malformed."""

from __future__ import annotations

import pathlib

import pytest

from korean_food import classes

HEADER = "index\tname\tsuper_category\tenglish_name\tslug\n"


def test_the_table_has_150_classes_in_index_order_with_unique_nfc_names():
  table = classes.food_classes()
  assert [c.index for c in table] == list(range(150))
  assert len({c.name for c in table}) == 150
  assert all(c.name == classes.nfc(c.name) for c in table)
  assert classes.class_by_name()["갈비구이"].index == 0
  assert len(classes.super_category_names()) == 27


@pytest.mark.parametrize("rows, message", [
    ("0\t갈비구이\t구이\tGrilled Short Ribs\tgalbi_gui\n"
     "2\t갈치구이\t구이\tGrilled Hairtail\tgalchi_gui\n",
     "rows must be numbered 0, 1, 2"),
    ("zero\t갈비구이\t구이\tGrilled Short Ribs\tgalbi_gui\n", "is malformed: ValueError"),
    ("0\t갈비구이\t구이\n", "is malformed"),
    ("0\t갈비구이\t구이\ta\ta\n1\t갈비구이\t구이\tb\tb\n", "class names must be unique"),
])
def test_a_malformed_table_raises_a_clear_error(tmp_path: pathlib.Path, monkeypatch, rows: str,
                                                message: str):
  table = tmp_path / "classes.tsv"
  table.write_text(HEADER + rows, encoding="utf-8")
  monkeypatch.setattr(classes, "CLASSES_FILE", table)
  with pytest.raises(ValueError, match=message):
    classes.food_classes.__wrapped__()

"""The 150 Korean food classes, from `classes.tsv` (the corpus's canonical order).

Row i is class `Img_i`: classes sorted by (super-category, name) in code-point
order. Names are NFC; look names up with `nfc()` applied first.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import pathlib

from korean_food.names import nfc

CLASSES_FILE = pathlib.Path(__file__).with_name("classes.tsv")


@dataclasses.dataclass(frozen=True)
class FoodClass:
  index: int  # The `XXX` of `Img_XXX_YYYY` file names, and the label id.
  name: str  # Korean, NFC, e.g. "갈비구이".
  super_category: str  # Korean group, e.g. "구이".
  english_name: str  # e.g. "Grilled Short Ribs".
  slug: str  # ASCII, e.g. "galbi_gui".


@functools.cache
def food_classes() -> tuple[FoodClass, ...]:
  """All 150 classes in label order, read from `classes.tsv` once.

  Returns:
    The `FoodClass` of each label id, at its index, with its `name` (Korean,
    NFC), `super_category`, `english_name` and ASCII `slug`: `food_classes()[0]`
    is 갈비구이, "Grilled Short Ribs", `galbi_gui`.

  Raises:
    ValueError: `classes.tsv` is malformed (a row without the header's columns,
      a value of the wrong type, rows not numbered 0, 1, 2, ... in order, or a
      class name twice).
  """
  with CLASSES_FILE.open(encoding="utf-8", newline="") as f:
    rows = list(csv.DictReader(f, delimiter="\t"))
  for line, row in enumerate(rows, start=2):
    if None in row.values() or None in row:
      raise ValueError(f"{CLASSES_FILE} is malformed: line {line} does not have the 5 columns "
                       f"of the header")
  try:
    classes = tuple(
        FoodClass(int(r["index"]), nfc(r["name"]), nfc(r["super_category"]),
                  r["english_name"], r["slug"]) for r in rows)
  except (KeyError, TypeError, ValueError) as e:
    raise ValueError(f"{CLASSES_FILE} is malformed: {type(e).__name__}: {e}") from None
  indices = [c.index for c in classes]
  if indices != list(range(len(classes))):
    raise ValueError(f"{CLASSES_FILE}: rows must be numbered 0, 1, 2, ... in order, "
                     f"got {indices[:10]}...")
  if len({c.name for c in classes}) != len(classes):
    raise ValueError(f"{CLASSES_FILE}: class names must be unique")
  return classes


@functools.cache
def class_by_name() -> dict[str, FoodClass]:
  return {c.name: c for c in food_classes()}


def class_names() -> list[str]:
  return [c.name for c in food_classes()]


def super_category_names() -> list[str]:
  return sorted({c.super_category for c in food_classes()})

"""Writes the dummy data of the builders' TFDS harness tests, for every dataset.

    python scripts/make_dummy_data.py [DATASET ...]   # after `pip install -e .`

* `flowers_dataset/dummy_data/download/flower_photos/`: 15 photos in the 5
  class folders and a LICENSE.txt crediting them in both line orders of the
  real one, as `download_and_extract` would give it.
* `korean_food/dummy_data/kfood/`: an extracted tree of 2 classes (갈비구이,
  김치찌개), a PNG among the JPEGs and a crop_area.properties with a section
  line, as the manual dir.

Every image is a `photo_datasets.testing.photo` drawn from a fixed seed, never
a real photo. An image's split is a function of the SHA-256 of its bytes
(`photo_datasets/photos/splits.py`), so each one is drawn from successive seeds until
its bytes fall in the split its plan below names (`testing.photos_in_splits`):
the split counts the harness tests expect (their `SPLITS`) hold whatever JPEG
encoder regenerates the files.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
from collections.abc import Callable

from photo_datasets import testing

REPO = pathlib.Path(__file__).resolve().parent.parent


def draw(size: testing.Size) -> Callable[[str, int], bytes]:
  """The one drawer of the dummy data: a photo of `size`, PNG or JPEG as its name says."""

  def draw_file(name: str, seed: int) -> bytes:
    return testing.encode(testing.photo(seed, size), "PNG" if name.endswith(".png") else "JPEG")

  return draw_file


# class -> wanted split of each of its photos. Unequal totals (train 8,
# validation 4, test 3) so a test notices two splits swapped.
FLOWERS_PLAN = {
    "dandelion": ("train", "train", "validation"),
    "daisy": ("train", "validation", "test"),
    "tulips": ("train", "train", "test"),
    "sunflowers": ("train", "train", "validation"),
    "roses": ("train", "validation", "test"),
}
# Authors of the credit lines; some non-ASCII, like the real LICENSE.txt.
FLOWERS_AUTHORS = ("Ana María", "Joe  Martin", "Vlastimil Koutecký", "Kaja Kozłowska",
                   "Uroš Novina")
FLOWERS_LICENSE_HEADER = (
    "All images in this archive are licensed under the Creative Commons By-Attribution License, "
    "available at:",
    "https://creativecommons.org/licenses/by/2.0/",
    "The photographers are listed below, thanks to all of them.",
    "",
)


def flowers_files() -> dict[str, bytes]:
  """Path under `dummy_data/download/flower_photos/` -> bytes."""
  plan = {}
  for label, wanted in FLOWERS_PLAN.items():
    for split in wanted:
      plan[f"{label}/{1000 + len(plan)}_dummy.jpg"] = split
  files = testing.photos_in_splits(plan, draw((64, 48)))
  lines = list(FLOWERS_LICENSE_HEADER)
  for number, name in enumerate(files):
    author = FLOWERS_AUTHORS[number % len(FLOWERS_AUTHORS)]
    url = f"https://www.flickr.com/photos/dummy{number}/{1000 + number}/"
    # Both orders of the real file.
    lines.append(f"{name} CC-BY {url} - by {author}" if number % 2
                 else f"{name} CC-BY by {author} - {url}")
  files["LICENSE.txt"] = ("\n".join(lines) + "\n").encode("utf-8")
  return files


# Path under `dummy_data/kfood/` -> wanted split (train 4, validation 1, test 2).
KOREAN_FOOD_PLAN = {
    "구이/갈비구이/Img_000_0000.jpg": "train",
    "구이/갈비구이/Img_000_0001.jpg": "train",
    "구이/갈비구이/Img_000_0003.jpg": "validation",
    "구이/갈비구이/Img_000_0004.png": "test",
    "찌개/김치찌개/Img_119_0000.jpg": "train",
    "찌개/김치찌개/Img_119_0002.jpg": "train",
    "찌개/김치찌개/Img_119_0003.jpg": "test",
}


def korean_food_files() -> dict[str, bytes]:
  """Path under `dummy_data/kfood/` -> bytes."""
  files = testing.photos_in_splits(KOREAN_FOOD_PLAN, draw((32, 24)))
  # Boxes on the 32x24 photos, one of them the PNG's.
  files["구이/갈비구이/crop_area.properties"] = testing.properties(
      ["[sections]", "Img_000_0000=4,2,20,16", "Img_000_0004=0,0,16,12"])
  return files


# Dataset -> (folder under its dummy_data/ the script owns, its files there).
DATASETS = {
    "flowers_dataset": ("download/flower_photos", flowers_files),
    "korean_food": ("kfood", korean_food_files),
}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("datasets", nargs="*", metavar="DATASET",
                      help=f"any of {', '.join(DATASETS)} (default: all)")
  args = parser.parse_args()
  unknown = set(args.datasets) - set(DATASETS)
  if unknown:
    parser.error(f"no dummy data for {', '.join(sorted(unknown))}")
  for dataset in args.datasets or DATASETS:
    folder, make_files = DATASETS[dataset]
    root = REPO / dataset / "dummy_data" / folder
    shutil.rmtree(root, ignore_errors=True)
    files = make_files()
    testing.write_tree(root, files)
    photos = [data for name, data in files.items() if not name.endswith((".txt", ".properties"))]
    print(f"{root.relative_to(REPO)}: {len(photos)} photos, splits {testing.split_counts(photos)}")


if __name__ == "__main__":
  main()

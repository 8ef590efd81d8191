"""Writes the tiny, deterministic dummy data used by the builders' TFDS tests.

    python scripts/make_dummy_data.py

Images are drawn with numpy/PIL from fixed seeds (tfds's `fake_data_utils` is
broken under TF2). An image's split is a function of the SHA-256 of its bytes
(`photo_datasets/splits.py`), so each image is drawn from successive seeds until
its bytes fall in the split the plan below wants: the split counts the tests
expect hold whatever JPEG encoder version regenerates the files.

One function per dataset; add `make_<dataset>_dummy_data(root)` and register it
in `MAKERS` for another builder.
"""

from __future__ import annotations

import argparse
import io
import pathlib
import shutil
import sys

import numpy as np
from PIL import Image

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # Works without `pip install -e .` too.

from photo_datasets import splits  # noqa: E402

# class -> wanted split of each of its images. Unequal totals (train 8,
# validation 4, test 3) so a test notices two splits swapped.
FLOWERS_PLAN = {
    "dandelion": ("train", "train", "validation"),
    "daisy": ("train", "validation", "test"),
    "tulips": ("train", "train", "test"),
    "sunflowers": ("train", "train", "validation"),
    "roses": ("train", "validation", "test"),
}
# Authors of the credit lines; some non-ASCII, like the real LICENSE.txt.
_AUTHORS = ("Ana María", "Joe  Martin", "Vlastimil Koutecký", "Kaja Kozłowska", "Uroš Novina")


def draw_jpeg(seed: int, size: tuple[int, int] = (64, 48)) -> bytes:
  """A small smooth RGB picture (a few hundred bytes to ~2 KB), fixed by `seed`."""
  rng = np.random.default_rng(seed)
  width, height = size
  y, x = np.mgrid[0:height, 0:width].astype(np.float64)
  pixels = np.empty((height, width, 3))
  for channel in range(3):
    fx, fy, phase = rng.uniform(0.02, 0.2), rng.uniform(0.02, 0.2), rng.uniform(0, 6.3)
    pixels[..., channel] = 127.5 + 127.5 * np.sin(fx * x + fy * y + phase)
  # A coloured blob, so the classes do not all look alike.
  cx, cy, r = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(5, 15)
  blob = (x - cx) ** 2 + (y - cy) ** 2 < r**2
  pixels[blob] = rng.integers(0, 256, 3)
  out = io.BytesIO()
  Image.fromarray(pixels.astype(np.uint8), "RGB").save(out, format="JPEG", quality=75)
  return out.getvalue()


def jpeg_in_split(split: str, first_seed: int) -> tuple[bytes, int]:
  """The first image from seed `first_seed` on whose bytes fall in `split`."""
  seed = first_seed
  while True:
    data = draw_jpeg(seed)
    if splits.split_of(splits.content_digest(data)) == split:
      return data, seed
    seed += 1


def make_flowers_dummy_data(root: pathlib.Path) -> None:
  """`root/download/flower_photos/<class>/*.jpg` + LICENSE.txt, as in the archive."""
  folder = root / "download" / "flower_photos"
  if folder.exists():
    shutil.rmtree(folder)
  lines = [
      "All images in this archive are licensed under the Creative Commons "
      "By-Attribution License, available at:",
      "https://creativecommons.org/licenses/by/2.0/",
      "The photographers are listed below, thanks to all of them.",
      "",
  ]
  seed = 0
  count = 0
  for label, wanted in FLOWERS_PLAN.items():
    (folder / label).mkdir(parents=True)
    for index, split in enumerate(wanted):
      data, seed = jpeg_in_split(split, seed)
      name = f"{label}/{1000 + seed}_dummy_{index}.jpg"
      (folder / name).write_bytes(data)
      author = _AUTHORS[count % len(_AUTHORS)]
      url = f"https://www.flickr.com/photos/dummy{count}/{1000 + seed}/"
      # Both orders of the real file.
      if count % 2:
        lines.append(f"{name} CC-BY {url} - by {author}")
      else:
        lines.append(f"{name} CC-BY by {author} - {url}")
      seed += 1
      count += 1
  (folder / "LICENSE.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
  print(f"Wrote {count} images to {folder}")


MAKERS = {
    "flowers_dataset": make_flowers_dummy_data,
}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("datasets", nargs="*", metavar="DATASET",
                      help=f"any of {', '.join(MAKERS)} (default: all)")
  args = parser.parse_args()
  unknown = set(args.datasets) - set(MAKERS)
  if unknown:
    parser.error(f"no dummy data maker for {', '.join(sorted(unknown))}")
  for name in args.datasets or MAKERS:
    MAKERS[name](REPO / name / "dummy_data")


if __name__ == "__main__":
  main()

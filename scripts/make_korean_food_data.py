"""Writes the bundled synthetic Korean food sample, `korean_food/sample/kfood.zip`.

    python scripts/make_korean_food_data.py   # after `pip install -e .`

A small corpus in the real AIHub layout (an outer zip of stored inner
`<group>.zip` files holding `<group>/<class>/Img_XXX_YYYY.jpg` and
`crop_area.properties`) with the corpus's quirks: three name encodings and NFD
names, odd and broken images, malformed crop lines, junk files, a prefix that
disagrees with its folder, a photo copied into two classes and a folder that
is no class. The tests (tests/test_korean_food_sample.py) pin what a build of
it gives.

No AIHub photo is used: every image is drawn by `photo_datasets.testing` from
fixed seeds, and the zips have fixed timestamps, so the output is byte-for-byte
reproducible. The dummy data of the TFDS harness comes from
`scripts/make_dummy_data.py`.
"""

from __future__ import annotations

import pathlib
import tempfile

import numpy as np

from korean_food.listing import CorpusListing
from photo_datasets import testing
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import images

SAMPLE_ZIP = pathlib.Path(__file__).resolve().parents[1] / "korean_food" / "sample" / "kfood.zip"
# The photos it gives the builder fill all three splits (train 33, validation 3,
# test 4); `main` checks it.
SAMPLE_SEED = 2021


def sample_groups(seed: int) -> dict[str, dict[str, bytes]]:
  """group -> {member name in the group's inner zip -> bytes}."""
  sizes = [(96, 64), (160, 120), (200, 150), (240, 180), (320, 240), (180, 240), (128, 96),
           (256, 192)]
  rng = np.random.default_rng(seed)

  def clean(index: int, numbers: list[int]) -> dict[str, bytes]:
    return {f"Img_{index:03d}_{n:04d}.jpg": testing.jpeg(int(rng.integers(1 << 30)),
                                                          sizes[n % len(sizes)],
                                                          progressive=bool(n % 3 == 2))
            for n in numbers}

  odd = testing.odd_images(seed + 100)
  broken = testing.broken_files(seed + 200)

  galbi = clean(0, [0, 1, 2, 3, 4, 5, 7, 8])  # 0006 missing: counters have gaps.
  galbi["Img_000_0009.jpg"] = odd["cmyk"]
  galbi["Img_000_0010.jpg"] = odd["exif_rotated"]  # stored 160x96, upright 96x160
  galbi["Img_000_0011.JPG"] = testing.jpeg(seed + 11, (200, 150))
  galbi["crop_area.properties"] = testing.properties([  # 4 bad lines
      "[sections]",
      "Img_000_0000=10,8,60,40",  # 96x64 image
      "Img_000_0001=20,10,100,80 (checked)",  # trailing junk after 4 numbers: still a box
      "=,986,590",
      "Img_000_0002=dissimilar,1,2,3",
      "Img_000_0003=12,30",
      "Img_000_0004=10,10,0,50",
      "img_000_0011=40,30,120,90",  # key in lower case, file is Img_000_0011.JPG
      "Img_000_0998=1,2,3,4",  # no such image
      "Img_000_0010=16,8,64,48",  # on the stored (unrotated) pixels
      "Img_000_0005=100,50,500,400",  # runs past the 180x240 image: clipped
  ])

  galchi = clean(1, [0, 1, 2, 3, 4, 6, 7])
  galchi["Img_001_0008.gif"] = odd["gif"]
  galchi["Img_001_0009.png"] = odd["rgba_png"]
  galchi["crop_area.properties"] = testing.properties(
      ["Img_001_0001=0,0,80,60", "Img_001_0003=30,20,150,100"], newline="\n")

  kimchi = clean(119, [0, 2, 4, 8, 9, 10, 12])
  kimchi["Img_119_0001.jpg"] = odd["png_as_jpg"]
  kimchi["Img_119_0003.jpg"] = odd["grayscale"]
  kimchi["Img_119_0005.jpg"] = broken["truncated"]
  kimchi["Img_119_0006.jpg"] = broken["empty"]
  kimchi["Img_119_0007.jpg"] = broken["html"]
  kimchi["Img_121_0011.jpg"] = testing.jpeg(seed + 21, (160, 120))  # prefix says 동태찌개
  kimchi["Img_119_0013.jpg"] = galbi["Img_000_0002.jpg"]  # the same photo in two classes

  bibim = clean(72, [0, 1, 2, 3, 5, 6, 7, 8, 9])
  bibim["crop_area.properties"] = testing.properties(
      ["[sections]", "Img_072_0000=5,5,80,50", "Img_072_0006=0,0,1,1"])
  bibim_junk = {
      "__MACOSX/밥/비빔밥/._Img_072_0000.jpg": testing.JUNK["apple_double"],
      "밥/비빔밥/.DS_Store": testing.JUNK[".DS_Store"],
      "밥/비빔밥/Thumbs.db": testing.JUNK["Thumbs.db"],
      "밥/비빔밥/org_url.csv": (testing.JUNK["org_url.csv"]
                             + b"Img_072_0000.jpg,http://example.com/1.jpg\r\n"),
  }

  # 부대찌개 is none of the 150 classes
  budae = {"Img_124_0000.jpg": testing.jpeg(seed + 31, (160, 120))}

  return {
      # UTF-8 flag set; the 갈치구이 folder written in NFD, as macOS does.
      "구이": {**{f"구이/갈비구이/{k}": v for k, v in galbi.items()},
              **{testing.nfd(f"구이/갈치구이/{k}"): v for k, v in galchi.items()}},
      # UTF-8 bytes, no flag.
      "찌개": {**{f"찌개/김치찌개/{k}": v for k, v in kimchi.items()},
              **{f"찌개/부대찌개/{k}": v for k, v in budae.items()}},
      # CP949 bytes, no flag.
      "밥": {**{f"밥/비빔밥/{k}": v for k, v in bibim.items()}, **bibim_junk},
  }


def sample_zip(seed: int) -> bytes:
  groups = sample_groups(seed)
  inner = {f"{g}.zip": testing.zip_bytes(members, testing.GROUP_ENCODINGS[g])
           for g, members in groups.items()}
  inner["__MACOSX/._구이.zip"] = testing.JUNK["apple_double"]
  return testing.zip_bytes(inner, "utf-8", dirs=False)


def kept_photos(kfood_zip: bytes) -> list[bytes]:
  """The photos of `kfood_zip` that the builder keeps, as its own listing and
  scan decide (junk, class folders, decodes)."""
  with tempfile.TemporaryDirectory() as root:
    (pathlib.Path(root) / "kfood.zip").write_bytes(kfood_zip)
    listing = CorpusListing(root, BuildReport())
    return [data for data in (candidate.read() for candidate in listing) if _decodes(data)]


def _decodes(data: bytes) -> bool:
  try:
    images.inspect_image(data)
  except images.BadImage:
    return False
  return True


def main() -> None:
  data = sample_zip(SAMPLE_SEED)
  counts = testing.split_counts(kept_photos(data))
  if not all(counts.values()):
    raise SystemExit(f"seed {SAMPLE_SEED} leaves a split empty ({counts}): "
                     f"pick another SAMPLE_SEED")
  SAMPLE_ZIP.parent.mkdir(parents=True, exist_ok=True)
  SAMPLE_ZIP.write_bytes(data)
  print(f"{SAMPLE_ZIP}: {len(data)} bytes, seed {SAMPLE_SEED}, splits {counts}")


if __name__ == "__main__":
  main()

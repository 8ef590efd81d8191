"""Writes the synthetic Korean food data: the bundled sample and the dummy data.

    python scripts/make_korean_food_data.py

* `korean_food/sample/kfood.zip`: a small synthetic corpus in the real layout
  (an outer zip of stored inner `<group>.zip` files holding
  `<group>/<class>/Img_XXX_YYYY.jpg` and `crop_area.properties`) with the
  corpus's quirks: three name encodings and NFD names, odd and broken images,
  malformed crop lines, junk files, a prefix that disagrees with its folder,
  a photo copied into two classes and a folder that is no class.
* `korean_food/dummy_data/kfood/...`: a tiny extracted tree for
  `tfds.testing.DatasetBuilderTestCase`, with at least one photo per split.

No AIHub photo is used: every image is drawn here from fixed seeds, and the
zips have fixed timestamps, so the output is byte-for-byte reproducible. The
tests import the helpers below to build their own corpora.
"""

from __future__ import annotations

import io
import pathlib
import shutil
import sys
import unicodedata
import zipfile

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from korean_food import classes  # noqa: E402
from photo_datasets import images, splits  # noqa: E402

SAMPLE_ZIP = ROOT / "korean_food" / "sample" / "kfood.zip"
DUMMY_DIR = ROOT / "korean_food" / "dummy_data"
DATE_TIME = (2021, 6, 1, 12, 0, 0)
EXIF_ORIENTATION = 0x0112

# ---------------------------------------------------------------------------
# Images.


def photo(seed: int, size: tuple[int, int] = (160, 120)) -> Image.Image:
  """A plate of food on a table: gradient, ellipses, blur and a little noise."""
  rng = np.random.default_rng(seed)
  width, height = size
  c0, c1 = rng.integers(40, 220, size=(2, 3))
  t = (np.linspace(0, 1, width)[None, :] * 0.6 + np.linspace(0, 1, height)[:, None] * 0.4)[..., None]
  image = Image.fromarray((c0 * (1 - t) + c1 * t).astype(np.uint8))
  draw = ImageDraw.Draw(image)
  cx, cy = width * rng.uniform(0.4, 0.6), height * rng.uniform(0.4, 0.6)
  rx, ry = width * rng.uniform(0.25, 0.38), height * rng.uniform(0.28, 0.4)
  draw.ellipse([cx - rx, cy - ry, cx + rx, cy + ry], fill=(236, 234, 226),
               outline=(170, 168, 160), width=max(1, width // 50))
  for _ in range(int(rng.integers(3, 8))):
    fx, fy = cx + rng.uniform(-0.55, 0.55) * rx, cy + rng.uniform(-0.55, 0.55) * ry
    r = rng.uniform(0.12, 0.3) * min(rx, ry)
    colour = tuple(int(v) for v in rng.integers(50, 230, size=3))
    draw.ellipse([fx - r, fy - r * rng.uniform(0.6, 1.0), fx + r, fy + r], fill=colour)
  image = image.filter(ImageFilter.GaussianBlur(max(width, height) / 240 + 0.4))
  noise = rng.normal(0, 2.0, size=(height, width, 3))
  return Image.fromarray((np.asarray(image, np.float64) + noise).clip(0, 255).astype(np.uint8))


def encode(image: Image.Image, fmt: str = "JPEG", **options) -> bytes:
  if fmt == "JPEG":
    options.setdefault("quality", 80)
  out = io.BytesIO()
  image.save(out, format=fmt, **options)
  return out.getvalue()


def jpeg(seed: int, size: tuple[int, int] = (160, 120), **options) -> bytes:
  return encode(photo(seed, size), "JPEG", **options)


def exif_rotated_jpeg(raw: Image.Image, orientation: int = 6) -> bytes:
  """`raw` as stored pixels, with an EXIF tag saying how to turn it upright."""
  exif = Image.Exif()
  exif[EXIF_ORIENTATION] = orientation
  return encode(raw, "JPEG", exif=exif.tobytes())


def two_frame_gif(seed: int, size: tuple[int, int]) -> bytes:
  frames = [photo(seed, size).quantize(64), photo(seed + 1, size).quantize(64)]
  return encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)


def rgba_png(seed: int, size: tuple[int, int]) -> bytes:
  """A cut-out dish: opaque in the middle, transparent around it."""
  image = photo(seed, size).convert("RGBA")
  alpha = Image.new("L", size, 0)
  ImageDraw.Draw(alpha).ellipse([size[0] // 6, size[1] // 6, size[0] * 5 // 6, size[1] * 5 // 6], fill=255)
  image.putalpha(alpha)
  return encode(image, "PNG")


def odd_images(seed: int) -> dict[str, bytes]:
  """One file of every odd kind the builder converts to RGB JPEG."""
  return {
      "png_as_jpg": encode(photo(seed, (144, 108)), "PNG"),
      "cmyk": encode(photo(seed + 1, (128, 96)).convert("CMYK"), "JPEG", quality=80),
      "grayscale": encode(photo(seed + 2, (120, 90)).convert("L"), "JPEG", quality=80),
      "gif": two_frame_gif(seed + 3, (112, 84)),
      "exif_rotated": exif_rotated_jpeg(photo(seed + 5, (160, 96))),
      "rgba_png": rgba_png(seed + 6, (120, 96)),
  }


def broken_files(seed: int) -> dict[str, bytes]:
  """Files named like photos that no decoder accepts."""
  whole = jpeg(seed, (128, 96))
  return {
      "truncated": whole[: len(whole) * 2 // 3],
      "empty": b"",
      "html": (b"<!DOCTYPE html>\n<html><head><title>403 Forbidden</title></head>\n"
               b"<body><h1>Forbidden</h1><p>Hotlinking is not allowed.</p></body></html>\n"),
  }


JUNK = {
    # AppleDouble resource fork written by macOS beside every file.
    "apple_double": b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + bytes(58),
    ".DS_Store": b"\x00\x00\x00\x01Bud1" + bytes(120),
    "Thumbs.db": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(120),
    "org_url.csv": b"file_name,url\r\n",
}


def properties(lines: list[str], newline: str = "\r\n", bom: bool = False) -> bytes:
  """A crop_area.properties file from its lines."""
  return ("\ufeff" if bom else "").encode() + "".join(line + newline for line in lines).encode("utf-8")


# ---------------------------------------------------------------------------
# Zips.


class _RawNameInfo(zipfile.ZipInfo):
  """A member whose name bytes are written exactly as given, without the UTF-8
  flag. (`zipfile` writes any non-ASCII name as flagged UTF-8; on reading,
  unflagged names come back decoded as CP437, so `filename` holds that form.)"""

  def __init__(self, raw: bytes, date_time=DATE_TIME):
    super().__init__(raw.decode("cp437"), date_time)
    self.raw_name = raw

  def _encodeFilenameFlags(self):  # noqa: N802 (zipfile's own name)
    return self.raw_name, self.flag_bits & ~0x800


def zip_bytes(members: dict[str, bytes], names: str = "utf-8-flag",
              compression: int = zipfile.ZIP_STORED, dirs: bool = True) -> bytes:
  """A zip of `members` (name -> bytes), names written as `names` says:
  "utf-8-flag" (UTF-8 with the flag), "utf-8" (UTF-8 bytes, no flag) or
  "cp949" (CP949 bytes, no flag). Names are written in the form given (NFC or
  NFD). With `dirs`, folder entries are written too, as archivers do."""
  entries: dict[str, bytes | None] = {}
  for name, data in members.items():
    if dirs:
      parts = name.split("/")[:-1]
      for i in range(1, len(parts) + 1):
        entries.setdefault("/".join(parts[:i]) + "/", None)
    entries[name] = data
  out = io.BytesIO()
  with zipfile.ZipFile(out, "w") as zf:
    for name, data in entries.items():
      if names == "utf-8-flag":
        info = zipfile.ZipInfo(name, DATE_TIME)
        if not name.isascii():
          info.flag_bits |= 0x800
      elif names in ("utf-8", "cp949"):
        info = _RawNameInfo(name.encode(names))
      else:
        raise ValueError(f"unknown name encoding {names!r}")
      info.create_system = 3  # Unix, whatever machine writes it.
      if data is None:
        info.external_attr = (0o40755 << 16) | 0x10
        zf.writestr(info, b"")
      else:
        info.external_attr = 0o644 << 16
        info.compress_type = compression
        zf.writestr(info, data)
  return out.getvalue()


def nfd(text: str) -> str:
  return unicodedata.normalize("NFD", text)


def write_tree(root: pathlib.Path, files: dict[str, bytes]) -> None:
  """Writes `files` (relative path -> bytes) under `root`."""
  for name, data in files.items():
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def split_counts(photos: list[bytes]) -> dict[str, int]:
  counts = dict.fromkeys(splits.SPLIT_NAMES, 0)
  for data in photos:
    counts[splits.split_of(splits.content_digest(data))] += 1
  return counts


# ---------------------------------------------------------------------------
# The bundled sample.

def sample_groups(seed: int) -> dict[str, dict[str, bytes]]:
  """group -> {member name in the group's inner zip -> bytes}."""
  sizes = [(96, 64), (160, 120), (200, 150), (240, 180), (320, 240), (180, 240), (128, 96), (256, 192)]
  rng = np.random.default_rng(seed)

  def clean(index: int, numbers: list[int]) -> dict[str, bytes]:
    return {f"Img_{index:03d}_{n:04d}.jpg": jpeg(int(rng.integers(1 << 30)), sizes[n % len(sizes)],
                                                  progressive=bool(n % 3 == 2))
            for n in numbers}

  odd = odd_images(seed + 100)
  broken = broken_files(seed + 200)

  galbi = clean(0, [0, 1, 2, 3, 4, 5, 7, 8])  # 0006 missing: counters have gaps.
  galbi["Img_000_0009.jpg"] = odd["cmyk"]
  galbi["Img_000_0010.jpg"] = odd["exif_rotated"]  # stored 160x96, upright 96x160
  galbi["Img_000_0011.JPG"] = jpeg(seed + 11, (200, 150))
  galbi["crop_area.properties"] = properties([  # 4 bad lines
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
  galchi["crop_area.properties"] = properties(["Img_001_0001=0,0,80,60", "Img_001_0003=30,20,150,100"],
                                              newline="\n")

  kimchi = clean(119, [0, 2, 4, 8, 9, 10, 12])
  kimchi["Img_119_0001.jpg"] = odd["png_as_jpg"]
  kimchi["Img_119_0003.jpg"] = odd["grayscale"]
  kimchi["Img_119_0005.jpg"] = broken["truncated"]
  kimchi["Img_119_0006.jpg"] = broken["empty"]
  kimchi["Img_119_0007.jpg"] = broken["html"]
  kimchi["Img_121_0011.jpg"] = jpeg(seed + 21, (160, 120))  # prefix says 동태찌개
  kimchi["Img_119_0013.jpg"] = galbi["Img_000_0002.jpg"]  # the same photo in two classes

  bibim = clean(72, [0, 1, 2, 3, 5, 6, 7, 8, 9])
  bibim["crop_area.properties"] = properties(["[sections]", "Img_072_0000=5,5,80,50", "Img_072_0006=0,0,1,1"])
  bibim_junk = {
      "__MACOSX/밥/비빔밥/._Img_072_0000.jpg": JUNK["apple_double"],
      "밥/비빔밥/.DS_Store": JUNK[".DS_Store"],
      "밥/비빔밥/Thumbs.db": JUNK["Thumbs.db"],
      "밥/비빔밥/org_url.csv": JUNK["org_url.csv"] + b"Img_072_0000.jpg,http://example.com/1.jpg\r\n",
  }

  budae = {"Img_124_0000.jpg": jpeg(seed + 31, (160, 120))}  # 부대찌개 is none of the 150 classes

  return {
      # UTF-8 flag set; the 갈치구이 folder written in NFD, as macOS does.
      "구이": {**{f"구이/갈비구이/{k}": v for k, v in galbi.items()},
              **{nfd(f"구이/갈치구이/{k}"): v for k, v in galchi.items()}},
      # UTF-8 bytes, no flag.
      "찌개": {**{f"찌개/김치찌개/{k}": v for k, v in kimchi.items()},
              **{f"찌개/부대찌개/{k}": v for k, v in budae.items()}},
      # CP949 bytes, no flag.
      "밥": {**{f"밥/비빔밥/{k}": v for k, v in bibim.items()}, **bibim_junk},
  }


GROUP_ENCODINGS = {"구이": "utf-8-flag", "찌개": "utf-8", "밥": "cp949"}


def layouts(groups: dict[str, dict[str, bytes]]) -> dict[str, dict[str, bytes]]:
  """The same corpus (group -> {member name -> bytes}) in every form a user may
  hold it: form -> {path in the manual dir -> bytes}."""
  inner = {f"{g}.zip": zip_bytes(members, GROUP_ENCODINGS.get(g, "utf-8-flag")) for g, members in groups.items()}
  every = {name: data for members in groups.values() for name, data in members.items()}
  return {
      "kfood_zip": {"kfood.zip": zip_bytes(inner, "utf-8", dirs=False)},
      "kfood_zip_deflated": {"kfood.zip": zip_bytes(inner, compression=zipfile.ZIP_DEFLATED)},  # re-zipped
      "group_zips": inner,
      "zip_in_folder": {f"downloads/aihub/{name}": data for name, data in inner.items()},
      "tree": {f"kfood/{name}": data for name, data in every.items()},
      "doubled_tree": {f"{name.split('/')[0]}/{name}": data for name, data in every.items()},
      "deeper": {f"downloads/aihub/79/kfood/{name}": data for name, data in every.items()},
  }


def write_layouts(root: pathlib.Path, groups: dict[str, dict[str, bytes]]) -> dict[str, pathlib.Path]:
  """Writes every form of `layouts` into its own folder; form -> that folder."""
  forms = layouts(groups)
  for form, files in forms.items():
    write_tree(root / form, files)
  return {form: root / form for form in forms}


def sample_zip(seed: int) -> bytes:
  groups = sample_groups(seed)
  inner = {f"{g}.zip": zip_bytes(members, GROUP_ENCODINGS[g]) for g, members in groups.items()}
  inner["__MACOSX/._구이.zip"] = JUNK["apple_double"]
  return zip_bytes(inner, "utf-8", dirs=False)


def sample_valid_images(seed: int) -> list[bytes]:
  """The photos of the sample that the builder keeps (for the split check)."""
  kept = []
  for members in sample_groups(seed).values():
    for name, data in members.items():
      parts = name.split("/")
      if "__MACOSX" in parts or parts[-1].startswith(".") or classes.nfc(parts[-2]) not in classes.class_by_name():
        continue
      try:
        images.inspect_image(data)
      except images.BadImage:  # broken files, crop_area.properties, Thumbs.db, ...
        continue
      kept.append(data)
  return kept


def first_seed(make_images, start: int = 0) -> int:
  """The first seed from `start` whose photos fill all three splits."""
  seed = start
  while min(split_counts(make_images(seed)).values()) < 1:
    seed += 1
  return seed


# ---------------------------------------------------------------------------
# The dummy data of the TFDS test harness.


def dummy_files(seed: int) -> dict[str, bytes]:
  rng = np.random.default_rng(seed)
  tiny = lambda: jpeg(int(rng.integers(1 << 30)), (32, 24))  # noqa: E731
  return {
      "kfood/구이/갈비구이/Img_000_0000.jpg": tiny(),
      "kfood/구이/갈비구이/Img_000_0001.jpg": tiny(),
      "kfood/구이/갈비구이/Img_000_0003.jpg": tiny(),
      "kfood/구이/갈비구이/Img_000_0004.png": encode(photo(seed, (32, 24)), "PNG"),
      "kfood/구이/갈비구이/crop_area.properties": properties(
          ["[sections]", "Img_000_0000=4,2,20,16", "Img_000_0004=0,0,16,12"]),
      "kfood/찌개/김치찌개/Img_119_0000.jpg": tiny(),
      "kfood/찌개/김치찌개/Img_119_0002.jpg": tiny(),
      "kfood/찌개/김치찌개/Img_119_0003.jpg": tiny(),
  }


def dummy_images(seed: int) -> list[bytes]:
  return [d for n, d in dummy_files(seed).items() if not n.endswith(".properties")]


def main() -> None:
  seed = first_seed(sample_valid_images, 2021)
  SAMPLE_ZIP.parent.mkdir(parents=True, exist_ok=True)
  SAMPLE_ZIP.write_bytes(sample_zip(seed))
  print(f"{SAMPLE_ZIP.relative_to(ROOT)}: {SAMPLE_ZIP.stat().st_size} bytes, seed {seed}, "
        f"splits {split_counts(sample_valid_images(seed))}")

  seed = first_seed(dummy_images, 0)
  shutil.rmtree(DUMMY_DIR, ignore_errors=True)
  write_tree(DUMMY_DIR, dummy_files(seed))
  print(f"{DUMMY_DIR.relative_to(ROOT)}: seed {seed}, splits {split_counts(dummy_images(seed))}")


if __name__ == "__main__":
  main()

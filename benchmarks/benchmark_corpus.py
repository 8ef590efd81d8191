"""The photos every benchmark measures on: realistic by default.

Photos decode at very different speeds by content: smooth generated pictures
decode about three times faster than photos, and mislead every decision about
speed. So where the real photos of `../shared/realdata` are present (beside a
checkout; never copied into the project), the benchmarks use distinct photos
made from them:

* Each one is a mosaic of 3×3 to 5×5 tiles, each tile a random crop of a random
  real photo (kfood and flowers), flipped at random, resampled at 0.8 to 1.5
  source pixels per pixel, so the detail stays that of a photo.
* Its size, JPEG quality, chroma subsampling and progressive mode are those of
  a random real AIHub photo (the size within ±10 %), so the corpus has the real
  corpus's size range and qualities.
* No two are near copies (their tiles differ), so the split rule, the
  near-copy grouping and the scan see a corpus like the real one. Plain byte
  copies of the real photos would form near-duplicate groups.

Where `../shared` is absent, the fallback is generated pictures (smooth shapes
under a texture, 300-1,600 px), which the benchmarks name as such.

`write_kfood_zip` puts either kind into a `kfood.zip` of stored inner zips, as
AIHub ships it. Needs numpy and Pillow only (no TensorFlow), so `--scaling`
runs anywhere.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
import pathlib
import shutil
import tempfile
import zipfile
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageOps, JpegImagePlugin

from photo_datasets.building import parallel

REALDATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "realdata"
REALISTIC = ("realistic (mosaics of the real kfood and flowers photos in ../shared/realdata, "
             "at AIHub's sizes and qualities)")
GENERATED = "generated (smooth shapes under a texture; ../shared/realdata absent)"

# super-category -> the classes a benchmark corpus uses (names from classes.tsv), with their
# Img_XXX index.
CLASSES = {
    "구이": (("갈비구이", 0), ("갈치구이", 1)), "찌개": (("김치찌개", 119), ("된장찌개", 122)),
    "밥": (("비빔밥", 72), ("김밥", 69)),
}
_GENERATED_DISTINCT = 400


@dataclasses.dataclass(frozen=True)
class Template:
  """How one real AIHub photo is stored: the benchmark photos copy it."""

  size: tuple[int, int]
  quality: int
  subsampling: int  # PIL's: 0 = 4:4:4, 1 = 4:2:2, 2 = 4:2:0.
  progressive: bool


def corpus_name(realdata: pathlib.Path | None = REALDATA) -> str:
  return REALISTIC if realdata is not None and (realdata / "kfood").is_dir() else GENERATED


def _real_files(realdata: pathlib.Path) -> list[pathlib.Path]:
  return sorted(p for p in realdata.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))


@functools.cache
def _standard_tables() -> dict[int, list[int]]:
  """libjpeg's luminance table at each quality, to read a JPEG's quality back."""
  tables = {}
  for quality in range(30, 101):
    out = io.BytesIO()
    Image.new("L", (8, 8)).save(out, "JPEG", quality=quality)
    with Image.open(out) as image:
      tables[quality] = list(_luminance_table(image))
  return tables


def _luminance_table(image: Image.Image) -> list[int]:
  assert isinstance(image, JpegImagePlugin.JpegImageFile)
  return list(image.quantization[0])


def jpeg_quality(image: Image.Image) -> int:
  """The libjpeg quality whose luminance table is nearest to this JPEG's."""
  table = np.array(_luminance_table(image))
  return min(_standard_tables().items(),
             key=lambda item: float(np.abs(np.array(item[1]) - table).sum()))[0]


@functools.cache
def _sources(realdata: pathlib.Path) -> tuple[tuple[np.ndarray, ...], tuple[Template, ...]]:
  """The real photos as upright RGB arrays, and the templates of the AIHub ones."""
  pixels, templates = [], []
  for path in _real_files(realdata):
    with Image.open(path) as image:
      if image.format == "JPEG" and path.relative_to(realdata).parts[0].startswith("kfood"):
        templates.append(Template(image.size, jpeg_quality(image),
                                  JpegImagePlugin.get_sampling(image),
                                  bool(image.info.get("progressive")
                                       or image.info.get("progression"))))
      pixels.append(np.asarray(ImageOps.exif_transpose(image).convert("RGB")))
  if not templates:
    raise FileNotFoundError(f"no real AIHub JPEG under {realdata}")
  return tuple(pixels), tuple(templates)


def realistic_photo(seed: int, realdata: pathlib.Path = REALDATA, scale: float = 1.0) -> bytes:
  """One distinct photo-like JPEG made from the real photos (see the module
  docstring); `scale` shrinks or grows every side."""
  sources, templates = _sources(realdata)
  rng = np.random.default_rng(seed)
  template = templates[int(rng.integers(len(templates)))]
  width, height = (max(64, round(side * scale * rng.uniform(0.9, 1.1))) for side in template.size)
  # At least 3×3 tiles: among 150,000 photos, 2×2 mosaics shared two tiles often
  # enough to be near copies (9 groups in a full-size rehearsal).
  grid = int(np.clip(np.ceil(max(width, height) / 200), 3, 5))
  mosaic = Image.new("RGB", (width, height))
  xs, ys = np.linspace(0, width, grid + 1).astype(int), np.linspace(0, height, grid + 1).astype(int)
  for row in range(grid):
    for column in range(grid):
      tile_w, tile_h = xs[column + 1] - xs[column], ys[row + 1] - ys[row]
      source = sources[int(rng.integers(len(sources)))]
      zoom = rng.uniform(0.8, 1.5)  # Source pixels per tile pixel.
      crop_w = int(min(source.shape[1], max(8, tile_w * zoom)))
      crop_h = int(min(source.shape[0], max(8, tile_h * zoom)))
      top = int(rng.integers(source.shape[0] - crop_h + 1))
      left = int(rng.integers(source.shape[1] - crop_w + 1))
      tile = Image.fromarray(source[top:top + crop_h, left:left + crop_w])
      if rng.random() < 0.5:
        tile = tile.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
      mosaic.paste(tile.resize((int(tile_w), int(tile_h)), Image.Resampling.BICUBIC),
                   (int(xs[column]), int(ys[row])))
  out = io.BytesIO()
  mosaic.save(out, "JPEG", quality=template.quality, subsampling=template.subsampling,
              progressive=template.progressive)
  return out.getvalue()


def generated_photo(seed: int) -> bytes:
  """The fallback: a photo-like JPEG of smooth shapes, texture and sensor noise, 300-1,600 px."""
  rng = np.random.default_rng(seed)
  long_side = int(rng.integers(300, 1601))
  short_side = int(long_side * rng.uniform(0.6, 1.0))
  width, height = (long_side, short_side) if rng.random() < 0.7 else (short_side, long_side)
  y, x = np.mgrid[0:height, 0:width].astype(np.float32)
  pixels = np.zeros((height, width, 3), np.float32)
  for channel in range(3):
    for _ in range(4):
      cx, cy, r = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(0.1, 0.6) * long_side
      pixels[..., channel] += rng.uniform(40, 120) * np.exp(
          -((x - cx) ** 2 + (y - cy) ** 2) / (2 * r * r))
  texture = np.sin(x / rng.uniform(3, 9) + np.cos(y / rng.uniform(4, 11)) * 3) * 18
  pixels += texture[..., None] + rng.normal(0, 4, (height, width, 3))
  out = io.BytesIO()
  Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(out, "JPEG",
                                                             quality=int(rng.integers(75, 91)))
  return out.getvalue()


def _with_comment(jpeg: bytes, tag: int) -> bytes:
  """The same image with its own JPEG comment (COM segment after SOI): other bytes, same pixels."""
  comment = f"copy {tag}".encode()
  return jpeg[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + jpeg[2:]


@dataclasses.dataclass(frozen=True)
class _Maker:
  realdata: pathlib.Path | None

  def __call__(self, seed: int) -> bytes:
    return realistic_photo(seed, self.realdata) if self.realdata else generated_photo(seed)


def _fail(seed: int) -> bytes:
  raise RuntimeError(f"making benchmark photo {seed} killed its worker")


def photos(count: int, seed: int = 0, *, realdata: pathlib.Path | None = REALDATA,
           workers: int | None = None) -> tuple[str, list[bytes]]:
  """(the corpus's name, `count` distinct JPEG files), made on every core.

  Realistic photos where `realdata` holds the real ones; otherwise generated
  ones, 400 distinct pictures repeated under different bytes (a JPEG comment).
  """
  name = corpus_name(realdata)
  workers = workers or parallel.default_workers()
  if name == REALISTIC:
    seeds: Sequence[int] = range(seed * 1_000_003, seed * 1_000_003 + count)
    return name, list(parallel.ordered_map(_Maker(realdata), seeds, workers=workers,
                                           on_crash=_fail))
  distinct = list(parallel.ordered_map(
      _Maker(None), range(seed, seed + min(count, _GENERATED_DISTINCT)), workers=workers,
      on_crash=_fail))
  return name, [_with_comment(distinct[i % len(distinct)], i) for i in range(count)]


def write_kfood_zip(root: str | os.PathLike[str], count: int, seed: int = 0, *,
                    realdata: pathlib.Path | None = REALDATA) -> str:
  """`root/kfood.zip` with `count` photos in 6 classes of 3 groups, as AIHub
  ships it (stored inner zips, ZIP64 members); returns the corpus's name."""
  name, data = photos(count, seed, realdata=realdata)
  folders = [(group, food, index) for group, foods in CLASSES.items() for food, index in foods]
  os.makedirs(root, exist_ok=True)
  with zipfile.ZipFile(os.path.join(root, "kfood.zip"), "w", zipfile.ZIP_STORED) as outer:
    for group in CLASSES:
      # Each inner zip goes through a temporary file: the corpus is never held twice in memory.
      with tempfile.TemporaryFile() as spool:
        with zipfile.ZipFile(spool, "w", zipfile.ZIP_STORED) as inner:
          for i, photo in enumerate(data):
            folder_group, food, index = folders[i % len(folders)]
            if folder_group == group:
              inner.writestr(f"{group}/{food}/Img_{index:03d}_{i:05d}.jpg", photo)
        spool.seek(0)
        with outer.open(f"{group}.zip", "w", force_zip64=True) as member:
          shutil.copyfileobj(spool, member, 1 << 20)
  return name

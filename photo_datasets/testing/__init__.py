"""Fabricated photos, zips and builds for the tests and the data scripts.

As `tfds.testing` is for TFDS: the tests, `scripts/make_dummy_data.py` and
`scripts/make_korean_food_data.py` draw every image they need here, from fixed
seeds, so their corpora are reproducible byte for byte and hold no real photo
(AIHub's terms forbid shipping one).

* Photo-like images (`photo`, `jpeg`, `odd_images`, `broken_files`): content
  the builders meet in the real corpora.
* Flat-colour images (`halves`, `marked`, `half_transparent_png`, `deep_png`):
  a test can tell exactly where each colour must end up after a conversion.
* Zips and trees (`zip_bytes`, `layouts`, `write_tree`): names in every
  encoding and every nesting a user may hold.
* Pieces (`write_pieces`, `write_tar`, `join_in_name_order`, `sparse_zip64`):
  a file split into pieces named by offset, a tar of them, a join in name
  order, and a ZIP64 archive past 4 GiB as a sparse file (holes are not
  written, so the forms of a 4 GiB archive cost megabytes of disk).
* Splits (`split_counts`, `photos_in_splits`): a photo's split is a function
  of its bytes, so fixtures that need every split draw until they get it.
* Builds (`build`, `read_examples`): a whole `tfds build` in-process, and
  every stored example read back.
* Prerequisites (`missing`): a test without the real photos or the browser
  skips, or fails where `PHOTO_DATASETS_REQUIRE` says they must be there (CI).
"""

from __future__ import annotations

import functools
import io
import os
import pathlib
import random
import struct
import tarfile
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np
import tensorflow_datasets as tfds
from PIL import ExifTags, Image, ImageDraw, ImageFilter, ImageOps

from photo_datasets.photos import splits

Size = tuple[int, int]  # width, height
Colour = tuple[int, int, int]
PathLike = str | os.PathLike[str]

RED: Colour = (255, 0, 0)
GREEN: Colour = (0, 255, 0)
BLUE: Colour = (0, 0, 255)
WHITE: Colour = (255, 255, 255)

# Zip members get this time, so zips are reproducible byte for byte.
DATE_TIME = (2021, 6, 1, 12, 0, 0)

# ---------------------------------------------------------------------------
# Photo-like images.


def photo(seed: int, size: Size = (160, 120)) -> Image.Image:
  """A plate of food on a table (gradient, ellipses, blur, a little noise):
  compresses and decodes like a photo, fixed by `seed`."""
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


def encode(image: Image.Image, fmt: str = "JPEG", **options: Any) -> bytes:
  """`image` saved as `fmt` (JPEG at quality 80 unless `options` say otherwise)."""
  if fmt == "JPEG":
    options.setdefault("quality", 80)
  out = io.BytesIO()
  image.save(out, format=fmt, **options)
  return out.getvalue()


def jpeg(seed: int, size: Size = (160, 120), **options: Any) -> bytes:
  return encode(photo(seed, size), "JPEG", **options)


def exif_rotated_jpeg(raw: Image.Image, orientation: int = 6, **options: Any) -> bytes:
  """`raw` as the stored pixels, with an EXIF tag saying how to turn it upright."""
  exif = Image.Exif()
  exif[ExifTags.Base.Orientation] = orientation
  return encode(raw, "JPEG", exif=exif.tobytes(), **options)


def animated_gif(frames: Sequence[Image.Image]) -> bytes:
  """A looping GIF of `frames`; a builder keeps the first one."""
  return encode(frames[0], "GIF", save_all=True, append_images=list(frames[1:]), duration=100, loop=0)


def two_frame_gif(seed: int, size: Size) -> bytes:
  return animated_gif([photo(seed, size).quantize(64), photo(seed + 1, size).quantize(64)])


def rgba_png(seed: int, size: Size) -> bytes:
  """A cut-out dish: opaque in the middle, transparent around it."""
  image = photo(seed, size).convert("RGBA")
  alpha = Image.new("L", size, 0)
  ImageDraw.Draw(alpha).ellipse([size[0] // 6, size[1] // 6, size[0] * 5 // 6, size[1] * 5 // 6], fill=255)
  image.putalpha(alpha)
  return encode(image, "PNG")


def odd_images(seed: int) -> dict[str, bytes]:
  """One file of every odd kind a builder converts to RGB JPEG, by kind."""
  return {
      "png_as_jpg": encode(photo(seed, (144, 108)), "PNG"),
      "cmyk": encode(photo(seed + 1, (128, 96)).convert("CMYK"), "JPEG", quality=80),
      "grayscale": encode(photo(seed + 2, (120, 90)).convert("L"), "JPEG", quality=80),
      "gif": two_frame_gif(seed + 3, (112, 84)),
      "exif_rotated": exif_rotated_jpeg(photo(seed + 5, (160, 96))),
      "rgba_png": rgba_png(seed + 6, (120, 96)),
  }


def broken_files(seed: int) -> dict[str, bytes]:
  """Files named like photos that no decoder accepts, by kind."""
  whole = jpeg(seed, (128, 96))
  return {
      "truncated": whole[: len(whole) * 2 // 3],
      "empty": b"",
      "html": (b"<!DOCTYPE html>\n<html><head><title>403 Forbidden</title></head>\n"
               b"<body><h1>Forbidden</h1><p>Hotlinking is not allowed.</p></body></html>\n"),
  }


# What archivers and operating systems leave beside photos, by kind.
JUNK = {
    # AppleDouble resource fork written by macOS beside every file.
    "apple_double": b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + bytes(58),
    ".DS_Store": b"\x00\x00\x00\x01Bud1" + bytes(120),
    "Thumbs.db": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(120),
    "org_url.csv": b"file_name,url\r\n",
}


def properties(lines: Iterable[str], newline: str = "\r\n", bom: bool = False) -> bytes:
  """A crop_area.properties file from its lines."""
  return ("\ufeff" if bom else "").encode() + "".join(line + newline for line in lines).encode("utf-8")


# The image formats the corpus holds, as PIL writes them (as the web does): name -> (PIL format, options).
CORPUS_FORMATS: dict[str, tuple[str, dict[str, Any]]] = {
    "jpeg": ("JPEG", {"quality": 90}),
    "progressive_jpeg": ("JPEG", {"quality": 90, "progressive": True}),
    "png": ("PNG", {}),
    "gif": ("GIF", {}),
    "bmp": ("BMP", {}),
    "webp": ("WEBP", {"quality": 80}),
    "lossless_webp": ("WEBP", {"lossless": True}),
}


def encoded(image: Image.Image, fmt: str) -> bytes:
  """`image` written in the `CORPUS_FORMATS` format `fmt`."""
  pil_format, options = CORPUS_FORMATS[fmt]
  out = io.BytesIO()
  image.save(out, format=pil_format, **options)
  return out.getvalue()


def with_garbage(data: bytes, offset: int, length: int = 64) -> bytes:
  """`data` with `length` random bytes (seeded by `offset`) written over it at `offset`: damaged compressed data."""
  noise = random.Random(offset).randbytes(length)
  return data[:offset] + noise + data[offset + length:]


# ---------------------------------------------------------------------------
# Flat-colour images: a test knows the colour of every pixel after conversion.


def halves(left: Colour = RED, right: Colour = BLUE, size: Size = (40, 30)) -> Image.Image:
  """An RGB image, left half one colour and right half another: a shifted,
  flipped or discoloured conversion shows."""
  width, height = size
  pixels = np.zeros((height, width, 3), np.uint8)
  pixels[:, : width // 2] = left
  pixels[:, width // 2 :] = right
  return Image.fromarray(pixels, "RGB")


def marked(size: Size, mark: tuple[int, int, int, int], background: Colour, colour: Colour = RED) -> Image.Image:
  """A flat `background` with a `colour` rectangle over x0 <= x < x1,
  y0 <= y < y1 (`mark`): where the rectangle lands shows how an image turned."""
  image = Image.new("RGB", size, background)
  x0, y0, x1, y1 = mark
  ImageDraw.Draw(image).rectangle([x0, y0, x1 - 1, y1 - 1], fill=colour)
  return image


def half_transparent_png(hidden: Colour = RED, shown: Colour = BLUE, size: Size = (40, 30)) -> bytes:
  """RGBA PNG: left half fully transparent `hidden` (must not show), right half opaque `shown`."""
  width, height = size
  pixels = np.zeros((height, width, 4), np.uint8)
  pixels[:, : width // 2] = (*hidden, 0)
  pixels[:, width // 2 :] = (*shown, 255)
  return encode(Image.fromarray(pixels, "RGBA"), "PNG")


def deep_png(left: int = 65535, right: int = 32896, size: Size = (40, 30)) -> bytes:
  """16-bit greyscale PNG in two halves (32896 = 128 * 257: grey 128 in 8 bits)."""
  width, height = size
  pixels = np.zeros((height, width), np.uint16)
  pixels[:, : width // 2] = left
  pixels[:, width // 2 :] = right
  return encode(Image.fromarray(pixels), "PNG")


# ---------------------------------------------------------------------------
# Zips and trees.


class _RawNameInfo(zipfile.ZipInfo):
  """A member whose name bytes are written exactly as given, without the UTF-8
  flag. (`zipfile` writes any non-ASCII name as flagged UTF-8; on reading,
  unflagged names come back decoded as CP437, so `filename` holds that form.)"""

  def __init__(self, raw: bytes, date_time: tuple[int, int, int, int, int, int] = DATE_TIME):
    super().__init__(raw.decode("cp437"), date_time)
    self.raw_name = raw

  def _encodeFilenameFlags(self) -> tuple[bytes, int]:  # zipfile's own name.
    return self.raw_name, self.flag_bits & ~0x800


def zip_bytes(members: Mapping[str, bytes], names: str = "utf-8-flag",
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
    for name, entry in entries.items():
      if names == "utf-8-flag":
        info = zipfile.ZipInfo(name, DATE_TIME)
        if not name.isascii():
          info.flag_bits |= 0x800
      elif names in ("utf-8", "cp949"):
        info = _RawNameInfo(name.encode(names))
      else:
        raise ValueError(f"unknown name encoding {names!r}")
      info.create_system = 3  # Unix, whatever machine writes it.
      if entry is None:
        info.external_attr = (0o40755 << 16) | 0x10
        zf.writestr(info, b"")
      else:
        info.external_attr = 0o644 << 16
        info.compress_type = compression
        zf.writestr(info, entry)
  return out.getvalue()


def nfd(text: str) -> str:
  """`text` decomposed, as macOS writes Korean names."""
  return unicodedata.normalize("NFD", text)


def write_tree(root: pathlib.Path, files: Mapping[str, bytes]) -> None:
  """Writes `files` (relative path -> bytes) under `root`."""
  for name, data in files.items():
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# Name encoding of each group's inner zip in `layouts`: all three the corpus uses.
GROUP_ENCODINGS = {"구이": "utf-8-flag", "찌개": "utf-8", "밥": "cp949"}


def layouts(groups: Mapping[str, Mapping[str, bytes]]) -> dict[str, dict[str, bytes]]:
  """The same Korean food corpus (group -> {member name -> bytes}) in every
  form a user may hold it: form -> {path in the manual dir -> bytes}."""
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


def write_layouts(root: pathlib.Path, groups: Mapping[str, Mapping[str, bytes]]) -> dict[str, pathlib.Path]:
  """Writes every form of `layouts` into its own folder; form -> that folder."""
  forms = layouts(groups)
  for form, files in forms.items():
    write_tree(root / form, files)
  return {form: root / form for form in forms}


# ---------------------------------------------------------------------------
# Pieces.


def _copy_data(src: str, offset: int, size: int, dst: io.BufferedRandom | io.BufferedWriter, at: int) -> None:
  """Copies bytes [offset, offset + size) of `src` to `dst` at `at`, skipping
  the holes of a sparse file (they stay holes)."""
  with open(src, "rb") as f:
    pos, end = offset, offset + size
    while pos < end:
      try:
        data_at = os.lseek(f.fileno(), pos, os.SEEK_DATA)
      except OSError:  # Only a hole is left.
        break
      if data_at >= end:
        break
      hole_at = min(os.lseek(f.fileno(), data_at, os.SEEK_HOLE), end)
      f.seek(data_at)
      dst.seek(at + data_at - offset)
      for start in range(data_at, hole_at, 1 << 24):
        dst.write(f.read(min(1 << 24, hole_at - start)))
      pos = hole_at
  dst.flush()
  if os.fstat(dst.fileno()).st_size < at + size:  # It ends in a hole.
    dst.truncate(at + size)


def write_pieces(src: PathLike, folder: PathLike, piece_size: int, name: str = "kfood.zip") -> list[pathlib.Path]:
  """`src` in pieces of `piece_size` bytes named by their starting offset, as
  AIHub sends them (`kfood.zip.part0`, `kfood.zip.part1073741824`, ...)."""
  folder = pathlib.Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  size, pieces = os.path.getsize(src), []
  for offset in range(0, size, piece_size):
    path = folder / f"{name}.part{offset}"
    with open(path, "wb") as out:
      _copy_data(os.fspath(src), offset, min(piece_size, size - offset), out, 0)
    pieces.append(path)
  return pieces


def write_tar(pieces: Sequence[pathlib.Path], tar_path: PathLike, folder: str) -> None:
  """`download.tar` as AIHub's API sends it: the pieces as members of `folder`,
  a 512-byte header before each (holes of sparse pieces stay holes)."""
  with open(tar_path, "wb") as out:
    at = 0
    for piece in pieces:
      info = tarfile.TarInfo(f"{folder}/{piece.name}")
      info.size, info.mtime, info.mode = os.path.getsize(piece), 1622548800, 0o644
      header = info.tobuf(format=tarfile.GNU_FORMAT)
      out.seek(at)
      out.write(header)
      _copy_data(os.fspath(piece), 0, info.size, out, at + len(header))
      at += len(header) + -(-info.size // 512) * 512
    out.seek(at)
    out.write(bytes(1024))  # The end-of-archive blocks.


def join_in_name_order(pieces: Sequence[pathlib.Path], out_path: PathLike) -> None:
  """The pieces joined in the text order of their names, as a shell glob lists them."""
  with open(out_path, "wb") as out:
    at = 0
    for piece in sorted(pieces, key=lambda p: p.name):
      size = os.path.getsize(piece)
      _copy_data(os.fspath(piece), 0, size, out, at)
      at += size


@functools.lru_cache(maxsize=4)
def _zeros_crc(size: int) -> int:
  crc, zeros = 0, bytes(1 << 26)
  for start in range(0, size, len(zeros)):
    crc = zlib.crc32(zeros[: min(len(zeros), size - start)], crc)
  return crc


def sparse_zip64(path: PathLike, padding: int, members: Mapping[str, bytes], *, piece: int = 64 << 20) -> None:
  """A ZIP64 zip that starts with `padding` zero bytes, left as holes, in
  members `padding/NNNNN.bin` of `piece` bytes (a local header every `piece`
  bytes, as a real archive has them throughout), then `members` (stored) at
  offsets past them: the offsets of an archive past 4 GiB, on megabytes of disk."""
  local, central = struct.Struct("<4s5H3L2H"), struct.Struct("<4s6H3L5H2L")
  entries, at = [], 0
  with open(path, "wb") as f:
    for i, start in enumerate(range(0, padding, piece)):
      name = f"padding/{i:05d}.bin".encode()
      size = min(piece, padding - start)
      crc = _zeros_crc(size)
      f.seek(at)
      f.write(local.pack(b"PK\x03\x04", 20, 0, 0, 0, 0x21, crc, size, size, len(name), 0) + name)
      entries.append((name, crc, size, at))
      at += local.size + len(name) + size
    directory = b""
    for name, crc, size, offset in entries:
      extra = struct.pack("<2HQ", 1, 8, offset) if offset >= 0xFFFFFFFF else b""
      directory += central.pack(b"PK\x01\x02", 45, 45, 0, 0, 0, 0x21, crc, size, size, len(name), len(extra),
                                0, 0, 0, 0o644 << 16, min(offset, 0xFFFFFFFF)) + name + extra
    record = at + len(directory)
    f.seek(at)
    f.write(directory
            + struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, len(entries), len(entries),
                          len(directory), at)
            + struct.pack("<4sLQL", b"PK\x06\x07", 0, record, 1)
            + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))
  with zipfile.ZipFile(path, "a") as zf:
    for member, data in members.items():
      info = zipfile.ZipInfo(member, DATE_TIME)
      info.flag_bits |= 0x800 if not member.isascii() else 0
      zf.writestr(info, data)


# ---------------------------------------------------------------------------
# Splits.


def split_of_bytes(data: bytes) -> str:
  return splits.split_of(splits.content_digest(data))


def split_counts(photos: Iterable[bytes]) -> dict[str, int]:
  """Photos per split, every split named (0 where none)."""
  counts = dict.fromkeys(splits.SPLIT_NAMES, 0)
  for data in photos:
    counts[split_of_bytes(data)] += 1
  return counts


def photos_in_splits(plan: Mapping[str, str], draw: Callable[[str, int], bytes],
                     first_seed: int = 0) -> dict[str, bytes]:
  """name -> bytes, each file in the split `plan` (name -> split) wants.

  `draw(name, seed)` draws the file for `name`; each file is drawn from
  successive seeds until its bytes fall in its split, and the next file goes
  on from the seed after. The counts per split are then those of the plan,
  whatever encoder version draws the files.
  """
  files = {}
  seed = first_seed
  for name, split in plan.items():
    if split not in splits.SPLIT_NAMES:
      raise ValueError(f"{name}: unknown split {split!r}")
    while split_of_bytes(data := draw(name, seed)) != split:
      seed += 1
    files[name] = data
    seed += 1
  return files


# ---------------------------------------------------------------------------
# Builds.


def build(name: str, data_dir: PathLike, manual_dir: PathLike | None = None, *,
          workers: int | None = None, download_dir: PathLike | None = None,
          beam_options: Any = None) -> tfds.core.DatasetBuilder:
  """Builds `name` ("korean_food/224") from `manual_dir` into `data_dir`, as
  `tfds build` does, and returns the builder; `workers` as the builders take it."""
  builder_args = {} if workers is None else {"workers": workers}
  builder = tfds.builder(name, data_dir=os.fspath(data_dir), **builder_args)
  builder.download_and_prepare(
      download_dir=None if download_dir is None else os.fspath(download_dir),
      download_config=tfds.download.DownloadConfig(
          manual_dir=None if manual_dir is None else os.fspath(manual_dir), beam_options=beam_options))
  return builder


# Prerequisites a test may lack: "real_photos" (../shared/realdata), "chromium".
REQUIRE_ENV = "PHOTO_DATASETS_REQUIRE"


def missing(prerequisite: str, reason: str) -> NoReturn:
  """Skips the calling test for want of `prerequisite`, or fails it where the
  comma-separated `PHOTO_DATASETS_REQUIRE` names it (as `.ci/run` does: CI is
  meant to have it, and a skip there would hide that it lost it)."""
  import pytest  # Only tests call this; the scripts that use this module need no pytest.
  required = {name.strip() for name in os.environ.get(REQUIRE_ENV, "").split(",")}
  if prerequisite in required:
    pytest.fail(f"{reason}, and {REQUIRE_ENV} requires {prerequisite}", pytrace=False)
  pytest.skip(reason)


def read_examples(builder: tfds.core.DatasetBuilder) -> dict[str, dict[str, Any]]:
  """file_name -> every stored example as numpy, with its "split": the image
  still encoded (the stored bytes), text features as `str`."""
  text = {key for key, feature in builder.info.features.items() if isinstance(feature, tfds.features.Text)}
  examples: dict[str, dict[str, Any]] = {}
  for split in builder.info.splits:
    ds = builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()})
    for example in tfds.as_numpy(ds):
      example = {key: value.decode() if key in text else value for key, value in example.items()}
      name = example["file_name"]
      assert name not in examples, f"{name} is stored twice"
      examples[name] = {**example, "split": split}
  return examples


# ---------------------------------------------------------------------------
# Near copies of a photo, as web corpora hold them.


def near_copies(data: bytes) -> dict[str, bytes]:
  """Copies of the photo `data` that the near-duplicate rule must group with
  it, as web corpora hold them: kind -> file bytes."""
  with Image.open(io.BytesIO(data)) as opened:
    image = ImageOps.exif_transpose(opened).convert("RGB")
  width, height = image.size

  def cropped(left: int, top: int, right: int, bottom: int) -> bytes:  # Sides cut by 5 %.
    return encode(image.crop((left * width // 20, top * height // 20, width - right * width // 20,
                              height - bottom * height // 20)), quality=90)

  def bordered(left: int, top: int, right: int, bottom: int) -> bytes:  # White borders of 5 %.
    return encode(ImageOps.expand(image, (left * width // 20, top * height // 20, right * width // 20,
                                          bottom * height // 20), fill=(255, 255, 255)), quality=90)

  return {
      "resized_30": encode(image.resize((max(1, width * 3 // 10), max(1, height * 3 // 10)),
                                        Image.Resampling.LANCZOS), quality=90),
      "jpeg_q40": encode(image, quality=40),
      "png": encode(image, "PNG"),
      "webp": encode(image, "WEBP", quality=80),
      "bmp": encode(image, "BMP"),
      # Turned 90 degrees with EXIF orientation 6, which turns it back upright.
      "exif_rotated": exif_rotated_jpeg(image.transpose(Image.Transpose.ROTATE_90), orientation=6, quality=90),
      "grayscale": encode(image.convert("L"), quality=90),
      "cropped_all_sides": cropped(1, 1, 1, 1),
      "cropped_one_side": cropped(1, 0, 0, 0),
      "cropped_two_sides": cropped(1, 0, 1, 0),
      "cropped_corner": cropped(1, 1, 0, 0),
      "bordered_all_sides": bordered(1, 1, 1, 1),
      "bordered_one_side": bordered(0, 1, 0, 0),
      "bordered_corner": bordered(1, 1, 0, 0),
  }

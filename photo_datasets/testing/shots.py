"""Second shots of a photo as people take them: the series rule must join them with it.

A second shot of a plate is rarely the first one cropped: the photographer steps
closer and the table tilts away, stands up and the plate's rim turns into an
ellipse, a lamp or a window changes the light and its colour, the blog
re-encodes the photo. `second_shot` makes one of each kind from a real photo,
drawn at random (seeded by the photo's name, so a test sees the same cases on
every run), and `KINDS` lists them. The perspective is a true homography: the
photo's view of a quadrilateral inside it, so no border appears that the
original lacks.
"""

from __future__ import annotations

import hashlib
import io

import numpy as np
from PIL import Image, ImageOps

# closer: a step closer (40 to 65 % of the photo, enlarged back) with the small tilt it brings;
# angle: a view from higher or from a side (keystone of 15 to 30 %) and a turn of up to 8 degrees;
# brightness, white balance, gamma: other light; jpeg: another quality and size; together: all.
KINDS = ("closer", "angle", "brightness", "white balance", "gamma", "jpeg", "together")


def held_out(name: str) -> bool:
  """Whether the cases made of a photo are held out from the series rule's tuning.

  The rule's parameters were chosen on the other photos' cases
  (`benchmarks/series_tuning.py --second_shots`), so the held-out ones measure
  it (docs/splits.md, "Second shots as people take them"). About half the
  photos are held out, fixed by the name.

  Args:
    name: the photo's file name, as `second_shot` takes it.

  Returns:
    True for a held-out photo.
  """
  return hashlib.sha256(name.encode()).digest()[0] % 2 == 1


def _rng(name: str, kind: str, variant: int) -> np.random.Generator:
  seed = hashlib.sha256(f"{name}\0{kind}\0{variant}".encode()).digest()
  return np.random.default_rng(int.from_bytes(seed[:8], "little"))


def _view(image: Image.Image, corners: np.ndarray) -> Image.Image:
  """The photo's view of the quadrilateral `corners` (top left, top right, bottom right,
  bottom left, in px of the photo) stretched over the whole frame."""
  width, height = image.size
  frame = np.array([(0, 0), (width, 0), (width, height), (0, height)], dtype=np.float64)
  rows = []
  for (x, y), (u, v) in zip(frame, corners, strict=True):  # Output (x, y) -> source (u, v).
    rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
    rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
  coefficients = np.linalg.solve(np.array(rows), corners.reshape(-1))
  return image.transform(image.size, Image.Transform.PERSPECTIVE, tuple(coefficients.tolist()),
                         Image.Resampling.BICUBIC)


def _closer(image: Image.Image, rng: np.random.Generator, tilt: float) -> Image.Image:
  width, height = image.size
  side = float(np.sqrt(rng.uniform(0.40, 0.65)))
  cx, cy = rng.uniform(side / 2, 1 - side / 2, size=2)
  corners = np.array([(cx - side / 2, cy - side / 2), (cx + side / 2, cy - side / 2),
                      (cx + side / 2, cy + side / 2), (cx - side / 2, cy + side / 2)])
  # Each corner moves by up to `tilt` of the crop's side, inward only, so it stays inside the photo.
  inward = np.array([(1, 1), (-1, 1), (-1, -1), (1, -1)])
  corners += rng.uniform(0, tilt * side, size=(4, 2)) * inward
  return _view(image, corners * (width, height))


def _angle(image: Image.Image, rng: np.random.Generator,
           keystone: tuple[float, float] = (0.15, 0.30), most_turn: float = 8) -> Image.Image:
  width, height = image.size
  k = rng.uniform(*keystone) / 2  # The far edge this much shorter than the near one.
  turn = np.radians(rng.uniform(-most_turn, most_turn))
  i = 0.05 + 0.4 * abs(np.sin(turn))  # Room for the turn inside the photo.
  far = int(rng.integers(4))  # From higher (the top edge far), lower, or a side.
  corners = np.array([
      [(i + k, i), (1 - i - k, i), (1 - i, 1 - i), (i, 1 - i)],
      [(i, i), (1 - i, i), (1 - i - k, 1 - i), (i + k, 1 - i)],
      [(i, i + k), (1 - i, i), (1 - i, 1 - i), (i, 1 - i - k)],
      [(i, i), (1 - i, i + k), (1 - i, 1 - i - k), (i, 1 - i)],
  ][far])
  centre = corners.mean(axis=0)
  rotation = np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
  aspect = np.array([1, height / width])  # Turned in px, not in shares of the sides.
  corners = ((corners - centre) * aspect) @ rotation.T / aspect + centre
  return _view(image, np.clip(corners, 0, 1) * (width, height))


def _light(image: Image.Image, kind: str, rng: np.random.Generator) -> Image.Image:
  pixels = np.asarray(image, dtype=np.float64) / 255
  if kind == "brightness":  # A dimmer room or a flash.
    pixels = pixels * (rng.uniform(0.55, 0.75) if rng.random() < 0.6 else rng.uniform(1.2, 1.4))
  elif kind == "white balance":  # A warm lamp or a cool window.
    warm = rng.uniform(0.12, 0.25) * (1 if rng.random() < 0.5 else -1)
    pixels = pixels * (1 + warm, 1 + rng.uniform(-0.05, 0.05), 1 - warm)
  else:  # gamma: a camera's other tone curve.
    pixels = pixels ** (rng.uniform(0.6, 0.75) if rng.random() < 0.5 else rng.uniform(1.4, 1.7))
  return Image.fromarray(np.round(np.clip(pixels, 0, 1) * 255).astype(np.uint8))


def _jpeg(image: Image.Image, quality: int) -> bytes:
  out = io.BytesIO()
  image.save(out, "JPEG", quality=quality)
  return out.getvalue()


def second_shot(data: bytes, name: str, kind: str, variant: int = 0) -> bytes:
  """A JPEG of another shot of the photo in `data` (its file `name` seeds the draw) of `kind`
  (`KINDS`)."""
  rng = _rng(name, kind, variant)
  with Image.open(io.BytesIO(data)) as opened:
    image = ImageOps.exif_transpose(opened).convert("RGB")
  if kind == "closer":
    return _jpeg(_closer(image, rng, tilt=0.08), 90)
  if kind == "angle":
    return _jpeg(_angle(image, rng), 90)
  if kind in ("brightness", "white balance", "gamma"):
    return _jpeg(_light(image, kind, rng), 90)
  if kind == "jpeg":
    scale = rng.uniform(0.6, 1.0)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return _jpeg(image.resize(size, Image.Resampling.LANCZOS), int(rng.integers(25, 50)))
  if kind == "together":
    moved = _angle(image, rng) if rng.random() < 0.5 else _closer(image, rng, tilt=0.08)
    lit = _light(moved, ("brightness", "white balance", "gamma")[int(rng.integers(3))], rng)
    return _jpeg(lit, int(rng.integers(30, 70)))
  raise ValueError(f"no such kind of second shot: {kind!r} (KINDS)")

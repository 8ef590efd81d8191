"""A grid of a built dataset's pictures with their class names, written as a PNG.

  python -m photo_datasets show NAME [--split train] [--data_dir DIR] --out FILE.png
      [--count 16] [--seed 0] [--pipeline] [--image_size S]

Without `--pipeline` it shows stored examples of any config, sized or `full`,
so a build can be checked by eye; on `korean_food/full` each photo's crop box
(`bbox`, where `has_bbox`) is drawn. With `--pipeline` it shows a batch of
`pipeline.training_dataset`, what the model sees: flipped photos, and for
`full` configs (`--image_size` required) random crops around the crop box.

Class names are English for `korean_food` (matplotlib's default font has no
Hangul), the `label` feature's names otherwise. The figure is drawn on
matplotlib's Agg canvas without pyplot, so nothing global (backend, open
figures) changes in the caller's process.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import math
import pathlib
import sys
import textwrap
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import tensorflow_datasets as tfds
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from PIL import Image

from photo_datasets.reading import built
from photo_datasets.reading import pipeline as training

Box = tuple[float, float, float, float]  # Relative ymin, xmin, ymax, xmax, as TFDS's BBoxFeature.

# Encoded examples held to draw a random sample of a split from, without
# decoding them (a `full` photo may be megapixels).
SHUFFLE_BUFFER = 1024
# Pictures are drawn at most this many pixels on a side: a cell is CELL
# inches at DPI dots per inch, so more would not show, only cost memory.
MAX_SIDE = 512
CELL = 2.0
CAPTION = 0.45  # Inches under each picture for a caption of up to two lines.
DPI = 100
CAPTION_WIDTH = 22  # Characters per caption line (the longest English name has 32).
BOX_COLOUR = "yellow"


@dataclasses.dataclass(frozen=True)
class Picture:
  """One cell of the grid."""

  image: npt.NDArray[np.uint8]  # (H, W, 3), at most MAX_SIDE on a side.
  label: int
  file_name: str = ""  # Stored examples only.
  # Drawn as a rectangle; stored `full` korean_food examples with `has_bbox` only.
  box: Box | None = None


def write_grid(name: str, *, split: str = "train", data_dir: str | None = None,
               out: str | pathlib.Path, count: int = 16, pipeline: bool = False,
               image_size: int | None = None, seed: int | None = 0) -> pathlib.Path:
  """Draws `grid_figure(...)` and writes it as a PNG to `out`; returns `out`."""
  figure = grid_figure(name, split=split, data_dir=data_dir, count=count, pipeline=pipeline,
                       image_size=image_size, seed=seed)
  path = pathlib.Path(out)
  path.parent.mkdir(parents=True, exist_ok=True)
  figure.savefig(path, format="png", dpi=DPI)
  return path


def grid_figure(name: str, *, split: str = "train", data_dir: str | None = None, count: int = 16,
                pipeline: bool = False, image_size: int | None = None,
                seed: int | None = 0) -> Figure:
  """Up to `count` pictures of `split` of the built config `name` in a grid,
  captioned with their class names: stored examples, or with `pipeline` a
  batch of the training pipeline at `image_size`. The same `seed` gives the
  same pictures; None, different ones each time.

  Each axes' label (`Axes.get_label()`) is the stored example's `file_name`,
  so a test or a notebook can tell which example a cell shows.

  Raises:
    ValueError: on a bad argument, naming it.
  """
  if isinstance(count, bool) or not isinstance(count, int) or count < 1:
    raise ValueError(f"count must be >= 1, got {count!r}.")
  builder = built.open_built(name, data_dir)
  if pipeline:
    pictures = pipeline_pictures(builder, name, split=split, data_dir=data_dir, count=count,
                                 image_size=image_size, seed=seed)
    size = image_size or builder.info.features["image"].shape[0]
    title = f"{name} {split}: training pipeline at {size}x{size}, seed {seed}"
  else:
    if image_size is not None:
      raise ValueError("image_size (--image_size) applies to the training pipeline only: "
                       "add --pipeline.")
    pictures = stored_pictures(builder, split=split, count=count, seed=seed)
    title = f"{name} {split}: stored examples"
  if not pictures:
    raise ValueError(f"{name} split {split!r} holds no examples to show.")
  return draw(pictures, caption_function(builder), title)


def stored_pictures(builder: tfds.core.DatasetBuilder, *, split: str, count: int,
                    seed: int | None) -> list[Picture]:
  """`count` examples drawn at random from the first SHUFFLE_BUFFER of a
  shuffled file order; only those are decoded."""
  read_config = tfds.ReadConfig(shuffle_seed=seed, try_autocache=False)
  ds = builder.as_dataset(split=split, shuffle_files=True, read_config=read_config,
                          decoders={"image": tfds.decode.SkipDecoding()})
  ds = ds.shuffle(SHUFFLE_BUFFER, seed=seed).take(count)
  boxed = "has_bbox" in builder.info.features
  pictures = []
  for example in tfds.as_numpy(ds):
    box: Box | None = None
    if boxed and example["has_bbox"]:
      ymin, xmin, ymax, xmax = (float(v) for v in example["bbox"])
      box = (ymin, xmin, ymax, xmax)
    pictures.append(Picture(image=_decoded(example["image"]), label=int(example["label"]),
                            file_name=example["file_name"].decode(), box=box))
  return pictures


def pipeline_pictures(builder: tfds.core.DatasetBuilder, name: str, *, split: str,
                      data_dir: str | None, count: int, image_size: int | None,
                      seed: int | None) -> list[Picture]:
  """The first batch of `pipeline.training_dataset`, of `count` pictures (or
  the whole split, if smaller: the pipeline drops incomplete batches)."""
  if image_size is None and builder.info.features["image"].shape[0] is None:
    raise ValueError(
        f"{name} stores images at their source size: the training pipeline needs --image_size "
        f"(image_size=) to crop and resize them, e.g. --image_size 224; or show a sized config "
        f"such as {builder.name}/224.")
  batch_size = min(count, builder.info.splits[split].num_examples)
  if batch_size < 1:
    return []
  ds = training.training_dataset(name, split=split, batch_size=batch_size, image_size=image_size,
                                 data_dir=data_dir, seed=seed)
  images, labels = next(iter(tfds.as_numpy(ds.take(1))))
  return [Picture(image=_fitted(image), label=int(label))
          for image, label in zip(images, labels, strict=True)]


def caption_function(builder: tfds.core.DatasetBuilder) -> Callable[[int], str]:
  """Label id -> the class name to print: the dataset's description of the
  class where it gives one (`PhotoBuilder.class_descriptions`; korean_food's
  English names, as its Korean names are missing from matplotlib's default
  font)."""
  feature = builder.info.features["label"]
  descriptions = built.class_descriptions(builder)
  return lambda label: descriptions.get(feature.int2str(label), str(feature.int2str(label)))


def draw(pictures: list[Picture], caption: Callable[[int], str], title: str) -> Figure:
  """The grid, as square as the number of pictures allows."""
  columns = math.ceil(math.sqrt(len(pictures)))
  rows = math.ceil(len(pictures) / columns)
  figure = Figure(figsize=(CELL * columns, (CELL + CAPTION) * rows + 0.4), layout="constrained")
  FigureCanvasAgg(figure)
  figure.suptitle(title, fontsize=10)
  for i, picture in enumerate(pictures):
    axes = figure.add_subplot(rows, columns, i + 1)
    axes.imshow(picture.image)
    axes.set_xticks([])
    axes.set_yticks([])
    axes.set_xlabel(textwrap.fill(caption(picture.label), CAPTION_WIDTH), fontsize=8)
    axes.set_label(picture.file_name)
    if picture.box is not None:
      axes.add_patch(_rectangle(picture.box, picture.image.shape))
  return figure


def _rectangle(box: Box, shape: tuple[int, ...]) -> Rectangle:
  """`box` on an image of `shape` as imshow places it (pixel i spans i-0.5 to i+0.5)."""
  height, width = shape[:2]
  ymin, xmin, ymax, xmax = box
  return Rectangle((xmin * width - 0.5, ymin * height - 0.5), (xmax - xmin) * width,
                   (ymax - ymin) * height, fill=False, edgecolor=BOX_COLOUR, linewidth=1.5)


def _decoded(encoded: bytes) -> npt.NDArray[np.uint8]:
  """RGB pixels of a stored image, at most MAX_SIDE on a side; a JPEG is
  decoded at a reduced scale where that suffices (fast for `full` photos)."""
  with Image.open(io.BytesIO(encoded)) as image:
    image.draft("RGB", (MAX_SIDE, MAX_SIDE))
    rgb = image.convert("RGB")
  rgb.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
  return np.asarray(rgb, dtype=np.uint8)


def _fitted(image: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
  if max(image.shape[:2]) <= MAX_SIDE:
    return image
  small = Image.fromarray(image)
  small.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
  return np.asarray(small, dtype=np.uint8)


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(prog="python -m photo_datasets show",
                                   description=(__doc__ or "").splitlines()[0])
  parser.add_argument("name", metavar="NAME",
                      help="a built config, e.g. korean_food/full or flowers_dataset/224")
  parser.add_argument("--split", default="train",
                      help="a TFDS split, e.g. train or validation[:50%%]")
  parser.add_argument("--data_dir", default=None, help="where it was built (default: TFDS's)")
  parser.add_argument("--out", required=True, type=pathlib.Path, help="the PNG file to write")
  parser.add_argument("--count", type=int, default=16, help="pictures to show")
  parser.add_argument("--seed", type=int, default=0, help="which pictures (and augmentations)")
  parser.add_argument("--pipeline", action="store_true",
                      help="show a batch of the training pipeline (what the model sees) "
                      "instead of stored examples")
  parser.add_argument("--image_size", type=int, default=None,
                      help="with --pipeline: the side of the pictures; required for full configs")
  args = parser.parse_args(argv)
  try:
    path = write_grid(args.name, split=args.split, data_dir=args.data_dir, out=args.out,
                      count=args.count, pipeline=args.pipeline, image_size=args.image_size,
                      seed=args.seed)
  except built.NotBuiltError as e:
    sys.exit(f"error: {e}")  # Not a misuse of the arguments: no usage text.
  except ValueError as e:
    parser.error(str(e))
  print(f"wrote {path}")


if __name__ == "__main__":
  main()

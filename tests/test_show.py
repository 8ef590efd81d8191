"""`photo_datasets.commands.show`: grids of stored examples and of the training pipeline;
`tfds.show_examples` and `tfds.as_dataframe` on both datasets."""

from __future__ import annotations

import os
import pathlib

import matplotlib
import numpy as np
import pytest
import tensorflow_datasets as tfds
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from PIL import Image

import flowers_dataset  # noqa: F401  (registers the builder)
import korean_food
from photo_datasets.commands import show
from photo_datasets.testing import read_examples

matplotlib.use("Agg")  # For tfds.show_examples, which draws with pyplot.
from matplotlib import pyplot as plt  # noqa: E402  (after the backend is chosen)

CONFIGS = ("korean_food/64", "korean_food/full", "flowers_dataset/64")
ENGLISH = {c.index: c.english_name for c in korean_food.food_classes()}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def data_dir(samples) -> str:
  return samples.build(*CONFIGS)


@pytest.fixture(scope="module")
def stored(data_dir) -> dict[str, dict[str, dict]]:
  """config -> file_name -> stored example."""
  return {name: read_examples(tfds.builder(name, data_dir=data_dir)) for name in CONFIGS}


def _caption(axes) -> str:
  return axes.get_xlabel().replace("\n", " ")


def _check_png(path: pathlib.Path, pictures: int) -> None:
  """A real PNG, about CELL inches a picture, not blank."""
  assert path.read_bytes()[:8] == PNG_SIGNATURE
  with Image.open(path) as image:
    assert image.format == "PNG"
    width, height = image.size
    pixels = np.asarray(image.convert("RGB"))
  columns = int(np.ceil(np.sqrt(pictures)))
  rows = int(np.ceil(pictures / columns))
  cell = show.CELL * show.DPI
  assert width == pytest.approx(columns * cell, abs=2)
  assert rows * cell < height < rows * (cell + show.CAPTION * show.DPI) + 0.5 * show.DPI
  assert pixels.std() > 20


@pytest.mark.parametrize("name", CONFIGS)
def test_stored_grid_is_a_png_of_count_pictures(data_dir, tmp_path, name):
  out = show.write_grid(name, split="train", data_dir=data_dir, out=tmp_path / "grid.png", count=9)
  assert out == tmp_path / "grid.png"
  _check_png(out, 9)


@pytest.mark.parametrize("name, image_size", [
    ("korean_food/64", None), ("korean_food/full", 96), ("flowers_dataset/64", 48)])
def test_pipeline_grid_shows_a_batch_at_the_image_size(data_dir, tmp_path, name, image_size):
  out = show.write_grid(name, split="train", data_dir=data_dir, out=tmp_path / "p.png", count=8,
                        pipeline=True, image_size=image_size)
  _check_png(out, 8)
  figure = show.grid_figure(name, split="train", data_dir=data_dir, count=8, pipeline=True,
                            image_size=image_size)
  size = image_size or 64
  shapes = {axes.images[0].get_array().shape for axes in figure.axes}
  assert shapes == {(size, size, 3)}
  assert len(figure.axes) == 8
  assert not any(axes.patches for axes in figure.axes)  # The crop already holds the box.


@pytest.mark.parametrize("name", ["korean_food/64", "korean_food/full"])
def test_korean_food_captions_are_the_english_names(data_dir, stored, name):
  figure = show.grid_figure(name, data_dir=data_dir, count=100)  # The whole train split.
  examples = stored[name]
  assert {axes.get_label() for axes in figure.axes} == {f for f, e in examples.items()
                                                         if e["split"] == "train"}
  for axes in figure.axes:
    assert _caption(axes) == ENGLISH[examples[axes.get_label()]["label"]]
  texts = [text.get_text() for text in figure.findobj(Text)]
  assert all(text.isascii() for text in texts), [t for t in texts if not t.isascii()]


def test_korean_food_pipeline_captions_are_english(data_dir):
  figure = show.grid_figure("korean_food/full", data_dir=data_dir, count=16, pipeline=True,
                            image_size=64)
  assert {_caption(axes) for axes in figure.axes} <= set(ENGLISH.values())


def test_flowers_captions_are_the_class_names(data_dir, stored):
  figure = show.grid_figure("flowers_dataset/64", split="validation", data_dir=data_dir, count=100)
  examples = stored["flowers_dataset/64"]
  names = ["dandelion", "daisy", "tulips", "sunflowers", "roses"]
  assert len(figure.axes) == sum(e["split"] == "validation" for e in examples.values())
  for axes in figure.axes:
    assert _caption(axes) == names[examples[axes.get_label()]["label"]]


def test_full_korean_food_boxes_are_drawn_exactly_where_has_bbox(data_dir, stored):
  figure = show.grid_figure("korean_food/full", data_dir=data_dir, count=100)
  examples = stored["korean_food/full"]
  boxed = 0
  for axes in figure.axes:
    example = examples[axes.get_label()]
    rectangles = [p for p in axes.patches if isinstance(p, Rectangle)]
    if not example["has_bbox"]:
      assert rectangles == []
      continue
    boxed += 1
    assert len(rectangles) == 1
    height, width = axes.images[0].get_array().shape[:2]
    ymin, xmin, ymax, xmax = example["bbox"]
    (x, y), w, h = rectangles[0].get_xy(), rectangles[0].get_width(), rectangles[0].get_height()
    assert (x + 0.5, y + 0.5, w, h) == pytest.approx(
        (xmin * width, ymin * height, (xmax - xmin) * width, (ymax - ymin) * height))
  assert 0 < boxed < len(figure.axes)  # The sample has both kinds in train.


def test_no_boxes_on_sized_configs(data_dir):
  figure = show.grid_figure("korean_food/64", data_dir=data_dir, count=100)
  assert not any(axes.patches for axes in figure.axes)


def test_the_same_seed_shows_the_same_examples(data_dir):
  def shown(seed):
    figure = show.grid_figure("flowers_dataset/64", data_dir=data_dir, count=6, seed=seed)
    return [axes.get_label() for axes in figure.axes]

  assert shown(1) == shown(1)
  assert shown(1) != shown(2)


def test_pipeline_on_a_full_config_needs_image_size(data_dir, tmp_path, capsys):
  with pytest.raises(ValueError, match="--image_size"):
    show.write_grid("korean_food/full", data_dir=data_dir, out=tmp_path / "x.png", pipeline=True)
  with pytest.raises(SystemExit) as exit_info:
    show.main(["korean_food/full", "--data_dir", data_dir, "--out", str(tmp_path / "x.png"),
               "--pipeline"])
  assert exit_info.value.code == 2
  assert "needs --image_size" in capsys.readouterr().err
  assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"count": 0}, "count must be >= 1"),
    ({"image_size": 64}, "--pipeline"),
])
def test_bad_arguments_are_named(data_dir, tmp_path, kwargs, message):
  with pytest.raises(ValueError, match=message):
    show.write_grid("korean_food/64", data_dir=data_dir, out=tmp_path / "x.png", **kwargs)


def test_an_unbuilt_config_is_named(tmp_path):
  with pytest.raises(ValueError, match="korean_food/64 is not built"):
    show.write_grid("korean_food/64", data_dir=os.fspath(tmp_path), out=tmp_path / "x.png")


def test_command_line_writes_the_png_and_says_where(data_dir, tmp_path, capsys):
  out = tmp_path / "sub" / "grid.png"
  show.main(["korean_food/full", "--split", "validation", "--data_dir", data_dir, "--out", str(out),
             "--count", "4", "--seed", "3", "--pipeline", "--image_size", "64"])
  assert f"wrote {out}" in capsys.readouterr().out
  _check_png(out, 3)  # Validation holds 3 examples: a batch of 3.


@pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive")
@pytest.mark.parametrize("name", CONFIGS)
def test_tfds_show_examples_and_as_dataframe_work(data_dir, name):
  ds, info = tfds.load(name, split="train", data_dir=data_dir, with_info=True)
  figure = tfds.show_examples(ds, info)
  try:
    assert len(figure.axes) == 9 and all(axes.images for axes in figure.axes)
    # korean_food has two ClassLabels (label, super_category): no caption.
    if name.startswith("flowers"):
      assert all(axes.get_xlabel() for axes in figure.axes)
    figure.canvas.draw()
  finally:
    plt.close(figure)
  frame = tfds.as_dataframe(ds.take(4), info)
  assert len(frame) == 4 and set(frame.columns) == set(info.features)
  # What a notebook shows: images (and boxes, drawn on a blank) as thumbnails.
  html = frame._repr_html_()
  assert html.count("<img") == 4 * (2 if "bbox" in info.features else 1)


def test_an_unbuilt_config_is_named_without_the_usage_text(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    show.main(["korean_food/96", "--data_dir", str(tmp_path), "--out", str(tmp_path / "x.png")])
  assert str(exit_info.value.code).startswith("error: korean_food/96 is not built in ")
  assert "usage:" not in capsys.readouterr().err

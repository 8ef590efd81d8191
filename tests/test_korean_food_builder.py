"""The korean_food builder end to end: TFDS's harness on the dummy data, a
corpus holding every quirk, the same photos in every layout and name encoding,
and manual dirs with nothing to build.

Corpora are drawn by `photo_datasets.testing` into tmp dirs; each is built once
per module. The bundled sample and the real photos have their own modules.
"""

from __future__ import annotations

import dataclasses
import io
import pathlib
import shutil
from typing import Any, NamedTuple

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from PIL import Image

import korean_food
from korean_food import classes, corpus
from photo_datasets import testing
from photo_datasets.testing import build, read_examples

DUMMY_DATA = pathlib.Path(korean_food.__file__).parent / "dummy_data"


class KoreanFoodHarnessTest(tfds.testing.DatasetBuilderTestCase):
  """Builds `korean_food/dummy_data` (scripts/make_dummy_data.py) in both configs."""

  DATASET_CLASS = korean_food.Builder
  BUILDER_CONFIG_NAMES_TO_TEST = ["224", "full"]
  # Two generated plates of 김치찌개 next in number and alike in colour (Img_119_0000, 0003)
  # share no keypoints, so they are no series and keep their own splits.
  SPLITS = {"train": 4, "validation": 1, "test": 2}


def test_dummy_data_holds_a_section_line_a_png_and_two_classes():
  """What the harness build exercises besides the split counts."""
  files = {"/".join(file.parts): read() for file, read in corpus.walk(DUMMY_DATA)}
  assert {name.rsplit("/", 1)[0] for name in files} == {
      "kfood/구이/갈비구이", "kfood/찌개/김치찌개"}
  assert [name for name in files if name.endswith(".png")] == [
      "kfood/구이/갈비구이/Img_000_0004.png"]
  assert files["kfood/구이/갈비구이/Img_000_0004.png"].startswith(b"\x89PNG")
  crops = files["kfood/구이/갈비구이/crop_area.properties"].decode().splitlines()
  assert crops[0] == "[sections]" and "Img_000_0004=0,0,16,12" in crops


def decode(data: bytes) -> np.ndarray:
  return tf.io.decode_jpeg(data, channels=3).numpy()


def super_category(builder: tfds.core.DatasetBuilder, example: dict[str, Any]) -> str:
  return builder.info.features["super_category"].int2str(example["super_category"])


# ---------------------------------------------------------------------------
# One corpus holding every quirk, built once in both configs.

GALBI, KIMCHI = "kfood/구이/갈비구이/", "kfood/찌개/김치찌개/"
ODD = testing.odd_images(7)
BROKEN = testing.broken_files(8)


def _rotated_marker() -> bytes:
  """Stored 120x80 blue with a red block at x 20..60, y 10..40, EXIF orientation 6
  (turn 90° clockwise to show): upright it is 80x120 with the block top right."""
  return testing.exif_rotated_jpeg(testing.marked((120, 80), (20, 10, 60, 40), testing.BLUE),
                                   orientation=6)


CLEAN = {  # name -> (width, height)
    GALBI + "Img_000_0000.jpg": (160, 120),
    GALBI + "Img_000_0010.JPG": (200, 150),
    GALBI + "Img_000_0011.jpg": (128, 96),
    GALBI + "Img_000_0012.jpg": (160, 120),
    GALBI + "Img_000_0013.jpg": (180, 240),
    GALBI + "Img_000_0014.jpg": (160, 120),
    GALBI + "Img_000_0015.jpg": (160, 120),
    GALBI + "Img_000_0016.jpg": (160, 120),
    GALBI + "Img_000_0017.jpg": (160, 120),
    KIMCHI + "Img_119_0001.jpg": (160, 120),
    KIMCHI + "Img_121_0002.jpg": (160, 120),  # prefix says 동태찌개 (121)
}
ODD_FILES = {  # kind -> (name, upright width, height)
    "png_as_jpg": (GALBI + "Img_000_0001.jpg", 144, 108),
    "cmyk": (GALBI + "Img_000_0002.jpg", 128, 96),
    "grayscale": (GALBI + "Img_000_0003.jpg", 120, 90),
    "gif": (GALBI + "Img_000_0004.gif", 112, 84),
    "rgba_png": (GALBI + "Img_000_0005.png", 120, 96),
    "exif_rotated": (GALBI + "Img_000_0006.jpg", 80, 120),
}
BROKEN_FILES = {  # name -> what the skip reason says
    GALBI + "Img_000_0007.jpg": "truncated",
    GALBI + "Img_000_0008.jpg": "empty file",
    GALBI + "Img_000_0009.jpg": "not an image format",
}
JUNK_FILES = {
    "kfood/__MACOSX/구이/갈비구이/._Img_000_0000.jpg": testing.JUNK["apple_double"],
    GALBI + ".DS_Store": testing.JUNK[".DS_Store"],
    GALBI + "Thumbs.db": testing.JUNK["Thumbs.db"],
    KIMCHI + "org_url.csv": testing.JUNK["org_url.csv"],
}
DUPLICATE = KIMCHI + "Img_119_0000.jpg"  # the bytes of 갈비구이/Img_000_0000.jpg
UNKNOWN_CLASS = "kfood/찌개/부대찌개/Img_124_0000.jpg"
GALBI_CROPS = [  # BOM, CRLF, a section line, comments, malformed lines
    "[sections]",
    "# boxes checked 2020-11",
    "",
    "Img_000_0000=10,8,60,40",
    "img_000_0010=40,30,120,90",  # key in lower case, file is .JPG
    " Img_000_0011 = 5 , 6 , 50 , 40 ",  # stray spaces
    "Img_000_0012=20,10,60,50 (ok)",  # trailing junk
    "Img_000_0013=100,50,500,400",  # runs past the 180x240 image: clipped
    "Img_000_0014=500,500,10,10",  # wholly outside the image: no box, counted
    "Img_000_0006=20,10,40,30",  # on the stored pixels of the EXIF-rotated photo
    "=,986,590",
    "Img_000_0015=dissimilar,1,2,3",
    "Img_000_0016=12,30",
    "Img_000_0017=10,10,0,50",
    "Img_000_0999=1,2,3,4",  # no such image
]
KIMCHI_CROPS = ["Img_119_0001=0,0,80,60", "Img_119_0009=open"]  # LF, no section line
BAD_CROP_LINES = 4 + 1 + 1
EXPECTED_BOXES = {  # ymin, xmin, ymax, xmax
    "구이/갈비구이/Img_000_0000.jpg": (8 / 120, 10 / 160, 48 / 120, 70 / 160),
    "구이/갈비구이/Img_000_0010.JPG": (30 / 150, 40 / 200, 120 / 150, 160 / 200),
    "구이/갈비구이/Img_000_0011.jpg": (6 / 96, 5 / 128, 46 / 96, 55 / 128),
    "구이/갈비구이/Img_000_0012.jpg": (10 / 120, 20 / 160, 60 / 120, 80 / 160),
    "구이/갈비구이/Img_000_0013.jpg": (50 / 240, 100 / 180, 1.0, 1.0),
    # Stored y 10..40 of 80 becomes upright x 1-40/80..1-10/80; stored x 20..60
    # of 120 becomes upright y 20/120..60/120.
    "구이/갈비구이/Img_000_0006.jpg": (1 / 6, 0.5, 0.5, 0.875),
    "찌개/김치찌개/Img_119_0001.jpg": (0.0, 0.0, 0.5, 0.5),
}


def _quirk_files() -> dict[str, bytes]:
  files = {name: testing.jpeg(400 + i, size) for i, (name, size) in enumerate(CLEAN.items())}
  files[GALBI + "Img_000_0018.jpg"] = testing.jpeg(399, (160, 120), progressive=True)
  files.update({name: ODD[kind] for kind, (name, _, _) in ODD_FILES.items()})
  files[ODD_FILES["exif_rotated"][0]] = _rotated_marker()
  files[GALBI + "Img_000_0007.jpg"] = BROKEN["truncated"]
  files[GALBI + "Img_000_0008.jpg"] = BROKEN["empty"]
  files[GALBI + "Img_000_0009.jpg"] = BROKEN["html"]
  files.update(JUNK_FILES)
  files[DUPLICATE] = files[GALBI + "Img_000_0000.jpg"]
  files[UNKNOWN_CLASS] = testing.jpeg(398, (96, 64))
  files[GALBI + "crop_area.properties"] = testing.properties(GALBI_CROPS, bom=True)
  files[KIMCHI + "crop_area.properties"] = testing.properties(KIMCHI_CROPS, newline="\n")
  return files


@dataclasses.dataclass(frozen=True)
class QuirksBuild:
  """The quirks corpus built in `full` and `224`, and what each build stored."""

  files: dict[str, bytes]  # Path in the manual dir -> bytes.
  data_dir: pathlib.Path
  full: tfds.core.DatasetBuilder
  examples: dict[str, dict[str, Any]]  # Of `full`, by file_name.
  small_examples: dict[str, dict[str, Any]]  # Of `224`.

  def source(self, file_name: str) -> bytes:
    return self.files["kfood/" + file_name]


@pytest.fixture(scope="module")
def quirks(tmp_path_factory) -> QuirksBuild:
  root = tmp_path_factory.mktemp("quirks")
  files = _quirk_files()
  testing.write_tree(root / "manual", files)
  full = build("korean_food/full", root / "data", root / "manual")
  small = build("korean_food/224", root / "data", root / "manual")
  return QuirksBuild(files, root / "data", full, read_examples(full), read_examples(small))


def test_clean_jpegs_stored_byte_for_byte_in_full(quirks):
  clean = [name.removeprefix("kfood/") for name in CLEAN] + ["구이/갈비구이/Img_000_0018.jpg"]
  for name in clean:
    assert quirks.examples[name]["image"] == quirks.source(name), name


def test_every_stored_image_decodes_as_rgb_jpeg(quirks):
  assert len(quirks.examples) == len(quirks.small_examples) == 19
  for name, example in quirks.examples.items():
    assert decode(example["image"]).ndim == 3, name
  for name, example in quirks.small_examples.items():
    assert decode(example["image"]).shape == (224, 224, 3), name


@pytest.mark.parametrize("kind", sorted(ODD_FILES))
def test_odd_image_kinds_stored_as_upright_rgb_jpeg(quirks, kind):
  name, width, height = ODD_FILES[kind]
  example = quirks.examples[name.removeprefix("kfood/")]
  assert example["image"][:3] == b"\xff\xd8\xff"  # re-encoded as JPEG
  assert example["image"] != quirks.files[name]
  pixels = decode(example["image"]).astype(int)
  assert pixels.shape == (height, width, 3)
  if kind in ("png_as_jpg", "cmyk"):  # the colours survive the conversion
    original = np.asarray(testing.photo(7 + (kind == "cmyk"), (width, height)), int)
    assert np.abs(pixels - original).mean() < 6
  if kind == "grayscale":
    assert np.abs(pixels[..., 0] - pixels[..., 2]).max() <= 3
  if kind == "gif":  # the first frame
    with Image.open(io.BytesIO(ODD["gif"])) as gif:
      first = np.asarray(gif.convert("RGB"), int)
    assert np.abs(pixels - first).mean() < 6
  if kind == "rgba_png":  # transparent corners on white
    assert pixels[:4, :4].min() > 240
  assert example["label"] == 0


def test_exif_rotated_photo_upright_with_swapped_size_and_mapped_bbox(quirks):
  example = quirks.examples["구이/갈비구이/Img_000_0006.jpg"]
  pixels = decode(example["image"]).astype(int)
  assert pixels.shape == (120, 80, 3)  # stored 120 wide, 80 high
  assert example["has_bbox"]
  np.testing.assert_allclose(example["bbox"],
                             EXPECTED_BOXES["구이/갈비구이/Img_000_0006.jpg"], atol=1e-6)
  ymin, xmin, ymax, xmax = example["bbox"]
  inside = pixels[round(ymin * 120) + 3:round(ymax * 120) - 3,
                  round(xmin * 80) + 3:round(xmax * 80) - 3]
  assert inside[..., 0].min() > 200 and inside[..., 2].max() < 60  # red block
  assert pixels[70:, :, 2].min() > 200 and pixels[70:, :, 0].max() < 60  # blue below it
  # The 224 config crops to the box first: all red.
  small = decode(quirks.small_examples["구이/갈비구이/Img_000_0006.jpg"]["image"]).astype(int)
  assert small[..., 0].mean() > 230 and small[..., 2].mean() < 25


def test_crop_lines_give_bbox_and_has_bbox(quirks):
  for name, example in quirks.examples.items():
    if name in EXPECTED_BOXES:
      assert example["has_bbox"], name
      np.testing.assert_allclose(example["bbox"], EXPECTED_BOXES[name], atol=1e-6, err_msg=name)
    else:
      assert not example["has_bbox"], name
      np.testing.assert_array_equal(example["bbox"], [0.0, 0.0, 1.0, 1.0], err_msg=name)
  counts = quirks.full.info.metadata["counts"]
  assert counts["bad crop lines"] == BAD_CROP_LINES
  assert counts["images with a crop box"] == len(EXPECTED_BOXES)


def test_broken_files_skipped_with_reasons_build_continues(quirks):
  skipped = {s["file_name"]: s["reason"] for s in quirks.full.info.metadata["skipped_files"]}
  for name, reason in BROKEN_FILES.items():
    assert reason in skipped[name.removeprefix("kfood/")]
    assert name.removeprefix("kfood/") not in quirks.examples
  assert len(skipped) == len(BROKEN_FILES) + 1  # and the unknown class folder
  # The report is saved with the dataset: a reloaded builder has it too.
  reloaded = tfds.builder("korean_food/full", data_dir=quirks.data_dir)
  assert reloaded.info.metadata["skipped_files"] == quirks.full.info.metadata["skipped_files"]


def test_junk_files_ignored(quirks):
  meta = quirks.full.info.metadata
  assert meta["ignored_files"] == len(JUNK_FILES)
  reported = list(quirks.examples) + [s["file_name"] for s in meta["skipped_files"]]
  assert not [n for n in reported if "__MACOSX" in n or n.endswith((".DS_Store", ".db", ".csv"))]


def test_prefix_mismatch_keeps_folder_label_and_warns(quirks):
  example = quirks.examples["찌개/김치찌개/Img_121_0002.jpg"]
  assert example["label"] == 119
  assert super_category(quirks.full, example) == "찌개"
  (warning,) = quirks.full.info.metadata["warnings"]
  assert "찌개/김치찌개/Img_121_0002.jpg" in warning and "class 121" in warning


def test_byte_identical_photos_in_two_classes_share_split_and_are_listed(quirks):
  pair = ["구이/갈비구이/Img_000_0000.jpg", "찌개/김치찌개/Img_119_0000.jpg"]
  first, second = (quirks.examples[name] for name in pair)
  assert (first["label"], second["label"]) == (0, 119)
  assert first["split"] == second["split"]
  assert quirks.full.info.metadata["duplicates"] == [pair]


def test_class_folder_not_in_the_150_classes_is_skipped(quirks):
  skipped = {s["file_name"]: s["reason"] for s in quirks.full.info.metadata["skipped_files"]}
  # named as found, from the manual dir
  assert "not one of the 150 classes" in skipped[UNKNOWN_CLASS]
  assert not [n for n in quirks.examples if "부대찌개" in n]


def test_labels_and_super_categories_follow_classes_tsv(quirks):
  for name, example in quirks.examples.items():
    group, food, _ = name.split("/")
    assert example["label"] == classes.class_by_name()[food].index
    assert super_category(quirks.full, example) == group


# ---------------------------------------------------------------------------
# Names and nesting: the same photos held in every form give the same examples.

def _small_corpus() -> dict[str, dict[str, bytes]]:
  """group -> {member name -> bytes}: four classes, three groups."""
  photos = {"구이/갈비구이": 3, "구이/갈치구이": 2, "찌개/김치찌개": 3, "밥/비빔밥": 2}
  groups = {}
  for seed, (folder, n) in enumerate(photos.items()):
    group, food = folder.split("/")
    index = classes.class_by_name()[food].index
    members = groups.setdefault(group, {})
    for i in range(n):
      members[f"{folder}/Img_{index:03d}_{i:04d}.jpg"] = testing.jpeg(500 + 10 * seed + i, (64, 48))
  groups["구이"]["구이/갈비구이/crop_area.properties"] = testing.properties(
      ["[sections]", "Img_000_0001=8,6,32,24"])
  return groups


class Summary(NamedTuple):
  """What a build stored for one photo, comparable across builds."""

  label: int
  super_category: str
  split: str
  bbox: tuple[float, ...]
  image: bytes


def _summary(builder: tfds.core.DatasetBuilder) -> dict[str, Summary]:
  return {name: Summary(int(e["label"]), super_category(builder, e), e["split"], tuple(e["bbox"]),
                        e["image"])
          for name, e in read_examples(builder).items()}


class LayoutBuild(NamedTuple):
  manual_dir: pathlib.Path
  summary: dict[str, Summary]  # By file_name.


@pytest.fixture(scope="module")
def nesting(tmp_path_factory) -> dict[str, LayoutBuild]:
  """Layout (`testing.layouts`) -> the small corpus in it, built in `full`."""
  root = tmp_path_factory.mktemp("nesting")
  dirs = testing.write_layouts(root, _small_corpus())
  return {form: LayoutBuild(path, _summary(build("korean_food/full", root / f"data_{form}", path)))
          for form, path in dirs.items()}


def test_nesting_forms_give_the_same_examples(nesting):
  expected = nesting["tree"].summary
  assert len(expected) == 10
  assert {name: v.label for name, v in expected.items()} == {
      **{f"구이/갈비구이/Img_000_{i:04d}.jpg": 0 for i in range(3)},
      **{f"구이/갈치구이/Img_001_{i:04d}.jpg": 1 for i in range(2)},
      **{f"찌개/김치찌개/Img_119_{i:04d}.jpg": 119 for i in range(3)},
      **{f"밥/비빔밥/Img_072_{i:04d}.jpg": 72 for i in range(2)},
  }
  assert expected["구이/갈비구이/Img_000_0001.jpg"].bbox == pytest.approx(
      (0.125, 0.125, 0.625, 0.625))
  for form, layout in nesting.items():
    assert layout.summary == expected, form


def test_name_encodings_resolve_to_the_same_nfc_class(tmp_path):
  """UTF-8 flagged (with NFD folders), UTF-8 unflagged, CP949 unflagged zips and
  an NFD tree on disk, side by side in one manual dir."""
  groups = _small_corpus()
  manual = tmp_path / "manual"
  gui_members = {testing.nfd(n) if "갈치구이" in n else n: d for n, d in groups["구이"].items()}
  testing.write_tree(manual, {
      "구이.zip": testing.zip_bytes(gui_members, "utf-8-flag"),
      "찌개.zip": testing.zip_bytes(groups["찌개"], "utf-8"),
      "밥.zip": testing.zip_bytes(groups["밥"], "cp949"),
      **{testing.nfd(f"kfood/국/미역국/Img_017_{i:04d}.jpg"): testing.jpeg(600 + i, (64, 48))
         for i in range(2)},
  })
  examples = read_examples(build("korean_food/full", tmp_path / "data", manual))
  labels = {name: int(e["label"]) for name, e in examples.items()}
  assert labels == {
      **{f"구이/갈비구이/Img_000_{i:04d}.jpg": 0 for i in range(3)},
      **{f"구이/갈치구이/Img_001_{i:04d}.jpg": 1 for i in range(2)},
      **{f"찌개/김치찌개/Img_119_{i:04d}.jpg": 119 for i in range(3)},
      **{f"밥/비빔밥/Img_072_{i:04d}.jpg": 72 for i in range(2)},
      **{f"국/미역국/Img_017_{i:04d}.jpg": 17 for i in range(2)},
  }


def test_split_stability_adding_a_photo_moves_no_other(nesting, tmp_path):
  tree, before = nesting["tree"]
  manual = tmp_path / "manual"
  shutil.copytree(tree, manual)
  testing.write_tree(manual, {"kfood/밥/비빔밥/Img_072_0099.jpg": testing.jpeg(777, (64, 48))})
  after = _summary(build("korean_food/full", tmp_path / "data", manual))
  assert set(after) == set(before) | {"밥/비빔밥/Img_072_0099.jpg"}
  assert {n: after[n].split for n in before} == {n: v.split for n, v in before.items()}


def test_unreadable_zips_reported_build_continues(nesting, tmp_path):
  """A macOS AppleDouble `._구이.zip` inside kfood.zip is junk; a truncated
  group zip beside it is reported as skipped."""
  expected = nesting["kfood_zip"].summary
  manual = tmp_path / "manual"
  inner = testing.layouts(_small_corpus())["group_zips"]
  inner["__MACOSX/._구이.zip"] = testing.JUNK["apple_double"]
  truncated = testing.zip_bytes({"국/미역국/Img_017_0000.jpg": testing.jpeg(1, (64, 48))})[:-30]
  testing.write_tree(manual, {"kfood.zip": testing.zip_bytes(inner, "utf-8", dirs=False),
                              "국.zip": truncated})
  builder = build("korean_food/full", tmp_path / "data", manual)
  assert _summary(builder) == expected
  meta = builder.info.metadata
  assert [s["file_name"] for s in meta["skipped_files"]] == ["국.zip"]
  assert "not a readable zip" in meta["skipped_files"][0]["reason"]
  assert meta["ignored_files"] == 1


# ---------------------------------------------------------------------------
# Manual dirs with nothing to build.


def test_empty_manual_dir_gives_clear_error(tmp_path):
  (tmp_path / "manual").mkdir()
  with pytest.raises(AssertionError,
                     match=f"{tmp_path / 'manual'} holds no download to build it from") as error:
    build("korean_food/full", tmp_path / "data", tmp_path / "manual")
  # The instructions.
  assert "What to put there:" in str(error.value) and "aihubshell" in str(error.value)


def test_manual_dir_with_only_empty_folders_gives_clear_error(tmp_path):
  (tmp_path / "manual" / "kfood" / "구이").mkdir(parents=True)
  with pytest.raises(ValueError,
                     match="No usable image.*found 0 non-image files and 0 unusable") as error:
    build("korean_food/full", tmp_path / "data", tmp_path / "manual")
  assert "aihubshell" in str(error.value)


def test_manual_dir_with_nothing_usable_gives_clear_error(tmp_path):
  testing.write_tree(tmp_path / "manual", {
      "kfood/구이/갈비구이/.DS_Store": testing.JUNK[".DS_Store"],
      "kfood/구이/갈비구이/Img_000_0000.jpg": b"",
      "kfood/readme.txt": b"nothing here",
      "kfood.zip": b"PK\x03\x04 an interrupted download",
  })
  with pytest.raises(ValueError, match=r"(?i)no (usable|valid) image") as error:
    build("korean_food/full", tmp_path / "data", tmp_path / "manual")
  message = str(error.value)  # names what it found unusable, then says what is expected
  assert "Img_000_0000.jpg" in message and "empty file" in message
  assert "not a readable zip" in message and "aihubshell" in message


def test_a_damaged_zip_member_is_skipped_and_reported_and_the_rest_built(tmp_path):
  members = testing.photos_in_splits(
      {"구이/갈비구이/Img_000_0001.jpg": "train", "구이/갈치구이/Img_001_0001.jpg": "validation",
       "찌개/김치찌개/Img_119_0001.jpg": "test", "구이/갈비구이/Img_000_0002.jpg": "train"},
      lambda name, seed: testing.jpeg(seed, (96, 72)))
  victim = "구이/갈비구이/Img_000_0002.jpg"
  raw = bytearray(testing.zip_bytes(members, "utf-8-flag", dirs=False))
  at = raw.index(members[victim][-200:-140]) + 10  # Entropy-coded data: no other photo has it.
  raw[at] ^= 0xFF  # One byte of the photo flipped on disk: its CRC-32 no longer matches.
  (tmp_path / "manual").mkdir()
  (tmp_path / "manual" / "kfood.zip").write_bytes(bytes(raw))

  builder = build("korean_food/64", tmp_path / "data", tmp_path / "manual", workers=2)

  (skipped,) = [s for s in builder.info.metadata["skipped_files"] if s["file_name"] == victim]
  assert skipped["reason"].startswith("unreadable: OSError: bad CRC-32")
  assert set(read_examples(builder)) == set(members) - {victim}

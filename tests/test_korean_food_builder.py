"""End-to-end tests of the korean_food builder: the TFDS harness, each corpus
quirk, the bundled sample and (when `../shared` holds them) real AIHub photos.

Corpora are written into tmp dirs with the helpers of
`scripts/make_korean_food_data.py`; each one is built once per module.
"""

from __future__ import annotations

import io
import os
import pathlib
import shutil
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from PIL import Image, ImageDraw

import korean_food
from korean_food import classes, corpus

REPO = pathlib.Path(__file__).resolve().parents[1]
SAMPLE_DIR = REPO / "korean_food" / "sample"
REAL_KFOOD = REPO.parent / "shared" / "realdata" / "kfood"

sys.path.insert(0, str(REPO / "scripts"))
import make_korean_food_data as kdata  # noqa: E402


class KoreanFoodHarnessTest(tfds.testing.DatasetBuilderTestCase):
  """Builds `korean_food/dummy_data` (made by the script) in both configs."""

  DATASET_CLASS = korean_food.Builder
  BUILDER_CONFIG_NAMES_TO_TEST = ["224", "full"]
  SPLITS = {"train": 4, "validation": 1, "test": 2}


# ---------------------------------------------------------------------------
# Helpers


def build(manual_dir, data_dir, config: str = "full") -> tfds.core.DatasetBuilder:
  builder = tfds.builder("korean_food", config=config, data_dir=os.fspath(data_dir))
  builder.download_and_prepare(
      download_config=tfds.download.DownloadConfig(manual_dir=os.fspath(manual_dir)))
  return builder


def read_examples(builder) -> dict[str, dict]:
  """file_name -> example as numpy (image still encoded), with its split."""
  found = {}
  for split in builder.info.splits.keys():
    ds = builder.as_dataset(split=split, decoders={"image": tfds.decode.SkipDecoding()})
    for example in tfds.as_numpy(ds):
      name = example["file_name"].decode()
      assert name not in found, name
      found[name] = {**example, "split": split}
  return found


def decode(data: bytes) -> np.ndarray:
  return tf.io.decode_jpeg(data, channels=3).numpy()


def super_category(builder, example) -> str:
  return builder.info.features["super_category"].int2str(example["super_category"])


def metadata(builder) -> dict:
  return dict(builder.info.metadata)


# ---------------------------------------------------------------------------
# One corpus holding every quirk, built once in both configs.

GALBI, KIMCHI = "kfood/구이/갈비구이/", "kfood/찌개/김치찌개/"
ODD = kdata.odd_images(7)
BROKEN = kdata.broken_files(8)


def _rotated_marker() -> bytes:
  """Stored 120x80 blue with a red block at x 20..60, y 10..40, EXIF orientation 6
  (turn 90° clockwise to show): upright it is 80x120 with the block top right."""
  raw = Image.new("RGB", (120, 80), (0, 0, 255))
  ImageDraw.Draw(raw).rectangle([20, 10, 59, 39], fill=(255, 0, 0))
  return kdata.exif_rotated_jpeg(raw, orientation=6)


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
    "kfood/__MACOSX/구이/갈비구이/._Img_000_0000.jpg": kdata.JUNK["apple_double"],
    GALBI + ".DS_Store": kdata.JUNK[".DS_Store"],
    GALBI + "Thumbs.db": kdata.JUNK["Thumbs.db"],
    KIMCHI + "org_url.csv": kdata.JUNK["org_url.csv"],
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
  files = {name: kdata.jpeg(400 + i, size) for i, (name, size) in enumerate(CLEAN.items())}
  files[GALBI + "Img_000_0018.jpg"] = kdata.jpeg(399, (160, 120), progressive=True)
  files.update({name: ODD[kind] for kind, (name, _, _) in ODD_FILES.items()})
  files[ODD_FILES["exif_rotated"][0]] = _rotated_marker()
  files[GALBI + "Img_000_0007.jpg"] = BROKEN["truncated"]
  files[GALBI + "Img_000_0008.jpg"] = BROKEN["empty"]
  files[GALBI + "Img_000_0009.jpg"] = BROKEN["html"]
  files.update(JUNK_FILES)
  files[DUPLICATE] = files[GALBI + "Img_000_0000.jpg"]
  files[UNKNOWN_CLASS] = kdata.jpeg(398, (96, 64))
  files[GALBI + "crop_area.properties"] = kdata.properties(GALBI_CROPS, bom=True)
  files[KIMCHI + "crop_area.properties"] = kdata.properties(KIMCHI_CROPS, newline="\n")
  return files


@pytest.fixture(scope="module")
def quirks(tmp_path_factory):
  root = tmp_path_factory.mktemp("quirks")
  files = _quirk_files()
  kdata.write_tree(root / "manual", files)
  full = build(root / "manual", root / "data", "full")
  small = build(root / "manual", root / "data", "224")
  return {"files": files, "full": full, "small": small, "data_dir": root / "data",
          "examples": read_examples(full), "small_examples": read_examples(small)}


def _source(quirks, file_name: str) -> bytes:
  return quirks["files"]["kfood/" + file_name]


def test_clean_jpegs_stored_byte_for_byte_in_full(quirks):
  clean = [name.removeprefix("kfood/") for name in CLEAN] + ["구이/갈비구이/Img_000_0018.jpg"]
  for name in clean:
    assert quirks["examples"][name]["image"] == _source(quirks, name), name


def test_every_stored_image_decodes_as_rgb_jpeg(quirks):
  assert len(quirks["examples"]) == len(quirks["small_examples"]) == 19
  for name, example in quirks["examples"].items():
    assert decode(example["image"]).ndim == 3, name
  for name, example in quirks["small_examples"].items():
    assert decode(example["image"]).shape == (224, 224, 3), name


@pytest.mark.parametrize("kind", sorted(ODD_FILES))
def test_odd_image_kinds_stored_as_upright_rgb_jpeg(quirks, kind):
  name, width, height = ODD_FILES[kind]
  example = quirks["examples"][name.removeprefix("kfood/")]
  assert example["image"][:3] == b"\xff\xd8\xff"  # re-encoded as JPEG
  assert example["image"] != quirks["files"][name]
  pixels = decode(example["image"]).astype(int)
  assert pixels.shape == (height, width, 3)
  if kind in ("png_as_jpg", "cmyk"):  # the colours survive the conversion
    original = np.asarray(kdata.photo(7 + (kind == "cmyk"), (width, height)), int)
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
  example = quirks["examples"]["구이/갈비구이/Img_000_0006.jpg"]
  pixels = decode(example["image"]).astype(int)
  assert pixels.shape == (120, 80, 3)  # stored 120 wide, 80 high
  assert example["has_bbox"]
  np.testing.assert_allclose(example["bbox"], EXPECTED_BOXES["구이/갈비구이/Img_000_0006.jpg"], atol=1e-6)
  ymin, xmin, ymax, xmax = example["bbox"]
  inside = pixels[round(ymin * 120) + 3:round(ymax * 120) - 3, round(xmin * 80) + 3:round(xmax * 80) - 3]
  assert inside[..., 0].min() > 200 and inside[..., 2].max() < 60  # red block
  assert pixels[70:, :, 2].min() > 200 and pixels[70:, :, 0].max() < 60  # blue below it
  # The 224 config crops to the box first: all red.
  small = decode(quirks["small_examples"]["구이/갈비구이/Img_000_0006.jpg"]["image"]).astype(int)
  assert small[..., 0].mean() > 230 and small[..., 2].mean() < 25


def test_crop_lines_give_bbox_and_has_bbox(quirks):
  for name, example in quirks["examples"].items():
    if name in EXPECTED_BOXES:
      assert example["has_bbox"], name
      np.testing.assert_allclose(example["bbox"], EXPECTED_BOXES[name], atol=1e-6, err_msg=name)
    else:
      assert not example["has_bbox"], name
      np.testing.assert_array_equal(example["bbox"], [0.0, 0.0, 1.0, 1.0], err_msg=name)
  counts = metadata(quirks["full"])["counts"]
  assert counts["bad crop lines"] == BAD_CROP_LINES
  assert counts["images with a crop box"] == len(EXPECTED_BOXES)


def test_broken_files_skipped_with_reasons_build_continues(quirks):
  skipped = {s["file_name"]: s["reason"] for s in metadata(quirks["full"])["skipped_files"]}
  for name, reason in BROKEN_FILES.items():
    assert reason in skipped[name.removeprefix("kfood/")]
    assert name.removeprefix("kfood/") not in quirks["examples"]
  assert len(skipped) == len(BROKEN_FILES) + 1  # and the unknown class folder
  # The report is saved with the dataset: a reloaded builder has it too.
  reloaded = tfds.builder("korean_food/full", data_dir=os.fspath(quirks["data_dir"]))
  assert metadata(reloaded)["skipped_files"] == metadata(quirks["full"])["skipped_files"]


def test_junk_files_ignored(quirks):
  meta = metadata(quirks["full"])
  assert meta["ignored_files"] == len(JUNK_FILES)
  reported = list(quirks["examples"]) + [s["file_name"] for s in meta["skipped_files"]]
  assert not [n for n in reported if "__MACOSX" in n or n.endswith((".DS_Store", ".db", ".csv"))]


def test_prefix_mismatch_keeps_folder_label_and_warns(quirks):
  example = quirks["examples"]["찌개/김치찌개/Img_121_0002.jpg"]
  assert example["label"] == 119
  assert super_category(quirks["full"], example) == "찌개"
  (warning,) = metadata(quirks["full"])["warnings"]
  assert "찌개/김치찌개/Img_121_0002.jpg" in warning and "class 121" in warning


def test_byte_identical_photos_in_two_classes_share_split_and_are_listed(quirks):
  first, second = quirks["examples"]["구이/갈비구이/Img_000_0000.jpg"], quirks["examples"]["찌개/김치찌개/Img_119_0000.jpg"]
  assert (first["label"], second["label"]) == (0, 119)
  assert first["split"] == second["split"]
  assert metadata(quirks["full"])["duplicates"] == [["구이/갈비구이/Img_000_0000.jpg", "찌개/김치찌개/Img_119_0000.jpg"]]


def test_class_folder_not_in_the_150_classes_is_skipped(quirks):
  skipped = {s["file_name"]: s["reason"] for s in metadata(quirks["full"])["skipped_files"]}
  assert "not one of the 150 classes" in skipped[UNKNOWN_CLASS]  # named as found, from the manual dir
  assert not [n for n in quirks["examples"] if "부대찌개" in n]


def test_labels_and_super_categories_follow_classes_tsv(quirks):
  for name, example in quirks["examples"].items():
    group, food, _ = name.split("/")
    assert example["label"] == classes.class_by_name()[food].index
    assert super_category(quirks["full"], example) == group


# ---------------------------------------------------------------------------
# Names and nesting: the same photos held in every form give the same examples.

def _small_corpus() -> dict[str, dict[str, bytes]]:
  """group -> {member name -> bytes}: four classes, three groups."""
  photos = {"구이/갈비구이": 3, "구이/갈치구이": 2, "찌개/김치찌개": 3, "밥/비빔밥": 2}
  groups = {}
  for seed, (folder, n) in enumerate(photos.items()):
    group, food = folder.split("/")
    index = classes.class_by_name()[food].index
    for i in range(n):
      groups.setdefault(group, {})[f"{folder}/Img_{index:03d}_{i:04d}.jpg"] = kdata.jpeg(500 + 10 * seed + i, (64, 48))
  groups["구이"]["구이/갈비구이/crop_area.properties"] = kdata.properties(["[sections]", "Img_000_0001=8,6,32,24"])
  return groups


def _summary(builder) -> dict[str, tuple]:
  return {name: (int(e["label"]), super_category(builder, e), e["split"], tuple(e["bbox"]), e["image"])
          for name, e in read_examples(builder).items()}


@pytest.fixture(scope="module")
def nesting(tmp_path_factory):
  root = tmp_path_factory.mktemp("nesting")
  dirs = kdata.write_layouts(root, _small_corpus())
  return {form: (path, _summary(build(path, root / f"data_{form}"))) for form, path in dirs.items()}


def test_nesting_forms_give_the_same_examples(nesting):
  _, expected = nesting["tree"]
  assert len(expected) == 10
  assert {name: v[0] for name, v in expected.items()} == {
      **{f"구이/갈비구이/Img_000_{i:04d}.jpg": 0 for i in range(3)},
      **{f"구이/갈치구이/Img_001_{i:04d}.jpg": 1 for i in range(2)},
      **{f"찌개/김치찌개/Img_119_{i:04d}.jpg": 119 for i in range(3)},
      **{f"밥/비빔밥/Img_072_{i:04d}.jpg": 72 for i in range(2)},
  }
  assert expected["구이/갈비구이/Img_000_0001.jpg"][3] == pytest.approx((0.125, 0.125, 0.625, 0.625))
  for form, (_, summary) in nesting.items():
    assert summary == expected, form


def test_name_encodings_resolve_to_the_same_nfc_class(tmp_path):
  """UTF-8 flagged (with NFD folders), UTF-8 unflagged, CP949 unflagged zips and
  an NFD tree on disk, side by side in one manual dir."""
  groups = _small_corpus()
  manual = tmp_path / "manual"
  gui_members = {kdata.nfd(n) if "갈치구이" in n else n: d for n, d in groups["구이"].items()}
  kdata.write_tree(manual, {
      "구이.zip": kdata.zip_bytes(gui_members, "utf-8-flag"),
      "찌개.zip": kdata.zip_bytes(groups["찌개"], "utf-8"),
      "밥.zip": kdata.zip_bytes(groups["밥"], "cp949"),
      **{kdata.nfd(f"kfood/국/미역국/Img_017_{i:04d}.jpg"): kdata.jpeg(600 + i, (64, 48)) for i in range(2)},
  })
  examples = read_examples(build(manual, tmp_path / "data"))
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
  kdata.write_tree(manual, {"kfood/밥/비빔밥/Img_072_0099.jpg": kdata.jpeg(777, (64, 48))})
  after = _summary(build(manual, tmp_path / "data"))
  assert set(after) == set(before) | {"밥/비빔밥/Img_072_0099.jpg"}
  assert {n: after[n][2] for n in before} == {n: v[2] for n, v in before.items()}


def test_unreadable_zips_reported_build_continues(nesting, tmp_path):
  """A macOS AppleDouble `._구이.zip` inside kfood.zip is junk; a truncated
  group zip beside it is reported as skipped."""
  _, expected = nesting["kfood_zip"]
  manual = tmp_path / "manual"
  inner = kdata.layouts(_small_corpus())["group_zips"]
  inner["__MACOSX/._구이.zip"] = kdata.JUNK["apple_double"]
  truncated = kdata.zip_bytes({"국/미역국/Img_017_0000.jpg": kdata.jpeg(1, (64, 48))})[:-30]
  kdata.write_tree(manual, {"kfood.zip": kdata.zip_bytes(inner, "utf-8", dirs=False), "국.zip": truncated})
  builder = build(manual, tmp_path / "data")
  assert _summary(builder) == expected
  meta = metadata(builder)
  assert [s["file_name"] for s in meta["skipped_files"]] == ["국.zip"]
  assert "not a readable zip" in meta["skipped_files"][0]["reason"]
  assert meta["ignored_files"] == 1


# ---------------------------------------------------------------------------
# Manual dirs with nothing to build.


def test_empty_manual_dir_gives_clear_error(tmp_path):
  (tmp_path / "manual").mkdir()
  with pytest.raises(AssertionError, match="does not exist or is empty") as error:
    build(tmp_path / "manual", tmp_path / "data")
  assert "aihubshell" in str(error.value)  # the download instructions


def test_manual_dir_with_only_empty_folders_gives_clear_error(tmp_path):
  (tmp_path / "manual" / "kfood" / "구이").mkdir(parents=True)
  with pytest.raises(ValueError, match="No usable image.*found 0 non-image files and 0 unusable") as error:
    build(tmp_path / "manual", tmp_path / "data")
  assert "aihubshell" in str(error.value)


def test_manual_dir_with_nothing_usable_gives_clear_error(tmp_path):
  kdata.write_tree(tmp_path / "manual", {
      "kfood/구이/갈비구이/.DS_Store": kdata.JUNK[".DS_Store"],
      "kfood/구이/갈비구이/Img_000_0000.jpg": b"",
      "kfood/readme.txt": b"nothing here",
      "kfood.zip": b"PK\x03\x04 an interrupted download",
  })
  with pytest.raises(ValueError, match=r"(?i)no (usable|valid) image") as error:
    build(tmp_path / "manual", tmp_path / "data")
  message = str(error.value)  # names what it found unusable, then says what is expected
  assert "Img_000_0000.jpg" in message and "empty file" in message
  assert "not a readable zip" in message and "aihubshell" in message


# ---------------------------------------------------------------------------
# The bundled sample, korean_food/sample/kfood.zip.

SAMPLE_SKIPPED = {
    "찌개/김치찌개/Img_119_0005.jpg": "truncated",
    "찌개/김치찌개/Img_119_0006.jpg": "empty file",
    "찌개/김치찌개/Img_119_0007.jpg": "not an image format",
    "찌개/부대찌개/Img_124_0000.jpg": "not one of the 150 classes",
}


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
  data_dir = tmp_path_factory.mktemp("sample")
  return {"data_dir": data_dir, **{config: build(SAMPLE_DIR, data_dir, config) for config in ("224", "full")}}


def test_sample_and_dummy_data_hold_no_real_photo():
  """The AIHub terms forbid redistribution: no byte-identical copy may ship."""
  assert (SAMPLE_DIR / "kfood.zip").stat().st_size < 2_000_000
  shipped = [read() for root in (SAMPLE_DIR, REPO / "korean_food" / "dummy_data")
             for _, read in corpus.walk(root)]
  assert len(shipped) > 50
  if not REAL_KFOOD.is_dir():
    pytest.skip(f"no real AIHub photos at {REAL_KFOOD} to compare with")
  real = {p.read_bytes() for p in REAL_KFOOD.parent.glob("kfood*/**/*") if p.is_file() and p.suffix != ".properties"}
  assert len(real) > 50
  assert not [data for data in shipped if data in real]


@pytest.mark.parametrize("config", ["224", "full"])
def test_sample_builds_with_expected_report(sample, config):
  builder = sample[config]
  assert {s: builder.info.splits[s].num_examples for s in ("train", "validation", "test")} == {
      "train": 33, "validation": 3, "test": 4}
  meta = metadata(builder)
  skipped = {s["file_name"]: s["reason"] for s in meta["skipped_files"]}
  assert set(skipped) == set(SAMPLE_SKIPPED)
  for name, reason in SAMPLE_SKIPPED.items():
    assert reason in skipped[name]
  # Bad crop lines: `=,986,590`, `dissimilar`, two numbers, zero area. Converted:
  # CMYK, EXIF-rotated, GIF, RGBA PNG, PNG as .jpg, grayscale.
  assert meta["counts"] == {"bad crop lines": 4, "images converted to JPEG": 6, "images with a crop box": 9}
  assert meta["ignored_files"] == 5  # __MACOSX x2, .DS_Store, Thumbs.db, org_url.csv
  assert meta["duplicates"] == [["구이/갈비구이/Img_000_0002.jpg", "찌개/김치찌개/Img_119_0013.jpg"]]
  assert len(meta["warnings"]) == 1 and "Img_121_0011.jpg" in meta["warnings"][0]


def test_sample_examples_have_nfc_names_and_right_labels(sample):
  examples = read_examples(sample["full"])
  by_class = {}
  for name, example in examples.items():
    by_class.setdefault(name.rsplit("/", 1)[0], set()).add(int(example["label"]))
    assert decode(example["image"]).ndim == 3
  assert by_class == {"구이/갈비구이": {0}, "구이/갈치구이": {1}, "찌개/김치찌개": {119}, "밥/비빔밥": {72}}
  rotated = examples["구이/갈비구이/Img_000_0010.jpg"]
  assert decode(rotated["image"]).shape == (160, 96, 3)  # stored 160x96, EXIF orientation 6
  assert rotated["has_bbox"]


def test_sample_224_batches_to_uint8_via_tfds_load(sample):
  ds = tfds.load("korean_food/224", split="train", data_dir=os.fspath(sample["data_dir"]), batch_size=8,
                 as_supervised=True, download=False)
  images, labels = next(iter(ds))
  assert images.dtype == tf.uint8 and tuple(images.shape) == (8, 224, 224, 3)
  assert labels.dtype == tf.int64 and tuple(labels.shape) == (8,)
  assert set(labels.numpy()) <= {0, 1, 72, 119}


# ---------------------------------------------------------------------------
# Real AIHub photos from ../shared (never copied into the project).

REAL_LABELS = {"갈비구이": 0, "갈치구이": 1, "김치찌개": 119, "동태찌개": 121, "순두부찌개": 123}
REAL_GROUPS = {"갈비구이": "구이", "갈치구이": "구이", "김치찌개": "찌개", "동태찌개": "찌개", "순두부찌개": "찌개"}


def _real_photos() -> dict[str, pathlib.Path]:
  return {f"{p.parent.parent.name}/{p.parent.name}/{p.name}": p
          for p in sorted(REAL_KFOOD.glob("*/*/*")) if p.name != "crop_area.properties"}


def _real_boxes() -> dict[str, tuple[float, ...]]:
  """The real crop_area.properties values as relative boxes, by file_name."""
  photos = _real_photos()
  boxes = {}
  for props in REAL_KFOOD.glob("*/*/crop_area.properties"):
    folder = f"{props.parent.parent.name}/{props.parent.name}"
    lines = props.read_text().splitlines()
    for line in lines:
      key, _, value = line.partition("=")
      matches = [n for n in photos if n.startswith(folder + "/") and n.rsplit("/", 1)[1].rsplit(".", 1)[0].lower() == key.lower()]
      if not matches:
        continue
      (name,) = matches
      x, y, w, h = map(int, value.split(","))
      with Image.open(photos[name]) as image:
        width, height = image.size
      boxes[name] = (y / height, x / width, min(y + h, height) / height, min(x + w, width) / width)
  return boxes


@pytest.fixture(scope="module")
def real(tmp_path_factory):
  if not REAL_KFOOD.is_dir():
    pytest.skip(f"no real AIHub photos at {REAL_KFOOD}")
  root = tmp_path_factory.mktemp("real")
  groups = {}
  for name, path in _real_photos().items():
    groups.setdefault(name.split("/")[0], {})[name] = path.read_bytes()
  for props in REAL_KFOOD.glob("*/*/crop_area.properties"):
    groups[props.parent.parent.name][f"{props.parent.parent.name}/{props.parent.name}/{props.name}"] = props.read_bytes()
  inner = {f"{g}.zip": kdata.zip_bytes(m) for g, m in groups.items()}
  kdata.write_tree(root / "zip_manual", {"kfood.zip": kdata.zip_bytes(inner, "utf-8", dirs=False)})
  full = build(REAL_KFOOD, root / "data", "full")
  return {
      "full": full,
      "examples": read_examples(full),
      "small_examples": read_examples(build(REAL_KFOOD, root / "data", "224")),
      "zip_examples": read_examples(build(root / "zip_manual", root / "zip_data", "full")),
  }


def test_real_photos_labels_and_super_categories(real):
  photos = _real_photos()
  assert set(real["examples"]) == set(photos)
  assert metadata(real["full"])["skipped_files"] == []
  for name, example in real["examples"].items():
    _, food, _ = name.split("/")
    assert example["label"] == REAL_LABELS[food], name
    assert super_category(real["full"], example) == REAL_GROUPS[food], name


def test_real_crop_boxes_match_the_properties_files(real):
  boxes = _real_boxes()
  assert len(boxes) == 5  # 갈비구이 0001, 0002, 0004; 갈치구이 0002, 0006.JPG
  assert "구이/갈치구이/Img_001_0006.JPG" in boxes
  for name, example in real["examples"].items():
    assert bool(example["has_bbox"]) == (name in boxes), name
    np.testing.assert_allclose(example["bbox"], boxes.get(name, (0, 0, 1, 1)), atol=1e-6, err_msg=name)


def test_real_png_named_jpg_converted_and_decodable(real):
  source = (REAL_KFOOD / "찌개" / "김치찌개" / "Img_119_0001.jpg").read_bytes()
  assert source.startswith(b"\x89PNG")
  stored = real["examples"]["찌개/김치찌개/Img_119_0001.jpg"]["image"]
  assert stored[:3] == b"\xff\xd8\xff"
  assert decode(stored).shape == (369, 499, 3)
  assert decode(real["small_examples"]["찌개/김치찌개/Img_119_0001.jpg"]["image"]).shape == (224, 224, 3)


def test_real_uppercase_jpg_files_kept(real):
  upper = [n for n in _real_photos() if n.endswith(".JPG")]
  assert len(upper) == 6
  assert all(n in real["examples"] for n in upper)


def test_real_clean_jpegs_stored_byte_for_byte(real):
  photos = _real_photos()
  clean = [n for n in photos if n != "찌개/김치찌개/Img_119_0001.jpg"]
  assert len(clean) == 46
  for name in clean:
    assert real["examples"][name]["image"] == photos[name].read_bytes(), name
  for name, example in real["small_examples"].items():
    assert decode(example["image"]).shape == (224, 224, 3), name


def test_real_photos_from_kfood_zip_give_the_same_examples(real):
  def summary(examples):
    return {n: (int(e["label"]), e["split"], tuple(e["bbox"]), e["image"]) for n, e in examples.items()}
  assert summary(real["zip_examples"]) == summary(real["examples"])

"""The quality flags (photo_datasets/photos/quality.py): each flag on made images, what
the flags mark on the real photos, and the scores' way from the scan through
the saved scan to the build's report."""

from __future__ import annotations

import collections
import hashlib
import io
import json
import pathlib
import shutil

import numpy as np
import pytest
from PIL import Image, ImageFilter

import flowers_dataset  # noqa: F401  (registers the builder)
from photo_datasets.building import executors, scan, scan_cache
from photo_datasets.catalog import build_stats
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import images, quality, records, splits
from photo_datasets.testing import build

REPO = pathlib.Path(__file__).resolve().parent.parent
# The 100 real tf_flowers photos (CC-BY).
FLOWERS = REPO / "flowers_dataset" / "sample" / "flower_photos"
DAISY = FLOWERS / "daisy" / "100080576_f52e8ee070_n.jpg"


def _jpeg(image: Image.Image, quality_: int = 90) -> bytes:
  out = io.BytesIO()
  image.save(out, "JPEG", quality=quality_)
  return out.getvalue()


def _scan_pixels(data: bytes) -> Image.Image:
  """The pixels the scan decodes and scores."""
  return images.decode_and_inspect(data)[1]


def _scores(pixels: np.ndarray | Image.Image) -> dict[str, float]:
  return quality.measure(pixels)[0]


def _moments(pixels: np.ndarray | Image.Image) -> tuple[float, ...]:
  return quality.measure(pixels)[1]


def _pixel_flags(data: bytes) -> list[str]:
  """The flags the pixels alone raise (a normal size and shape)."""
  return [flag for flag, _ in quality.flags_of(_scores(_scan_pixels(data)), 400, 300, 0.0)]


def _flat(colour: tuple[int, int, int], size: tuple[int, int] = (300, 200)) -> bytes:
  return _jpeg(Image.new("RGB", size, colour))


def _daisy() -> Image.Image:
  return _scan_pixels(DAISY.read_bytes())


# Each flag on made images.


def test_a_black_photo_is_dark_and_a_white_one_light():
  assert "dark" in _pixel_flags(_flat((0, 0, 0)))
  assert "light" not in _pixel_flags(_flat((0, 0, 0)))
  assert "light" in _pixel_flags(_flat((255, 255, 255)))
  assert "dark" not in _pixel_flags(_flat((255, 255, 255)))
  assert _scores(_scan_pixels(_flat((0, 0, 0))))["dark"] == 0.0


def test_a_flat_grey_photo_is_low_information_but_not_blurry_dark_or_light():
  flags = _pixel_flags(_flat((128, 128, 128)))
  assert "low_information" in flags
  assert not {"blurry", "dark", "light"} & set(flags)  # Nothing to be sharp about: not "blurry".


def test_a_real_photo_raises_no_pixel_flag():
  assert _pixel_flags(DAISY.read_bytes()) == []


def test_a_blurred_copy_of_a_real_flower_scores_blurrier_than_its_original():
  original = _daisy()
  scores = [_scores(original)["blurry"]]
  for radius in (1, 2, 4):
    scores.append(
        _scores(_scan_pixels(_jpeg(original.filter(ImageFilter.GaussianBlur(radius)))))["blurry"])
  assert scores == sorted(scores, reverse=True) and len(set(scores)) == 4  # Blurrier at every step.
  # The original passes, the strong blur is flagged.
  assert scores[0] >= quality.THRESHOLDS["blurry"] > scores[-1]


def test_blur_is_measured_relative_to_contrast():
  """A sharp photo with a fifth of the contrast is no blurrier."""
  original = np.asarray(_daisy(), dtype=np.float32)
  faint = (original - original.mean()) / 5 + 128
  assert _scores(faint.round().astype(np.uint8))["blurry"] == pytest.approx(
      _scores(original.astype(np.uint8))["blurry"], abs=0.03)


def test_a_five_to_one_strip_has_an_odd_aspect_ratio():
  assert quality.flags_of({}, 500, 100, 300.0) == [("odd_aspect_ratio", 0.2)]
  assert quality.flags_of({}, 100, 500, 300.0) == [("odd_aspect_ratio", 0.2)]  # Standing, too.
  assert quality.flags_of({}, 400, 300, 300.0) == []  # 4:3.
  # AIHub's widest, 3:1.
  assert quality.flags_of({}, 1198, 400, 690.0) == [("odd_aspect_ratio", 0.3339)]


def test_a_greyscale_converted_colour_photo_is_grayscale():
  colour = _daisy()
  grey = _jpeg(colour.convert("L").convert("RGB"), 75)
  assert "grayscale" in _pixel_flags(grey)
  assert "grayscale" in _pixel_flags(_jpeg(colour.convert("L"), 75))  # Stored greyscale (mode L).
  assert "grayscale" not in _pixel_flags(_jpeg(colour))


def test_a_grey_photo_with_a_colour_mark_is_grayscale_a_colour_subject_on_black_is_not():
  grey = _daisy().convert("L").convert("RGB")
  grey.paste((255, 0, 0), (0, 0, 10, 10))  # Under 1 % of the pixels.
  assert "grayscale" in _pixel_flags(_jpeg(grey))
  on_black = Image.new("RGB", (320, 240))
  on_black.paste(_daisy().resize((120, 90)), (100, 75))  # A colour photo on 86 % black.
  assert "grayscale" not in _pixel_flags(_jpeg(on_black))


def test_a_tiny_image_among_normal_ones_is_odd_size():
  sizes = [(320, 240)] * 10 + [(300, 200), (500, 375), (24, 18)]
  median = quality.median_size(sizes)
  assert median == pytest.approx(277.1, abs=0.1)
  assert quality.flags_of({}, 24, 18, median) == [("odd_size", 0.0750)]
  assert quality.flags_of({}, 500, 375, median) == []  # Larger, by far less than 10 times.
  # 12.5 times larger is odd too.
  assert quality.flags_of({}, 4000, 3000, median) == [("odd_size", 0.08)]
  assert quality.flags_of({}, 24, 18, 0.0) == []  # No corpus to compare with.


def test_scores_are_the_same_from_an_array_or_the_image():
  pixels = _daisy()
  assert quality.measure(np.asarray(pixels)) == quality.measure(pixels)
  assert set(_scores(pixels)) == set(quality.PIXEL_FLAGS)
  assert all(0.0 <= value <= 1.0 for value in _scores(pixels).values())


@pytest.mark.parametrize("size", [(1, 1), (1, 500), (500, 2), (3, 3)])
def test_slivers_and_single_pixels_are_scored_too(size):
  pixels = np.full((size[1], size[0], 3), 90, np.uint8)
  assert _scores(pixels)["blurry"] == 1.0  # Nothing to measure sharpness on.
  assert _scores(pixels)["dark"] == pytest.approx(90 / 255, abs=1 / 255)


def test_moments_of_a_uniform_image_are_its_colour_and_its_square():
  assert _moments(np.full((50, 70, 3), (10, 20, 30), np.uint8)) == (10, 20, 30, 100, 400, 900)


def _photo(name: str, split: str, size: tuple[int, int] = (320, 240),
           **fields: object) -> records.Photo:
  """A scanned photo of `split` (a digest chosen to fall in it)."""
  digest = next(d for i in range(1000)
                if splits.split_of(d := hashlib.sha256(str(i).encode()).hexdigest()) == split)
  check = images.ImageCheck("JPEG", "RGB", *size, 1, b"")
  return records.Photo(name, (name,), digest, check, **fields)


def test_channel_stats_are_those_of_the_train_photos_each_weighing_the_same():
  black = _moments(np.zeros((10, 10, 3), np.uint8))
  grey = _moments(np.full((40, 40, 3), 100, np.uint8))  # More pixels, same weight.
  white = _moments(np.full((10, 10, 3), 255, np.uint8))
  photos = [_photo("a/x/1.jpg", "train", moments=black), _photo("a/x/2.jpg", "train", moments=grey),
            _photo("a/x/3.jpg", "test", moments=white)]
  assert build_stats.channel_stats(photos) == ([50.0] * 3, [50.0] * 3)
  assert build_stats.channel_stats(photos, "test") == ([255.0] * 3, [0.0] * 3)
  assert build_stats.channel_stats(photos, "validation") == ([], [])


def test_flag_rows_name_file_split_label_and_list_the_worst_first_in_flag_order():
  dim = dict.fromkeys(quality.PIXEL_FLAGS, 1.0)
  photos = [_photo("g/daisy/a.jpg", "train", quality={**dim, "dark": 0.2}),
            _photo("g/roses/b.jpg", "test", quality={**dim, "dark": 0.1}, size=(900, 100)),
            _photo("g/roses/c.jpg", "train", quality=dim)]
  assert build_stats.flag_rows(photos) == [
      {"file_name": "g/roses/b.jpg", "split": "test", "label": "roses", "flag": "dark",
       "score": 0.1},
      {"file_name": "g/daisy/a.jpg", "split": "train", "label": "daisy", "flag": "dark",
       "score": 0.2},
      {"file_name": "g/roses/b.jpg", "split": "test", "label": "roses", "flag": "odd_aspect_ratio",
       "score": 0.1111},
  ]


def test_the_flags_are_listed_in_display_order_with_a_threshold_and_a_description_each():
  assert quality.FLAGS == ("dark", "light", "low_information", "blurry", "odd_aspect_ratio",
                           "odd_size", "grayscale")
  assert set(quality.THRESHOLDS) == set(quality.DESCRIPTIONS) == set(quality.FLAGS)
  assert set(quality.PIXEL_FLAGS) < set(quality.FLAGS)


# The real photos.


def _counts(folder: pathlib.Path) -> tuple[dict[str, list[str]], list[tuple[str, Image.Image]]]:
  """flag -> the photos under `folder` it marks (names relative to it), and the scan pixels."""
  found, pixels = [], []
  for path in sorted(folder.rglob("*")):
    if path.suffix.lower() in (".jpg", ".jpeg", ".png"):
      check, decoded = images.decode_and_inspect(path.read_bytes())
      found.append((path.relative_to(folder).as_posix(), check, _scores(decoded)))
      pixels.append((path.relative_to(folder).as_posix(), decoded))
  median = quality.median_size((check.width, check.height) for _, check, _ in found)
  marked = collections.defaultdict(list)
  for name, check, scores in found:
    for flag, _ in quality.flags_of(scores, check.width, check.height, median):
      marked[flag].append(name)
  return dict(marked), pixels


def test_of_the_100_real_flowers_only_a_grey_daisy_and_a_sunflower_on_black_are_flagged():
  marked, pixels = _counts(FLOWERS)
  assert len(pixels) == 100
  # A black-and-white photo stored RGB, and a photo that is most of it black.
  assert marked == {"grayscale": ["daisy/4820415253_15bc3b6833_n.jpg"],
                    "low_information": ["sunflowers/9461693602_710f20904f.jpg"]}


def test_blurring_the_real_flowers_flags_them_in_proportion_to_the_blur():
  _, pixels = _counts(FLOWERS)
  flagged = {}
  for radius in (1, 2, 4):  # Pixels of blur on a 224-px short side, the training size.
    flagged[radius] = sum(
        _scores(image.filter(ImageFilter.GaussianBlur(radius * min(image.size) / 224)))["blurry"]
        < quality.THRESHOLDS["blurry"] for _, image in pixels)
  assert flagged[1] <= 10 and 30 <= flagged[2] <= 70 and flagged[4] >= 90, flagged


@pytest.mark.real_photos
def test_on_the_47_real_aihub_photos_only_the_two_wide_strips_are_flagged(real_kfood):
  marked, pixels = _counts(real_kfood)
  assert len(pixels) == 47
  assert marked == {"odd_aspect_ratio": ["찌개/동태찌개/Img_121_0004.jpg",
                                         "찌개/동태찌개/Img_121_0006.jpg"]}


# From the scan to the build's report.


def _candidates(files: dict[str, bytes]) -> list[records.Candidate]:
  return [records.Candidate(name, (name,), data) for name, data in sorted(files.items())]


def test_the_scan_keeps_each_photos_scores_and_moments_and_the_saved_scan_round_trips_them(
    tmp_path):
  files = {f"flowers/{p.parent.name}/{p.name}": p.read_bytes()
           for p in sorted(FLOWERS.glob("*/*.jpg"))[:6]}
  files["flowers/daisy/zz_black.jpg"] = _flat((0, 0, 0))
  report = BuildReport()
  photos = scan.scan(_candidates(files), report, executor=executors.LocalExecutor(1))
  by_name = {p.file_name: p for p in photos}
  black = by_name["flowers/daisy/zz_black.jpg"]
  assert black.quality["dark"] == 0.0 and black.moments == (0, 0, 0, 0, 0, 0)
  daisy = by_name[f"flowers/daisy/{DAISY.name}"]
  assert daisy.quality == _scores(_daisy())
  assert daisy.moments == _moments(_daisy())

  path = tmp_path / "scan.json"
  scan_cache.save_scan(path, photos, report)
  loaded = scan_cache.load_scan(path)
  assert loaded is not None and loaded[0] == photos  # Scores and moments included.
  saved = json.loads(path.read_text())
  saved["photos"] = [row[:-2] for row in saved["photos"]]  # Rows without scores: scanned again.
  path.write_text(json.dumps(saved))
  assert scan_cache.load_scan(path) is None


def test_a_build_lists_a_black_photo_among_its_quality_flags_as_dark_also_from_a_reused_scan(
    tmp_path, monkeypatch):
  root = tmp_path / "manual" / "flower_photos"
  for path in sorted(FLOWERS.glob("*/*.jpg"))[::10]:  # 10 real photos, two per class.
    (root / path.parent.name).mkdir(parents=True, exist_ok=True)
    shutil.copy(path, root / path.parent.name / path.name)
  shutil.copy(FLOWERS / "LICENSE.txt", root / "LICENSE.txt")
  (root / "roses" / "zz_black.jpg").write_bytes(_flat((0, 0, 0)))
  black_split = splits.split_of(
      splits.content_digest((root / "roses" / "zz_black.jpg").read_bytes()))

  first = build("flowers_dataset/full", tmp_path / "data", tmp_path / "manual")
  rows = BuildReport.from_metadata(dict(first.info.metadata)).quality_flags
  dark = [row for row in rows if row["flag"] == "dark"]
  assert dark == [{"file_name": "roses/zz_black.jpg", "split": black_split, "label": "roses",
                   "flag": "dark", "score": 0.0}]
  assert {row["file_name"] for row in rows} <= {"roses/zz_black.jpg"} | {
      f"{p.parent.name}/{p.name}" for p in sorted(FLOWERS.glob("*/*.jpg"))[::10]}

  def no_second_scan(pixels: object) -> None:
    raise AssertionError("the photos were scored again")

  monkeypatch.setattr(quality, "measure", no_second_scan)
  # Built from the saved scan.
  second = build("flowers_dataset/64", tmp_path / "data", tmp_path / "manual", workers=1)
  assert BuildReport.from_metadata(dict(second.info.metadata)).quality_flags == rows

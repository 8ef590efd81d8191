"""The flowers_dataset builder, offline.

Three kinds:
* TFDS's own harness on the tiny generated dummy data (both configs);
* builds of a realistic `flower_photos/` folder: the 100 real photos bundled in
  `flowers_dataset/sample/` mixed with broken and odd files. Two builds (`full`
  and `224`) are shared by most tests through module-scoped fixtures;
* the download paths (archive in the manual dir, mocked download, offline).

The network guard of conftest.py fails any download or connection; tests that
mock the download also say the host is reachable (`host_reachable`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import pathlib
import shutil
import socket
import tarfile
import time
from unittest import mock

import keras
import numpy as np
import pytest
import requests
import tensorflow as tf
import tensorflow_datasets as tfds
from etils import epath
from PIL import Image

import flowers_dataset
from flowers_dataset import flowers_dataset_dataset_builder as flowers_builder
from photo_datasets import testing
from photo_datasets.testing import build, read_examples

REPO = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = REPO / "flowers_dataset" / "sample" / "flower_photos"  # 100 real photos + LICENSE.txt.
URL = "http://download.tensorflow.org/example_images/flower_photos.tgz"
LABELS = ("dandelion", "daisy", "tulips", "sunflowers", "roses")  # tf_flowers' order.
SPLITS = ("train", "validation", "test")
SAMPLE_NAMES = {f"{p.parent.name}/{p.name}" for p in SAMPLE.glob("*/*.jpg")}


def split_of(data: bytes) -> str:
  """The split rule, restated: first 64 bits of the SHA-256, 80/10/10."""
  position = int(hashlib.sha256(data).hexdigest()[:16], 16) / 16**16
  return "train" if position < 0.8 else "validation" if position < 0.9 else "test"


def host_reachable():
  return mock.patch.object(flowers_builder, "_unreachable", return_value=None)


# TFDS's harness, on flowers_dataset/dummy_data (scripts/make_dummy_data.py).


class FlowersDatasetTest(tfds.testing.DatasetBuilderTestCase):
  DATASET_CLASS = flowers_dataset.Builder
  BUILDER_CONFIG_NAMES_TO_TEST = ["224", "full"]
  # The mocked `download_and_extract` returns dummy_data/download, which holds
  # flower_photos/ as the real archive does.
  DL_EXTRACT_RESULT = "download"
  SPLITS = {"train": 8, "validation": 4, "test": 3}

  def setUp(self):
    super().setUp()
    self.enterContext(host_reachable())


# Files to mix with the real photos.


def rotated_jpeg() -> bytes:
  """Stored 60x40 with a red top-left corner; EXIF 6 shows it turned 90° clockwise."""
  return testing.exif_rotated_jpeg(testing.marked((60, 40), (0, 0, 16, 16), (200, 200, 200)), 6,
                                   quality=95)


def first_frame_red_gif() -> bytes:
  return testing.animated_gif([Image.new("RGB", (40, 30), colour)
                               for colour in (testing.RED, testing.GREEN)])


REAL_PHOTO = (SAMPLE / "daisy" / "100080576_f52e8ee070_n.jpg").read_bytes()

# Unusable files: name -> a word of the reason they are skipped.
BAD = {
    "daisy/zz_truncated.jpg": (REAL_PHOTO[: len(REAL_PHOTO) // 2], "truncated"),
    "dandelion/zz_empty.jpg": (b"", "empty file"),
    "roses/zz_error_page.jpg": (b"<html><body>403 Forbidden</body></html>", "not an image format"),
    "zz_stray.jpg": (REAL_PHOTO, "not in one of the class folders"),
}
# Odd but valid files: name -> (bytes, upright width, height).
ODD = {
    "tulips/zz_png_named.jpg": (testing.encode(testing.halves(), "PNG"), 40, 30),
    "roses/zz_cmyk.jpg": (testing.encode(testing.halves().convert("CMYK"), "JPEG", quality=95),
                          40, 30),
    "sunflowers/zz_gray.jpg": (testing.encode(testing.halves().convert("L"), "JPEG", quality=95),
                               40, 30),
    "daisy/zz_animated.gif": (first_frame_red_gif(), 40, 30),
    "dandelion/zz_rotated.jpg": (rotated_jpeg(), 40, 60),
    "tulips/zz_rgba.png": (testing.half_transparent_png(), 40, 30),
    "sunflowers/zz_deep.png": (testing.deep_png(left=65535, right=32896), 40, 30),
}
JUNK_NAMES = [".DS_Store", "roses/.DS_Store"]


@dataclasses.dataclass
class Corpus:
  manual_dir: pathlib.Path  # Holds flower_photos/.
  real: dict[str, bytes]  # "<class>/<file>" -> bytes, the 100 real photos.


def make_corpus(manual_dir: pathlib.Path, real_names: set[str] | None = None,
                extra: dict[str, bytes] | None = None) -> Corpus:
  """`manual_dir/flower_photos/` with LICENSE.txt, the sample photos (those in
  `real_names`, default all) and `extra` files (relative path -> bytes)."""
  root = manual_dir / "flower_photos"
  root.mkdir(parents=True)
  shutil.copy(SAMPLE / "LICENSE.txt", root / "LICENSE.txt")
  real = {}
  for path in sorted(SAMPLE.glob("*/*.jpg")):
    name = f"{path.parent.name}/{path.name}"
    if real_names is None or name in real_names:
      (root / path.parent.name).mkdir(exist_ok=True)
      real[name] = path.read_bytes()
      (root / name).write_bytes(real[name])
  testing.write_tree(root, extra or {})
  return Corpus(manual_dir, real)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
  extra = {name: data for name, (data, _) in BAD.items()}
  extra.update({name: data for name, (data, *_) in ODD.items()})
  extra.update({name: testing.JUNK[".DS_Store"] for name in JUNK_NAMES})
  return make_corpus(tmp_path_factory.mktemp("manual"), extra=extra)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> pathlib.Path:
  return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def full(corpus, data_dir):
  return build("flowers_dataset/full", data_dir, corpus.manual_dir)


@pytest.fixture(scope="module")
def small(corpus, data_dir):
  return build("flowers_dataset/224", data_dir, corpus.manual_dir)


@pytest.fixture(scope="module")
def full_examples(full):
  return read_examples(full)


@pytest.fixture(scope="module")
def small_examples(small):
  return read_examples(small)


# The realistic folder.


def test_bad_files_are_skipped_with_their_reason_and_the_build_goes_on(full, data_dir):
  skipped = {s["file_name"]: s["reason"] for s in full.info.metadata["skipped_files"]}
  assert sorted(skipped) == sorted(BAD)
  for name, (_, reason) in BAD.items():
    assert reason in skipped[name], (name, skipped[name])
  assert full.info.metadata["ignored_files"] == len(JUNK_NAMES) + 1  # + LICENSE.txt
  assert sum(s.num_examples for s in full.info.splits.values()) == 100 + len(ODD)
  # The report is part of the prepared dataset, not only of the build.
  reloaded = tfds.builder("flowers_dataset", config="full", data_dir=data_dir)
  assert reloaded.info.metadata["skipped_files"] == full.info.metadata["skipped_files"]


def test_every_photo_is_in_exactly_one_split_with_its_label(corpus, full, full_examples):
  assert full.info.features["label"].names == list(LABELS)
  assert sorted(full_examples) == sorted([*corpus.real, *ODD])  # Nothing bad, nothing twice.
  for name, data in corpus.real.items():
    example = full_examples[name]
    assert example["split"] == split_of(data), name
    assert example["label"] == LABELS.index(name.split("/")[0]), name
  for name in ODD:
    assert full_examples[name]["label"] == LABELS.index(name.split("/")[0]), name
  sizes = {split: info.num_examples for split, info in full.info.splits.items()}
  assert sizes == {s: sum(e["split"] == s for e in full_examples.values()) for s in SPLITS}
  assert all(sizes.values())


def test_both_configs_agree_on_splits_and_labels(full_examples, small_examples):
  assert {n: (e["split"], e["label"]) for n, e in small_examples.items()} == {
      n: (e["split"], e["label"]) for n, e in full_examples.items()}


def test_attributions_in_both_line_orders(corpus, full_examples):
  expected = {}
  for line in (SAMPLE / "LICENSE.txt").read_text("utf-8").splitlines():
    name, _, credit = line.strip().partition(" ")
    if not credit.startswith("CC-BY "):  # The header.
      continue
    if credit.startswith("CC-BY by "):
      expected[name] = credit
    else:  # "CC-BY <url> - by <author>"
      url, author = credit.removeprefix("CC-BY ").split(" - by ")
      expected[name] = f"CC-BY by {author} - {url}"
  assert sorted(expected) == sorted(corpus.real)
  assert {n: e["attribution"] for n, e in full_examples.items() if n in corpus.real} == expected
  # Spot checks: a URL-first line, and non-ASCII names.
  assert full_examples["dandelion/12094442595_297494dba4_m.jpg"]["attribution"] == (
      "CC-BY by Joe  Martin - https://www.flickr.com/photos/joekmartin/")
  assert full_examples["dandelion/10043234166_e6dd915111_n.jpg"]["attribution"] == (
      "CC-BY by Vlastimil Koutecký - https://www.flickr.com/photos/vlastimil_koutecky/10043234166/")
  assert "Kaja Kozłowska" in full_examples["tulips/3600510954_a51bfc5440_n.jpg"]["attribution"]
  assert all(full_examples[name]["attribution"] == "" for name in ODD)  # Not in LICENSE.txt.


def test_full_config_stores_real_photos_byte_for_byte(corpus, full_examples):
  for name, data in corpus.real.items():
    assert full_examples[name]["image"] == data, name


def test_odd_formats_are_stored_as_jpeg_that_tf_decodes(full, full_examples, small_examples):
  assert full.info.metadata["counts"]["images converted to JPEG"] == len(ODD)
  for name, (_, width, height) in ODD.items():
    for examples, shape in ((full_examples, (height, width, 3)), (small_examples, (224, 224, 3))):
      data = examples[name]["image"]
      assert data[:3] == b"\xff\xd8\xff", name
      assert tuple(tf.io.decode_jpeg(data, channels=3).shape) == shape, name


def test_odd_formats_keep_their_look(full_examples):
  def pixels(name):
    return tf.io.decode_jpeg(full_examples[name]["image"], channels=3).numpy().astype(int)

  def near(pixel, colour, tolerance=40):
    return np.abs(pixel - np.asarray(colour)).max() <= tolerance

  # EXIF 6: stored 60 wide, 40 high, red top-left -> shown 40 wide, 60 high, red top-right.
  rotated = pixels("dandelion/zz_rotated.jpg")
  assert rotated.shape == (60, 40, 3)
  assert near(rotated[5, 34], (255, 0, 0)) and near(rotated[5, 5], (200, 200, 200))
  assert near(pixels("daisy/zz_animated.gif")[15, 20], (255, 0, 0))  # First frame.
  rgba = pixels("tulips/zz_rgba.png")
  assert near(rgba[15, 5], (255, 255, 255)) and near(rgba[15, 35], (0, 0, 255))
  deep = pixels("sunflowers/zz_deep.png")
  assert near(deep[15, 5], (255, 255, 255), 3) and near(deep[15, 35], (128, 128, 128), 3)
  for name in ("roses/zz_cmyk.jpg", "tulips/zz_png_named.jpg"):
    image = pixels(name)
    assert near(image[15, 5], (255, 0, 0)) and near(image[15, 35], (0, 0, 255)), name
  gray = pixels("sunflowers/zz_gray.jpg")
  assert np.abs(gray[..., 0] - gray[..., 2]).max() <= 3


def test_224_config_gives_uint8_batches(small, data_dir):
  ds = tfds.load("flowers_dataset/224", split="train", data_dir=data_dir, batch_size=8,
                 as_supervised=True, download=False)
  assert ds.element_spec[0].shape.as_list() == [None, 224, 224, 3]
  images, labels = next(iter(ds))
  assert images.dtype == tf.uint8 and tuple(images.shape) == (8, 224, 224, 3)
  assert labels.dtype == tf.int64 and tuple(labels.shape) == (8,)
  assert all(0 <= int(label) < len(LABELS) for label in labels)
  assert int(tf.reduce_max(images)) > 100  # Photos, not blank padding.


def test_keras_fits_one_epoch(small, data_dir):
  ds = tfds.load("flowers_dataset/224", split="train", data_dir=data_dir, batch_size=16,
                 as_supervised=True, download=False)
  keras.utils.set_random_seed(0)
  model = keras.Sequential([
      keras.Input((224, 224, 3)),
      keras.layers.Rescaling(1 / 255),
      keras.layers.Conv2D(4, 8, strides=8, activation="relu"),
      keras.layers.GlobalAveragePooling2D(),
      keras.layers.Dense(len(LABELS)),
  ])
  model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"])
  before = [w.copy() for w in model.get_weights()]
  history = model.fit(ds, epochs=1, shuffle=False, verbose=0)
  # Untrained, 5 classes: about ln 5.
  assert abs(history.history["loss"][0] - math.log(len(LABELS))) < 0.5
  assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights(), strict=True))
  assert model.predict(ds.take(1), verbose=0).shape == (16, len(LABELS))
  # Keras's loss and accuracy on the records, and the same computed here from its predictions.
  logits = model.predict(ds, verbose=0).astype(np.float64)
  labels = np.concatenate([labels.numpy() for _, labels in ds])
  log_probabilities = logits - logits.max(axis=1, keepdims=True)
  log_probabilities -= np.log(np.exp(log_probabilities).sum(axis=1, keepdims=True))
  scores = model.evaluate(ds, return_dict=True, verbose=0)
  assert scores["loss"] == pytest.approx(
      -log_probabilities[np.arange(len(labels)), labels].mean(), rel=1e-4)
  assert scores["accuracy"] == pytest.approx((logits.argmax(axis=1) == labels).mean())


def test_custom_size_config(corpus, data_dir, full_examples):
  builder = build("flowers_dataset/96", data_dir, corpus.manual_dir)
  assert builder.builder_config.image_size == 96
  assert builder.info.features["image"].shape == (96, 96, 3)
  ds = builder.as_dataset(split="validation")
  names = []
  for ex in tfds.as_numpy(ds):
    assert ex["image"].shape == (96, 96, 3) and ex["image"].dtype == np.uint8
    names.append(ex["file_name"].decode())
  assert sorted(names) == sorted(n for n, e in full_examples.items() if e["split"] == "validation")
  with pytest.raises(ValueError, match="between 16 and 4096"):
    tfds.builder("flowers_dataset", config="8", data_dir=data_dir)


def test_splits_do_not_move_when_photos_come_and_go(full_examples, tmp_path):
  kept = set(sorted(SAMPLE_NAMES)[::2])  # Half the photos...
  new = testing.encode(testing.halves(size=(64, 48)), "JPEG", quality=90)  # ...and a new one.
  corpus = make_corpus(tmp_path / "manual", real_names=kept, extra={"roses/zz_new.jpg": new})
  rebuilt = read_examples(build("flowers_dataset/full", tmp_path / "data1", corpus.manual_dir))
  assert sorted(rebuilt) == sorted([*kept, "roses/zz_new.jpg"])
  for name in kept:
    assert rebuilt[name]["split"] == full_examples[name]["split"], name
  assert rebuilt["roses/zz_new.jpg"]["split"] == split_of(new)

  # The same folder changed in place is scanned again, not served from the
  # in-process cache of the first scan.
  gone = sorted(kept)[0]
  (corpus.manual_dir / "flower_photos" / gone).unlink()
  again = read_examples(build("flowers_dataset/full", tmp_path / "data2", corpus.manual_dir))
  assert sorted(again) == sorted(set(rebuilt) - {gone})
  assert all(again[n]["split"] == rebuilt[n]["split"] for n in again)


# Download paths.


def test_fake_archive_in_manual_dir_fails_with_a_checksum_message(tmp_path):
  manual = tmp_path / "manual"
  manual.mkdir()
  with tarfile.open(manual / "flower_photos.tgz", "w:gz") as tar:
    tar.add(SAMPLE / "daisy" / "100080576_f52e8ee070_n.jpg", "flower_photos/daisy/a.jpg")
  with pytest.raises(ValueError) as error:
    build("flowers_dataset/224", tmp_path / "data", manual)
  message = str(error.value)
  assert "flower_photos.tgz does not match its registered size and SHA-256" in message
  assert "checksums/flowers_dataset.tsv" in message
  # TFDS's own details: what was expected, and the file it checked.
  assert "4c54ace7911aaffe13a365c34f650e71dd5bf1be0a58b464e5a7183e3e595d9c" in message
  assert str(manual / "flower_photos.tgz") in message
  assert URL in message and "extracted `flower_photos/` folder in the manual dir" in message


def test_download_path_without_manual_dir(tmp_path):
  extracted = tmp_path / "extracted"
  kept = sorted(SAMPLE_NAMES)[:12]
  make_corpus(extracted, real_names=set(kept))
  with mock.patch.object(tfds.download.DownloadManager, "download_and_extract", autospec=True,
                         return_value=epath.Path(extracted)) as download, host_reachable():
    builder = build("flowers_dataset/full", tmp_path / "data")
  download.assert_called_once_with(mock.ANY, URL)
  examples = read_examples(builder)
  assert sorted(examples) == kept
  assert all(e["attribution"].startswith("CC-BY by ") for e in examples.values())
  assert all(e["image"] == (SAMPLE / n).read_bytes() for n, e in examples.items())


def test_offline_without_manual_dir_fails_fast_and_says_what_to_do(tmp_path):
  unresolvable = socket.gaierror(-2, "Name or service not known")
  with mock.patch.object(socket, "create_connection", side_effect=unresolvable) as connect, \
      mock.patch.object(tfds.download.DownloadManager, "download_and_extract") as download:
    start = time.monotonic()
    with pytest.raises(ValueError) as error:
      build("flowers_dataset/224", tmp_path / "data")
  assert time.monotonic() - start < 30  # TFDS's own retries take about 200 s.
  connect.assert_called_once_with(("download.tensorflow.org", 80), mock.ANY)
  download.assert_not_called()
  message = str(error.value)
  assert f"Could not download {URL}" in message and "Name or service not known" in message
  assert "manual dir" in message and "flower_photos.tgz" in message
  assert "`flower_photos/` folder" in message
  # Both places the archive may go: a manual dir given to the build, and TFDS's default one.
  assert "tfds build flowers_dataset --manual_dir DIR" in message
  assert f"TFDS's default manual dir, {tmp_path / 'data' / 'downloads' / 'manual'}," in message


def test_download_failing_after_the_host_answered_says_what_to_do(tmp_path):
  offline = requests.exceptions.ConnectionError("Connection reset by peer")
  with mock.patch.object(tfds.download.DownloadManager, "download_and_extract",
                         side_effect=offline), host_reachable():
    with pytest.raises(ValueError) as error:
      build("flowers_dataset/224", tmp_path / "data")
  message = str(error.value)
  assert f"Could not download {URL}" in message and "Connection reset by peer" in message
  assert "`flower_photos/` folder" in message


def test_an_earlier_download_is_used_without_the_network(tmp_path):
  """TFDS keeps downloads in <download dir>/<dataset>/<name from url and sha256>."""
  extracted = tmp_path / "extracted"
  make_corpus(extracted, real_names=set(sorted(SAMPLE_NAMES)[:5]))
  registered = tfds.core.download.checksums.load_url_infos(
      REPO / "checksums" / "flowers_dataset.tsv")[URL]
  cached = (tmp_path / "data" / "downloads" / "flowers_dataset"
            / tfds.core.download.resource.get_dl_fname(URL, registered.checksum))
  cached.parent.mkdir(parents=True)
  cached.write_bytes(b"an earlier download")
  with mock.patch.object(tfds.download.DownloadManager, "download_and_extract",
                         return_value=epath.Path(extracted)):
    builder = build("flowers_dataset/224", tmp_path / "data")  # The network guard fails any probe.
  assert sum(s.num_examples for s in builder.info.splits.values()) == 5


def test_manual_folder_without_usable_images_fails_clearly(tmp_path):
  corpus = make_corpus(tmp_path / "manual", real_names=set(),
                       extra={"daisy/broken.jpg": b"", "daisy/.DS_Store": b"junk"})
  with pytest.raises(ValueError, match="(?s)flower_photos.*daisy/broken.jpg.*empty file"):
    build("flowers_dataset/224", tmp_path / "data", corpus.manual_dir)

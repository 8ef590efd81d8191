"""croissant.json: every build describes itself in Croissant, and mlcroissant accepts it as it
is."""

from __future__ import annotations

import hashlib
import pathlib
import re

import mlcroissant as mlc
import pytest
import tensorflow_datasets as tfds

import flowers_dataset
import korean_food

# mlcroissant 1.1.1 parses JSON-LD with rdflib's deprecated ConjunctiveGraph.
pytestmark = pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning")

SAMPLES = {
    "flowers_dataset/32": pathlib.Path(flowers_dataset.__file__).parent / "sample",
    # With bbox and has_bbox.
    "korean_food/full": pathlib.Path(korean_food.__file__).parent / "sample",
}
FIELD_TYPES = {
    "flowers_dataset/32": {"image": mlc.DataType.IMAGE_OBJECT, "label": mlc.DataType.INTEGER,
                           "file_name": mlc.DataType.TEXT, "attribution": mlc.DataType.TEXT,
                           "split": mlc.DataType.TEXT},
    "korean_food/full": {"image": mlc.DataType.IMAGE_OBJECT, "label": mlc.DataType.INTEGER,
                         "super_category": mlc.DataType.INTEGER, "file_name": mlc.DataType.TEXT,
                         "bbox": mlc.DataType.BOUNDING_BOX, "has_bbox": mlc.DataType.BOOL,
                         "split": mlc.DataType.TEXT},
}
LICENCE_PHRASES = {
    "flowers_dataset/32": ["CC BY 2.0", "https://creativecommons.org/licenses/by/2.0/",
                           "flower_photos.tgz", "`attribution`"],
    "korean_food/full": ["AIHub's terms of use",
                         "https://aihub.or.kr/aihubdata/data/view.do?dataSetSn=79",
                         "forbid redistribution", "downloads it from there"],
}


@pytest.fixture(scope="module")
def builds(samples) -> dict[str, tfds.core.DatasetBuilder]:
  return {name: samples.builder(name) for name in SAMPLES}


def _croissant(builder: tfds.core.DatasetBuilder) -> pathlib.Path:
  folder = pathlib.Path(builder.data_dir)
  assert (folder / "dataset_info.json").is_file()
  return folder / "croissant.json"


def _sha256(path: pathlib.Path) -> str:
  return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", SAMPLES)
def test_croissant_json_beside_dataset_info_validates_without_issues(builds, name):
  dataset = mlc.Dataset(jsonld=_croissant(builds[name]))
  issues = dataset.metadata.ctx.issues
  assert not issues.errors and not issues.warnings, issues.report()


@pytest.mark.parametrize("name", SAMPLES)
def test_every_record_file_with_its_sha256(builds, name):
  info = builds[name].info
  metadata = mlc.Dataset(jsonld=_croissant(builds[name])).metadata
  folder = pathlib.Path(builds[name].data_dir)
  on_disk = {path.name: _sha256(path) for path in folder.glob("*.tfrecord-*")}
  assert sorted(on_disk) == sorted(file for split in info.splits.values()
                                   for file in split.filenames)
  assert {f.content_url: f.sha256 for f in metadata.file_objects} == on_disk
  [file_set] = metadata.file_sets
  assert sorted(p.name for pattern in file_set.includes
                for p in folder.glob(pattern)) == sorted(on_disk)


@pytest.mark.parametrize("name", SAMPLES)
def test_splits_fields_and_class_names_follow_the_info(builds, name):
  info = builds[name].info
  dataset = mlc.Dataset(jsonld=_croissant(builds[name]))
  sizes = {r["splits/name"]: r["splits/num_examples"] for r in dataset.records("splits")}
  assert sizes == {split.name: split.num_examples for split in info.splits.values()}

  [examples] = [r for r in dataset.metadata.record_sets if r.id == "examples"]
  assert {f.name: f.data_types for f in examples.fields} == {
      k: [t] for k, t in FIELD_TYPES[name].items()}
  # The split field reads the split from the record file's name.
  [split_field] = [f for f in examples.fields if f.name == "split"]
  regex = split_field.source.transforms[0].regex
  for split in info.splits.values():
    assert {re.match(regex, file).group(1) for file in split.filenames} == {split.name}

  class_labels = {k: f for k, f in info.features.items() if isinstance(f, tfds.features.ClassLabel)}
  assert len(class_labels) == (2 if name.startswith("korean_food") else 1)
  for key, feature in class_labels.items():
    names = [r[f"{key}_names/name"] for r in dataset.records(f"{key}_names")]
    assert names == feature.names


@pytest.mark.parametrize("name", SAMPLES)
def test_licence_and_citation(builds, name):
  info = builds[name].info
  metadata = mlc.Dataset(jsonld=_croissant(builds[name])).metadata
  [licence] = metadata.license
  for phrase in LICENCE_PHRASES[name]:
    assert phrase in licence
  assert licence == info.redistribution_info.license
  # TFDS writes it too.
  assert (pathlib.Path(builds[name].data_dir) / "LICENSE").read_text() == licence
  assert metadata.cite_as == info.citation.strip()
  assert metadata.name == name and metadata.version == "1.9.0"


def test_written_for_a_build_without_one_and_kept_when_present(builds):
  """`tfds.builder` of a config in BUILDER_CONFIGS gives the package's builder, whose
  `download_and_prepare` reuses the build (`flowers_dataset/32` would load from files)."""
  path = _croissant(builds["korean_food/full"])
  data_dir = path.parents[3]
  written = path.read_text()
  path.unlink()
  tfds.builder("korean_food/full", data_dir=data_dir).download_and_prepare()
  assert path.read_text() == written
  path.write_text("kept")
  tfds.builder("korean_food/full", data_dir=data_dir).download_and_prepare()
  assert path.read_text() == "kept"
  path.write_text(written)

"""Near copies share their original's split and are listed in the build report."""

from __future__ import annotations

import pathlib

import apache_beam as beam
import pytest
import tensorflow_datasets as tfds

import flowers_dataset
import korean_food  # noqa: F401  (registers the builder)
from photo_datasets import testing
from photo_datasets.photos import splits

SAMPLE = pathlib.Path(flowers_dataset.__file__).parent / "sample" / "flower_photos"
# Real photos; the copies go under other names and classes.
ORIGINALS = sorted(SAMPLE.glob("daisy/*.jpg"))[:4]
KINDS = sorted(testing.near_copies(ORIGINALS[0].read_bytes()))


def corpus() -> dict[str, bytes]:
  files = {f"flower_photos/{p.parent.name}/{p.name}": p.read_bytes()
           for p in sorted(SAMPLE.glob("*/*.jpg"))}
  for i, original in enumerate(ORIGINALS):
    for kind, data in testing.near_copies(original.read_bytes()).items():
      folder = "daisy" if i % 2 else "roses"  # Some copies under another label.
      files[f"flower_photos/{folder}/copy_{i}_{kind}.{'jpg' if kind != 'png' else 'png'}"] = data
  return files


@pytest.fixture(scope="module")
def built(tmp_path_factory):
  root = tmp_path_factory.mktemp("near")
  testing.write_tree(root / "manual", corpus())
  builder = testing.build("flowers_dataset/32", root / "data", root / "manual")
  return root, builder, testing.read_examples(builder)


def test_every_near_copy_lands_in_its_originals_split_and_is_listed(built):
  _, builder, examples = built
  groups = {tuple(g["files"]): g["across_classes"]
            for g in builder.info.metadata["near_duplicates"]}
  for i, original in enumerate(ORIGINALS):
    name = f"daisy/{original.name}"
    copies = [n for n in examples if n.rsplit("/", 1)[1].startswith(f"copy_{i}_")]
    assert sorted(c.rsplit("/", 1)[1].split("_", 2)[2].rsplit(".", 1)[0] for c in copies) == KINDS
    for copy in copies:
      assert examples[copy]["split"] == examples[name]["split"], copy
    (group,) = [g for g in groups if name in g]
    assert set(copies) <= set(group)
    assert groups[group] == (i % 2 == 0)  # The roses copies are a label conflict.


def test_photos_without_near_copies_keep_their_byte_rule_split(built):
  _, builder, examples = built
  grouped = {n for g in builder.info.metadata["near_duplicates"] for n in g["files"]}
  alone = [n for n in examples if n not in grouped]
  assert len(alone) == 100 - len(ORIGINALS)  # Distinct real photos are not grouped.
  for name in alone:
    assert examples[name]["split"] == splits.split_of(
        splits.content_digest((SAMPLE / name).read_bytes())), name


def test_the_summary_counts_groups_moves_and_lists_label_conflicts(built):
  _, builder, examples = built
  counts = builder.info.metadata["counts"]
  assert counts["photos in near-duplicate groups"] == len(ORIGINALS) * (len(KINDS) + 1)
  data = {name.split("/", 1)[1]: data for name, data in corpus().items()}
  moved = [n for n, e in examples.items()
           if e["split"] != splits.split_of(splits.content_digest(data[n]))]
  assert counts["photos moved to their group's split"] == len(moved) > 0


def test_a_beam_build_groups_the_same_way(built, tmp_path):
  root, builder, examples = built
  with_beam = tfds.builder("flowers_dataset/32", data_dir=str(tmp_path / "beam"))
  with_beam.download_and_prepare(download_config=tfds.download.DownloadConfig(
      manual_dir=str(root / "manual"),
      beam_options=beam.options.pipeline_options.PipelineOptions(["--runner=DirectRunner"])))
  assert {n: e["split"] for n, e in testing.read_examples(with_beam).items()} == {
      n: e["split"] for n, e in examples.items()}
  assert with_beam.info.metadata["near_duplicates"] == builder.info.metadata["near_duplicates"]


@pytest.mark.real_photos
def test_korean_food_groups_near_copies_of_real_photos(real_kfood, tmp_path):
  """Real AIHub photos, read where they lie and written only under tmp_path,
  with near copies of two of them filed under another dish."""
  files = {str(p.relative_to(real_kfood)): p.read_bytes() for p in sorted(real_kfood.glob("*/*/*"))}
  originals = ["구이/갈비구이/Img_000_0001.jpg", "찌개/순두부찌개/Img_123_0002.JPG"]
  copies: dict[str, set[str]] = {name: set() for name in originals}
  for i, name in enumerate(originals):
    for j, data in enumerate(testing.near_copies(files[name]).values()):
      copy = f"찌개/김치찌개/Img_119_{9000 + 100 * i + j}.jpg"
      files[copy] = data
      copies[name].add(copy)
  testing.write_tree(tmp_path / "manual", files)
  builder = testing.build("korean_food/32", tmp_path / "data", tmp_path / "manual")
  examples = testing.read_examples(builder)
  groups = builder.info.metadata["near_duplicates"]
  assert len(groups) == len(originals)
  for name in originals:
    (group,) = [g for g in groups if name in g["files"]]
    assert set(group["files"]) == {name} | copies[name]
    assert group["across_classes"]
    assert {examples[n]["split"] for n in group["files"]} == {examples[name]["split"]}

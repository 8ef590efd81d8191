"""`benchmarks/loader.py`: a tiny run of every loader, in-process."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import statistics

from photo_datasets import testing

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "loader.py"
# Small photos in 3 classes of 2 groups, as an extracted kfood tree.
FOLDERS = ("구이/갈비구이", "구이/갈치구이", "찌개/김치찌개")


def _script():
  # `import harness` beside it works as under `python benchmarks/loader.py`: pytest's `pythonpath`
  # holds benchmarks/.
  spec = importlib.util.spec_from_file_location("loader_benchmark", SCRIPT)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_every_loader_delivers_images_and_the_chart_is_written(tmp_path):
  files = {f"kfood/{FOLDERS[i % 3]}/Img_{i:03d}.jpg": testing.jpeg(i, (200 + 8 * i, 150))
           for i in range(24)}
  files["kfood/구이/bad.jpg"] = b"not a photo"
  testing.write_tree(tmp_path / "photos", files)
  out_json, out_png = tmp_path / "out.json", tmp_path / "out.png"

  _script().main(["--photos", str(tmp_path / "photos"), "--images", "30", "--repeats", "1",
                  "--batch_size", "8", "--workdir", str(tmp_path / "work"),
                  "--json", str(out_json), "--png", str(out_png)])

  report = json.loads(out_json.read_text())
  assert report["photos"] == 24  # The file that does not decode is left out.
  # Every loader, those of PyTorch and Grain where installed.
  script = _script()
  missing = sum(importlib.util.find_spec(package) is None for package in script.OPTIONAL.values())
  assert set(report["loaders"]) == set(report["labels"])
  assert len(report["loaders"]) == len(script.LOADERS) - missing - len(script.SHARD_ROWS)
  for key, row in report["loaders"].items():
    assert row["median"] == statistics.median(row["rates"]) > 0, key  # From the run's own timings:
    for rate, seconds in zip(row["rates"], row["seconds"],
                             strict=True):  # Both rounded: 0.1 image/s, 0.1 ms.
      assert (abs(rate - row["images"] / seconds)
              <= 0.05 + row["images"] / seconds * 0.6e-4 / seconds), key
    # Every photo once per epoch; the training pipeline drops the incomplete last batch.
    assert row["images"] == 24, key
  assert [t["target"] for t in report["targets"]][0] == "(6 on 224) >= 0.95 x (7)"
  assert report["machine"]["cores_usable"] >= 1
  assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_some_loaders_read_as_keras_reads_them(tmp_path):
  files = {f"kfood/{FOLDERS[i % 3]}/Img_{i:03d}.jpg": testing.jpeg(i, (200 + 8 * i, 150))
           for i in range(16)}
  testing.write_tree(tmp_path / "photos", files)
  out_json = tmp_path / "out.json"
  _script().main(["--photos", str(tmp_path / "photos"), "--images", "16", "--repeats", "1",
                  "--batch_size", "8", "--loaders", "6_pipeline_224", "5", "--keras", "--shards",
                  "--workdir", str(tmp_path / "work"),
                  "--json", str(out_json), "--png", str(tmp_path / "out.png")])
  report = json.loads(out_json.read_text())
  assert set(report["loaders"]) == {
      "5_tfds_224", "6_pipeline_224", "6_pipeline_224_seed", "6_pipeline_224_one_file",
      "6_pipeline_224_model_flips", "6_pipeline_224_cache_memory",
      "6_pipeline_224_cache_memory_seed", "6_pipeline_224_cache_memory_model_flips",
      "6_pipeline_224_cache_disk", "7_limit_224_decode"}
  assert report["read_as"].startswith("model.fit on Keras's") and all(
      row["images"] == 16 for row in report["loaders"].values())


def test_the_targets_pick_exactly_the_rows_they_compare(tmp_path):
  script = _script()
  testing.write_tree(tmp_path / "files", {"a/x.jpg": b""})
  targeted = {key for _, key, _, reference in script.TARGETS for key in (key, reference)}
  picked = script.loaders(str(tmp_path / "files"), str(tmp_path / "data"), 8, sorted(targeted),
                          exact=True)
  # not "6_evaluation_224_cache_memory", whose key starts with a targeted one
  assert set(picked) == targeted
  assert "6_pipeline_224_cache_memory_seed" in set(script.loaders(
      str(tmp_path / "files"), str(tmp_path / "data"), 8, ["6_pipeline_224"]))

"""The main job on the bundled samples: build, load, train one epoch, report.

  python -m photo_datasets demo [--data_dir demo_data] [--out_dir demo_out] [--datasets NAME ...]

Builds every config of each dataset (default: every dataset package an
installed distribution declares under the `photo_datasets.datasets` entry
points, here `flowers_dataset` and `korean_food`) from its bundled sample with
the real `tfds build` command, loads a batch of the `224` config with `tfds.load`,
trains the small model of `photo_datasets.commands.train` for one epoch on it (the
input pipeline of `photo_datasets.reading.pipeline`), and prints a summary per
dataset: the build report, the training speed and where the model, history,
curves and two picture grids (stored examples, and what the training pipeline
feeds the model) went (`<out_dir>/<dataset>/`), and each config's build report
page (`report.html`, beside its `dataset_info.json`).

It prints at most 40 lines in all: `tfds build`'s own output (TensorFlow's
start-up messages, progress bars, TFDS's dump of the DatasetInfo) is captured
and only the build's short summary shown (all of it where the build fails),
and TensorFlow's C++ start-up messages are turned off (`TF_CPP_MIN_LOG_LEVEL`,
unless set) before TensorFlow is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.resources
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator

# The dataset packages installed distributions declare (setup.py's entry points); each
# bundles its sample in `sample/`, used as manual dir.
DATASET_ENTRY_POINTS = "photo_datasets.datasets"
CONFIG = "224"


@contextlib.contextmanager
def native_stderr_hidden() -> Iterator[None]:
  """Hides what native code writes to file descriptor 2 in the block: TensorFlow's start-up lines
  (oneDNN, CUDA probing), printed before it reads `TF_CPP_MIN_LOG_LEVEL`. Shown after all where
  the block raises."""
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile() as captured:
    os.dup2(captured.fileno(), 2)
    try:
      yield
    except BaseException:
      os.dup2(saved, 2)
      captured.seek(0)
      sys.stderr.write(captured.read().decode("utf-8", "replace"))
      raise
    finally:
      os.dup2(saved, 2)
      os.close(saved)


def installed_datasets() -> list[str]:
  """The dataset packages declared under `DATASET_ENTRY_POINTS`, in name order."""
  return sorted(entry.value
                for entry in importlib.metadata.entry_points(group=DATASET_ENTRY_POINTS))


def build(name: str, data_dir: str) -> list[str]:
  """Builds every config of `name` from its sample with `tfds build`; returns each config's
  summary: examples per split, what was left out or noticed, and the report page."""
  manual_dir = importlib.resources.files(name) / "sample"
  done = subprocess.run(
      [sys.executable, "-m", "tensorflow_datasets.scripts.cli.main", "build", name,
       "--imports", name, "--manual_dir", str(manual_dir), "--data_dir", data_dir,
       "--overwrite"],
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
      env={"TF_CPP_MIN_LOG_LEVEL": "2", **os.environ}, check=False)
  if done.returncode:
    print(done.stdout, file=sys.stderr)
    raise subprocess.CalledProcessError(done.returncode, done.args)
  # The summary lines `PhotoBuilder` prints: "name/config: sizes", counts, "  report: path"; the
  # first few cases (indented 4) are on the page.
  lines = [line.rsplit("\r", 1)[-1] for line in done.stdout.splitlines()]
  return [line for line in lines
          if line.startswith((f"{name}/", "  ")) and not line.startswith("    ")]


def loaded_batch(name: str, data_dir: str, batch_size: int) -> str:
  """One batch read back with plain `tfds.load`, as a user first would, described."""
  import tensorflow_datasets as tfds

  # No automatic cache: reading one batch would leave it partly filled (and TF warns about that).
  ds = tfds.load(name, split="train", data_dir=data_dir, batch_size=batch_size, as_supervised=True,
                 read_config=tfds.ReadConfig(try_autocache=False))
  images, labels = next(iter(ds))
  return (f"tfds.load batch: {images.dtype.name} images {tuple(images.shape)}, "
          f"{labels.dtype.name} labels {tuple(labels.shape)}")


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--data_dir", default=os.path.abspath("demo_data"))
  parser.add_argument("--out_dir",
                      help="where each dataset's model, history and curves go, in <dataset>/ "
                      "(default: demo_out beside --data_dir)")
  datasets = installed_datasets()
  parser.add_argument("--datasets", nargs="+", default=datasets, choices=datasets)
  parser.add_argument("--batch_size", type=int, default=8)
  args = parser.parse_args(argv)
  # Set before TensorFlow loads, to turn off its INFO and WARNING lines.
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  with native_stderr_hidden():  # What it prints before reading that, and its probe for a GPU.
    import tensorflow as tf
    import tensorflow_datasets as tfds

    from photo_datasets.catalog import report_page
    from photo_datasets.commands import show, train
    tf.config.list_physical_devices("GPU")

  data_dir = os.path.abspath(args.data_dir)
  out_root = os.path.abspath(args.out_dir or os.path.join(os.path.dirname(data_dir), "demo_out"))

  summaries = []
  for name in args.datasets:
    print(f"tfds build {name} (every config, from its bundled sample):", flush=True)
    print("\n".join(f"  {line}" for line in build(name, data_dir)), flush=True)
    config = f"{name}/{CONFIG}"
    batch = loaded_batch(config, data_dir, args.batch_size)
    result = train.train(config, data_dir=data_dir, out_dir=os.path.join(out_root, name), epochs=1,
                         batch_size=args.batch_size, seed=0, verbose=2)
    pictures = [show.write_grid(config, split="train", data_dir=data_dir,
                                out=os.path.join(result.out_dir, "examples.png")),
                show.write_grid(config, split="train", data_dir=data_dir, pipeline=True, seed=0,
                                out=os.path.join(result.out_dir, "training_input.png"))]
    page = os.path.join(os.fspath(tfds.builder(config, data_dir=data_dir).data_path),
                        report_page.FILE_NAME)
    training = train.summary(result).replace("\n", "\n  ")
    summaries.append(f"{name}:\n  {batch}\n"
                     f"  trained 1 epoch: {training}\n"
                     f"  pictures: {pictures[0]} (stored), {pictures[1]} (what the model sees)\n"
                     f"  build report: {page} (and one beside each config's dataset_info.json)")

  print(f"\n=== Summary (data in {data_dir}, training results in {out_root}) ===")
  print("\n".join(summaries))


if __name__ == "__main__":
  main()

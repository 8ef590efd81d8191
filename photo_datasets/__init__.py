"""Machinery shared by the package's TFDS builders: build, report, read.

The subpackages follow a photo's way from the download to `model.fit`; each
imports only those below it (`pyproject.toml`'s import-linter contracts):

  archives/  what files are made of, with no dataset in it: the zip format
             (`zips`), a file made of pieces (`pieces`), a tar read in place
             (`tars`).
  photos/    per-photo work, no TensorFlow: where a photo's bytes lie and
             what the scan learned of it (`records`), decode and check
             (`images`), the near-copy hashes (`near_duplicates`), a
             photographer's series (`series`), quality scores (`quality`),
             the split rule (`splits`).
  building/  what `tfds build` runs: `builder.PhotoBuilder` (the base class and
             its hooks; what a build in progress shares, `build_state`; the
             step from the scan to the splits, `scan_to_splits`; Beam's
             workers or this machine's, `beam_or_local`; the report page's
             `report_thumbnails`; what a build does once its records are
             generated, `after_generation`), the size `configs`, the `scan`,
             its saved copy (`scan_cache`) and the images it converted
             (`converted`),
             `generation`, the two ways the phases run (`executors`: this
             machine's worker pool, `parallel`, or Beam's workers,
             `beam_generation`),
             records the same bytes in every process (`reproducible`),
             `disk` checks and the build lock, `sharding`, what a reader
             of a config not built is told (`unbuilt`: the other versions
             there, the command that builds it), and what the package
             changes in TFDS's `tfds` command only (`cli`).
  catalog/   what a build writes for people and catalogs: what it reports
             (`build_report`), the report page (`report_page` gathers,
             `page_data` holds, `page_html` renders), the statistics in
             `info.metadata` (`build_stats`), the config's `fingerprint`,
             `croissant.json`.
  reading/   the read side, beside the build and importing none of it: the
             input pipeline (`pipeline`: `training_dataset`,
             `evaluation_dataset`, a built config to `model.fit` on any Keras 3
             backend), the same input on tf.data service workers
             (`data_service`), random access (`random_access`: an ArrayRecord
             copy, `tfds.data_source`, PyTorch and Grain); beneath them, the
             pipeline's parts (`batches` here or on a service, `decoding`,
             a split's `records`, `augmentation`) and what all share:
             opening a built config (`built`), the checks of its
             callers' numbers (`arguments`), the policy of `cache=` (`cache`),
             the uint8-to-float layer (`layers`).
  testing/   fabricated photos, zips, pieces, near copies and builds for the
             tests (one module each, re-exported by `testing`), a tf.data
             service on loopback (`loopback`).

Beneath them all, `tfds_private` names every private part of
tensorflow-datasets that the package uses (builder methods it overrides,
TFDS's writer internals), against the pinned TFDS version; no other module
reaches inside TFDS.

A photo is found by its dataset's listing (`korean_food/`, `flowers_dataset/`),
decoded, checked and hashed once in `building/scan.py` (by `photos/`), given its
split in `photos/splits.py`, converted and written by `building/generation.py`
through TFDS, reported by `catalog/`, and read by `reading/pipeline.py`.

On top of both sides, `commands/`: what users type, `demo` (README command
1), `train` (an example model), `show` (a grid of pictures), `report` (a
config's report page again), `verify` (a copy against its fingerprint),
`doctor` (whether the input or the model limits training), beside `models`,
the example Keras models that `train` and `doctor` train. `python -m
photo_datasets COMMAND` (`__main__`) runs each of them, and `data_service` and
`random_access` of `reading/`; alone, it lists them.

The modules of those names at the top (`pipeline`, `data_service`,
`random_access`, `models` and the six commands) are aliases of a few lines
for the old paths, `python -m photo_datasets.train` or `from
photo_datasets.pipeline import training_dataset`; no module of the package
imports them.

The shared package names no dataset: a dataset supplies its names, wording
and class descriptions through `PhotoBuilder`'s hooks.
"""

import importlib.abc
import importlib.util
import os
import sys

# The framework each Keras backend imports, and the extra of this package that installs it.
_BACKEND_EXTRAS = {"torch": ("torch", "torch"), "jax": ("jax", "jax")}


class _KerasBackendCheck(importlib.abc.MetaPathFinder):
  """Names the extra that a `KERAS_BACKEND` needs when `import keras` would fail on its missing
  framework (Keras's own error is a bare ModuleNotFoundError from deep in its import); steps
  aside at the first import of Keras. A build never imports Keras, so it never asks."""

  def find_spec(self, name: str, path: object = None, target: object = None) -> None:
    if name != "keras":
      return None
    sys.meta_path.remove(self)
    backend = os.environ.get("KERAS_BACKEND", "")
    module, extra = _BACKEND_EXTRAS.get(backend, (None, None))
    if module and importlib.util.find_spec(module) is None:
      raise ImportError(f"KERAS_BACKEND={backend} needs {module}, which is not installed: "
                        f"install this package's {extra!r} extra (python -m pip install -e "
                        f"'.[{extra}]' in the checkout; docs/training.md#on-jax-and-pytorch), or "
                        "unset KERAS_BACKEND to train on TensorFlow.")
    return None


if "keras" not in sys.modules:
  sys.meta_path.insert(0, _KerasBackendCheck())

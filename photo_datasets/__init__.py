"""Machinery shared by the package's TFDS builders: build, report, read.

The subpackages follow a photo's way from the download to `model.fit`; each
imports only those below it (`pyproject.toml`'s import-linter contracts):

  photos/    per-photo work, no TensorFlow: where a photo's bytes lie and
             what the scan learned of it (`records`, `pieces` for a file in
             pieces), decode and check (`images`), the near-copy hashes
             (`near_duplicates`), a photographer's series (`series`), quality
             scores (`quality`), the split rule (`splits`).
  build/     what `tfds build` runs: `builder.PhotoBuilder` (the base class and
             its hooks), the size `configs`, the `scan` on every core
             (`parallel`), its saved copy (`scan_cache`) and the images it
             converted (`converted`), `generation` and `beam_generation`,
             `disk` checks, `sharding`.
  catalog/   what a build writes for people and catalogs: what it reports
             (`build_report`), the report page (`report_page` gathers,
             `page_data` holds, `page_html` renders), the statistics in
             `info.metadata` (`build_stats`), `croissant.json`.
  reading/   what the read side shares: opening a built config (`built`), the
             checks of its callers' numbers (`arguments`), the example Keras
             `models`.
  testing/   fabricated photos and builds for the tests, realistic photos for
             the benchmarks (`benchmark_corpus`), a tf.data service on
             loopback (`loopback`).

A photo is found by its dataset's listing (`korean_food/`, `flowers_dataset/`),
decoded, checked and hashed once in `build/scan.py` (by `photos/`), given its
split in `photos/splits.py`, converted and written by `build/generation.py`
through TFDS, reported by `catalog/`, and read by `pipeline`.

On top, the modules users call:

  pipeline        `training_dataset`, `evaluation_dataset`: a built config to
                  `model.fit`, on any Keras 3 backend.
  data_service    the same input on tf.data service workers
                  (`python -m photo_datasets.data_service dispatcher|worker`).
  random_access   an ArrayRecord copy, `tfds.data_source`, PyTorch and Grain.
  train, show, report, doctor, demo
                  command-line tools: train an example model, draw a grid,
                  write a config's report page again, say whether the input
                  or the model limits training, README command 1.

The shared package names no dataset: a dataset supplies its names, wording
and class descriptions through `PhotoBuilder`'s hooks.
"""

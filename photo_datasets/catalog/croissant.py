"""`croissant.json`: a Croissant (MLCommons) description of a built config.

TFDS 4.9.10 only reads Croissant (`CroissantBuilder`); this writes one for a
built config, with mlcroissant's objects: name, description, licence and
citation from `builder.info`, every record file with its SHA-256 (from the
config's fingerprint, `fingerprint`, or read here), the splits
with their sizes, the features as fields of an `examples` record set, and the
class names of each `ClassLabel` as a record set the field references.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import tensorflow_datasets as tfds
from absl import logging
from etils import epath

from photo_datasets.catalog import fingerprint

# Imported on first use, as TFDS does: reading a dataset needs no mlcroissant.
from photo_datasets.tfds_private import mlcroissant as mlc

FILE_NAME = "croissant.json"

# Formats without a MIME type are named by the page that defines them, as Croissant asks.
_ENCODING_FORMATS = {
    "tfrecord": "https://www.tensorflow.org/tutorials/load_data/tfrecord",
    "array_record": "https://github.com/google/array_record",
    "parquet": "application/x-parquet",
}
_SPLIT_URLS = {"train": "cr:TrainingSplit", "validation": "cr:ValidationSplit",
               "test": "cr:TestSplit"}
_RECORD_FILES = "record_files"


def write(info: tfds.core.DatasetInfo, data_dir: epath.PathLike) -> epath.Path:
  """Writes `croissant.json` into `data_dir`, the built config's directory.

  Args:
    info: the built config's `DatasetInfo` (`builder.info`).
    data_dir: the built config's directory, the one holding its record files.

  Returns:
    The path of the file written. Validation warnings are logged, not raised.

  Raises:
    mlcroissant.ValidationError: on a validation error (see `metadata`).
  """
  described = metadata(info, data_dir)
  if described.ctx.issues.warnings:
    logging.warning("%s/%s: %s", info.name, info.config_name, described.ctx.issues.report())
  path = epath.Path(data_dir) / FILE_NAME
  path.write_text(json.dumps(described.to_json(), indent=2, ensure_ascii=False) + "\n",
                  encoding="utf-8")
  return path


def metadata(info: tfds.core.DatasetInfo, data_dir: epath.PathLike) -> mlc.Metadata:
  """The Croissant metadata of the config built in `data_dir`, with its
  fingerprint where its metadata keeps one; record files without a kept
  SHA-256 are hashed here.

  Args:
    info: the built config's `DatasetInfo` (`builder.info`).
    data_dir: the built config's directory, the one holding its record files.

  Returns:
    An `mlcroissant.Metadata`: the record files and their file set, the
    splits, the class names of each `ClassLabel` and the examples' fields.
    Validation warnings stay in `metadata(...).ctx.issues.warnings`.

  Raises:
    mlcroissant.ValidationError: on a validation error.
  """
  splits = list(info.splits.values())
  suffix = splits[0].filename_template.filetype_suffix
  paths = [epath.Path(data_dir) / name for split in splits for name in split.filenames]
  kept = dict(info.metadata or {}).get(fingerprint.METADATA_KEY) or {}
  known = fingerprint.sha256_by_name(paths, kept.get("files") or {})
  files: list[mlc.FileObject | mlc.FileSet] = [_record_file(path, suffix, known[path.name])
                                               for path in paths]
  files.append(mlc.FileSet(
      id=_RECORD_FILES, name=_RECORD_FILES,
      encoding_formats=[_ENCODING_FORMATS.get(suffix, suffix)],
      includes=[f"{info.name}-*.{suffix}-*"],
      description="Every record file of the config (the files above), "
                  "one `tf.train.Example` per record."))
  label_sets = [_class_names(key, feature) for key, feature in info.features.items()
                if isinstance(feature, tfds.features.ClassLabel)]
  return mlc.Metadata(
      name=f"{info.name}/{info.config_name}",
      description=_description(info, kept.get("sha256")),
      version=str(info.version),
      url=info.homepage,
      cite_as=info.citation.strip(),
      license=[info.redistribution_info.license] if info.redistribution_info.license else None,
      date_published=_citation_year(info.citation),
      distribution=files,
      record_sets=[_splits(splits), *label_sets, _examples(info)],
  )


def _description(info: tfds.core.DatasetInfo, sha256: str | None) -> str:
  """The dataset's description, its config's, and the config's fingerprint where it has one."""
  text = (f"{info.description.strip()}\n\n"
          f"Config `{info.config_name}`: {info.config_description}")
  if sha256:
    text += f"\n\nFingerprint (SHA-256, `python -m photo_datasets.verify`): {sha256}"
  return text


def _record_file(path: epath.Path, suffix: str, sha256: str) -> mlc.FileObject:
  return mlc.FileObject(
      id=path.name, name=path.name, content_url=path.name,
      content_size=f"{path.stat().length} B",
      encoding_formats=[_ENCODING_FORMATS.get(suffix, suffix)], sha256=sha256)


def _splits(splits: list[Any]) -> mlc.RecordSet:
  """The splits as Croissant's `cr:Split` record set, with their sizes."""
  fields = [("name", mlc.DataType.TEXT), ("url", mlc.DataType.URL),
            ("num_examples", mlc.DataType.INTEGER), ("num_shards", mlc.DataType.INTEGER)]
  return mlc.RecordSet(
      id="splits", name="splits", data_types=[mlc.DataType.SPLIT], key=["splits/name"],
      description="The splits: name, Croissant's standard split, examples and record files.",
      fields=[mlc.Field(id=f"splits/{name}", name=name, data_types=[data_type])
              for name, data_type in fields],
      data=[{"splits/name": s.name, "splits/url": _SPLIT_URLS.get(s.name, s.name),
             "splits/num_examples": s.num_examples, "splits/num_shards": s.num_shards}
            for s in splits])


def _class_names(key: str, feature: tfds.features.ClassLabel) -> mlc.RecordSet:
  record_set = f"{key}_names"
  return mlc.RecordSet(
      id=record_set, name=record_set, key=[f"{record_set}/index"],
      description=f"The {feature.num_classes} class names of `{key}`, by label id.",
      fields=[mlc.Field(id=f"{record_set}/index", name="index",
                        data_types=[mlc.DataType.INTEGER]),
              mlc.Field(id=f"{record_set}/name", name="name", data_types=[mlc.DataType.TEXT])],
      data=[{f"{record_set}/index": i, f"{record_set}/name": name}
            for i, name in enumerate(feature.names)])


def _examples(info: tfds.core.DatasetInfo) -> mlc.RecordSet:
  """One field per feature, read from the record files by its key, and the
  split, read from the file name."""
  names = "|".join(re.escape(name) for name in info.splits)
  split = mlc.Field(
      id="examples/split", name="split", data_types=[mlc.DataType.TEXT],
      description="The split of the example, from its record file's name.",
      references=mlc.Source(field="splits/name"),
      source=mlc.Source(file_set=_RECORD_FILES,
                        extract=mlc.Extract(file_property=mlc.FileProperty.filename),
                        transforms=[mlc.Transform(
                            regex=rf"^{re.escape(info.name)}-({names})\..*$")]))
  return mlc.RecordSet(
      id="examples", name="examples", description="The examples, as TFDS stores them.",
      fields=[_field(key, feature) for key, feature in info.features.items()] + [split])


def _field(key: str, feature: tfds.features.FeatureConnector) -> mlc.Field:
  """The field of feature `key`: its Croissant type, and what TFDS stores."""
  references = mlc.Source()  # None.
  if isinstance(feature, tfds.features.Image):
    data_type = mlc.DataType.IMAGE_OBJECT
    shape = "×".join("any" if size is None else str(size) for size in feature.shape)
    description = (f"{(feature.encoding_format or 'encoded').upper()} image; "
                   f"decodes to {shape} uint8.")
  elif isinstance(feature, tfds.features.ClassLabel):
    data_type = mlc.DataType.INTEGER
    references = mlc.Source(field=f"{key}_names/index")
    description = (f"Label id, 0 to {feature.num_classes - 1}; "
                   f"the names are the record set `{key}_names`.")
  elif isinstance(feature, tfds.features.Text):
    data_type, description = mlc.DataType.TEXT, "UTF-8 text."
  elif isinstance(feature, tfds.features.BBoxFeature):
    data_type = mlc.DataType.BOUNDING_BOX
    description = "4 floats: ymin, xmin, ymax, xmax, relative to the image's height and width."
  else:
    dtype = np.dtype(feature.np_dtype)
    data_type = {"b": mlc.DataType.BOOL, "i": mlc.DataType.INTEGER, "u": mlc.DataType.INTEGER,
                 "f": mlc.DataType.FLOAT}.get(dtype.kind, mlc.DataType.TEXT)
    description = f"{dtype.name}, shape {feature.shape}." if feature.shape else f"{dtype.name}."
  return mlc.Field(
      id=f"examples/{key}", name=key, data_types=[data_type], description=description,
      source=mlc.Source(file_set=_RECORD_FILES, extract=mlc.Extract(column=key)),
      references=references)


def _citation_year(citation: str) -> str | None:
  """The year of the source's citation (Croissant recommends a publication date)."""
  year = re.search(r"\byear\s*=\s*[{\"]?(\d{4})", citation)
  return year.group(1) if year else None

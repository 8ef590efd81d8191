"""korean_food: the AIHub Korean food corpus (한국 이미지(음식)), validated, with crop boxes."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import tensorflow_datasets as tfds
from etils import epath

from korean_food import classes, corpus, crop_areas
from photo_datasets import builder as photo_builder
from photo_datasets import images

_CROP_FILE = "crop_area.properties"
_DOWNLOAD_PIECE = re.compile(r"\.zip\.part\d*$", re.IGNORECASE)
_PREFIX = re.compile(r"^img_(\d{3})_", re.IGNORECASE)


def _is_junk(parts: tuple[str, ...]) -> bool:
  """macOS/Windows by-products and every file that is neither an image nor a zip."""
  return ("__MACOSX" in parts or parts[-1].startswith(".")
          or not parts[-1].lower().endswith(images.IMAGE_SUFFIXES + (".zip",)))


class Builder(photo_builder.PhotoBuilder):
  """150 Korean dishes in 27 groups, 150,513 web photos, with crop boxes."""

  RELEASE_NOTES = {"1.0.0": "Initial release."}
  READER = corpus.Reader
  MANUAL_DOWNLOAD_INSTRUCTIONS = """
  AIHub's terms forbid redistribution, so the corpus is downloaded by hand:
  1. Create an account at https://aihub.or.kr and apply for the dataset
     "한국 이미지(음식)" (dataset key 79; approval is reported to be automatic).
  2. Download it with the web page's INNORIX agent (PC only), or with AIHub's
     command-line client:
       aihubshell -mode d -datasetkey 79 -filekey 50036
     then join the received `kfood.zip.partN` pieces in order:
       cat kfood.zip.part* > kfood.zip
  3. Put into the manual dir (default `~/tensorflow_datasets/downloads/manual/`)
     any of: `kfood.zip` (about 16 GB; read in place, not extracted), some or
     all of its inner `<group>.zip` files (e.g. `구이.zip`), or an extracted
     tree with the images in one folder per class (`kfood/구이/갈비구이/...`,
     any depth).
  """

  def _info(self) -> tfds.core.DatasetInfo:
    features = {
        "image": self.image_feature(),
        "label": tfds.features.ClassLabel(names=classes.class_names()),
        "super_category": tfds.features.ClassLabel(names=classes.super_category_names()),
        "file_name": tfds.features.Text(),
    }
    if self.builder_config.image_size is None:
      features["bbox"] = tfds.features.BBoxFeature()
      features["has_bbox"] = tfds.features.Scalar(dtype=np.bool_)
    return self.dataset_info_from_configs(
        features=tfds.features.FeaturesDict(features),
        supervised_keys=("image", "label"),
        homepage="https://aihub.or.kr/aihubdata/data/view.do?dataSetSn=79",
        metadata=tfds.core.MetadataDict(),
    )

  def _find_source(self, dl_manager) -> epath.Path:
    return dl_manager.manual_dir

  def _candidates(self, source, report):
    self._crop_areas = {}  # class name -> {lower-case key: (x, y, w, h)}
    report.counts["bad crop lines"] = 0
    found = 0
    for file, read in corpus.walk(source):
      found += 1
      folder = file.parts[-2] if len(file.parts) > 1 else ""
      if file.name.lower() == _CROP_FILE:
        parsed = crop_areas.parse_crop_areas(read())
        self._crop_areas.setdefault(folder, {}).update(parsed.boxes)
        report.counts["bad crop lines"] += len(parsed.bad_lines)
        continue
      if _is_junk(file.parts):
        report.ignored_files += 1
        if _DOWNLOAD_PIECE.search(file.name):
          report.warnings.append(
              f"{file.name} is a piece of the aihubshell download: join the pieces "
              f"in order (cat kfood.zip.part* > kfood.zip) and keep only kfood.zip")
        continue
      if file.name.lower().endswith(".zip"):  # `corpus.walk` opens every readable zip.
        report.skip("/".join(file.parts), "not a readable zip archive (truncated or incomplete download?)")
        continue
      food = classes.class_by_name().get(folder)
      if food is None:
        report.skip("/".join(file.parts), f"folder {folder!r} is not one of the 150 classes")
        continue
      file_name = f"{food.super_category}/{food.name}/{file.name}"
      prefix = _PREFIX.match(file.name)
      if prefix and int(prefix[1]) != food.index:
        report.warnings.append(
            f"{file_name}: prefix Img_{prefix[1]} is class {int(prefix[1])}, "
            f"but the folder is class {food.index}; kept the folder's label")
      try:
        data = read()
      except Exception as e:  # A damaged archive member.
        report.skip(file_name, f"unreadable: {e}")
        continue
      yield file_name, file.location, data
    if not found:
      raise FileNotFoundError(f"Found no files in {source}.\n{self.MANUAL_DOWNLOAD_INSTRUCTIONS}")

  def _annotate(self, photos, report):
    boxed = []
    for photo in photos:
      key = photo.file_name.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()
      pixels = self._crop_areas.get(photo.folder, {}).get(key)
      if pixels:
        check = photo.check
        raw_size = (check.height, check.width) if check.orientation >= 5 else (check.width, check.height)
        box = crop_areas.relative_box(pixels, *raw_size)
        if box is None:
          report.counts["bad crop lines"] += 1
        else:
          photo = dataclasses.replace(photo, box=images.upright_box(box, check.orientation))
      boxed.append(photo)
    report.counts["images with a crop box"] = sum(p.box is not None for p in boxed)
    return boxed

  def _example_maker(self, source) -> "_FoodExample":
    return _FoodExample(self.builder_config.image_size)


@dataclasses.dataclass(frozen=True)
class _FoodExample(photo_builder.ExampleMaker):

  def fields(self, photo: photo_builder.Photo) -> dict:
    food = classes.class_by_name()[photo.folder]
    fields = {
        "label": food.index,
        "super_category": food.super_category,
        "file_name": photo.file_name,
    }
    if self.image_size is None:
      fields["bbox"] = tfds.features.BBox(*(photo.box or (0.0, 0.0, 1.0, 1.0)))
      fields["has_bbox"] = photo.box is not None
    return fields

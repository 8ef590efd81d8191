"""korean_food: the AIHub Korean food corpus (한국 이미지(음식)), validated, with crop boxes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import tensorflow_datasets as tfds

from korean_food import classes, corpus, download, listing
from korean_food.listing import CorpusListing
from photo_datasets.building import builder, generation
from photo_datasets.building.generation import Example
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import images
from photo_datasets.photos.records import Photo

_HOMEPAGE = "https://aihub.or.kr/aihubdata/data/view.do?dataSetSn=79"
# Goes to dataset_info.json, LICENSE and croissant.json of every build.
_LICENSE = (
    f"AIHub's terms of use apply: see https://aihub.or.kr and the dataset's page, {_HOMEPAGE}. "
    "They forbid redistribution: neither the photos nor files built from them (these "
    "TFRecords) may be published or passed on; every user applies for the corpus on AIHub "
    "and downloads it from there.")


class Builder(builder.PhotoBuilder[download.Download]):
  """150 Korean dishes in 27 groups, 150,513 web photos, with crop boxes.

  The corpus is downloaded by hand from AIHub (`MANUAL_DOWNLOAD_INSTRUCTIONS`,
  docs/downloads.md) and read from the manual dir as it arrived. Configs: `224`
  (the default) or any other square size stores each photo centre-cropped and
  resized; `full` stores it at source size with its crop box (`bbox`, `has_bbox`).

  Args:
    workers: processes for the per-photo work of a build (`PhotoBuilder`);
      TFDS's own arguments (`config`, `data_dir`, ...) as for any builder.

  `download_and_prepare` raises `korean_food.download.DownloadError` (a
  `ValueError`) before the scan when the download is incomplete (a cut transfer,
  a missing or short piece), naming what is missing.
  """

  VERSION = tfds.core.Version("1.9.0")
  RELEASE_NOTES = {
      "1.0.0": "Initial release.",
      "1.1.0": "Splits change: a blog's several shots of one dish (photos close in their "
               "`Img_XXX_YYYY` number that show one scene) now share one split, so no test photo "
               "shows a scene seen in training (docs/splits.md); `metadata['series']` lists them.",
      "1.2.0": "Splits change: series are found by colour and, where colour cannot decide, by "
               "keypoints that fit one geometry, so a close-up joins its whole plate and another "
               "cook's plate of the same colours stays apart (docs/splits.md).",
      "1.3.0": "Splits may change: the keypoints of a photo much wider than high (a collage of "
               "shots side by side) or higher than wide are found on at least 128 px of its "
               "shorter side, so its close-ups join it (docs/splits.md).",
      "1.4.0": "Splits may change: keypoints are found on 288 px of a photo's longer side, not "
               "224, and a zoom's inliers are judged by their spread in both shots, so a close-up "
               "of a plain dish, or of one side of the plate, joins its whole photo "
               "(docs/splits.md).",
      "1.5.0": "Same examples and splits as 1.4.0 from an intact download; the record files' "
               "bytes change: every record is serialised deterministically, so the same download "
               "gives the same files in every build, and the metadata keeps a fingerprint of them "
               "(`python -m photo_datasets.verify`; docs/building.md). A damaged download keeps "
               "more photos: a zip with ZIP64 end records beside normal classic fields is read, "
               "and a group zip with one damaged directory entry loses that photo only "
               "(docs/downloads.md#damaged-archives).",
      "1.6.0": "Splits may change: within the window of neighbours geometry decides: enough "
               "keypoints that fit one change of viewpoint (a homography) join two shots whatever "
               "their colours, so a second shot in other light or from another angle joins its "
               "first (docs/splits.md).",
      "1.7.0": "Splits may change, rarely: the near-copy hashes, the keypoints' resize and "
               "the colour overlaps are computed exactly, the same on every CPU, so a pair on the "
               "edge of a rule may fall on its other side (none of the 47 shared real photos "
               "did). A group zip whose central directory stops chaining is read entry by entry. "
               "The fingerprint covers the fields of dataset_info.json that "
               "readers read, so every fingerprint differs from 1.6.0's; Beam builds cut record "
               "files where local builds do; a scan saved by 1.6.0 is scanned again "
               "(docs/building.md).",
      "1.8.0": "Splits may change, rarely: the colour histogram counts a sample of a photo's "
               "pixels, and a homography is fitted only where a similarity maps part of the "
               "scene, so a pair on the edge of the rule may fall on its other side (no decision "
               "on the 47 shared real photos, their close-ups and second shots, or the 100 sample "
               "flowers changed; docs/splits.md#cost). The series cost less; a scan saved by "
               "1.7.0 is scanned again.",
      "1.9.0": "Splits may change, rarely: a similarity's RANSAC draws only the samples that "
               "find the inliers a pair needs, and the homography is fitted by OpenCV's "
               "USAC_FAST, so a pair on the edge of the rule may fall on its other side (no "
               "decision on the 47 shared real photos, their close-ups and second shots, or the "
               "100 sample flowers changed; docs/splits.md#cost). The series cost less; a scan "
               "saved by 1.8.0 is scanned again.",
  }
  READER = corpus.Reader
  REPORT_NOTE = (
      "Private: AIHub's terms forbid passing the photos on, and this page's thumbnails are made "
      "from them. A report page of korean_food with thumbnails is as private as the photos: do "
      "not publish or share it.")
  MANUAL_DOWNLOAD_INSTRUCTIONS = """
  AIHub's terms forbid redistribution, so the corpus is downloaded by hand:
  1. Create an account at https://aihub.or.kr and apply for the dataset
     "한국 이미지(음식)" (dataset key 79; approval is reported to be automatic).
  2. Download it with the web page's INNORIX agent (PC only), or with AIHub's
     command-line client:
       aihubshell -mode d -datasetkey 79 -filekey 50036
     AIHub sends `download.tar`, holding kfood.zip in 1 GiB pieces named by
     their starting byte offset (`kfood.zip.part0`, `kfood.zip.part1073741824`,
     ...), which aihubshell joins into kfood.zip. Do not join them yourself:
     the builder reads whatever arrived as it is.
  3. Put into the manual dir (default `~/tensorflow_datasets/downloads/manual/`)
     any of: `kfood.zip` (about 16 GB; read in place, not extracted), the
     `kfood.zip.part<offset>` pieces (any folder), `download.tar` as the API
     sends it, some or all of the inner `<group>.zip` files (e.g. `구이.zip`),
     or an extracted tree with the images in one folder per class
     (`kfood/구이/갈비구이/...`, any depth). A kfood.zip joined in the wrong
     order is read too; a cut download or a missing piece is refused before
     the scan, naming what is missing. (docs/downloads.md)
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
        homepage=_HOMEPAGE,
        license=_LICENSE,
        metadata=tfds.core.MetadataDict(),
    )

  def _find_source(self, dl_manager: tfds.download.DownloadManager) -> download.Download:
    # An incomplete download is refused here, before the scan.
    return download.locate(dl_manager.manual_dir)

  def _list_source(self, source: download.Download, report: BuildReport) -> CorpusListing:
    return CorpusListing(source, report)

  def _estimate_source(self, source: download.Download) -> tuple[int, int]:
    """Image files in the zips and folders, from their directories: no photo is read."""
    files = total = 0
    for file, _ in corpus.walk(source):
      if file.name.lower().endswith(images.IMAGE_SUFFIXES) and not listing.is_junk(file.parts):
        files += 1
        total += file.size
    return files, total

  def _series_order(self) -> Callable[[str], int | None]:
    return listing.series_position

  @classmethod
  def class_descriptions(cls) -> dict[str, str]:
    """The English name of each class, for the build report page."""
    return {c.name: c.english_name for c in classes.food_classes()}

  def _example_maker(self, source: download.Download) -> _FoodExample:
    return _FoodExample(self.builder_config.image_size)


@dataclasses.dataclass(frozen=True)
class _FoodExample(generation.ExampleMaker):

  def fields(self, photo: Photo) -> Example:
    food = classes.class_by_name()[photo.folder]
    fields: Example = {
        "label": food.index,
        "super_category": food.super_category,
        "file_name": photo.file_name,
    }
    if self.image_size is None:
      fields["bbox"] = tfds.features.BBox(*(photo.box or (0.0, 0.0, 1.0, 1.0)))
      fields["has_bbox"] = photo.box is not None
    return fields

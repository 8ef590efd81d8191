"""flowers_dataset: the TensorFlow flower photos, validated and training-ready."""

from __future__ import annotations

import dataclasses
import pathlib

import tensorflow_datasets as tfds
from etils import epath
# Not exported as `tfds.download.NonMatchingChecksumError` in tfds 4.9.10.
from tensorflow_datasets.core.download.download_manager import NonMatchingChecksumError

from flowers_dataset.attributions import parse_attributions
from photo_datasets import builder as photo_builder
from photo_datasets import images

_URL = "http://download.tensorflow.org/example_images/flower_photos.tgz"
# tf_flowers' label order, so label ids match it.
_LABELS = ("dandelion", "daisy", "tulips", "sunflowers", "roses")
_FOLDER = "flower_photos"


class Builder(photo_builder.PhotoBuilder):
  """The 3,670 TensorFlow flower photos in 5 classes."""

  RELEASE_NOTES = {"1.0.0": "Initial release."}
  MANUAL_DOWNLOAD_INSTRUCTIONS = f"""
  Optional: without a manual dir the archive is downloaded from {_URL}.
  Offline, put in the manual dir either `flower_photos.tgz` (checked against
  its registered size and SHA-256) or an extracted `flower_photos/` folder
  with one sub-folder per class (any subset; not checksum-verified).
  """

  def _info(self) -> tfds.core.DatasetInfo:
    return self.dataset_info_from_configs(
        features=tfds.features.FeaturesDict({
            "image": self.image_feature(),
            "label": tfds.features.ClassLabel(names=_LABELS),
            "file_name": tfds.features.Text(),
            "attribution": tfds.features.Text(),
        }),
        supervised_keys=("image", "label"),
        homepage="https://www.tensorflow.org/tutorials/load_data/images",
        metadata=tfds.core.MetadataDict(),
    )

  def _find_source(self, dl_manager) -> epath.Path:
    try:
      manual_dir = dl_manager.manual_dir
    except AssertionError:  # No manual dir given, or it is empty.
      manual_dir = None
    if manual_dir and (manual_dir / _FOLDER).is_dir():
      print(f"Using the extracted {manual_dir / _FOLDER} (not checksum-verified).")
      return manual_dir / _FOLDER
    try:
      return dl_manager.download_and_extract(_URL) / _FOLDER
    except NonMatchingChecksumError as e:
      raise ValueError(
          f"flower_photos.tgz does not match its registered size and SHA-256 "
          f"(checksums/flowers_dataset.tsv): {e}\nReplace it with the original "
          f"archive from {_URL}, or put the extracted `flower_photos/` folder in "
          f"the manual dir instead.") from None
    except OSError as e:  # Includes the connection errors of an offline machine.
      raise ValueError(
          f"Could not download {_URL} ({type(e).__name__}: {e}).\n"
          f"{self.MANUAL_DOWNLOAD_INSTRUCTIONS}") from e

  def _candidates(self, source: epath.Path, report):
    for path in sorted(pathlib.Path(source).rglob("*")):
      if not path.is_file():
        continue
      rel = path.relative_to(source).as_posix()
      if path.name.startswith(".") or path.suffix.lower() not in images.IMAGE_SUFFIXES:
        report.ignored_files += 1
      elif path.parent.name not in _LABELS or path.parent.parent != pathlib.Path(source):
        report.skip(rel, f"not in one of the class folders {', '.join(_LABELS)}")
      else:
        yield rel, (str(path),), path.read_bytes()

  def _example_maker(self, source: epath.Path) -> "_FlowerExample":
    license_file = source / "LICENSE.txt"
    credits = parse_attributions(license_file.read_text("utf-8")) if license_file.exists() else {}
    return _FlowerExample(self.builder_config.image_size, credits)


@dataclasses.dataclass(frozen=True)
class _FlowerExample(photo_builder.ExampleMaker):
  credits: dict[str, str] = dataclasses.field(default_factory=dict)

  def fields(self, photo: photo_builder.Photo) -> dict[str, str]:
    return {
        "label": photo.folder,
        "file_name": photo.file_name,
        "attribution": self.credits.get(photo.file_name, ""),
    }

"""flowers_dataset: the TensorFlow flower photos, validated and training-ready."""

from __future__ import annotations

import dataclasses
import os
import socket
import urllib.parse
from collections.abc import Callable, Iterator

import tensorflow_datasets as tfds
from absl import logging
from etils import epath

from flowers_dataset.attributions import parse_attributions
from photo_datasets import tfds_private
from photo_datasets.archives import storage
from photo_datasets.building import builder, generation, scan_to_splits
from photo_datasets.catalog.build_report import BuildReport
from photo_datasets.photos import images
from photo_datasets.photos.records import Candidate, Photo, Span

_URL = "http://download.tensorflow.org/example_images/flower_photos.tgz"
# tf_flowers' label order, so label ids match it.
_LABELS = ("dandelion", "daisy", "tulips", "sunflowers", "roses")
_FOLDER = "flower_photos"
_ARCHIVE = "flower_photos.tgz"
# What the archive's LICENSE.txt says; goes to dataset_info.json, LICENSE and croissant.json of
# every build.
_LICENSE = (
    "Each photo: Creative Commons Attribution 2.0 (CC BY 2.0, "
    "https://creativecommons.org/licenses/by/2.0/), by its photographer, as the LICENSE.txt of "
    "TensorFlow's flower_photos.tgz states. The `attribution` feature holds each photo's credit "
    "line from that file (\"CC-BY by <author> - <url>\"; empty where it names none): credit the "
    "photographer wherever a photo is used.")
# Seconds to wait for download.tensorflow.org before saying the machine is offline
# (TFDS's own downloader retries for about 200 s; docs/building.md).
_REACH_TIMEOUT = 5


def _unreachable(url: str) -> OSError | None:
  """None when a TCP connection to the url's host opens, else the error."""
  parts = urllib.parse.urlsplit(url)
  try:
    socket.create_connection((parts.hostname, parts.port or 80), _REACH_TIMEOUT).close()
  except OSError as e:
    return e
  return None


def flickr_id(file_name: str) -> int | None:
  """The Flickr photo id that starts a file's name (`<id>_<secret>[_<size>].jpg`): Flickr
  numbers uploads in time, so it is the order a photographer's shots were uploaded in. None for
  another name."""
  head = file_name.rsplit("/", 1)[-1].split("_", 1)[0]
  return int(head) if head.isdigit() else None


class Builder(builder.PhotoBuilder[epath.Path]):
  """The 3,670 TensorFlow flower photos in 5 classes.

  The archive is downloaded from download.tensorflow.org and checked against its
  registered size and SHA-256; offline, it or its extracted folder is read from
  the manual dir (`MANUAL_DOWNLOAD_INSTRUCTIONS`). Configs: `224` (the default)
  or any other square size stores each photo centre-cropped and resized; `full`
  stores it at source size. Each example credits its photographer
  (`attribution`).

  Args:
    workers: processes for the per-photo work of a build (`PhotoBuilder`);
      TFDS's own arguments (`config`, `data_dir`, ...) as for any builder.

  `download_and_prepare` raises `ValueError` when the archive cannot be
  downloaded and none is at hand, or when it does not match its checksum,
  saying where to put it.
  """

  VERSION = tfds.core.Version("1.9.0")
  RELEASE_NOTES = {
      "1.0.0": "Initial release.",
      "1.1.0": "Splits may change: photos of one class close in their Flickr id (upload order) "
               "that show one scene now share one split (docs/splits.md); `metadata['series']` "
               "lists them.",
      "1.2.0": "Splits may change: series are found by colour and, where colour cannot decide, "
               "by keypoints that fit one geometry (docs/splits.md).",
      "1.3.0": "Splits may change: the keypoints of a photo much wider than high (or higher than "
               "wide) are found on at least 128 px of its shorter side, so its close-ups join it "
               "(docs/splits.md).",
      "1.4.0": "Splits may change: keypoints are found on 288 px of a photo's longer side, not "
               "224, and a zoom's inliers are judged by their spread in both shots, so a close-up "
               "of a plain dish, or of one side of the plate, joins its whole photo "
               "(docs/splits.md).",
      "1.5.0": "Same examples and splits as 1.4.0; the record files' bytes change: every record "
               "is serialised deterministically, so the same download gives the same files in "
               "every build, and the metadata keeps a fingerprint of them "
               "(`python -m photo_datasets.verify`; docs/building.md).",
      "1.6.0": "Splits may change: within the window of neighbours geometry decides: enough "
               "keypoints that fit one change of viewpoint (a homography) join two shots whatever "
               "their colours, so a second shot in other light or from another angle joins its "
               "first (docs/splits.md).",
      "1.7.0": "Splits may change, rarely: the near-copy hashes, the keypoints' resize and "
               "the colour overlaps are computed exactly, the same on every CPU, so a pair on the "
               "edge of a rule may fall on its other side (none of the sample's 100 photos did). "
               "The fingerprint covers the fields of dataset_info.json that "
               "readers read, so every fingerprint differs from 1.6.0's; Beam builds cut record "
               "files where local builds do; a scan saved by 1.6.0 is scanned again "
               "(docs/building.md).",
      "1.8.0": "Splits may change, rarely: a photo's colours are counted on a sample of its "
               "pixels and a homography is tried only where a similarity maps part of the scene "
               "(docs/splits.md#cost); the sample's 100 photos keep their splits. The series "
               "are found faster; a scan saved by 1.7.0 is scanned again.",
      "1.9.0": "Splits may change, rarely: a similarity's RANSAC draws only the samples that "
               "find the inliers a pair needs, and the homography is fitted by OpenCV's "
               "USAC_FAST (docs/splits.md#cost); the sample's 100 photos keep their splits. The "
               "series are found faster; a scan saved by 1.8.0 is scanned again.",
  }
  DOWNLOADS_ITS_SOURCE = True
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
        license=_LICENSE,
        metadata=tfds.core.MetadataDict(),
    )

  def _find_source(self, dl_manager: tfds.download.DownloadManager) -> epath.Path:
    manual_dir = scan_to_splits.manual_dir_or_none(dl_manager)
    if manual_dir and (manual_dir / _FOLDER).is_dir():
      logging.info("Using the extracted %s (not checksum-verified).", manual_dir / _FOLDER)
      return manual_dir / _FOLDER
    if not self._archive_at_hand(dl_manager, manual_dir) and (error := _unreachable(_URL)):
      raise ValueError(self._no_download_message(error, dl_manager))
    try:
      return dl_manager.download_and_extract(_URL) / _FOLDER
    except tfds_private.NonMatchingChecksumError as e:
      raise ValueError(
          f"{_ARCHIVE} does not match its registered size and SHA-256 "
          f"(checksums/flowers_dataset.tsv): {e}\nReplace it with the original "
          f"archive from {_URL}, or put the extracted `flower_photos/` folder in "
          f"the manual dir instead.") from None
    except OSError as e:  # Includes the connection errors of an offline machine.
      raise ValueError(self._no_download_message(e, dl_manager)) from e

  def _archive_at_hand(self, dl_manager: tfds.download.DownloadManager,
                       manual_dir: epath.Path | None) -> bool:
    """Whether TFDS can do without the network: the archive is in the manual
    dir or was downloaded before (where TFDS's download manager keeps it)."""
    if manual_dir and (manual_dir / _ARCHIVE).exists():
      return True
    registered = tfds_private.load_url_infos(self._checksums_path)[_URL]
    name = tfds_private.download_file_name(_URL, registered.checksum)
    download_dir = epath.Path(dl_manager.download_dir)
    return any((folder / name).exists() for folder in (download_dir / self.name, download_dir))

  def _no_download_message(self, error: Exception,
                          dl_manager: tfds.download.DownloadManager) -> str:
    default = os.path.join(os.fspath(dl_manager.download_dir), "manual")
    return (f"Could not download {_URL} ({type(error).__name__}: {error}).\n"
            f"Offline, put `{_ARCHIVE}` or an extracted `{_FOLDER}/` folder in a manual dir: the "
            f"folder given as `tfds build {self.name} --manual_dir DIR` (or "
            f"`download_config=tfds.download.DownloadConfig(manual_dir=DIR)`), or else TFDS's "
            f"default manual dir, {default}, which `tfds.load` also reads.\n"
            f"{self.MANUAL_DOWNLOAD_INSTRUCTIONS}")

  def _list_source(self, source: epath.Path, report: BuildReport) -> Iterator[Candidate]:
    root = os.fspath(source)
    files = [os.path.join(folder, name)
             for folder, _, names in storage.walk(root) for name in names]
    for path in sorted(files, key=lambda path: storage.relative(path, root).split("/")):
      rel = storage.relative(path, root)
      folder, _, name = rel.rpartition("/")
      if name.startswith(".") or os.path.splitext(name)[1].lower() not in images.IMAGE_SUFFIXES:
        report.ignored_files += 1
      elif folder not in _LABELS:
        report.skip(rel, f"not in one of the class folders {', '.join(_LABELS)}")
      else:
        yield Candidate(rel, (path,), span=Span(path))  # The worker reads it.

  def _series_order(self) -> Callable[[str], int | None]:
    return flickr_id

  def _example_maker(self, source: epath.Path) -> _FlowerExample:
    license_file = source / "LICENSE.txt"
    credits = parse_attributions(license_file.read_text("utf-8")) if license_file.exists() else {}
    return _FlowerExample(self.builder_config.image_size, credits)


@dataclasses.dataclass(frozen=True)
class _FlowerExample(generation.ExampleMaker):
  credits: dict[str, str] = dataclasses.field(default_factory=dict)

  def fields(self, photo: Photo) -> dict[str, str]:
    return {
        "label": photo.folder,
        "file_name": photo.file_name,
        "attribution": self.credits.get(photo.file_name, ""),
    }

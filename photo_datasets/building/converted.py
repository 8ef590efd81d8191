"""The stored images a sized config's first build converted in the scan, on disk until generation
asks."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable

from photo_datasets.building import worker_files
from photo_datasets.building.worker_files import Written
from photo_datasets.photos.images import Box
from photo_datasets.photos.records import Photo


class ConvertedImages:
  """Where the stored images of one sized config lie, from the scan until generation.

  The scan's workers convert each photo from their own decode and write the image into files
  of their own (`worker_files`) in a folder made for them inside `folder`, which `close`
  removes; generation's workers read the images back from there. With `make_record`, they write
  each photo's record instead (what the workers' writer stores: `writing.RecordMaker`), in
  which the image lies as it is: the writer takes the record (`take_record`), others the image
  within it (`take`). This process keeps a few numbers per photo: where its image and record
  lie, and the crop box it was converted with (`add`).

  Args:
    size: the config's image size in pixels, for which the images were converted.
    folder: the build's folder, inside which the images' folder is made.
    make_record: a photo's record from its stored image, made by the scan's workers; None for the
      images alone (TFDS's writers, which take examples, write the records).
  """

  def __init__(self, size: int, folder: str | os.PathLike[str],
               make_record: Callable[[Photo, bytes], bytes] | None = None):
    self.size = size
    self.folder = tempfile.mkdtemp(prefix="converted.", dir=folder)
    self.make_record = make_record
    self._index: dict[str, tuple[Written, Box | None, Written | None]] = {}

  def add(self, file_name: str, image: Written, box: Box | None,
          record: Written | None = None) -> None:
    self._index[file_name] = (image, box, record)

  def take(self, photo: Photo, size: int | None) -> Written | None:
    """Where the photo's stored image lies, if it was converted for `size` with the box
    the photo has now."""
    entry = self._index.get(photo.file_name)
    if entry is None or size != self.size or entry[1] != photo.box:
      return None
    return entry[0]

  def take_record(self, photo: Photo, size: int | None) -> Written | None:
    """Where the photo's record lies, if the scan made it from the image `take` gives."""
    return None if self.take(photo, size) is None else self._index[photo.file_name][2]

  def __len__(self) -> int:
    return len(self._index)

  def close(self) -> None:
    worker_files.close(self.folder)  # This process's, with one worker.
    shutil.rmtree(self.folder, ignore_errors=True)

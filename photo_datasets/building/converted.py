"""The stored images a sized config's first build converted in the scan, on disk until generation asks."""

from __future__ import annotations

import os
import tempfile

from photo_datasets.photos.images import Box
from photo_datasets.photos.records import Photo


class ConvertedImages:
  """The stored images of one sized config, converted by the scan from its own
  decode, on disk until generation asks for them.

  An unnamed temporary file in `folder` (the build's own): nothing is left
  behind, even when the build is killed. Its index keeps a few numbers per photo.
  """

  def __init__(self, size: int, folder: str | os.PathLike[str]):
    self.size = size
    self._file = tempfile.TemporaryFile(dir=folder)
    self._index: dict[str, tuple[int, int, Box | None]] = {}
    self._end = 0

  def add(self, file_name: str, image: bytes, box: Box | None) -> None:
    self._file.seek(self._end)
    self._file.write(image)
    self._index[file_name] = (self._end, len(image), box)
    self._end += len(image)

  def take(self, photo: Photo, size: int | None) -> bytes | None:
    """The photo's stored image, if it was converted for `size` with the box
    the photo has now."""
    entry = self._index.get(photo.file_name)
    if entry is None or size != self.size or entry[2] != photo.box:
      return None
    offset, length, _ = entry
    self._file.seek(offset)
    return self._file.read(length)

  def __len__(self) -> int:
    return len(self._index)

  def close(self) -> None:
    self._file.close()

"""The photo records: where a source file's bytes lie (`Span`), a file that may
be a photo (`Candidate`), and a valid photo as the scan learned it (`Photo`).

Plain data, no TensorFlow: the builders' listings make `Candidate`s, the scan
turns them into `Photo`s, generation and the build's statistics read those.
"""

from __future__ import annotations

import dataclasses

from photo_datasets.archives import zips
from photo_datasets.photos import images, splits


def class_folder(file_name: str) -> str:
  """The class folder of an example's `file_name` ("<...>/<class>/<file>")."""
  return file_name.rsplit("/", 2)[-2]


Box = images.Box
PixelBox = tuple[int, int, int, int]  # x, y, width, height in the stored pixels.


@dataclasses.dataclass(frozen=True)
class Span:
  """Where a file's bytes lie on disk, so that a worker reads them itself and
  the main process hands it a few numbers instead of the bytes: the whole file
  at `path`, or with `zip_method` set, the zip member whose local header
  starts at `offset` (`size` bytes as stored; stored or deflated), checked
  against its CRC-32 as `zipfile` does and never read or inflated past the
  `file_size` its zip's directory declares (-1 where not known:
  `zips.MAX_MEMBER_SIZE`)."""

  path: str
  offset: int = 0
  size: int = -1
  zip_method: int | None = None
  crc: int = 0
  file_size: int = -1

  def read(self) -> bytes:
    if self.zip_method is None:
      with open(self.path, "rb") as f:
        return f.read()
    return zips.read_member(self.path, self.offset, self.size, self.zip_method, self.crc,
                            self.file_size)


@dataclasses.dataclass(frozen=True)
class Candidate:
  """A source file that may be an image: its bytes, or where a worker reads them."""

  file_name: str  # Example key and `file_name` feature: "<...>/<class>/<file>".
  location: tuple[str, ...]  # How the builder's reader finds the bytes again.
  data: bytes = b""  # Read by the listing, where `span` is None.
  # Its crop box in stored pixels, from the listing: the scan decides the photo's box from it (`photo_box`).
  crop: PixelBox | None = None
  span: Span | None = None  # Read by the worker that scans it.

  def read(self) -> bytes:
    return self.data if self.span is None else self.span.read()


def photo_box(crop: PixelBox, check: images.ImageCheck) -> Box | None:
  """A crop box in stored pixels as a relative box on the upright image; None
  when nothing of it lies inside the image."""
  box = images.relative_box(crop, *check.stored_size)
  return None if box is None else images.upright_box(box, check.orientation)


@dataclasses.dataclass(frozen=True)
class Photo:
  """One valid source image, as learned by the scan."""

  file_name: str
  location: tuple[str, ...]
  digest: str  # SHA-256 of the source bytes.
  check: images.ImageCheck
  box: Box | None = None
  # The SHA-256 whose split the photo's group of near copies and series takes
  # (`splits.group_leader`); None for a photo in no group.
  group_digest: str | None = None
  span: Span | None = None  # Where its bytes lie: generation reads them there, without the builder's reader.
  nbytes: int = 0  # Size of the source file.
  # `quality.scores` of its scan pixels (flags in `quality.flag_rows`); not
  # hashed, as a dict cannot be.
  quality: dict[str, float] = dataclasses.field(default_factory=dict, hash=False)
  # `quality.moments` of its scan pixels: mean R, G, B and mean R², G², B² on
  # 0-255 (`quality.channel_stats`).
  moments: tuple[float, ...] = ()

  @property
  def split(self) -> str:
    return splits.split_of(self.group_digest or self.digest)

  @property
  def folder(self) -> str:
    return class_folder(self.file_name)

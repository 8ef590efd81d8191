"""The photo records: where a source file's bytes lie (`Span`), a file that may
be a photo (`Candidate`), and a valid photo as the scan learned it (`Photo`).

Plain data, no TensorFlow: the builders' listings make `Candidate`s, the scan
turns them into `Photo`s, generation and the build's statistics read those.
"""

from __future__ import annotations

import dataclasses

from photo_datasets.archives import storage, zips
from photo_datasets.photos import images, splits


def class_folder(file_name: str) -> str:
  """The class folder of an example's `file_name` ("<...>/<class>/<file>")."""
  return file_name.rsplit("/", 2)[-2]


Box = images.Box
PixelBox = tuple[int, int, int, int]  # x, y, width, height in the stored pixels.


@dataclasses.dataclass(frozen=True)
class Span:
  """Where a file's bytes lie on disk.

  A worker reads the bytes itself, so the main process hands it these few
  numbers instead of the bytes: the whole file at `path`, or with
  `zip_method` set, the zip member whose local header starts at `offset`
  (`size` bytes as stored; stored or deflated), checked against its CRC-32 as
  `zipfile` does and never read or inflated past the `file_size` its zip's
  directory declares (-1 where not known: `zips.MAX_MEMBER_SIZE`). `read()`
  returns the bytes, and raises `OSError` where the file cannot be read or the
  member is damaged (missing, truncated, larger than declared, a bad CRC-32).

  Attributes:
    path: the file, or the zip that holds the member.
    offset: where the member's local header starts in the zip.
    size: the member's bytes as stored in the zip.
    zip_method: `zipfile.ZIP_STORED` or `zipfile.ZIP_DEFLATED` for a zip
      member; None for a whole file.
    crc: the member's CRC-32, as its zip's directory declares it.
    file_size: the member's bytes once inflated, as its zip's directory
      declares them; -1 where not known.
  """

  path: str
  offset: int = 0
  size: int = -1
  zip_method: int | None = None
  crc: int = 0
  file_size: int = -1

  def read(self) -> bytes:
    if self.zip_method is None:
      return storage.read_bytes(self.path)
    return zips.read_member(self.path, self.offset, self.size, self.zip_method, self.crc,
                            self.file_size)


@dataclasses.dataclass(frozen=True)
class Candidate:
  """A source file that may be an image: its bytes, or where a worker reads them.

  A builder's listing makes one for every file it finds; the scan decodes it
  and turns it into a `Photo`, or skips it. `read()` returns `data`, or the
  bytes `span` reads.

  Attributes:
    file_name: the example key and `file_name` feature: "<...>/<class>/<file>".
    location: how the builder's reader finds the bytes again.
    data: the bytes, read by the listing, where `span` is None.
    crop: its crop box in stored pixels (x, y, width, height), from the
      listing; None for none.
    span: where the bytes lie, read by the worker that scans the file.
  """

  file_name: str  # Example key and `file_name` feature: "<...>/<class>/<file>".
  location: tuple[str, ...]  # How the builder's reader finds the bytes again.
  data: bytes = b""  # Read by the listing, where `span` is None.
  # Its crop box in stored pixels, from the listing: the scan decides the photo's box from it
  # (`photo_box`).
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
  """One valid source image, as learned by the scan.

  Generation and the build's statistics read these. `split` is the split the
  photo goes to (that of `group_digest`, else of `digest`), `folder` its class
  folder.

  Attributes:
    file_name: the example key and `file_name` feature: "<...>/<class>/<file>".
    location: how the builder's reader finds the bytes again.
    digest: the SHA-256 of the source bytes, in hex.
    check: what `images.decode_and_inspect` learned about the image.
    box: the crop box (ymin, xmin, ymax, xmax), relative to the upright image;
      None for none.
    group_digest: the SHA-256 whose split the photo's group of near copies and
      series takes; None for a photo in no group.
    span: where its bytes lie, so that generation reads them itself.
    nbytes: the size of the source file.
    quality: the scores of `quality.measure`.
    moments: the pixel moments of `quality.measure`.
  """

  file_name: str
  location: tuple[str, ...]
  digest: str  # SHA-256 of the source bytes.
  check: images.ImageCheck
  box: Box | None = None
  # The SHA-256 whose split the photo's group of near copies and series takes
  # (`splits.group_leader`); None for a photo in no group.
  group_digest: str | None = None
  # Where its bytes lie: generation reads them there, without the builder's reader.
  span: Span | None = None
  nbytes: int = 0  # Size of the source file.
  # The scores `quality.measure` gives for its scan pixels (flags in `build_stats.flag_rows`);
  # not hashed, as a dict cannot be.
  quality: dict[str, float] = dataclasses.field(default_factory=dict, hash=False)
  # The moments `quality.measure` gives for its scan pixels: mean R, G, B and mean R², G², B² on
  # 0-255 (`build_stats.channel_stats`).
  moments: tuple[float, ...] = ()

  @property
  def split(self) -> str:
    return splits.split_of(self.group_digest or self.digest)

  @property
  def folder(self) -> str:
    return class_folder(self.file_name)

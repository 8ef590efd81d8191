"""Generation: photos of one split turned into `(key, example)` pairs.

Every execution path goes through `convert_or_skip`: a photo that cannot be
read back or converted is skipped and reported, never a reason to stop.

* `generate_locally` (the default): the source is read in location order in
  this process and the conversions run on every core (`parallel`).
  A `LocalSplit` is that, and what `writing` needs to serialise and write the
  split's records on every core too.
* `beam_generation.ConvertSplit` (with `tfds build --beam_pipeline_options=...`):
  the same step as an Apache Beam transform.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from photo_datasets.archives import storage
from photo_datasets.building import parallel
from photo_datasets.building.converted import ConvertedImages
from photo_datasets.building.worker_files import Written
from photo_datasets.catalog.build_report import Skipped
from photo_datasets.photos import images
from photo_datasets.photos.records import Photo

Example = dict[str, Any]


class Reader(Protocol):
  """Reads a photo's bytes back from its `location`; a context manager, so it
  may keep archives open between reads made in location order."""

  def __enter__(self) -> Reader: ...

  def __exit__(self, *exc_info: object) -> None: ...

  def read(self, location: tuple[str, ...]) -> bytes: ...


class FileReader:
  """Reads sources whose location is a plain file path."""

  def __enter__(self) -> FileReader:
    return self

  def __exit__(self, *exc_info: object) -> None:
    pass

  def read(self, location: tuple[str, ...]) -> bytes:
    (path,) = location
    return storage.read_bytes(path)


@dataclasses.dataclass(frozen=True)
class ExampleMaker:
  """Turns one photo and its source bytes into an example of one config.

  Holds plain data only, so worker processes and Beam workers can run it. A
  builder subclasses it and adds its features in `fields`.
  """

  image_size: int | None  # The config's size; None stores the source size.

  def fields(self, photo: Photo) -> Example:
    """Every feature but `image`."""
    raise NotImplementedError

  def converts(self, photo: Photo) -> bool:
    """False when the stored image is the source itself (a clean JPEG in `full`)."""
    return self.image_size is not None or not photo.check.is_clean_jpeg

  def __call__(self, photo: Photo, data: bytes) -> Example:
    size = self.image_size
    # The crop box shapes sized images only; `full` keeps it as a feature.
    image = images.encode_image(data, photo.check, size=size, box=photo.box if size else None)
    return self.with_image(photo, image)

  def with_image(self, photo: Photo, image: bytes) -> Example:
    return {"image": image, **self.fields(photo)}


@dataclasses.dataclass(frozen=True)
class Converted:
  """A photo's stored image, converted already by the scan: where it lies."""

  image: Written


Source = bytes | Converted | Skipped  # What generation has of a photo before its conversion.


def read_or_skip(reader: Reader, photo: Photo) -> bytes | Skipped:
  try:
    return photo.span.read() if photo.span is not None else reader.read(photo.location)
  except Exception as e:  # The source changed or an archive member is damaged.
    return Skipped(photo.file_name, f"unreadable: {type(e).__name__}: {e}")


def convert_or_skip(make: ExampleMaker, photo: Photo,
                    data: Source) -> tuple[str, Example] | Skipped:
  """The one per-photo step of every execution path."""
  if isinstance(data, Skipped):
    return data
  if isinstance(data, Converted):
    try:
      image = data.image.read()
    except OSError as e:  # Removed or damaged since the scan.
      return Skipped(photo.file_name, f"unreadable: {type(e).__name__}: {e}")
    return photo.file_name, make.with_image(photo, image)
  try:
    return photo.file_name, make(photo, data)
  except Exception as e:  # Already validated: no single file may stop a build.
    return Skipped(photo.file_name, f"conversion failed: {e}")


@dataclasses.dataclass(frozen=True)
class _Convert:
  """`convert_or_skip` as a picklable task for the worker pool."""

  make: ExampleMaker

  def __call__(self, task: tuple[Photo, Source]) -> tuple[str, Example] | Skipped:
    return convert_or_skip(self.make, *task)

  def inline(self, task: tuple[Photo, Source]) -> bool:
    photo, data = task
    return isinstance(data, (Skipped, Converted)) or not self.make.converts(photo)


def crashed(task: tuple[Photo, Source]) -> Skipped:
  return Skipped(task[0].file_name,
                 "conversion killed the worker process (out of memory or a decoder crash)")


def generate_locally(
    photos: Sequence[Photo],
    make: ExampleMaker,
    reader: Reader,
    skipped: list[Skipped],
    *,
    workers: int,
    converted: ConvertedImages | None = None,
) -> Iterator[tuple[str, Example]]:
  """Yields the examples of `photos` (in location order), appending what was
  skipped to `skipped`. Photos in `converted` are neither read nor converted again."""
  convert = _Convert(make)

  def source(photo: Photo) -> Source:
    image = converted.take(photo, make.image_size) if converted is not None else None
    return Converted(image) if image is not None else read_or_skip(reader, photo)

  with reader:
    tasks = ((photo, source(photo)) for photo in photos)
    for result in parallel.ordered_map(
        convert, tasks, workers=workers, on_crash=crashed, inline=convert.inline,
        size=len(photos)):
      if isinstance(result, Skipped):
        skipped.append(result)
      else:
        yield result


@dataclasses.dataclass(frozen=True)
class LocalSplit:
  """A split generated on this machine: iterated, its examples (`generate_locally`,
  for TFDS's writer); or serialised and written by the workers (`writing`)."""

  photos: Sequence[Photo]  # In location order.
  make: ExampleMaker
  reader: Reader
  skipped: list[Skipped]  # Where the photos skipped go.
  workers: int
  converted: ConvertedImages | None = None

  def __iter__(self) -> Iterator[tuple[str, Example]]:
    return generate_locally(self.photos, self.make, self.reader, self.skipped, workers=self.workers,
                            converted=self.converted)

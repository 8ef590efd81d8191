"""A tar read in place: its members as byte runs of the tar file, and where a cut tar stops."""

from __future__ import annotations

import dataclasses
import os
import tarfile

from photo_datasets.archives.pieces import Extent

_BLOCK = 512


@dataclasses.dataclass(frozen=True)
class Cut:
  """Where a cut tar stops: in the data of `member` (`arrived` of its `size` bytes), or, with `member`
  None, in the header that follows `after` (the last whole member, None for none)."""

  tar_size: int
  member: str | None = None
  arrived: int = 0
  size: int = 0
  after: str | None = None


def read(path: str) -> tuple[list[tarfile.TarInfo], Cut | None]:
  """The members of the tar at `path` that start in it, and where it stops if it was cut: in a member's data, or
  in a header (bytes that are not the end-of-archive zeros after the last member)."""
  tar_size = os.path.getsize(path)
  found: list[tarfile.TarInfo] = []
  with tarfile.open(path, "r:") as tar:
    while True:
      try:
        member = tar.next()
      except tarfile.ReadError:  # "unexpected end of data": the tar ends in the member just read.
        break
      if member is None:
        break
      found.append(member)
  for member in found:
    if member.offset_data + member.size > tar_size:
      return found, Cut(tar_size, member.name, max(0, tar_size - member.offset_data), member.size)
  end = -(-(found[-1].offset_data + found[-1].size) // _BLOCK) * _BLOCK if found else 0
  with open(path, "rb") as f:
    f.seek(end)
    rest = f.read()
  if rest.strip(b"\0"):  # Part of a header where the end-of-archive zeros belong.
    return found, Cut(tar_size, after=found[-1].name if found else None)
  return found, None


def extent(path: str, member: tarfile.TarInfo, tar_size: int) -> Extent:
  """Where `member`'s data lies in the tar file at `path`: the bytes that are there, if the tar is cut in it."""
  return Extent(path, member.offset_data, max(0, min(member.size, tar_size - member.offset_data)))

"""A tar read in place: its members as byte runs of the tar file, as far as a cut tar goes."""

from __future__ import annotations

import tarfile
from collections.abc import Iterator

from photo_datasets.archives.pieces import Extent


def members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
  """The tar's members, up to where a cut tar ends."""
  while True:
    try:
      member = tar.next()
    except tarfile.ReadError:  # "unexpected end of data": the tar is cut in a member.
      return
    if member is None:
      return
    yield member


def extent(path: str, member: tarfile.TarInfo, tar_size: int) -> Extent:
  """Where `member`'s data lies in the tar file at `path`: the bytes that are there, if the tar is cut in it."""
  return Extent(path, member.offset_data, max(0, min(member.size, tar_size - member.offset_data)))

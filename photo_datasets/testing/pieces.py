"""A file split into pieces named by offset (`write_pieces`), a tar of them
(`write_tar`), a join in name order (`join_in_name_order`), and a ZIP64 archive
past 4 GiB as a sparse file (`sparse_zip64`: holes are not written, so the forms
of a 4 GiB archive cost megabytes of disk)."""


from __future__ import annotations

import functools
import io
import os
import pathlib
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Mapping, Sequence

from photo_datasets.testing.images import PathLike
from photo_datasets.testing.trees import DATE_TIME


def _copy_data(src: str, offset: int, size: int, dst: io.BufferedRandom | io.BufferedWriter,
               at: int) -> None:
  """Copies bytes [offset, offset + size) of `src` to `dst` at `at`, skipping
  the holes of a sparse file (they stay holes)."""
  with open(src, "rb") as f:
    pos, end = offset, offset + size
    while pos < end:
      try:
        data_at = os.lseek(f.fileno(), pos, os.SEEK_DATA)
      except OSError:  # Only a hole is left.
        break
      if data_at >= end:
        break
      hole_at = min(os.lseek(f.fileno(), data_at, os.SEEK_HOLE), end)
      f.seek(data_at)
      dst.seek(at + data_at - offset)
      for start in range(data_at, hole_at, 1 << 24):
        dst.write(f.read(min(1 << 24, hole_at - start)))
      pos = hole_at
  dst.flush()
  if os.fstat(dst.fileno()).st_size < at + size:  # It ends in a hole.
    dst.truncate(at + size)


def write_pieces(src: PathLike, folder: PathLike, piece_size: int,
                 name: str = "kfood.zip") -> list[pathlib.Path]:
  """`src` in pieces of `piece_size` bytes named by their starting offset, as
  AIHub sends them (`kfood.zip.part0`, `kfood.zip.part1073741824`, ...)."""
  folder = pathlib.Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  size, pieces = os.path.getsize(src), []
  for offset in range(0, size, piece_size):
    path = folder / f"{name}.part{offset}"
    with open(path, "wb") as out:
      _copy_data(os.fspath(src), offset, min(piece_size, size - offset), out, 0)
    pieces.append(path)
  return pieces


def write_tar(pieces: Sequence[pathlib.Path], tar_path: PathLike, folder: str) -> None:
  """`download.tar` as AIHub's API sends it: the pieces as members of `folder`,
  a 512-byte header before each (holes of sparse pieces stay holes)."""
  with open(tar_path, "wb") as out:
    at = 0
    for piece in pieces:
      info = tarfile.TarInfo(f"{folder}/{piece.name}")
      info.size, info.mtime, info.mode = os.path.getsize(piece), 1622548800, 0o644
      header = info.tobuf(format=tarfile.GNU_FORMAT)
      out.seek(at)
      out.write(header)
      _copy_data(os.fspath(piece), 0, info.size, out, at + len(header))
      at += len(header) + -(-info.size // 512) * 512
    out.seek(at)
    out.write(bytes(1024))  # The end-of-archive blocks.


def join_in_name_order(pieces: Sequence[pathlib.Path], out_path: PathLike) -> None:
  """The pieces joined in the text order of their names, as a shell glob lists them."""
  with open(out_path, "wb") as out:
    at = 0
    for piece in sorted(pieces, key=lambda p: p.name):
      size = os.path.getsize(piece)
      _copy_data(os.fspath(piece), 0, size, out, at)
      at += size


@functools.lru_cache(maxsize=4)
def _zeros_crc(size: int) -> int:
  crc, zeros = 0, bytes(1 << 26)
  for start in range(0, size, len(zeros)):
    crc = zlib.crc32(zeros[: min(len(zeros), size - start)], crc)
  return crc


def sparse_zip64(path: PathLike, padding: int, members: Mapping[str, bytes], *,
                 piece: int = 64 << 20) -> None:
  """A ZIP64 zip that starts with `padding` zero bytes, left as holes, in
  members `padding/NNNNN.bin` of `piece` bytes (a local header every `piece`
  bytes, as a real archive has them throughout), then `members` (stored) at
  offsets past them: the offsets of an archive past 4 GiB, on megabytes of disk."""
  local, central = struct.Struct("<4s5H3L2H"), struct.Struct("<4s6H3L5H2L")
  entries, at = [], 0
  with open(path, "wb") as f:
    for i, start in enumerate(range(0, padding, piece)):
      name = f"padding/{i:05d}.bin".encode()
      size = min(piece, padding - start)
      crc = _zeros_crc(size)
      f.seek(at)
      f.write(local.pack(b"PK\x03\x04", 20, 0, 0, 0, 0x21, crc, size, size, len(name), 0) + name)
      entries.append((name, crc, size, at))
      at += local.size + len(name) + size
    directory = b""
    for name, crc, size, offset in entries:
      extra = struct.pack("<2HQ", 1, 8, offset) if offset >= 0xFFFFFFFF else b""
      directory += central.pack(b"PK\x01\x02", 45, 45, 0, 0, 0, 0x21, crc, size, size, len(name),
                                len(extra), 0, 0, 0, 0o644 << 16,
                                min(offset, 0xFFFFFFFF)) + name + extra
    record = at + len(directory)
    f.seek(at)
    f.write(directory
            + struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, len(entries), len(entries),
                          len(directory), at)
            + struct.pack("<4sLQL", b"PK\x06\x07", 0, record, 1)
            + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF,
                          0xFFFFFFFF, 0xFFFFFFFF, 0))
  with zipfile.ZipFile(path, "a") as zf:
    for member, data in members.items():
      info = zipfile.ZipInfo(member, DATE_TIME)
      info.flag_bits |= 0x800 if not member.isascii() else 0
      zf.writestr(info, data)

"""The forms AIHub's download of kfood.zip arrives in, each read as it is.

AIHub's API (and aihubshell, which calls it) sends one `download.tar`; in it,
in a folder (e.g. `21.한국음식/`), the zip in 1 GiB pieces named by their
starting byte offset: `kfood.zip.part0`, `kfood.zip.part1073741824`, ...
What a user holds is then one of:

* the pieces, untarred, at any folder depth: read as one file in offset order;
* `download.tar` itself: the pieces read at their members' offsets in the tar;
* `kfood.zip` joined in name (text) order (a shell glob sorts the pieces
  as text; aihubshell's `sort -V` has been reported to do so on macOS): found from the zip's own
  structure, its pieces' order worked out, read as it is with a warning that
  gives the command repairing it in place (`python -m korean_food repair
  kfood.zip`);
* a cut transfer (aihubshell joins what arrived even when curl failed), or a
  missing or short piece: refused before any scan (`DownloadError`), naming
  what is missing and what arrived whole.

Nothing is joined, extracted or copied; every check reads a few hundred bytes
per piece or member, so it takes well under a second.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import re
import tarfile
from collections.abc import Iterable

from korean_food.names import decode_name
from photo_datasets.archives import pieces as pieced
from photo_datasets.archives import tars, zips

PIECE = re.compile(r"^(?P<base>.+\.zip)\.part(?P<offset>\d+)$", re.IGNORECASE)
DOWNLOAD_COMMAND = "aihubshell -mode d -datasetkey 79 -filekey 50036"
_MIN_PIECE, _MAX_PIECE = 1 << 20, 4 << 30
# Local headers checked per zip: all of the download's 27, a sample of each group zip's.
_CHECKED_MEMBERS, _CHECKED_GROUP_MEMBERS = 1000, 64


class DownloadError(ValueError):
  """The download is incomplete: refused before the scan, saying what to do."""


@dataclasses.dataclass(frozen=True)
class Archive:
  """A zip of the download read through its pieces, wherever they lie.

  `location` names it for `open_archive`: the first piece on disk, the first
  piece's member in a tar (`<tar>/<member>`), or a zip joined out of order.
  """

  location: str
  extents: tuple[pieced.Extent, ...]
  covers: tuple[str, ...]  # The files on disk it is read from.
  note: str = ""  # What was found, for the build's warnings.

  @property
  def size(self) -> int:
    return sum(e.size for e in self.extents)

  def open(self) -> pieced.PiecedFile:
    return pieced.PiecedFile(list(self.extents))


@dataclasses.dataclass(frozen=True)
class Download(os.PathLike[str]):
  """The manual dir with the download's zips found in it (`locate`): the
  builder's source, searched once per build and handed to the listing."""

  root: str
  archives: tuple[Archive, ...]

  def __fspath__(self) -> str:
    return self.root

  def __str__(self) -> str:
    return self.root


def locate(root: str | os.PathLike[str]) -> Download:
  """The manual dir `root` and its download's zips (`find`); raises `DownloadError` for an incomplete download."""
  return Download(os.fspath(root), tuple(find(root)))


def _is_download(f: zips.Seekable, size: int) -> bool:
  """A zip of zips, as kfood.zip holds the 27 group zips (a cut group zip is no download)."""
  members = itertools.islice(zips.local_members(f, size, decode_name), 1000)
  return any(name.lower().endswith(".zip") for name, _, _ in members)


def _problem_of(f: zips.Seekable, size: int) -> str | None:
  """None when the zip's directory agrees with its bytes, its group zips' own
  included (each piece of the download holds some of their records)."""
  return zips.nested_problem(f, size, decode_name, _CHECKED_MEMBERS, _CHECKED_GROUP_MEMBERS)


def _reads(f: zips.Seekable, size: int) -> bool:
  """A group zip whose directory agrees with its bytes."""
  return isinstance(zips.members(f, size, decode_name, _CHECKED_GROUP_MEMBERS), list)


def _whole_groups(f: zips.Seekable, size: int) -> list[str]:
  """The group zips of a cut download whose every byte arrived."""
  whole = []
  for name, start, csize in zips.local_members(f, size, decode_name):
    if start + csize > size:
      break
    if name.lower().endswith(".zip") and _reads(zips.Slice(f, start), csize):
      whole.append(name.rsplit("/", 1)[-1])
  return whole


# ---------------------------------------------------------------------------
# Pieces, on disk or in a tar.


@dataclasses.dataclass(frozen=True)
class _Piece:
  name: str  # As the user sees it: a path on disk, or `<tar>/<member>`.
  offset: int  # From its name.
  extent: pieced.Extent


def _check_pieces(base: str, pieces: list[_Piece]) -> None:
  """Each piece (in offset order) starts where the one before it ended; else name what is missing or short."""
  piece_size = pieces[0].extent.size if len(pieces) > 1 else 0
  problems, bad = [], set()
  expected = 0
  for i, piece in enumerate(pieces):
    while expected < piece.offset:  # Pieces missing before this one.
      end = min(expected + piece_size, piece.offset) if piece_size else piece.offset
      problems.append(f"{base}.part{expected} (bytes {expected:,}–{end - 1:,}) is missing")
      expected = end
    if piece.offset < expected:
      problems.append(f"{piece.name} overlaps the piece before it (it starts at byte {piece.offset:,}, "
                      f"the one before ends at byte {expected - 1:,})")
      bad.add(piece.name)
    following = pieces[i + 1].offset if i + 1 < len(pieces) else None
    should = min(piece_size, following - piece.offset) if following is not None else None
    if should is not None and piece.extent.size < should:
      problems.append(f"{piece.name} is short: {piece.extent.size:,} of its {should:,} bytes "
                      f"(bytes {piece.offset:,}–{piece.offset + should - 1:,})")
      bad.add(piece.name)
      expected = piece.offset + should
    else:
      expected = piece.offset + piece.extent.size
  if problems:
    fine = len(pieces) - len(bad)
    raise DownloadError(
        f"The download of {base} is incomplete: " + "; ".join(problems)
        + f". The other {fine} pieces are fine. Download the missing or short pieces again "
        f"({DOWNLOAD_COMMAND}, or AIHub's API), then build again.")


def _archive(location: str, base: str, pieces: list[_Piece], covers: tuple[str, ...]) -> Archive:
  _check_pieces(base, pieces)
  archive = Archive(location, tuple(p.extent for p in pieces), covers)
  _check_whole(archive, base, f"{len(pieces)} pieces in {os.path.dirname(location)}")
  return archive


@functools.lru_cache(maxsize=16)
def _problem(extents: tuple[pieced.Extent, ...], stamps: tuple[tuple[int, int], ...]) -> str | None:
  """`_agrees` of the extents read as one file, once per state of the files (`stamps`)."""
  with pieced.PiecedFile(list(extents)) as f:
    return _problem_of(f, f.size)


def _stamps(paths: Iterable[str]) -> tuple[tuple[int, int], ...]:
  return tuple((os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in paths)


def _check_whole(archive: Archive, name: str, form: str) -> None:
  problem = _problem(archive.extents, _stamps(sorted({e.path for e in archive.extents})))
  if problem is None:
    return
  if problem.startswith("no end record"):
    with archive.open() as f:
      raise DownloadError(_cut_message(name, form, archive.size, _whole_groups(f, archive.size)))
  raise DownloadError(f"{name} ({form}, {archive.size:,} bytes): the pieces fit by their names, but the zip "
                      f"does not: {problem}. Download it again ({DOWNLOAD_COMMAND}).")


def _cut_message(name: str, form: str, size: int, whole: list[str]) -> str:
  arrived = (f"The group zips that arrived whole: {', '.join(whole)} ({len(whole)} of 27)."
             if whole else "No group zip arrived whole.")
  return (f"{name} ({form}) ends at {size:,} bytes without the zip's end record: the transfer was cut "
          f"(the whole kfood.zip is about 16 GB). Download it again ({DOWNLOAD_COMMAND}); if you "
          f"called AIHub's API yourself and kept download.tar, `curl -C -` with the same request "
          f"continues it where it stopped, if the server allows. {arrived}")


def _in_offset_order(groups: dict[str, list[_Piece]]) -> dict[str, list[_Piece]]:
  """Each zip's pieces in offset order: the one place they are ordered."""
  return {base: sorted(pieces, key=lambda p: p.offset) for base, pieces in sorted(groups.items())}


def _disk_pieces(folder: str) -> dict[str, list[_Piece]]:
  """The pieces in `folder` by zip name, in offset order."""
  groups: dict[str, list[_Piece]] = {}
  for name in os.listdir(folder):
    match = PIECE.match(name)
    path = os.path.join(folder, name)
    if match and os.path.isfile(path):
      groups.setdefault(match["base"], []).append(
          _Piece(path, int(match["offset"]), pieced.Extent(path, 0, os.path.getsize(path))))
  return _in_offset_order(groups)


def _tar_pieces(path: str) -> dict[str, list[_Piece]]:
  """Pieces in the tar by `<folder>/<base>`, in offset order, each read at its
  member's offset. A member cut short by the end of the file keeps the bytes that are there."""
  size = os.path.getsize(path)
  groups: dict[str, list[_Piece]] = {}
  with tarfile.open(path, "r:") as tar:
    for member in tars.members(tar):
      folder, _, name = member.name.rpartition("/")
      match = PIECE.match(name)
      if match and member.isfile():
        key = f"{folder}/{match['base']}" if folder else match["base"]
        groups.setdefault(key, []).append(_Piece(f"{path}/{member.name}", int(match["offset"]),
                                                 tars.extent(path, member, size)))
  return _in_offset_order(groups)


def is_tar(name: str) -> bool:
  return name.lower().endswith(".tar")


def find(root: str | os.PathLike[str]) -> list[Archive]:
  """Every zip under `root` held as pieces, in a tar or joined in name order,
  checked; raises `DownloadError` for an incomplete download. A second copy
  of one zip (a tar and its untarred pieces) gets no extents, and a note."""
  plain: dict[tuple[str, int], str] = {}  # (name, size) -> a zip on disk that reads in place.
  archives: list[Archive] = []  # Joined out of order, then pieces on disk, then in tars.
  from_pieces: list[Archive] = []
  for folder, dirs, files in os.walk(os.fspath(root)):
    dirs.sort()
    for base, pieces in _disk_pieces(folder).items():
      from_pieces.append(_archive(pieces[0].name, base, pieces, tuple(sorted(p.name for p in pieces))))
    for name in sorted(files):
      path = os.path.join(folder, name)
      if name.lower().endswith(".zip"):
        joined = examine(path)
        if joined:
          archives.append(joined)
        else:
          plain.setdefault((name.lower(), os.path.getsize(path)), path)
      elif is_tar(name) and tarfile.is_tarfile(path):
        for group, pieces in _tar_pieces(path).items():
          from_pieces.append(_archive(pieces[0].name, group.rsplit("/", 1)[-1], pieces, (path,)))
  read: dict[tuple[str, int], str] = dict(plain)
  kept = []
  for archive in archives + from_pieces:
    key = (zip_name(archive.location).lower(), archive.size)
    if key in read:  # The tar and the pieces untarred from it, say.
      archive = dataclasses.replace(archive, extents=(), note=(
          f"{archive.location} holds the same {zip_name(archive.location)} as {read[key]}: read once"))
    else:
      read[key] = archive.location
    kept.append(archive)
  return kept


# ---------------------------------------------------------------------------
# A zip joined in name order, or cut.


def _end_record_at(path: str, size: int, piece_size: int) -> int:
  """Where the end record (without a comment) lies in a name-order join of this piece size."""
  offsets = pieced.text_order(size, piece_size)
  last = offsets.index((size - 1) // piece_size * piece_size)
  return size - zips.END.size - (len(offsets) - 1 - last) * piece_size


@functools.lru_cache(maxsize=256)
def _examine(path: str, size: int, mtime_ns: int) -> Archive | str | None:
  """A zip on disk: None when it reads in place, an `Archive` when it is a
  name-order join, else why it cannot be read (a `DownloadError` message
  when it is the download cut short)."""
  with open(path, "rb") as f:
    problem = zips.members(f, size, decode_name, _CHECKED_GROUP_MEMBERS)
    if not isinstance(problem, str):
      return None
    if zips.read_at(f, 0, 4) != zips.LOCAL_SIGNATURE:
      return problem
    for piece_size in pieced.piece_sizes(size, _MIN_PIECE, _MAX_PIECE):
      if zips.read_at(f, _end_record_at(path, size, piece_size), 4) != zips.END_SIGNATURE:
        continue
      extents = pieced.joined_in_text_order(path, size, piece_size)
      if _problem_of(pieced.PiecedFile(extents), size) is None:
        name = os.path.basename(path)
        count = len(extents)
        return Archive(path, tuple(extents), (path,), note=(
            f"{path} is the download's {count} pieces of {pieced.size_in_words(piece_size)} joined in name order "
            f"(as text, {name}.part10737418240 sorts before {name}.part2147483648): its bytes are all there, "
            f"and the build reads it in the right order as it is. Other tools cannot open it; "
            f"`python -m korean_food repair {path}` puts it in order in place (no extra disk)."))
    if _is_download(f, size):
      raise DownloadError(_cut_message(path, "joined", size, _whole_groups(f, size)))
  return problem


def forget(path: str) -> None:
  """Forgets what `examine` learned of files (`path` was changed in place)."""
  _examine.cache_clear()


def examine(path: str) -> Archive | None:
  """A zip on disk that does not read in place: its `Archive` if it is a
  name-order join; None when it reads in place or is no zip of the download
  (a junk or broken group zip, skipped by the listing). Raises
  `DownloadError` for the download cut short."""
  stat = os.stat(path)
  found = _examine(path, stat.st_size, stat.st_mtime_ns)
  return found if isinstance(found, Archive) else None


def zip_name(location: str) -> str:
  """The name of the zip an `Archive.location` reads: `kfood.zip` for its pieces."""
  name = os.path.basename(location)
  match = PIECE.match(name)
  return match["base"] if match else name


def open_archive(location: str) -> str | pieced.PiecedFile:
  """The zip named by a file's first location (`Archive.location`, or a zip on
  disk, given back as its path)."""
  if os.path.isfile(location):
    match = PIECE.match(os.path.basename(location))
    if match:
      return pieced.PiecedFile([p.extent for p in _disk_pieces(os.path.dirname(location))[match["base"]]])
    archive = examine(location)
    return archive.open() if archive else location
  tar, member = location, ""
  while tar and not os.path.isfile(tar):
    tar, _, last = tar.rpartition("/")
    member = f"{last}/{member}" if member else last
  folder, _, name = member.rpartition("/")
  match = PIECE.match(name)
  if not (tar and is_tar(tar) and match):
    raise FileNotFoundError(location)
  key = f"{folder}/{match['base']}" if folder else match["base"]
  return pieced.PiecedFile([p.extent for p in _tar_pieces(tar)[key]])

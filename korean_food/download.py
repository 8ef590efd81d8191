"""The forms AIHub's download of kfood.zip arrives in, each read as it is.

AIHub's API (and aihubshell, which calls it) sends one `download.tar`; in it,
in a folder (e.g. `21.한국음식/`), the zip in 1 GiB pieces named by their
starting byte offset: `kfood.zip.part0`, `kfood.zip.part1073741824`, ...
What a user holds is then one of:

* the pieces, untarred, at any folder depth: read as one file in offset order;
* `download.tar` itself: the pieces read at their members' offsets in the
  tar, in whatever order it holds them;
* `kfood.zip` joined in name (text) order (a shell glob sorts the pieces as
  text; aihubshell's `sort -V` has been reported to do so on macOS): its
  pieces' order worked out from its bytes (`name_order`), read as it is with
  a warning that gives the command repairing it in place (`repair`);
* a cut transfer (aihubshell joins what arrived even when curl failed), or a
  missing or short piece: refused before any scan (`DownloadError`), naming
  what is missing and what arrived whole (`incomplete`);
* a `download.tar` with a damaged header: the pieces after it found again;
  refused, naming the damage, only where a piece is lost with it.

Nothing is joined, extracted or copied; the checks read a few hundred bytes
per piece or member (a name-order join of an unusual piece size is read once).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Iterable

from korean_food import incomplete, name_order
from korean_food.incomplete import DOWNLOAD_COMMAND as DOWNLOAD_COMMAND
from korean_food.incomplete import DownloadError as DownloadError
from korean_food.names import decode_name
from photo_datasets.archives import pieces as pieced
from photo_datasets.archives import storage, tars, zips

PIECE = re.compile(r"^(?P<base>.+\.zip)\.part(?P<offset>\d+)$", re.IGNORECASE)


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


# A folder of the manual dir and the names of the files in it.
Folder = tuple[str, tuple[str, ...]]


@dataclasses.dataclass(frozen=True)
class Download(os.PathLike[str]):
  """The manual dir, its folders and the download's zips found in them
  (`locate`): the builder's source, walked once per build and handed to the
  listing (`corpus.walk`)."""

  root: str
  archives: tuple[Archive, ...]
  folders: tuple[Folder, ...]  # Every folder, subfolders in name order, its files sorted.

  def __fspath__(self) -> str:
    return self.root

  def __str__(self) -> str:
    return self.root


def locate(root: str | os.PathLike[str]) -> Download:
  """Finds AIHub's download in the manual dir `root`, in any form it arrives in.

  Walks `root` once and checks each zip of the download held in pieces, in a
  `download.tar` or joined in name order (the forms this module's docstring
  lists); nothing is joined, extracted or copied.

  Args:
    root: the manual dir, holding the download in any form and at any depth.

  Returns:
    A `Download`: `root`, its folders (subfolders in name order, files sorted)
    and the download's zips as `Archive`s, for `corpus.walk`. A second copy of
    one zip (a tar and its untarred pieces) is read once.

  Raises:
    DownloadError: the download is incomplete (a cut transfer, a missing or
      short piece, a piece lost with a damaged `download.tar` header); the
      message names what is missing and what arrived whole.
  """
  folders = []
  for folder, dirs, files in storage.walk(root):
    dirs.sort()
    folders.append((folder, tuple(sorted(files))))
  return Download(os.fspath(root), tuple(_archives(folders)), tuple(folders))


# ---------------------------------------------------------------------------
# Pieces, on disk or in a tar.


def _archive(location: str, base: str, pieces: list[incomplete.Piece],
             covers: tuple[str, ...]) -> Archive:
  incomplete.check_pieces(base, pieces)
  archive = Archive(location, tuple(p.extent for p in pieces), covers)
  incomplete.check_whole(archive.extents, base,
                         f"{len(pieces)} pieces in {os.path.dirname(location)}")
  return archive


def _in_offset_order(groups: dict[str, list[incomplete.Piece]],
                     ) -> dict[str, list[incomplete.Piece]]:
  """Each zip's pieces in offset order: the one place they are ordered."""
  return {base: sorted(pieces, key=lambda p: p.offset) for base, pieces in sorted(groups.items())}


def _disk_pieces(folder: str,
                 names: Iterable[str] | None = None) -> dict[str, list[incomplete.Piece]]:
  """The pieces among the files `names` of `folder` (default: all), by zip name, in offset order."""
  groups: dict[str, list[incomplete.Piece]] = {}
  for name in storage.listdir(folder) if names is None else names:
    match = PIECE.match(name)
    path = os.path.join(folder, name)
    if match and storage.is_file(path):
      groups.setdefault(match["base"], []).append(incomplete.Piece(
          path, int(match["offset"]), pieced.Extent(path, 0, storage.size(path))))
  return _in_offset_order(groups)


def _tar_pieces(path: str) -> tuple[dict[str, list[incomplete.Piece]], tars.Listing]:
  """Pieces in the tar by `<folder>/<base>`, in offset order, each read at its
  member's offset, whatever the members' order; and what `tars.read` found
  (where the tar stops if it was cut, where it is damaged)."""
  listing = tars.read(path)
  cut = listing.cut
  groups: dict[str, list[incomplete.Piece]] = {}
  for member in listing.members:
    folder, _, name = member.name.rpartition("/")
    match = PIECE.match(name)
    if match and member.isfile():
      key = f"{folder}/{match['base']}" if folder else match["base"]
      extent = tars.extent(path, member, cut.tar_size if cut else member.offset_data + member.size)
      groups.setdefault(key, []).append(
          incomplete.Piece(f"{path}/{member.name}", int(match["offset"]), extent))
  return _in_offset_order(groups), listing


def _tar_archives(path: str) -> list[Archive]:
  """The zips held in pieces in the tar at `path`, checked; raises
  `DownloadError` for a cut tar, and for a damaged one that lost a piece. A tar
  of which no header can be read holds none."""
  groups, listing = _tar_pieces(path)
  if listing.cut:
    raise incomplete.cut_tar(path, groups, listing.cut)
  archives = []
  for group, pieces in groups.items():
    try:
      archive = _archive(pieces[0].name, group.rsplit("/", 1)[-1], pieces, (path,))
    except DownloadError as e:
      if listing.damage:
        raise incomplete.damaged_tar(path, listing.damage, e) from None
      raise
    if listing.damage:  # Every piece was found all the same.
      archive = dataclasses.replace(archive, note=(
          f"{path} has " + "; ".join(map(str, listing.damage))
          + f". Every piece of {zip_name(archive.location)} was found all the same, and the "
          f"build reads it."))
    archives.append(archive)
  return archives


def is_tar(name: str) -> bool:
  return name.lower().endswith(".tar")


def _archives(folders: Iterable[Folder]) -> list[Archive]:
  """Every zip in `folders` held as pieces, in a tar or joined in name order,
  checked; raises `DownloadError` for an incomplete download. A second copy
  of one zip (a tar and its untarred pieces) gets no extents, and a note."""
  plain: dict[tuple[str, int], str] = {}  # (name, size) -> a zip on disk that reads in place.
  archives: list[Archive] = []  # Joined out of order, then pieces on disk, then in tars.
  from_pieces: list[Archive] = []
  for folder, files in folders:
    for base, pieces in _disk_pieces(folder, files).items():
      from_pieces.append(_archive(pieces[0].name, base, pieces,
                                  tuple(sorted(p.name for p in pieces))))
    for name in files:
      path = os.path.join(folder, name)
      if name.lower().endswith(".zip"):
        joined = examine(path)
        if joined:
          archives.append(joined)
        else:
          plain.setdefault((name.lower(), storage.size(path)), path)
      elif is_tar(name):
        from_pieces += _tar_archives(path)
  read: dict[tuple[str, int], str] = dict(plain)
  kept = []
  for archive in archives + from_pieces:
    key = (zip_name(archive.location).lower(), archive.size)
    if key in read:  # The tar and the pieces untarred from it, say.
      archive = dataclasses.replace(archive, extents=(), note=(
          f"{archive.location} holds the same {zip_name(archive.location)} as {read[key]}: "
          "read once"))
    else:
      read[key] = archive.location
    kept.append(archive)
  return kept


# ---------------------------------------------------------------------------
# A zip joined in name order, or cut.


@functools.lru_cache(maxsize=256)
def _examine(path: str, size: int, mtime_ns: int) -> Archive | str | None:
  """A zip on disk: None when it reads in place, an `Archive` when it is a
  name-order join, else why it cannot be read (a `DownloadError` message
  when it is the download cut short)."""
  with storage.open_binary(path) as f:
    problem = zips.members(f, size, decode_name, incomplete.CHECKED_GROUP_MEMBERS)
    if not isinstance(problem, str):
      # Its own directory agrees; where its group zips' do not, its last piece may have stayed
      # last in a name-order join. Else it reads in place, a damaged group zip skipped.
      if incomplete.problem_of(f, size) is None:
        return None
      joined = name_order.find_join(f, path, size, end_in_place=True)
      return Archive(path, tuple(joined[0]), (path,), note=joined[1]) if joined else None
    if zips.read_at(f, 0, 4) != zips.LOCAL_SIGNATURE:
      return problem
    joined = name_order.find_join(f, path, size)
    if joined:
      return Archive(path, tuple(joined[0]), (path,), note=joined[1])
    # Cut: no end record at its end, or its members run to its very end (a group zip's own end
    # record last). Else damaged where it lies (a local header, say): read in place, its damaged
    # group zips skipped.
    if incomplete.is_download(f, size) and (problem.startswith("no end record")
                                            or incomplete.runs_to_end(f, size)):
      raise incomplete.DownloadError(incomplete.cut_message(path, "joined", size,
                                                            incomplete.whole_groups(f, size)))
  return problem


def forget(path: str) -> None:
  """Forgets what `examine` learned of files (`path` was changed in place)."""
  _examine.cache_clear()


def examine(path: str) -> Archive | None:
  """A zip on disk that does not read in place: its `Archive` if it is a
  name-order join; None when it reads in place or is no zip of the download
  (a junk or broken group zip, skipped by the listing). Raises
  `DownloadError` for the download cut short."""
  found = _examine(path, *storage.stamp(path))
  return found if isinstance(found, Archive) else None


def zip_name(location: str) -> str:
  """The name of the zip an `Archive.location` reads: `kfood.zip` for its pieces."""
  name = os.path.basename(location)
  match = PIECE.match(name)
  return match["base"] if match else name


def open_archive(location: str) -> str | pieced.PiecedFile:
  """The zip named by a file's first location (`Archive.location`, or a zip on
  disk, given back as its path)."""
  if storage.is_file(location):
    match = PIECE.match(os.path.basename(location))
    if match:
      return pieced.PiecedFile(
          [p.extent for p in _disk_pieces(os.path.dirname(location))[match["base"]]])
    archive = examine(location)
    return archive.open() if archive else location
  tar, member = location, ""
  while tar and not storage.is_file(tar):
    tar, _, last = tar.rpartition("/")
    member = f"{last}/{member}" if member else last
  folder, _, name = member.rpartition("/")
  match = PIECE.match(name)
  if not (tar and is_tar(tar) and match):
    raise FileNotFoundError(location)
  key = f"{folder}/{match['base']}" if folder else match["base"]
  return pieced.PiecedFile([p.extent for p in _tar_pieces(tar)[0][key]])

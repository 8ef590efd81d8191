"""An incomplete download, named from the bytes that arrived: missing and short
pieces, a transfer cut (a cut zip, cut pieces, a cut `download.tar` whatever
its members' order), a `download.tar` whose damaged header lost a piece, and
the group zips that arrived whole all the same."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Iterable, Sequence

from korean_food.names import decode_name
from photo_datasets.archives import pieces as pieced
from photo_datasets.archives import storage, tars, zips

DOWNLOAD_COMMAND = "aihubshell -mode d -datasetkey 79 -filekey 50036"
# Local headers checked per zip: all of the download's 27, a sample of each group zip's.
_CHECKED_MEMBERS, CHECKED_GROUP_MEMBERS = 1000, 64


class DownloadError(ValueError):
  """The download is incomplete: refused before the scan, saying what to do.

  Raised (as `korean_food.download.DownloadError`) for a cut transfer, a
  missing or short piece, or a `download.tar` whose damaged header lost a
  piece. Its message names what is missing or where the transfer stopped, the
  group zips that arrived whole, and the command that downloads it again.
  """


def is_download(f: zips.Seekable, size: int) -> bool:
  """A zip of zips, as kfood.zip holds the 27 group zips (a cut group zip is no download)."""
  members = itertools.islice(zips.local_members(f, size, decode_name), 1000)
  return any(name.lower().endswith(".zip") for name, _, _ in members)


def runs_to_end(f: zips.Seekable, size: int) -> bool:
  """The zip's members follow each other from its start to its very end, or
  past it: what arrived of a cut transfer, where a zip's directory would
  follow them."""
  last = None
  for member in zips.local_members(f, size, decode_name):
    last = member
  return last is not None and last[1] + last[2] >= size


def problem_of(f: zips.Seekable, size: int) -> str | None:
  """None when the zip's directory agrees with its bytes, its group zips' own
  included (each piece of the download holds some of their records)."""
  return zips.nested_problem(f, size, decode_name, _CHECKED_MEMBERS, CHECKED_GROUP_MEMBERS)


def _reads(f: zips.Seekable, size: int) -> bool:
  """A group zip whose directory agrees with its bytes."""
  return isinstance(zips.members(f, size, decode_name, CHECKED_GROUP_MEMBERS), list)


def whole_groups(f: zips.Seekable, size: int) -> list[str]:
  """The group zips of a cut download whose every byte arrived."""
  whole = []
  for name, start, csize in zips.local_members(f, size, decode_name):
    if start + csize > size:
      break
    if name.lower().endswith(".zip") and _reads(zips.Slice(f, start), csize):
      whole.append(name.rsplit("/", 1)[-1])
  return whole


@dataclasses.dataclass(frozen=True)
class Piece:
  name: str  # As the user sees it: a path on disk, or `<tar>/<member>`.
  offset: int  # From its name.
  extent: pieced.Extent


def check_pieces(base: str, pieces: list[Piece]) -> None:
  """Each piece (in offset order) starts where the one before it ended; else name what is
  missing or short."""
  # Pieces are named by offset: a multiple of their size.
  piece_size = math.gcd(*(p.offset for p in pieces))
  problems, bad = [], set()
  expected = 0
  for i, piece in enumerate(pieces):
    while expected < piece.offset:  # Pieces missing before this one.
      end = min(expected + piece_size, piece.offset) if piece_size else piece.offset
      problems.append(f"{base}.part{expected} (bytes {expected:,}–{end - 1:,}) is missing")
      expected = end
    if piece.offset < expected:
      problems.append(f"{piece.name} overlaps the piece before it (it starts at byte "
                      f"{piece.offset:,}, the one before ends at byte {expected - 1:,})")
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


@functools.lru_cache(maxsize=16)
def _problem(extents: tuple[pieced.Extent, ...], stamps: tuple[tuple[int, int], ...]) -> str | None:
  """`problem_of` of the extents read as one file, once per state of the files (`stamps`)."""
  with pieced.PiecedFile(list(extents)) as f:
    return problem_of(f, f.size)


def _stamps(paths: Iterable[str]) -> tuple[tuple[int, int], ...]:
  return tuple(storage.stamp(p) for p in paths)


def check_whole(extents: tuple[pieced.Extent, ...], name: str, form: str) -> None:
  """The zip read through `extents` is whole; else name what is wrong (a cut transfer: what
  arrived whole)."""
  problem = _problem(extents, _stamps(sorted({e.path for e in extents})))
  if problem is None:
    return
  with pieced.PiecedFile(list(extents)) as f:
    if problem.startswith("no end record"):
      raise DownloadError(cut_message(name, form, f.size, whole_groups(f, f.size)))
    raise DownloadError(f"{name} ({form}, {f.size:,} bytes): the pieces fit by their names, "
                        f"but the zip does not: {problem}. Download it again "
                        f"({DOWNLOAD_COMMAND}).")


def cut_message(name: str, form: str, size: int, whole: list[str]) -> str:
  arrived = (f"The group zips that arrived whole: {', '.join(whole)} ({len(whole)} of 27)."
             if whole else "No group zip arrived whole.")
  return (f"{name} ({form}) ends at {size:,} bytes without the zip's end record: the "
          f"transfer was cut (the whole kfood.zip is about 16 GB). Download it again "
          f"({DOWNLOAD_COMMAND}); if you called AIHub's API yourself and kept download.tar, "
          f"`curl -C -` with the same request continues it where it stopped, if the server "
          f"allows. {arrived}")


def cut_tar(path: str, groups: dict[str, list[Piece]], cut: tars.Cut) -> DownloadError:
  """A cut tar named as such, whatever its members' order: where it stops, the pieces that
  arrived whole, and the group zips whole in the bytes that arrived in one run from the zip's
  start."""
  where = (f"in its member {cut.member} ({cut.arrived:,} of its {cut.size:,} bytes)" if cut.member
           else f"in the header after {cut.after}" if cut.after else "in its first header")
  whole = [p.name.rsplit("/", 1)[-1] for pieces in groups.values() for p in pieces
           if not (cut.member and p.name.endswith("/" + cut.member))]
  arrived = f"The pieces that arrived whole: {', '.join(whole)} ({len(whole)})." if whole else ""
  run: list[pieced.Extent] = []
  for pieces in groups.values():
    for piece in pieces:
      if piece.offset != sum(e.size for e in run):
        break
      run.append(piece.extent)
  groups_line = ""
  if run:
    with pieced.PiecedFile(run) as f:
      found = whole_groups(f, f.size)
    groups_line = (f" The group zips that arrived whole: {', '.join(found)} ({len(found)} of 27)."
                   if found else " No group zip arrived whole.")
  return DownloadError(
      f"{path} is cut: it ends at byte {cut.tar_size:,}, {where}, so the transfer was cut "
      f"(the whole download is about 16 GB). {arrived} Download it again "
      f"({DOWNLOAD_COMMAND}); if you called AIHub's API yourself, `curl -C -` with the same "
      f"request continues download.tar where it stopped, if the server allows."
      + groups_line)


def damaged_tar(path: str, damage: Sequence[tars.Damage], problem: DownloadError) -> DownloadError:
  """A tar whose damaged headers lost a piece: the damage named, then what the
  pieces lack (`problem`)."""
  return DownloadError(f"{path} is damaged: " + "; ".join(map(str, damage))
                       + f"; a piece was lost with it. {problem}")

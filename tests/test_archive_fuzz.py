"""Damaged archives, fuzzed with Hypothesis: `photo_datasets/archives/` and the
Korean food download finder and listing (`download.locate`, `listing.CorpusListing`).

Small real archives, made here from bundled flower photos (a group zip
stored and deflated, zips that `zipfile` writes with ZIP64 records past 2 and
4 GiB as sparse files, kfood.zip as a zip of group zips, its pieces, a join of
them in name order, its download.tar), are cut, bit-flipped and edited field
by field where the format keeps its structure: end records, ZIP64 records,
central and local headers, extra fields, tar headers. Whatever the bytes, only
the package's own answers come out (a member list or a problem in words, a
skip or warning in the build report, `DownloadError`, a worker's `OSError`).
And the photos are kept: each member or photo read is one the archive held,
byte for byte; each whose bytes, and the structure of every zip around it,
the damage left alone is read as it was (unless the download is refused, or
a name-order join whose structure disagrees is read as the zip it looks like);
a download damaged in its photos' data alone is read, not refused; and a
photo lost shows in the report. Memory, measured over each call, stays within
`_MEMORY`: a declared size of 4 GiB is never allocated, a sparse archive
never read whole.

Hypothesis profiles: `photo_datasets_ci` (the default) runs a bounded,
derandomized number of examples, the same in every run;
`PHOTO_DATASETS_FUZZ=long` runs twenty times as many, each run with fresh
examples. What the fuzzer found is kept at the end as named regression tests.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import itertools
import os
import pathlib
import struct
import tarfile
import tempfile
import tracemalloc
import zipfile
from collections.abc import Iterable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from korean_food import download, listing
from korean_food.names import decode_name, member_name
from photo_datasets import testing
from photo_datasets.archives import tars, zips
from photo_datasets.archives.pieces import ReadOnlyView
from photo_datasets.catalog.build_report import BuildReport

REPO = pathlib.Path(__file__).resolve().parents[1]
FLOWERS = REPO / "flowers_dataset" / "sample" / "flower_photos"

# Examples per profile, as a multiple of each test's count in CI. CI sees the same examples in every
# run (derandomized); a longer run sees new ones each time.
_EXAMPLES = {"photo_datasets_ci": 1, "photo_datasets_long": 20}
for _name in _EXAMPLES:
  settings.register_profile(_name, deadline=None, database=None,
                            derandomize=_name == "photo_datasets_ci",
                            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                   HealthCheck.function_scoped_fixture])
_LONG = os.environ.get("PHOTO_DATASETS_FUZZ") == "long"
_PROFILE = "photo_datasets_long" if _LONG else "photo_datasets_ci"


def fuzz(examples: int) -> settings:
  """The profile's settings with `examples` examples in CI, scaled for a longer run."""
  return settings(settings.get_profile(_PROFILE), max_examples=examples * _EXAMPLES[_PROFILE])


# Well above what one call holds for these archives of kilobytes (a file's tail, a directory, a
# photo, a chunk of a tar, and what a first call imports and caches), and far below the gigabytes
# of hole before the ZIP64 archives: an archive read or mapped whole, a member of tens of MiB held,
# or a lying size allocated before its bytes are found missing shows.
_MEMORY = 32 << 20


@contextlib.contextmanager
def bounded_memory() -> Iterator[None]:
  """Fails where the block holds `_MEMORY` or more at once, measured over the
  block alone, two ways, as each sees what the other cannot: tracemalloc's
  peak of Python's allocations (zlib's included; an allocation of a lying size
  counts whole, though no page of it is ever touched), and, where Linux lets
  the process's peak RSS be reset, that peak's growth (memory outside Python's
  allocators: a file mapped and read). `getrusage`'s peak would not do: it is
  the process's lifetime peak, blind to a block below an earlier test's."""
  rss_before = _reset_peak_rss()
  tracemalloc.start()
  try:
    yield
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  assert peak < _MEMORY, f"{peak:,} bytes allocated at once"
  if rss_before is not None:
    grown = _status_bytes("VmHWM") - rss_before
    assert grown < _MEMORY, f"the process's peak RSS grew {grown:,} bytes"


def _status_bytes(field: str) -> int:
  with open("/proc/self/status", "rb") as f:
    line = next(line for line in f if line.startswith(field.encode() + b":"))
  return int(line.split()[1]) << 10  # In kB.


def _reset_peak_rss() -> int | None:
  """The process's RSS, its peak (`VmHWM`, and `getrusage`'s) reset to it
  (Linux's `clear_refs`); None where that cannot be done (another system, or a
  kernel that refuses): tracemalloc's measure stands alone then."""
  try:
    with open("/proc/self/clear_refs", "w") as f:
      f.write("5")
    return _status_bytes("VmRSS")
  except (OSError, StopIteration):
    return None


# ---------------------------------------------------------------------------
# The archives fuzzed, each made once.


def _small_flowers(count: int) -> list[bytes]:
  smallest = sorted(FLOWERS.glob("*/*.jpg"), key=lambda p: (p.stat().st_size, p.name))[:count]
  return [p.read_bytes() for p in smallest]


GRILLED = "구이/갈비구이"
SOUP = "국/미역국"


def _group(folder: str, photos: list[bytes], first: int) -> dict[str, bytes]:
  return {f"{folder}/Img_{first:03d}_{i:04d}.jpg": data for i, data in enumerate(photos)}


@dataclasses.dataclass(frozen=True)
class Base:
  """An archive to damage: its bytes, after `prefix` bytes of hole in a sparse
  file, and where its structures lie (what, start, end) in `data`."""

  name: str
  data: bytes
  regions: tuple[tuple[str, int, int], ...]
  prefix: int = 0


def _zip_regions(data: bytes, at: int = 0, prefix: int = 0) -> list[tuple[str, int, int]]:
  """Where the structures of the zip in `data[at:]` lie (of a zip `zipfile`
  reads), stored zips in it included."""
  regions = []
  with zipfile.ZipFile(_Prefixed(data[at:], prefix)) as zf:
    end = data.rfind(zips.END_SIGNATURE)
    regions.append(("end record", end, len(data)))
    if data[end - 20:end - 16] == b"PK\x06\x07":
      regions.append(("ZIP64 end records", end - 76, end))
    central = zf.start_dir - prefix + at
    for info in zf.infolist():
      local = info.header_offset - prefix + at
      name_len, extra_len = struct.unpack_from("<2H", data, local + 26)
      start = local + 30 + name_len + extra_len
      regions.append(("local header", local, start))
      if extra_len:
        regions.append(("local extra field", start - extra_len, start))
      c_name, c_extra, c_comment = struct.unpack_from("<3H", data, central + 28)
      regions.append(("central header", central, central + 46 + c_name + c_extra + c_comment))
      if c_extra:
        extra = central + 46 + c_name
        regions.append(("central extra field", extra, extra + c_extra))
      central += 46 + c_name + c_extra + c_comment
      if info.filename.endswith(".zip") and info.compress_type == zipfile.ZIP_STORED:
        regions += _zip_regions(data[:start + info.compress_size], start)
  return regions


class _Prefixed(ReadOnlyView):
  """`data` after `prefix` zero bytes, as a file: a zip written far into a
  sparse file, without the hole on disk."""

  def __init__(self, data: bytes, prefix: int):
    super().__init__(prefix + len(data))
    self._data, self._prefix = data, prefix

  def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
    at = self._pos - self._prefix
    n = min(len(buffer), self.size - self._pos)
    data = bytes(min(n, -at)) if at < 0 else self._data[at:at + n]
    buffer[:len(data)] = data
    self._pos += len(data)
    return len(data)


def _base(name: str, data: bytes, prefix: int = 0) -> Base:
  return Base(name, data, tuple(_zip_regions(data, 0, prefix)), prefix)


def _zip64_past(gib: int, members: dict[str, bytes]) -> Base:
  """A zip as `zipfile` writes it `gib` GiB into a file: ZIP64 end records,
  with the classic values normal under 4 GiB (and full past it), and ZIP64
  extra fields for offsets past 2 GiB."""
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "zip64.zip")
    with open(path, "wb") as f:
      f.seek(gib << 30)
      with zipfile.ZipFile(f, "w") as zf:
        for name, data in members.items():
          zf.writestr(zipfile.ZipInfo(name, testing.DATE_TIME), data,
                      compress_type=zipfile.ZIP_DEFLATED)
    with open(path, "rb") as f:
      f.seek(gib << 30)
      data = f.read()
  return _base(f"zip64 past {gib} GiB", data, gib << 30)


# Made once, and not handed to the tests as arguments: Hypothesis would print them with each
# failing example.
@functools.cache
def photos() -> dict[str, dict[str, bytes]]:
  small = _small_flowers(4)
  crops = testing.properties(["Img_000_0000=1,2,30,20", "Img_000_0001=bad"])
  return {"구이": {**_group(GRILLED, small[:2], 0), f"{GRILLED}/crop_area.properties": crops},
          "국": _group(SOUP, small[2:], 17)}


@functools.cache
def zip_bases() -> list[Base]:
  grilled = photos()["구이"]
  groups = {f"{group}.zip": testing.zip_bytes(members, "utf-8", dirs=False)
            for group, members in photos().items()}
  return [
      _base("stored group zip", testing.zip_bytes(grilled)),
      _base("deflated group zip", testing.zip_bytes(grilled, compression=zipfile.ZIP_DEFLATED)),
      _zip64_past(3, grilled),
      _zip64_past(5, grilled),
      _base("kfood.zip", testing.zip_bytes(groups, "utf-8", dirs=False)),
  ]


# ---------------------------------------------------------------------------
# Damage.

# Values that make a field lie: empty, full (ZIP64's marker), past 2 and 4 GiB, a ZIP64 tag
# claiming 16 bytes, a ZIP64 locator's signature.
_FIELD_VALUES = [b"\x00" * 4, b"\xff" * 4, b"\xff\xff", b"\x00\x00", struct.pack("<L", 1 << 31),
                 struct.pack("<Q", 4 << 30), struct.pack("<Q", 1 << 63), b"\x01\x00\x10\x00",
                 b"PK\x06\x07"]


Edit = tuple[str, int, bytes]  # ("cut", at, b"") or ("put", at, bytes there).


@st.composite
def edits(draw: st.DrawFn, size: int, regions: tuple[tuple[str, int, int], ...]) -> list[Edit]:
  """One to three cuts, bit flips or overwritten fields of a file of `size`
  bytes, mostly where a structure lies (a flip is drawn as the bits it
  flips)."""
  out: list[Edit] = []
  for _ in range(draw(st.integers(1, 3))):
    kind = draw(st.sampled_from(["flip", "field", "cut"]))
    if kind == "cut":
      out.append(("cut", draw(st.integers(0, size)), b""))
      continue
    what, start, end = draw(st.sampled_from([*regions, ("anywhere", 0, size)]))
    at = draw(st.integers(start, max(start, end - 1)))
    if kind == "flip":
      out.append(("flip", at, bytes([1 << draw(st.integers(0, 7))])))
    else:
      value = draw(st.sampled_from(_FIELD_VALUES) | st.binary(min_size=1, max_size=8))
      out.append(("put", at, value))
  return out


def damaged(data: bytes, damage: list[Edit]) -> bytes:
  out = bytearray(data)
  for kind, at, value in damage:
    if kind == "cut":
      del out[at:]
    elif at < len(out):
      if kind == "flip":
        out[at] ^= value[0]
      else:
        out[at:at + len(value)] = value[:len(out) - at]
  return bytes(out)


def _write(path: pathlib.Path, data: bytes, prefix: int = 0) -> None:
  with open(path, "wb") as f:
    f.seek(prefix)  # A hole: the offsets of an archive past 2 or 4 GiB, on kilobytes of disk.
    f.write(data)


Reads = dict[str, list[bytes]]  # Name -> the bytes each member or candidate of that name gave.


def check_zip(path: pathlib.Path) -> Reads:
  """Everything `zips` does with a zip, on one that may be damaged: only
  answers come out, and a worker's read raises `OSError` at most. Returns
  the members read."""
  size = os.path.getsize(path)
  reads: Reads = {}
  with open(path, "rb") as f:
    assert isinstance(zips.members(f, size, decode_name, 64), list | str)
    assert isinstance(zips.nested_problem(f, size, decode_name, 1000, 64), str | None)
    list(zips.local_members(f, size, decode_name))
    opened = zips.open_zip(f, size, decode_name)
    if isinstance(opened, str):
      return reads
    zf, left_out = opened
    assert all(isinstance(name, str) and why for name, why in left_out)
    with zf:
      for info in zf.infolist():
        if info.compress_type in zips.READABLE_METHODS:
          with contextlib.suppress(OSError):  # A damaged member: the scan skips it.
            reads.setdefault(member_name(info), []).append(zips.read_member(
                os.fspath(path), info.header_offset, info.compress_size, info.compress_type,
                info.CRC, info.file_size))
  return reads


@dataclasses.dataclass(frozen=True)
class Listed:
  """What the build's listing gave: the photos read, each as a worker reads it
  where it can; the candidates whose read raised `OSError` (the scan skips
  them, with the message); the report."""

  photos: Reads
  unreadable: list[str]
  report: BuildReport


def listed(root: pathlib.Path) -> Listed | None:
  """The photos the build would scan from `root` and its report; None where
  the download is refused (`DownloadError`)."""
  try:
    source = download.locate(root)
  except download.DownloadError as e:
    assert str(e)
    return None
  report = BuildReport()
  photos: Reads = {}
  unreadable = []
  for candidate in listing.CorpusListing(source, report):
    try:
      photos.setdefault(candidate.file_name, []).append(candidate.read())
    except OSError:  # A damaged member: the scan skips it with this message.
      unreadable.append(candidate.file_name)
  return Listed(photos, unreadable, report)


# ---------------------------------------------------------------------------
# What an archive holds, and what of it a damage leaves intact.


@dataclasses.dataclass(frozen=True)
class Layout:
  """What lies where in an archive's bytes `data`: its leaves (the members
  that are no stored zip: photos, crop files, folders) by name, with their
  bytes and the zip holding each (-1 the outermost, -2 - k the k-th stored
  zip in it), and where its name lies in its zip's directory; `owner[i]`:
  the leaf whose local header or data holds byte i (its index in `leaves`),
  else the zip whose structure does; `in_data[i]`: byte i is a leaf's data."""

  data: bytes
  leaves: dict[str, bytes]
  zip_of: dict[str, int]
  name_at: dict[str, tuple[int, int]]
  owner: np.ndarray
  in_data: np.ndarray

  @property
  def photos(self) -> dict[str, bytes]:
    return {name: data for name, data in self.leaves.items() if name.endswith(".jpg")}

  def intact(self, after: bytes) -> set[str]:
    """The leaves whose every byte `after` keeps, and the structure of every
    zip around them: what it changed lies in other leaves, which no read of
    these looks at."""
    touched = set(self.owner[_changed(self.data, after)].tolist())
    return {name for i, name in enumerate(self.leaves)
            if not touched & {i, -1, self.zip_of[name]}}

  def renamed(self, after: bytes) -> set[str]:
    """The leaves whose name in their zip's directory `after` changed."""
    changed = _changed(self.data, after)
    return {name for name, (start, end) in self.name_at.items()
            if ((changed >= start) & (changed < end)).any()}

  def in_data_only(self, after: bytes) -> bool:
    """`after` changes nothing but leaves' data: no header, directory or end record."""
    return bool(self.in_data[_changed(self.data, after)].all())


def layout(data: bytes, prefix: int = 0, nested: bool = True) -> Layout:
  """The layout of the zip `data` (after `prefix` bytes of hole); with
  `nested`, of the stored zips in it too, else those are its leaves."""
  owner = np.full(len(data), -1, np.int32)
  in_data = np.zeros(len(data), bool)
  leaves: dict[str, bytes] = {}
  zip_of: dict[str, int] = {}
  name_at: dict[str, tuple[int, int]] = {}
  inner_zips = itertools.count(2)

  def walk(at: int, end: int, hole: int, zip_code: int) -> None:
    with zipfile.ZipFile(_Prefixed(data[at:end], hole)) as zf:
      central = zf.start_dir - hole + at
      for info in zf.infolist():
        name_len, extra_len, comment_len = struct.unpack_from("<3H", data, central + 28)
        name = (central + 46, central + 46 + name_len)
        central = name[1] + extra_len + comment_len
        local = info.header_offset - hole + at
        name_len, extra_len = struct.unpack_from("<2H", data, local + 26)
        start = local + 30 + name_len + extra_len
        stop = start + info.compress_size
        if nested and info.filename.endswith(".zip") and info.compress_type == zipfile.ZIP_STORED:
          inner = -next(inner_zips)
          owner[local:stop] = inner
          walk(start, stop, 0, inner)
        else:
          owner[local:stop] = len(leaves)
          in_data[start:stop] = True
          leaves[member_name(info)] = zf.read(info)
          zip_of[member_name(info)] = zip_code
          name_at[member_name(info)] = name

  walk(0, len(data), prefix, -1)
  return Layout(data, leaves, zip_of, name_at, owner, in_data)


def _changed(before: bytes, after: bytes) -> np.ndarray:
  """Where `after` changed `before` or lacks its bytes; at its last byte too
  where `after` is longer (its end record is no longer at the end)."""
  size = len(before)
  n = min(size, len(after))
  found = np.flatnonzero(np.frombuffer(before, np.uint8, n) != np.frombuffer(after, np.uint8, n))
  if len(after) != size:
    found = np.concatenate([found, np.arange(n, size), [size - 1] if len(after) > size else []])
  return found.astype(np.intp)


def _count(what: str) -> None:
  """A line of `--hypothesis-show-statistics`: how many examples reach a case."""
  with contextlib.suppress(InvalidArgument):  # Not in a Hypothesis test.
    event(what)


def assert_read(reads: Reads, originals: dict[str, bytes], intact: Iterable[str]) -> None:
  """Nothing read is wrong and nothing intact is lost: each read gives the
  bytes of one of `originals` (a damaged member raises: its size and CRC-32
  are checked), and each of `intact` is read as it was, under its name."""
  values = list(originals.values())
  for name, got in reads.items():
    assert all(data in values for data in got), f"{name}: bytes that no member held"
  intact = sorted(intact)
  _count(f"intact, so read as they were: {len(intact)}")
  lost = [name for name in intact if originals[name] not in reads.get(name, [])]
  assert not lost, f"intact but not read: {lost}"


def assert_kept(found: Listed, originals: dict[str, bytes], intact: Iterable[str],
                renamed: Iterable[str] = ()) -> None:
  """`assert_read` of the listing's photos, and no photo lost without a word:
  a photo not read as it was goes with a skip in the report, a read that
  raised (the scan skips it, saying why), or a name that no photo had (its
  entry's name damaged: the folder or junk rules take it). Not a photo whose
  name the damage changed in its zip's directory: `zipfile` ends a name at a
  NUL, and a name ending in "/" is a folder's, which the walker passes over."""
  assert_read(found.photos, originals, intact)
  assert all(skip.reason for skip in found.report.skipped_files)
  lost = sorted(name for name, data in originals.items()
                if data not in found.photos.get(name, []) and name not in renamed)
  shown = (found.report.skipped_files or found.unreadable or found.report.ignored_files
           or found.photos.keys() - originals.keys())
  assert not lost or shown, f"lost without a word: {lost}"


# ---------------------------------------------------------------------------
# Zips, one at a time, and as a group zip beside an intact one.


@functools.cache
def base_layout(index: int, nested: bool = True) -> Layout:
  base = zip_bases()[index]
  return layout(base.data, base.prefix, nested)


@fuzz(1000)
@given(data=st.data())
def test_any_damage_to_a_zip_gives_an_answer_in_bounded_memory(data):
  index = data.draw(st.integers(0, len(zip_bases()) - 1), label="base")
  base = zip_bases()[index]
  damaged_bytes = damaged(base.data, data.draw(edits(len(base.data), base.regions), label="edits"))
  with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp) / "damaged.zip"
    _write(path, damaged_bytes, base.prefix)
    with bounded_memory():
      reads = check_zip(path)
  members = base_layout(index, nested=False)  # kfood.zip's members: its group zips.
  # Where its own end record is damaged, `zipfile` may take a stored zip's for it: that zip's
  # members are read then, as they are.
  held = {**base_layout(index).leaves, **members.leaves}
  assert_read(reads, held, members.intact(damaged_bytes))


@fuzz(500)
@given(data=st.data())
def test_a_damaged_group_zip_costs_no_photo_of_the_zip_beside_it(data):
  index = data.draw(st.integers(0, 3), label="base")
  base = zip_bases()[index]
  damaged_bytes = damaged(base.data, data.draw(edits(len(base.data), base.regions), label="edits"))
  with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp)
    _write(root / "구이.zip", damaged_bytes, base.prefix)
    (root / "국.zip").write_bytes(testing.zip_bytes(photos()["국"]))
    with bounded_memory():
      found = listed(root)
  assert found is not None  # A group zip is no download: never refused.
  grilled, soup = base_layout(index).photos, _jpgs(photos()["국"])
  intact = (base_layout(index).intact(damaged_bytes) & grilled.keys()) | soup.keys()
  assert_kept(found, {**grilled, **soup}, intact, base_layout(index).renamed(damaged_bytes))


def _jpgs(members: dict[str, bytes]) -> dict[str, bytes]:
  return {name: data for name, data in members.items() if name.endswith(".jpg")}


def read_as_they_are(members: dict[str, bytes]) -> Reads:
  """The photos among `members`, each read once, as it is."""
  return {name: [photo] for name, photo in _jpgs(members).items()}


# ---------------------------------------------------------------------------
# The download: kfood.zip in pieces, joined in name order, in download.tar.

# Small enough that the pieces' names sort differently as text, as AIHub's 1 GiB pieces do.
_PIECE = 4096


def kfood() -> Base:
  return zip_bases()[-1]


def damaged_pieces(data: st.DataObject, base: Base) -> dict[str, bytes]:
  """kfood.zip's pieces (`kfood.zip.part<offset>`) after damage to the zip,
  then to a piece: one gone, cut or misnamed."""
  zip_edits = []
  if data.draw(st.booleans(), label="zip damaged"):
    zip_edits = data.draw(edits(len(base.data), base.regions), label="edits")
  zipped = damaged(base.data, zip_edits)
  pieces = {f"kfood.zip.part{at}": zipped[at:at + _PIECE] for at in range(0, len(zipped), _PIECE)}
  if not pieces:
    return pieces
  name = data.draw(st.sampled_from(sorted(pieces)), label="piece")
  what = data.draw(st.sampled_from(["none", "gone", "cut", "misnamed"]), label="what")
  if what == "gone":
    del pieces[name]
  elif what == "cut":
    pieces[name] = pieces[name][:data.draw(st.integers(0, len(pieces[name])), label="cut at")]
  elif what == "misnamed":
    offset = data.draw(st.integers(0, len(zipped) + _PIECE), label="offset")
    pieces[f"kfood.zip.part{offset}"] = pieces.pop(name)
  return pieces


@functools.cache
def kfood_layout() -> Layout:
  return layout(kfood().data)


def assert_download_kept(found: Listed | None, zipped: bytes, whole: bool,
                         join: bool = False) -> None:
  """What the listing kept of a download whose kfood.zip, as its form holds
  it, is `zipped` (`whole`: the form itself is undamaged, every piece there
  and in place): nothing refused or lost where only photos' data is damaged
  (each such photo skipped); else refused, or every intact photo read
  (`assert_kept`). With `join`, the form is a name-order join: its order is
  found only where its structure agrees (a warning says so); else it is read
  as the zip it looks like, its damage reported, and no photo in it is intact."""
  kfood_zip = kfood_layout()
  readable = whole and kfood_zip.in_data_only(zipped)
  _count("only photos' data damaged" if readable else "refused" if found is None else "read")
  if found is None:
    assert not readable, "refused, though only photos' data is damaged"
    return
  if not zipped:  # Nothing arrived: no file, or nothing in one.
    assert not found.photos
    return
  intact = kfood_zip.intact(zipped) & kfood_zip.photos.keys()
  if join and not any("joined in name order" in w for w in found.report.warnings):
    assert not readable, "a name-order join whose structure agrees, not read in order"
    intact = set()
  assert_kept(found, kfood_zip.photos, intact, kfood_zip.renamed(zipped))


def _offset(piece: str) -> int:
  return int(piece.rsplit(".part", 1)[1])


@fuzz(400)
@given(data=st.data())
def test_any_damage_to_the_pieces_is_read_or_refused(data):
  pieces = damaged_pieces(data, kfood())
  with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp)
    testing.write_tree(root / "21.한국음식", pieces)
    with bounded_memory():
      found = listed(root)
  # The zip the pieces hold, read in offset order as the package reads them where it takes them.
  zipped = b"".join(pieces[name] for name in sorted(pieces, key=_offset))
  whole = pieces == {f"kfood.zip.part{at}": zipped[at:at + _PIECE]
                     for at in range(0, len(zipped), _PIECE)}
  assert_download_kept(found, zipped, whole)


@fuzz(300)
@given(data=st.data())
def test_any_damage_to_a_name_order_join_is_read_or_refused(data):
  base = kfood()
  damaged_bytes = damaged(base.data, data.draw(edits(len(base.data), base.regions), label="edits"))
  pieces = {at: damaged_bytes[at:at + _PIECE] for at in range(0, len(damaged_bytes), _PIECE)}
  joined = b"".join(pieces[at] for at in sorted(pieces, key=str))
  with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp)
    (root / "kfood.zip").write_bytes(joined)
    with bounded_memory():
      found = listed(root)
  assert_download_kept(found, damaged_bytes, whole=True, join=True)


def _tar(pieces: dict[str, bytes], folder: str = "21.한국음식") -> bytes:
  with tempfile.TemporaryDirectory() as tmp:
    written = []
    for name, data in pieces.items():
      (pathlib.Path(tmp) / name).write_bytes(data)
      written.append(pathlib.Path(tmp) / name)
    testing.write_tar(written, pathlib.Path(tmp) / "download.tar", folder)
    return (pathlib.Path(tmp) / "download.tar").read_bytes()


def _members(tar: bytes) -> list[tarfile.TarInfo]:
  with tarfile.open(fileobj=io.BytesIO(tar)) as opened:
    return opened.getmembers()


@functools.cache
def download_tar() -> tuple[bytes, list[int]]:
  """download.tar of kfood.zip's pieces, and where its headers are."""
  data = kfood().data
  tar = _tar({f"kfood.zip.part{at}": data[at:at + _PIECE] for at in range(0, len(data), _PIECE)})
  return tar, [member.offset for member in _members(tar)]


@functools.cache
def tar_pieces() -> tuple[tuple[tuple[int, int], ...], np.ndarray]:
  """Where download.tar holds each piece's bytes, (start, size) in offset
  order, and which of its bytes are pieces' bytes."""
  tar, _ = download_tar()
  members = sorted(_members(tar), key=lambda member: _offset(member.name))
  in_data = np.zeros(len(tar), bool)
  for member in members:
    in_data[member.offset_data:member.offset_data + member.size] = True
  return tuple((member.offset_data, member.size) for member in members), in_data


# Header fields (offset, length) and what a lying one may say: a name, a size past the tar (octal,
# and base-256 as GNU tar writes sizes of 8 GiB and more), a type (long name, pax, sparse,
# directory), the magic.
_TAR_FIELDS = {
    (0, 100): [b"x" * 100, b"\0" * 100],
    (124, 12): [b"77777777777\0", b"\x80" + (1 << 36).to_bytes(11, "big"), b"00000001000\0"],
    (156, 1): [b"L", b"x", b"S", b"5", b"g", b"K"],
    (257, 8): [b"\0" * 8, b"ustar\x0000"],
}


def damaged_tar(data: st.DataObject, tar: bytes, headers: list[int]) -> bytes:
  """download.tar cut, bit-flipped or edited: a header field changed with its
  checksum made right again (a header that lies), or anything, anywhere."""
  if data.draw(st.booleans(), label="anywhere"):
    regions = tuple(("tar header", h, h + 512) for h in headers)
    return damaged(tar, data.draw(edits(len(tar), regions), label="edits"))
  out = bytearray(tar)
  for _ in range(data.draw(st.integers(1, 2), label="fields")):
    header = data.draw(st.sampled_from(headers), label="header")
    (at, length), values = data.draw(st.sampled_from(list(_TAR_FIELDS.items())), label="field")
    out[header + at:header + at + length] = data.draw(st.sampled_from(values), label="value")
    out[header + 148:header + 156] = b" " * 8
    out[header + 148:header + 156] = b"%06o\0 " % sum(out[header:header + 512])
  return bytes(out)


@fuzz(600)
@given(data=st.data())
def test_any_damage_to_download_tar_is_read_or_refused(data):
  tar, headers = download_tar()
  damaged_bytes = damaged_tar(data, tar, headers)
  with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp)
    (root / "download.tar").write_bytes(damaged_bytes)
    with bounded_memory():
      members = tars.read(os.fspath(root / "download.tar"))
      assert all(str(damage) for damage in members.damage)
      found = listed(root)
  # The zip the pieces hold where the tar held them, as the package reads it wherever it takes
  # the tar; the form is whole where only pieces' bytes changed.
  where, in_data = tar_pieces()
  zipped = b"".join(damaged_bytes[start:start + size] for start, size in where)
  assert_download_kept(found, zipped, whole=bool(in_data[_changed(tar, damaged_bytes)].all()))


@fuzz(200)
@given(data=st.data())
def test_one_damaged_tar_header_loses_its_member_only(data):
  tar, headers = download_tar()
  victim = data.draw(st.sampled_from(range(len(headers))), label="header")
  at = data.draw(st.integers(0, 511), label="byte")
  out = bytearray(tar)
  out[headers[victim] + at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
  with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp) / "download.tar"
    path.write_bytes(bytes(out))
    with bounded_memory():
      found = tars.read(os.fspath(path))
      download_found = listed(path.parent)
  block = bytes(out[headers[victim]:headers[victim] + 512])
  try:  # A flip after the checksum's terminating NUL leaves a header `tarfile` reads.
    tarfile.TarInfo.frombuf(block, tarfile.ENCODING, "surrogateescape")
    lost = []
  except tarfile.HeaderError:
    lost = [headers[victim]]
  every = [(m.offset, m.name, m.offset_data, m.size) for m in _members(tar)]
  assert [(m.offset, m.name, m.offset_data, m.size) for m in found.members] == [
      member for member in every if member[0] not in lost]
  assert [d.at for d in found.damage] == lost and found.cut is None
  # Each header holds a piece: one lost refuses the download, else every photo is read as it was.
  if lost:
    assert download_found is None
  else:
    assert download_found is not None
    assert_kept(download_found, kfood_layout().photos, kfood_layout().photos)


# ---------------------------------------------------------------------------
# What the fuzzer found, kept as named cases: each of these failed before its fix.


def _central_entries(data: bytes) -> list[int]:
  """Where each central directory entry of the zip `data` starts."""
  with zipfile.ZipFile(io.BytesIO(data)) as zf:
    pos, found = zf.start_dir, []
  while data[pos:pos + 4] == b"PK\x01\x02":
    found.append(pos)
    pos += 46 + sum(struct.unpack_from("<3H", data, pos + 28))
  return found


def _local_header(data: bytes, name: str) -> int:
  with zipfile.ZipFile(io.BytesIO(data)) as zf:
    return next(info.header_offset for info in zf.infolist() if member_name(info) == name)


CROP = f"{GRILLED}/crop_area.properties"


@pytest.mark.parametrize("damage", ["local header", "deflated data"])
def test_found_a_damaged_crop_file_is_skipped_and_its_photos_kept(tmp_path, damage):
  """`zipfile`'s BadZipFile, EOFError or zlib.error reading a crop file came out of the listing."""
  data = bytearray(testing.zip_bytes(photos()["구이"], compression=zipfile.ZIP_DEFLATED))
  at = _local_header(bytes(data), CROP)
  if damage == "local header":
    data[at] ^= 0xFF
  else:
    data[at + 30 + len(CROP.encode()) + 2] ^= 0x55
  (tmp_path / "구이.zip").write_bytes(bytes(data))
  found = listed(tmp_path)
  assert found is not None
  assert found.photos == read_as_they_are(photos()["구이"])
  report = found.report
  assert [s.file_name for s in report.skipped_files] == [CROP]
  assert report.skipped_files[0].reason.startswith("unreadable: ")


def test_found_a_directory_entry_without_a_name_costs_no_other_member(tmp_path):
  """An entry whose name length is zero: `ZipInfo.is_dir` raised IndexError in the walker."""
  data = bytearray(testing.zip_bytes(photos()["구이"]))
  entries = _central_entries(bytes(data))
  struct.pack_into("<H", data, entries[1] + 28, 0)  # The entry of `구이/갈비구이/`: no name.
  (tmp_path / "구이.zip").write_bytes(bytes(data))
  found = listed(tmp_path)
  assert found is not None
  # Its name's bytes now break the chain of entries: the next entry is found by its signature.
  assert found.photos == read_as_they_are(photos()["구이"])
  report = found.report
  assert {s.file_name for s in report.skipped_files} == {"구이.zip"}


def test_found_an_offset_past_any_file_is_no_member(tmp_path):
  """A ZIP64 header offset past what a file can seek to: `seek` raised OSError or ValueError."""
  base = zip_bases()[2]
  data = bytearray(base.data)
  extra = next(start for what, start, _ in base.regions if what == "central extra field")
  struct.pack_into("<Q", data, extra + 4, (1 << 64) - 256)
  path = tmp_path / "zip64.zip"
  _write(path, bytes(data), base.prefix)
  with bounded_memory():
    check_zip(path)
  with open(path, "rb") as f:
    assert zips.read_at(f, (1 << 64) - 256, 4) == zips.read_at(f, -1, 4) == b""


def test_found_a_stored_size_past_the_file_is_refused_before_it_is_allocated(tmp_path):
  """A member declaring more stored bytes than its zip holds: the read allocated them first."""
  data = bytearray(testing.zip_bytes(photos()["구이"]))
  name = next(n for n in photos()["구이"] if n.endswith(".jpg"))
  at = _local_header(bytes(data), name)
  raw = name.encode()
  entry = next(e for e in _central_entries(bytes(data)) if data[e + 46:e + 46 + len(raw)] == raw)
  struct.pack_into("<2L", data, at + 18, 400 << 20, 400 << 20)  # Stored and declared: 400 MiB.
  struct.pack_into("<2L", data, entry + 20, 400 << 20, 400 << 20)
  (tmp_path / "구이.zip").write_bytes(bytes(data))
  with bounded_memory():
    source = download.locate(tmp_path)
    candidates = {c.file_name: c for c in listing.CorpusListing(source, BuildReport())}
    with pytest.raises(OSError, match="zip member truncated"):  # As a worker reads it: skipped.
      candidates[name].read()


def test_found_a_damaged_group_zip_header_in_kfood_zip_costs_that_group_only(tmp_path):
  """A group zip's local header damaged inside kfood.zip: opening it raised out
  of the walker, and kfood.zip was refused as a cut transfer."""
  data = bytearray(zip_bases()[-1].data)
  data[_local_header(bytes(data), "국.zip")] ^= 0xFF
  (tmp_path / "kfood.zip").write_bytes(bytes(data))
  found = listed(tmp_path)
  assert found is not None
  assert found.photos == read_as_they_are(photos()["구이"])
  report = found.report
  assert [s.file_name for s in report.skipped_files] == ["국.zip"]


def test_found_an_end_record_declaring_a_directory_before_the_file(tmp_path):
  """An end record whose directory would start before the file: a negative seek raised OSError."""
  data = bytearray(testing.zip_bytes(photos()["국"]))
  struct.pack_into("<L", data, len(data) - 10, 1 << 30)  # The directory's size.
  path = tmp_path / "국.zip"
  path.write_bytes(bytes(data))
  with open(path, "rb") as f:
    problem = zips.open_zip(f, len(data), decode_name)
  assert problem == "its end record does not lead to its central directory"


def test_found_an_entry_whose_comment_runs_past_the_directory_costs_no_other_member(tmp_path):
  """A comment length past the directory's end: `zipfile` took the entries after it for that
  entry's comment, and the photos they list were lost without a word."""
  data = bytearray(testing.zip_bytes(photos()["구이"], dirs=False))
  data[_central_entries(bytes(data))[0] + 33] ^= 1  # The first entry's comment: 256 bytes more.
  (tmp_path / "구이.zip").write_bytes(bytes(data))
  found = listed(tmp_path)
  assert found is not None
  first, *others = _jpgs(photos()["구이"])
  assert found.photos == {name: [photos()["구이"][name]] for name in others}
  assert [s.file_name for s in found.report.skipped_files] == ["구이.zip"]
  assert "its central directory is damaged" in found.report.skipped_files[0].reason


def test_found_a_group_zip_flagged_encrypted_is_skipped(tmp_path):
  """A re-zipped kfood.zip whose entry of a group zip says it is encrypted: `zipfile`'s
  RuntimeError came out of the walker."""
  groups = {f"{group}.zip": testing.zip_bytes(members, "utf-8", dirs=False)
            for group, members in photos().items()}
  data = bytearray(testing.zip_bytes(groups, "utf-8", compression=zipfile.ZIP_DEFLATED,
                                     dirs=False))
  data[_central_entries(bytes(data))[1] + 8] ^= 1  # 국.zip's flags: encrypted.
  (tmp_path / "kfood.zip").write_bytes(bytes(data))
  found = listed(tmp_path)
  assert found is not None
  assert found.photos == read_as_they_are(photos()["구이"])
  assert [s.file_name for s in found.report.skipped_files] == ["국.zip"]
  assert "encrypted" in found.report.skipped_files[0].reason

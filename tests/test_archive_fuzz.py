"""Damaged archives, fuzzed with Hypothesis: `photo_datasets/archives/` and the
Korean food download finder and listing (`download.locate`, `listing.CorpusListing`).

Small real archives, made here from bundled flower photos (a group zip
stored and deflated, zips that `zipfile` writes with ZIP64 records past 2 and
4 GiB as sparse files, kfood.zip as a zip of group zips, its pieces, a join of
them in name order, its download.tar), are cut, bit-flipped and edited field
by field where the format keeps its structure: end records, ZIP64 records,
central and local headers, extra fields, tar headers. Whatever the bytes, only
the package's own answers come out (a member list or a problem in words, a
skip or warning in the build report, `DownloadError`, a worker's `OSError`),
a zip beside the damaged one keeps all its photos, and memory stays within a
photo's: a declared size of 4 GiB is never allocated.

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
import os
import pathlib
import resource
import struct
import tarfile
import tempfile
import tracemalloc
import zipfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


# Far more than any example here needs; a declared size of 4 GiB allocated, or a file read whole,
# shows.
_MEMORY = 32 << 20


@contextlib.contextmanager
def bounded_memory() -> Iterator[None]:
  """Fails where the block allocates more than `_MEMORY` at once (tracemalloc's peak)."""
  tracemalloc.start()
  try:
    yield
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  assert peak < _MEMORY, f"{peak:,} bytes allocated at once"


@pytest.fixture(autouse=True)
def _rss_bound() -> Iterator[None]:
  """What tracemalloc cannot see (zlib's buffers): the process's peak memory
  grows little over a test."""
  before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  yield
  assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 256 << 10  # KiB.


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


def check_zip(path: pathlib.Path) -> None:
  """Everything `zips` does with a zip, on one that may be damaged: only
  answers come out, and a worker's read raises `OSError` at most."""
  size = os.path.getsize(path)
  with open(path, "rb") as f:
    assert isinstance(zips.members(f, size, decode_name, 64), list | str)
    assert isinstance(zips.nested_problem(f, size, decode_name, 1000, 64), str | None)
    list(zips.local_members(f, size, decode_name))
    opened = zips.open_zip(f, size, decode_name)
    if isinstance(opened, str):
      return
    zf, left_out = opened
    assert all(isinstance(name, str) and why for name, why in left_out)
    with zf:
      for info in zf.infolist():
        if info.compress_type in zips.READABLE_METHODS:
          with contextlib.suppress(OSError):  # A damaged member: the scan skips it.
            zips.read_member(os.fspath(path), info.header_offset, info.compress_size,
                             info.compress_type, info.CRC, info.file_size)


def listed(root: pathlib.Path) -> tuple[set[str], BuildReport] | None:
  """The photos the build would scan from `root` (each read as a worker reads
  it, where it can) and its report; None where the download is refused
  (`DownloadError`)."""
  try:
    source = download.locate(root)
  except download.DownloadError as e:
    assert str(e)
    return None
  report = BuildReport()
  names = set()
  for candidate in listing.CorpusListing(source, report):
    names.add(candidate.file_name)
    with contextlib.suppress(OSError):  # A damaged member: the scan skips it with this message.
      candidate.read()
  return names, report


# ---------------------------------------------------------------------------
# Zips, one at a time, and as a group zip beside an intact one.


@fuzz(1000)
@given(data=st.data())
def test_any_damage_to_a_zip_gives_an_answer_in_bounded_memory(data):
  base = zip_bases()[data.draw(st.integers(0, len(zip_bases()) - 1), label="base")]
  damaged_bytes = damaged(base.data, data.draw(edits(len(base.data), base.regions), label="edits"))
  with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp) / "damaged.zip"
    _write(path, damaged_bytes, base.prefix)
    with bounded_memory():
      check_zip(path)


@fuzz(500)
@given(data=st.data())
def test_a_damaged_group_zip_costs_no_photo_of_the_zip_beside_it(data):
  base = zip_bases()[data.draw(st.integers(0, 3), label="base")]
  damaged_bytes = damaged(base.data, data.draw(edits(len(base.data), base.regions), label="edits"))
  with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp)
    _write(root / "구이.zip", damaged_bytes, base.prefix)
    (root / "국.zip").write_bytes(testing.zip_bytes(photos()["국"]))
    with bounded_memory():
      found = listed(root)
    assert found is not None  # A group zip is no download: never refused.
    names, report = found
    assert set(photos()["국"]) <= names
    assert all(skip.reason for skip in report.skipped_files)


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


@fuzz(400)
@given(data=st.data())
def test_any_damage_to_the_pieces_is_read_or_refused(data):
  pieces = damaged_pieces(data, kfood())
  with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp)
    testing.write_tree(root / "21.한국음식", pieces)
    with bounded_memory():
      listed(root)


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
      listed(root)


def _tar(pieces: dict[str, bytes], folder: str = "21.한국음식") -> bytes:
  with tempfile.TemporaryDirectory() as tmp:
    written = []
    for name, data in pieces.items():
      (pathlib.Path(tmp) / name).write_bytes(data)
      written.append(pathlib.Path(tmp) / name)
    testing.write_tar(written, pathlib.Path(tmp) / "download.tar", folder)
    return (pathlib.Path(tmp) / "download.tar").read_bytes()


def _headers(tar: bytes) -> list[int]:
  with tarfile.open(fileobj=io.BytesIO(tar)) as opened:
    return [member.offset for member in opened]


@functools.cache
def download_tar() -> tuple[bytes, list[int]]:
  data = kfood().data
  tar = _tar({f"kfood.zip.part{at}": data[at:at + _PIECE] for at in range(0, len(data), _PIECE)})
  return tar, _headers(tar)


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
      found = tars.read(os.fspath(root / "download.tar"))
      assert all(str(damage) for damage in found.damage)
      listed(root)


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
  block = bytes(out[headers[victim]:headers[victim] + 512])
  try:  # A flip after the checksum's terminating NUL leaves a header `tarfile` reads.
    tarfile.TarInfo.frombuf(block, tarfile.ENCODING, "surrogateescape")
    lost = []
  except tarfile.HeaderError:
    lost = [headers[victim]]
  assert [m.offset for m in found.members] == [h for h in headers if h not in lost]
  assert [d.at for d in found.damage] == lost and found.cut is None


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
  names, report = listed(tmp_path) or (set(), BuildReport())
  assert names == {n for n in photos()["구이"] if n.endswith(".jpg")}
  assert [s.file_name for s in report.skipped_files] == [CROP]
  assert report.skipped_files[0].reason.startswith("unreadable: ")


def test_found_a_directory_entry_without_a_name_costs_no_other_member(tmp_path):
  """An entry whose name length is zero: `ZipInfo.is_dir` raised IndexError in the walker."""
  data = bytearray(testing.zip_bytes(photos()["구이"]))
  entries = _central_entries(bytes(data))
  struct.pack_into("<H", data, entries[1] + 28, 0)  # The entry of `구이/갈비구이/`: no name.
  (tmp_path / "구이.zip").write_bytes(bytes(data))
  names, report = listed(tmp_path) or (set(), BuildReport())
  # Its name's bytes now break the chain of entries: the next entry is found by its signature.
  assert names == {n for n in photos()["구이"] if n.endswith(".jpg")}
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
  names, report = listed(tmp_path) or (set(), BuildReport())
  assert names == {n for n in photos()["구이"] if n.endswith(".jpg")}
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

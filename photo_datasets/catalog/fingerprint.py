"""A built config's fingerprint: one SHA-256 over what its readers read.

Two people who build a config from the same download, with the same versions
of the libraries that make its bytes (`versions`), get the same record files
and the same fingerprint; anyone holding a copy can check it (`verify`,
`python -m photo_datasets verify`).

The fingerprint is the SHA-256 of a short text, one line each:

    <features file> <SHA-256 of its bytes>            (`features.json` and
                                                       the class names' files)
    split <name> <shard lengths, comma-separated>     (splits by name)
    <record file name> <SHA-256 of its bytes>         (the files each split's
                                                       reader opens, in order)
    dataset_info.json <field> <its value, as JSON>    (`READER_FIELDS`)

The splits, their shard lengths and their files are those `dataset_info.json`
gives TFDS's reader (its file names from each split's `filepathTemplate`, the
dataset's `name` and `fileFormat`, one file per shard length), and the other
fields of it that change what a reader gets (`READER_FIELDS`) are hashed as TFDS
parses them. Left out: times, paths, the build report, the download's
checksums and sizes, the descriptions, and the `version` (a release that does
not change the records keeps the fingerprint; `verify` checks the version
against the copy's folder, as `tfds.load` does). The record files' hashes come
from whoever wrote them; the text's parts are kept in
`info.metadata["fingerprint"]`, so a verification can say which file or field
differs, beside the libraries' versions and the machine's `platform`, which
explain a difference and are hashed nowhere.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import dataclasses
import glob
import hashlib
import importlib
import importlib.metadata
import json
import os
import platform as platform_lib
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import tensorflow_datasets as tfds
from etils import epath

METADATA_KEY = "fingerprint"
INFO_FILE = "dataset_info.json"
# A shard's name ends so: `korean_food-train.tfrecord-00000-of-00004`.
_RECORD_FILE = re.compile(r"\.([a-z_]+)-\d{5}-of-\d{5}$")
# The libraries whose versions can change the bytes: the records' format, the
# JPEG encoder and decoders, and the scan's near-copy and series groups.
_DISTRIBUTIONS = ("tensorflow-datasets", "protobuf", "pillow", "simplejpeg",
                  "opencv-python-headless", "numpy", "faiss-cpu")
# The fields of `dataset_info.json`, besides the splits, whose value changes what
# TFDS 4.9.10's readers give: the builder read from the folder
# (`tfds.builder_from_directory`) takes each of them from the file. `name`
# names the record files and the builder, `configName` the config;
# `fileFormat` picks the file reader and the files' suffix; `disableShuffling`
# the order examples are read in; `supervisedKeys` what `as_supervised` gives;
# `features`, where present, replaces `features.json`; `isBlocked` refuses to
# load. Not these: the descriptions, citation, release notes, sizes and checksums,
# `numBytes` (only whether TFDS caches a small dataset in memory), a split's
# `numShards` (TFDS counts the shard lengths instead) and `nondeterministicOrder`
# (documentation). `alternativeFileFormats` lists copies made after the build
# (`random_access.add_array_record`): `verify` checks their files are there.
READER_FIELDS = ("name", "configName", "fileFormat", "disableShuffling", "supervisedKeys",
                 "features", "isBlocked")
_VERSION_FOLDER = re.compile(r"\d+\.\d+\.\d+")
# protobuf, whose JSON TFDS reads `dataset_info.json` with, ships no types.
_json_format: Any = importlib.import_module("google.protobuf.json_format")
_message_factory: Any = importlib.import_module("google.protobuf.message_factory")


def file_sha256(path: epath.PathLike) -> str:
  """The SHA-256 (hex) of a file's bytes."""
  sha256 = hashlib.sha256()
  with epath.Path(path).open("rb") as file:
    while chunk := file.read(1 << 20):
      sha256.update(chunk)
  return sha256.hexdigest()


def hash_files(paths: Sequence[epath.Path]) -> list[str]:
  """The SHA-256 of each file, side by side: hashlib releases the GIL, so this
  reads as fast as the disk gives."""
  if not paths:
    return []
  with concurrent.futures.ThreadPoolExecutor(min(len(paths), os.cpu_count() or 1)) as pool:
    return list(pool.map(file_sha256, paths))


def sha256_by_name(paths: Sequence[epath.Path], known: Mapping[str, str]) -> dict[str, str]:
  """File name -> SHA-256 of each of `paths`: from `known` (by name, as its
  writer hashed it), else read here."""
  missing = [path for path in paths if path.name not in known]
  read = dict(zip((path.name for path in missing), hash_files(missing), strict=True))
  return {path.name: known.get(path.name) or read[path.name] for path in paths}


def features_sha256(features: Any) -> dict[str, str]:
  """File name -> SHA-256 of the files TFDS writes for `features` beside the
  records (`features.json`, the class names), made by its own `save_config`."""
  with tempfile.TemporaryDirectory() as folder:
    features.save_config(folder)
    return {path.name: file_sha256(path) for path in sorted(epath.Path(folder).iterdir())}


def _json(value: Any) -> str:
  """One line of JSON, the same for the same value."""
  return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def text(features: Mapping[str, str], splits: Iterable[tuple[str, Sequence[int]]],
         files: Sequence[tuple[str, str]], reader: Mapping[str, Any] | None = None) -> str:
  """The text the fingerprint hashes: the features' files' hashes (name ->
  SHA-256), the splits by name with their shard lengths, (name, SHA-256) of
  every record file in the splits' order, and the reader's fields of
  `dataset_info.json` (None for the text of a build made before they were
  hashed)."""
  lines = [f"{name} {sha256}" for name, sha256 in sorted(features.items())]
  lines += [f"split {name} {','.join(map(str, lengths))}" for name, lengths in sorted(splits)]
  lines += [f"{name} {sha256}" for name, sha256 in files]
  if reader is not None:
    lines += [f"{INFO_FILE} {key} {_json(value)}" for key, value in sorted(reader.items())]
  return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True)
class Described:
  """What a config's `dataset_info.json` tells TFDS's reader."""

  reader: dict[str, Any]  # `READER_FIELDS` -> value, as TFDS parses them.
  shard_lengths: dict[str, list[int]]  # Split -> its shard lengths, by split name.
  files: dict[str, list[str]]  # Split -> the record files it reads (relative paths), in order.
  version: str
  alternative_formats: dict[str, list[str]]  # Format -> the files of its copy.


def _split_files(proto: Any, file_format: str) -> dict[str, list[str]]:
  """Split -> the files TFDS's reader opens for it, as `SplitInfo.from_proto` names them."""
  files = {}
  for split in sorted(proto.splits, key=lambda split: str(split.name)):
    count = len(split.shard_lengths)
    try:
      template = tfds.core.ShardedFileTemplate(
          data_dir="", template=split.filepath_template, dataset_name=proto.name,
          split=split.name, filetype_suffix=file_format)
      files[str(split.name)] = sorted(template.relative_filepath(shard_index=index,
                                                                 num_shards=count)
                                      for index in range(count))
    except ValueError as e:
      raise ValueError(f"split {split.name!r}: TFDS cannot name its files ({e})") from None
  return files


def describe(proto: Any) -> Described:
  """What the `DatasetInfo` proto `proto` (a builder's `info.as_proto`, or a
  `dataset_info.json` parsed as TFDS parses it) gives TFDS's reader.

  Raises:
    ValueError: TFDS could not name a split's record files.
  """

  def message(field: str) -> Any:
    return _json_format.MessageToDict(getattr(proto, field)) if proto.HasField(field) else None

  file_format = str(proto.file_format or "tfrecord")  # TFDS's default where none is named.
  reader = {"name": str(proto.name), "configName": str(proto.config_name),
            "fileFormat": file_format, "disableShuffling": bool(proto.disable_shuffling),
            "supervisedKeys": message("supervised_keys"), "features": message("features"),
            "isBlocked": str(proto.is_blocked)}
  return Described(
      reader=reader,
      shard_lengths={str(split.name): [int(n) for n in split.shard_lengths]
                     for split in proto.splits},
      files=_split_files(proto, file_format), version=str(proto.version),
      alternative_formats={str(other): sum(_split_files(proto, str(other)).values(), [])
                           for other in proto.alternative_file_formats if other != file_format})


def _info_proto_class() -> Any:
  """TFDS's `DatasetInfo` proto class, reached through its public `SplitInfo`."""
  split = tfds.core.SplitInfo(name="train", shard_lengths=[], num_bytes=0, filename_template=None)
  descriptor = split.to_proto().DESCRIPTOR.file.message_types_by_name["DatasetInfo"]
  return _message_factory.GetMessageClass(descriptor)


def read_described(folder: epath.PathLike) -> Described:
  """What the `dataset_info.json` in `folder` gives TFDS's reader, parsed as TFDS parses it.

  Raises:
    ValueError: the file is missing, or TFDS could not read it or name its files.
  """
  path = epath.Path(folder) / INFO_FILE
  try:
    proto = _json_format.Parse(path.read_text(encoding="utf-8"), _info_proto_class()())
  except FileNotFoundError:
    raise ValueError("missing") from None
  except (OSError, UnicodeDecodeError, _json_format.ParseError) as e:
    raise ValueError(f"TFDS cannot read it ({' '.join(str(e).split())})") from None
  return describe(proto)


def record_files(info: Any) -> list[str]:
  """The names of the config's record files: its splits by name, each split's shards in order."""
  return sum(describe(info.as_proto).files.values(), [])


def versions() -> dict[str, str]:
  """The versions of what makes the bytes: the Python distributions and the
  JPEG library Pillow encodes with."""
  found = {}
  for name in _DISTRIBUTIONS:
    try:
      found[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      found[name] = "not installed"
  from PIL import features as pil_features  # Only for the version.

  found["libjpeg-turbo (Pillow)"] = pil_features.version("libjpeg_turbo") or "not libjpeg-turbo"
  return found


def _blas_core() -> str:
  """The CPU core type NumPy's OpenBLAS chose its kernels for ("SkylakeX", "Haswell",
  "NeoverseN1"): threadpoolctl's where it is installed, else asked of the OpenBLAS that
  NumPy's wheel bundles, as threadpoolctl asks it."""
  try:
    threadpoolctl = importlib.import_module("threadpoolctl")
  except ImportError:
    pass
  else:
    cores = sorted({str(found.get("architecture")) for found in threadpoolctl.threadpool_info()
                    if found.get("user_api") == "blas" and "numpy" in str(found.get("filepath"))})
    return " ".join(cores) or "unknown"
  import numpy as np

  folder = os.path.dirname(os.path.dirname(np.__file__))
  for path in sorted(glob.glob(os.path.join(folder, "numpy*libs", "*openblas*"))):
    library = ctypes.CDLL(path)  # Loaded already by NumPy: the same library.
    for symbol in ("openblas_get_corename", "scipy_openblas_get_corename64_",
                   "scipy_openblas_get_corename", "openblas_get_corename64_"):
      function = getattr(library, symbol, None)
      if function is not None:
        function.restype = ctypes.c_char_p
        return bytes(function()).decode()
  return "unknown"


def platform_info() -> dict[str, str]:
  """What this machine's computing depends on, beside `versions`: its
  architecture, the Python, the CPU features NumPy's kernels dispatch to, the
  BLAS NumPy's matrix products run in and the core type it chose, and OpenCV's
  optimised paths (its CPU features line: plain for the baseline, `*` for
  those dispatched at run time, `?` for those this CPU lacks). Recorded to
  explain a fingerprint that differs between machines; hashed nowhere."""
  found = {"machine": platform_lib.machine() or "unknown",
           "python": f"{platform_lib.python_implementation()} {platform_lib.python_version()}"}
  try:
    import numpy as np

    config: Any = np.show_config(mode="dicts")
    simd = config.get("SIMD Extensions", {})
    found["numpy SIMD"] = (f"baseline {' '.join(simd.get('baseline', []))}; "
                           f"dispatched here {' '.join(simd.get('found', []))}")
    blas = config.get("Build Dependencies", {}).get("blas", {})
    found["numpy BLAS"] = f"{blas.get('name')} {blas.get('version')}, core {_blas_core()}"
  except Exception as e:  # What the record cannot learn is named, never fatal.
    found["numpy"] = f"unknown ({type(e).__name__})"
  try:
    import cv2

    features = getattr(cv2, "getCPUFeaturesLine", lambda: "unknown")()
    found["opencv"] = f"{'optimized' if cv2.useOptimized() else 'not optimized'}: {features}"
  except Exception as e:
    found["opencv"] = f"unknown ({type(e).__name__})"
  return found


def record(info: Any, data_dir: epath.PathLike, known: Mapping[str, str]) -> dict[str, Any]:
  """What `info.metadata[METADATA_KEY]` keeps of the config built in `data_dir`:
  the fingerprint, its parts (the record files' hashes: those not in `known`,
  file name -> SHA-256, read here; the reader's fields of `dataset_info.json`),
  the libraries' versions and the platform."""
  described = describe(info.as_proto)
  names = sum(described.files.values(), [])
  hashed = sha256_by_name([epath.Path(data_dir) / name for name in names], known)
  files = [(name, hashed[name]) for name in names]
  features = features_sha256(info.features)
  made = text(features, described.shard_lengths.items(), files, described.reader)
  return {
      "sha256": hashlib.sha256(made.encode()).hexdigest(),
      "features": features,
      "shard_lengths": dict(sorted(described.shard_lengths.items())),
      "files": dict(files),
      "reader": described.reader,
      "versions": versions(),
      "platform": platform_info(),
  }


def sha256_of(metadata: Mapping[str, Any]) -> str | None:
  """The fingerprint kept in a config's metadata; None for a build made before fingerprints."""
  kept = metadata.get(METADATA_KEY)
  return kept.get("sha256") if isinstance(kept, Mapping) else None


class Mismatch(ValueError):
  """A built copy that is not what its fingerprint (or the one given) says."""


def _kept_split_files(kept: Mapping[str, Any]) -> dict[str, list[str]] | None:
  """Split -> the record files its build wrote: the kept files in order, one per
  shard length of each split by name; None where the counts do not add up."""
  names = list(kept["files"])
  files = {}
  for split, lengths in sorted(kept["shard_lengths"].items()):
    files[split], names = names[:len(lengths)], names[len(lengths):]
  return None if names or sum(map(len, files.values())) != len(kept["files"]) else files


def _short(value: Any) -> str:
  line = _json(value)
  return line if len(line) <= 200 else f"{line[:200]}…"


def _lengths(lengths: Iterable[int]) -> str:
  return ",".join(map(str, lengths))


def _against_build(described: Described, kept: Mapping[str, Any]) -> list[str]:
  """What `dataset_info.json` says otherwise than the build kept, each named."""
  problems = []
  built: Mapping[str, list[int]] = kept["shard_lengths"]
  built_files = _kept_split_files(kept)
  for split in sorted(set(built) | set(described.shard_lengths)):
    if split not in described.shard_lengths:
      problems.append(f"{INFO_FILE}: split {split!r} is missing (the build made it)")
    elif split not in built:
      problems.append(f"{INFO_FILE}: split {split!r} is not one the build made "
                      f"(it made {', '.join(sorted(built))})")
    else:
      lengths = described.shard_lengths[split]
      if lengths != list(built[split]):
        problems.append(f"{INFO_FILE}: split {split!r} has shard lengths {_lengths(lengths)} "
                        f"(built: {_lengths(built[split])})")
      if built_files is not None and described.files[split] != built_files[split]:
        problems.append(f"{INFO_FILE}: split {split!r} reads {', '.join(described.files[split])} "
                        f"(built: {', '.join(built_files[split])})")
  if built_files is None and sum(described.files.values(), []) != list(kept["files"]):
    problems.append(f"{INFO_FILE}: its splits read other record files than the build wrote")
  for field, value in sorted(kept.get("reader", {}).items()):
    if described.reader.get(field) != value:
      problems.append(f"{INFO_FILE}: {field} is {_short(described.reader.get(field))} "
                      f"(built: {_short(value)})")
  return problems


def _kept_record(data_dir: epath.PathLike, metadata: Mapping[str, Any] | None,
                 wanted: str | None) -> Mapping[str, Any] | None:
  """The fingerprint's record the build kept in `metadata`; None where there is
  none and `wanted` is given.

  Raises:
    Mismatch: there is none and no `wanted` either, or the record is incomplete.
  """
  kept: Mapping[str, Any] | None = metadata.get(METADATA_KEY) if metadata is not None else None
  if kept is None:
    if wanted is None:
      why = ("has no metadata.json, where a build keeps its fingerprint" if metadata is None
             else "holds no fingerprint: it was built before fingerprints were kept")
      raise Mismatch(f"{epath.Path(data_dir)} {why}. It can only be checked against a "
                     "fingerprint you give (--fingerprint SHA256, e.g. that of the build it was "
                     "copied from), or built again by this version")
  elif not isinstance(kept, Mapping) or not all(
      isinstance(kept.get(key), Mapping) for key in ("files", "features", "shard_lengths")):
    raise Mismatch(f"{data_dir}: the fingerprint's record in metadata.json is incomplete (edited?)")
  return kept


@dataclasses.dataclass(frozen=True)
class _Copy:
  """The files of a copy that its fingerprint covers, hashed."""

  folder: epath.Path
  features: list[str]  # The features' files: those the build kept, else those TFDS writes.
  built: list[str]  # The record files the build kept, in order; none without its record.
  read: dict[str, str]  # Record file -> the split of `dataset_info.json` that reads it.
  found: dict[str, str]  # File -> SHA-256, of those in `folder`.

  def fingerprint(self, described: Described, reader: Mapping[str, Any] | None) -> str:
    """The copy's fingerprint; with `reader` None, as made before it covered `READER_FIELDS`."""
    features = {name: self.found[name] for name in self.features}
    files = [(name, self.found[name]) for name in self.read]
    made = text(features, described.shard_lengths.items(), files, reader)
    return hashlib.sha256(made.encode()).hexdigest()


def _hash_copy(folder: epath.Path, kept: Mapping[str, Any] | None, described: Described | None,
               say: Callable[[str], None]) -> _Copy:
  """Hashes the files in `folder` that the build's record or `dataset_info.json` names."""
  if kept is not None:
    features = list(kept["features"])
    built: list[str] = list(kept["files"])
  else:  # What `features.save_config` writes for the package's features.
    features = ["features.json", *sorted(path.name for path in folder.glob("*.labels.txt"))]
    built = []
  read = {name: split for split, names in (described.files if described else {}).items()
          for name in names}
  records = [name for name in dict.fromkeys([*built, *read]) if (folder / name).is_file()]
  say(f"hashing {len(records)} record files and {', '.join(features)} in {folder}")
  present = [name for name in dict.fromkeys([*features, *records]) if (folder / name).is_file()]
  found = dict(zip(present, hash_files([folder / name for name in present]), strict=True))
  return _Copy(folder, features, built, read, found)


def _file_problems(copy: _Copy, kept: Mapping[str, Any] | None) -> list[str]:
  """The copy's files that are missing, differ from the build's record, or are
  record files that nothing lists."""
  found, read = copy.found, copy.read
  recorded = {**kept["features"], **kept["files"]} if kept is not None else {}
  problems = [f"{name}: missing" for name in [*copy.features, *copy.built] if name not in found]
  problems += [f"{name}: differs (SHA-256 {found[name]}, recorded {recorded[name]})"
               for name in recorded if name in found and found[name] != recorded[name]]
  if kept is None:
    problems += [f"{name}: missing ({INFO_FILE}'s split {split!r} reads it)"
                 for name, split in read.items() if name not in found]
  listed = set(copy.built) | set(read)
  formats = {match[1] for name in listed if (match := _RECORD_FILE.search(name))}
  problems += [f"{path.name}: a record file {'the fingerprint' if kept else INFO_FILE} does not "
               "list" for path in sorted(copy.folder.iterdir())
               if path.name not in listed and (match := _RECORD_FILE.search(path.name))
               and match[1] in formats]
  return problems


def _info_problems(folder: epath.Path, described: Described,
                   kept: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
  """What `dataset_info.json` says otherwise than the build and the copy's
  folder, each named; and notes on what it says that is not checked."""
  problems, notes = [], []
  if kept is not None:
    problems += _against_build(described, kept)
    if "reader" not in kept:
      notes.append(f"{folder} was built before the fingerprint covered {INFO_FILE}'s "
                   f"{', '.join(READER_FIELDS)}: its splits, shard lengths and record files are "
                   "checked, those fields are not (a build by this version records them)")
  if _VERSION_FOLDER.fullmatch(folder.name) and described.version != folder.name:
    problems.append(f"{INFO_FILE}: version is {described.version!r}, but the copy's folder is "
                    f"{folder.name}: tfds.load refuses a version other than its folder's")
  for other, names in described.alternative_formats.items():
    absent = [name for name in names if not (folder / name).is_file()]
    if absent:
      problems.append(f"{INFO_FILE}: alternativeFileFormats lists {other}, but its files are "
                      f"missing: {', '.join(absent)}")
    else:
      notes.append(f"{folder}: the {other} copy (alternativeFileFormats) is made from the "
                   "records after the build; the fingerprint does not cover its files")
  return problems, notes


def _checked_copy(folder: epath.Path, kept: Mapping[str, Any] | None, wanted: str | None,
                  say: Callable[[str], None]) -> tuple[_Copy, Described, list[str]]:
  """The copy in `folder` hashed, with its `dataset_info.json` as TFDS reads it,
  once each part is checked against the build's record where it is kept; and
  notes on what could not be checked.

  Raises:
    Mismatch: naming each file and field that differs, is missing or is not listed.
  """
  problems = []
  try:
    described: Described | None = read_described(folder)
  except ValueError as e:
    described, problems = None, [f"{INFO_FILE}: {e}"]
  copy = _hash_copy(folder, kept, described, say)
  problems += _file_problems(copy, kept)
  notes: list[str] = []
  if described is not None:
    against_info, notes = _info_problems(folder, described, kept)
    problems += against_info
  if kept is not None:
    remade = text(kept["features"], kept["shard_lengths"].items(), list(kept["files"].items()),
                  kept.get("reader"))
    if hashlib.sha256(remade.encode()).hexdigest() != kept.get("sha256"):
      problems.append(f"the metadata's fingerprint {kept.get('sha256')} is not that of its own "
                      "record: metadata.json was edited")
  if problems:
    against = (f"its fingerprint {kept['sha256']}" if kept is not None
               else f"the fingerprint {wanted}")
    raise Mismatch(f"{folder} does not match {against}:\n  " + "\n  ".join(problems))
  assert described is not None  # Else a problem was named.
  return copy, described, notes


def _matches_kept(copy: _Copy, described: Described, kept: Mapping[str, Any],
                  wanted: str | None) -> tuple[str, list[str]]:
  """The copy's fingerprint, the one its build kept, and notes.

  Raises:
    Mismatch: it is not the kept one, or not `wanted`.
  """
  folder, notes = copy.folder, []
  own = copy.fingerprint(described, described.reader if "reader" in kept else None)
  if own != kept["sha256"]:  # Each part matched: only a change of this code can get here.
    raise Mismatch(f"{folder}'s fingerprint is {own}, not the {kept['sha256']} it keeps")
  if wanted is not None and wanted != own and copy.fingerprint(described, None) == wanted:
    notes.append(f"{folder}: the fingerprint given is this build's as made before the "
                 f"fingerprint covered {INFO_FILE}'s {', '.join(READER_FIELDS)}: the same "
                 "records and splits")
  elif wanted is not None and wanted != own:
    raise Mismatch(f"{folder} is intact (fingerprint {own}), but it is not the build whose "
                   f"fingerprint is {wanted}: compare the two builds' records of versions and "
                   f"platform (metadata.json, \"{METADATA_KEY}\") and their sources")
  return own, notes


def _matches_given(copy: _Copy, described: Described, wanted: str) -> tuple[str, list[str]]:
  """The copy's fingerprint, `wanted`, for a copy without its build's record; and notes.

  Raises:
    Mismatch: it is not `wanted`.
  """
  folder, notes = copy.folder, []
  own = copy.fingerprint(described, described.reader)
  if own != wanted and copy.fingerprint(described, None) == wanted:
    own = wanted
    notes.append(f"{folder} matches a fingerprint made before it covered {INFO_FILE}'s "
                 f"{', '.join(READER_FIELDS)}: those fields are not checked")
  if own != wanted:
    raise Mismatch(f"{folder} has the fingerprint {own}, not {wanted}: it is another build, or "
                   "a changed copy. Without the build's record in metadata.json, which keeps "
                   "each file's hash, nothing says which file or field differs")
  return own, notes


def verify(data_dir: epath.PathLike, metadata: Mapping[str, Any] | None,
           expected: str | None = None, progress: Callable[[str], None] | None = None) -> str:
  """Checks that TFDS reads the config copied in `data_dir` as it was built:
  against the fingerprint kept in its `metadata` and, if given, against
  `expected`; returns the copy's fingerprint.

  The fingerprint is made again from what the copy says: its
  `dataset_info.json`, parsed as TFDS parses it, and every record file it
  names and the features' files, read and hashed again. Where the metadata
  keeps the build's record, each file and field that differs is named; without
  it (no `metadata.json`) the copy can only be compared with `expected`.

  Args:
    data_dir: the built config's folder, the one holding its `dataset_info.json`.
    metadata: the config's `info.metadata` (its `metadata.json`, read as JSON);
      None where the copy has none.
    expected: a fingerprint (64 hexadecimal digits) the copy should also have,
      e.g. a colleague's; None to check the copy against its own only.
    progress: called with lines for whoever waits: what is hashed, before it
      is, and what could not be checked.

  Returns:
    The copy's fingerprint (SHA-256, hex): the kept one, or `expected`.

  Raises:
    Mismatch: naming each file that differs, is missing or is not listed, and
      each field of `dataset_info.json` whose reader would read otherwise than
      built; saying that an intact copy is another build than `expected`, or
      that a copy without a fingerprint (no `metadata.json`, or a build made
      before fingerprints) was given none to be checked against; also where
      the metadata keeps an incomplete record.
  """
  say = progress or (lambda line: None)
  wanted = expected.strip().lower() if expected is not None else None
  kept = _kept_record(data_dir, metadata, wanted)
  copy, described, notes = _checked_copy(epath.Path(data_dir), kept, wanted, say)
  if kept is not None:
    own, last = _matches_kept(copy, described, kept, wanted)
  else:
    assert wanted is not None  # Else `_kept_record` raised.
    own, last = _matches_given(copy, described, wanted)
  for note in [*notes, *last]:
    say(note)
  return own

"""A built config's fingerprint: one SHA-256 over what defines its content.

Two people who build a config from the same download, with the same versions
of the libraries that make its bytes (`versions`), get the same record files
and the same fingerprint; anyone holding a copy can check it (`verify`,
`python -m photo_datasets.verify`).

The fingerprint is the SHA-256 of a short text, one line each:

    <features file> <SHA-256 of its bytes>            (`features.json` and
                                                       the class names' files)
    split <name> <shard lengths, comma-separated>     (splits by name)
    <record file name> <SHA-256 of its bytes>         (its shards, in order)

Times, paths, the build report and `dataset_info.json` (which holds the
download's own checksums and sizes) are left out: they describe a build, not
the dataset. The record files' hashes come from whoever wrote them; the text
and the files' hashes are kept in `info.metadata["fingerprint"]`, so a
verification can say which file differs.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib.metadata
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from etils import epath

METADATA_KEY = "fingerprint"
# A shard's name ends so: `korean_food-train.tfrecord-00000-of-00004`.
_RECORD_FILE = re.compile(r"\.([a-z_]+)-\d{5}-of-\d{5}$")
# The libraries whose versions can change the bytes: the records' format, the
# JPEG encoder and decoders, and the scan's near-copy and series groups.
_DISTRIBUTIONS = ("tensorflow-datasets", "protobuf", "pillow", "simplejpeg",
                  "opencv-python-headless", "numpy")


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


def text(features: Mapping[str, str], splits: Iterable[tuple[str, Sequence[int]]],
         files: Sequence[tuple[str, str]]) -> str:
  """The text the fingerprint hashes: the features' files' hashes (name ->
  SHA-256), the splits by name with their shard lengths, and (name, SHA-256)
  of every record file in the splits' order."""
  lines = [f"{name} {sha256}" for name, sha256 in sorted(features.items())]
  lines += [f"split {name} {','.join(map(str, lengths))}" for name, lengths in sorted(splits)]
  lines += [f"{name} {sha256}" for name, sha256 in files]
  return "\n".join(lines) + "\n"


def record_files(info: Any) -> list[str]:
  """The names of the config's record files: its splits by name, each split's shards in order."""
  return [os.path.basename(os.fspath(path)) for name in sorted(info.splits)
          for path in info.splits[name].filenames]


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


def record(info: Any, data_dir: epath.PathLike, known: Mapping[str, str]) -> dict[str, Any]:
  """What `info.metadata[METADATA_KEY]` keeps of the config built in `data_dir`:
  the fingerprint, its record files' hashes (those not in `known`, file name
  -> SHA-256, read here) and the libraries' versions."""
  names = record_files(info)
  hashed = sha256_by_name([epath.Path(data_dir) / name for name in names], known)
  files = [(name, hashed[name]) for name in names]
  features = features_sha256(info.features)
  shards = [(name, list(split.shard_lengths)) for name, split in info.splits.items()]
  made = text(features, shards, files)
  return {
      "sha256": hashlib.sha256(made.encode()).hexdigest(),
      "features": features,
      "shard_lengths": dict(sorted(shards)),
      "files": dict(files),
      "versions": versions(),
  }


def sha256_of(metadata: Mapping[str, Any]) -> str | None:
  """The fingerprint kept in a config's metadata; None for a build made before fingerprints."""
  kept = metadata.get(METADATA_KEY)
  return kept.get("sha256") if isinstance(kept, Mapping) else None


class Mismatch(ValueError):
  """A built copy that is not what its fingerprint (or the one given) says."""


def verify(data_dir: epath.PathLike, metadata: Mapping[str, Any], expected: str | None = None,
           progress: Callable[[str], None] | None = None) -> str:
  """Checks the config built in `data_dir` against the fingerprint kept in its
  `metadata` and, if given, against `expected`; returns the fingerprint.

  Every record file and the features' files are read and hashed again.

  Args:
    data_dir: the built config's folder, the one holding its `dataset_info.json`.
    metadata: the config's `info.metadata` (or its `metadata.json`, read as JSON).
    expected: a fingerprint (64 hexadecimal digits) the copy should also have,
      e.g. a colleague's; None to check the copy against its own only.
    progress: called with a line of text before the files are hashed.

  Returns:
    The fingerprint (SHA-256, hex) the metadata keeps.

  Raises:
    Mismatch: naming each file that differs, is missing or is not listed, or
      saying that an intact copy is another build than `expected`; also where
      the metadata keeps no fingerprint (a build made before fingerprints) or
      an incomplete one.
  """
  kept = metadata.get(METADATA_KEY)
  if not isinstance(kept, Mapping):
    raise Mismatch(f"{data_dir} holds no fingerprint: it was built before fingerprints were kept "
                   "(rebuild it to get one)")
  if not all(isinstance(kept.get(key), Mapping) for key in ("files", "features", "shard_lengths")):
    raise Mismatch(f"{data_dir}: the fingerprint's record in metadata.json is incomplete (edited?)")
  folder = epath.Path(data_dir)
  files: dict[str, str] = dict(kept["files"])
  features: dict[str, str] = dict(kept["features"])
  if progress:
    progress(f"hashing {len(files)} record files and {', '.join(features)} in {folder}")
  recorded = {**features, **files}
  present = [name for name in recorded if (folder / name).exists()]
  problems = [f"{name}: missing" for name in recorded if name not in present]
  found = dict(zip(present, hash_files([folder / name for name in present]), strict=True))
  problems += [f"{name}: differs (SHA-256 {found[name]}, recorded {recorded[name]})"
               for name in present if found[name] != recorded[name]]
  formats = {match[1] for name in files if (match := _RECORD_FILE.search(name))}
  problems += [f"{path.name}: a record file the fingerprint does not list"
               for path in sorted(folder.iterdir())
               if path.name not in files and (match := _RECORD_FILE.search(path.name))
               and match[1] in formats]
  recomputed = hashlib.sha256(text(features, kept["shard_lengths"].items(),
                                   list(files.items())).encode()).hexdigest()
  if recomputed != kept["sha256"]:
    problems.append(f"the metadata's fingerprint {kept['sha256']} is not that of its own file list "
                    f"({recomputed}): metadata.json was edited")
  if problems:
    raise Mismatch(f"{folder} does not match its fingerprint {kept['sha256']}:\n  "
                   + "\n  ".join(problems))
  if expected is not None and expected.strip().lower() != kept["sha256"]:
    raise Mismatch(f"{folder} is intact (fingerprint {kept['sha256']}), but it is not the "
                   f"build whose fingerprint is {expected.strip()}: compare the two builds' "
                   f"record of versions (metadata.json, \"{METADATA_KEY}\") and their sources")
  return str(kept["sha256"])

"""TFRecord files written in plain Python, byte for byte as TensorFlow writes them.

TFDS writes a TFRecord shard with `tf.io.TFRecordWriter`, so a worker process
that writes shards imports TensorFlow (seconds of CPU and most of a GB each,
for a framing of four fields). The format is fixed
(https://www.tensorflow.org/tutorials/load_data/tfrecord#tfrecords_format_details):
each record is its length (uint64, little-endian), the masked CRC-32C of
those 8 bytes, the record, and the masked CRC-32C of the record. The CRC
comes from `google-crc32c`, Google's C implementation.
`tests/test_writing.py` compares these files with TensorFlow's.

`ExampleWriter` is TFDS's writer of a config's files with this one for
TFRecord: the builder gives it to TFDS (`PhotoBuilder._example_writer`), so a
Beam worker that writes a split's shards does not import TensorFlow either.
Each file is hashed (SHA-256) as it is written, for the build's fingerprint:
where TFDS's Beam writer writes it, the hash goes into a file of its own in a
folder the builder reads (`hashes_folder`), so no pass reads the records back.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from typing import Any

import google_crc32c
import tensorflow_datasets as tfds
from etils import epath

_MASK_DELTA = 0xA282EAD8


def _masked_crc(data: bytes) -> bytes:
  crc = google_crc32c.value(data)
  return struct.pack("<I", (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF)


def write(path: epath.PathLike, records: Iterable[bytes]) -> str:
  """Writes `records` as the TFRecord file `path` (uncompressed), local or a bucket's;
  returns the file's SHA-256 (hex)."""
  sha256 = hashlib.sha256()
  with epath.Path(path).open("wb") as f:
    for record in records:
      length = struct.pack("<Q", len(record))
      framed = length + _masked_crc(length) + record + _masked_crc(record)
      sha256.update(framed)
      f.write(framed)
  return sha256.hexdigest()


class ExampleWriter(tfds.core.ExampleWriter):  # type: ignore[misc]  # TFDS ships no types.
  """TFDS's writer of a config's record files; TFRecord files in plain Python (`write`), each
  one's SHA-256 written into `hashes_folder` (where not None) under the name it is written at."""

  def __init__(self, file_format: Any, hashes_folder: str | None = None):
    super().__init__(file_format=file_format)
    self.hashes_folder = hashes_folder

  def write(self, path: epath.PathLike, examples: Iterable[tuple[Any, bytes]]) -> Any:
    if self.file_format != tfds.core.FileFormat.TFRECORD:
      return super().write(path, examples)
    sha256 = write(path, (record for _, record in examples))
    if self.hashes_folder is not None:
      folder = epath.Path(self.hashes_folder)
      folder.mkdir(parents=True, exist_ok=True)
      (folder / epath.Path(path).name).write_text(sha256)
    return None

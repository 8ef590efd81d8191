"""The corpus's file and folder names as text, whatever encoding they arrived in.

A zip member with the zip UTF-8 flag is taken as is; otherwise its raw bytes
are tried as UTF-8, then CP949 (Korean Windows): AIHub's zips use all three.
Folder and file names on disk get the same treatment. Every name is then
NFC-normalised, so macOS (NFD) copies resolve to the same class names.
"""

from __future__ import annotations

import os
import unicodedata
import zipfile

_UTF8_FLAG = 0x800


def nfc(text: str) -> str:
  return unicodedata.normalize("NFC", text)


def decode_name(raw: bytes) -> str:
  """Raw name bytes -> NFC text: UTF-8 first, then CP949 (Korean Windows)."""
  for encoding in ("utf-8", "cp949"):
    try:
      return nfc(raw.decode(encoding))
    except UnicodeDecodeError:
      pass
  return nfc(raw.decode("utf-8", errors="replace"))


def member_name(info: zipfile.ZipInfo) -> str:
  if info.flag_bits & _UTF8_FLAG:
    return nfc(info.filename)
  # Without the flag, Python decoded the raw bytes as CP437; undo that.
  return decode_name(info.filename.encode("cp437"))


def disk_name(name: str) -> str:
  return decode_name(os.fsencode(name))

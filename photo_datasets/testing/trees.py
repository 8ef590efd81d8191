"""Zips and folder trees as users hold them (`zip_bytes`, `layouts`, `write_tree`):
names in every encoding and every nesting, and what archivers and operating
systems leave beside photos (`JUNK`, `properties`)."""


from __future__ import annotations

import io
import pathlib
import unicodedata
import zipfile
from collections.abc import Iterable, Mapping

# Zip members get this time, so zips are reproducible byte for byte.
DATE_TIME = (2021, 6, 1, 12, 0, 0)


# What archivers and operating systems leave beside photos, by kind.
JUNK = {
    # AppleDouble resource fork written by macOS beside every file.
    "apple_double": b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + bytes(58),
    ".DS_Store": b"\x00\x00\x00\x01Bud1" + bytes(120),
    "Thumbs.db": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(120),
    "org_url.csv": b"file_name,url\r\n",
}


def properties(lines: Iterable[str], newline: str = "\r\n", bom: bool = False) -> bytes:
  """A crop_area.properties file from its lines."""
  return (("\ufeff" if bom else "").encode()
          + "".join(line + newline for line in lines).encode("utf-8"))


class _RawNameInfo(zipfile.ZipInfo):
  """A member whose name bytes are written exactly as given, without the UTF-8
  flag. (`zipfile` writes any non-ASCII name as flagged UTF-8; on reading,
  unflagged names come back decoded as CP437, so `filename` holds that form.)"""

  def __init__(self, raw: bytes, date_time: tuple[int, int, int, int, int, int] = DATE_TIME):
    super().__init__(raw.decode("cp437"), date_time)
    self.raw_name = raw

  def _encodeFilenameFlags(self) -> tuple[bytes, int]:  # zipfile's own name.
    return self.raw_name, self.flag_bits & ~0x800


def zip_bytes(members: Mapping[str, bytes], names: str = "utf-8-flag",
              compression: int = zipfile.ZIP_STORED, dirs: bool = True) -> bytes:
  """A zip of `members` (name -> bytes), names written as `names` says:
  "utf-8-flag" (UTF-8 with the flag), "utf-8" (UTF-8 bytes, no flag) or
  "cp949" (CP949 bytes, no flag). Names are written in the form given (NFC or
  NFD). With `dirs`, folder entries are written too, as archivers do."""
  entries: dict[str, bytes | None] = {}
  for name, data in members.items():
    if dirs:
      parts = name.split("/")[:-1]
      for i in range(1, len(parts) + 1):
        entries.setdefault("/".join(parts[:i]) + "/", None)
    entries[name] = data
  out = io.BytesIO()
  with zipfile.ZipFile(out, "w") as zf:
    for name, entry in entries.items():
      if names == "utf-8-flag":
        info = zipfile.ZipInfo(name, DATE_TIME)
        if not name.isascii():
          info.flag_bits |= 0x800
      elif names in ("utf-8", "cp949"):
        info = _RawNameInfo(name.encode(names))
      else:
        raise ValueError(f"unknown name encoding {names!r}")
      info.create_system = 3  # Unix, whatever machine writes it.
      if entry is None:
        info.external_attr = (0o40755 << 16) | 0x10
        zf.writestr(info, b"")
      else:
        info.external_attr = 0o644 << 16
        info.compress_type = compression
        zf.writestr(info, entry)
  return out.getvalue()


def nfd(text: str) -> str:
  """`text` decomposed, as macOS writes Korean names."""
  return unicodedata.normalize("NFD", text)


def write_tree(root: pathlib.Path, files: Mapping[str, bytes]) -> None:
  """Writes `files` (relative path -> bytes) under `root`."""
  for name, data in files.items():
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# Name encoding of each group's inner zip in `layouts`: all three the corpus uses.
GROUP_ENCODINGS = {"구이": "utf-8-flag", "찌개": "utf-8", "밥": "cp949"}


def layouts(groups: Mapping[str, Mapping[str, bytes]]) -> dict[str, dict[str, bytes]]:
  """The same Korean food corpus (group -> {member name -> bytes}) in every
  form a user may hold it: form -> {path in the manual dir -> bytes}."""
  inner = {f"{g}.zip": zip_bytes(members, GROUP_ENCODINGS.get(g, "utf-8-flag"))
           for g, members in groups.items()}
  every = {name: data for members in groups.values() for name, data in members.items()}
  return {
      "kfood_zip": {"kfood.zip": zip_bytes(inner, "utf-8", dirs=False)},
      # Re-zipped.
      "kfood_zip_deflated": {"kfood.zip": zip_bytes(inner, compression=zipfile.ZIP_DEFLATED)},
      "group_zips": inner,
      "zip_in_folder": {f"downloads/aihub/{name}": data for name, data in inner.items()},
      "tree": {f"kfood/{name}": data for name, data in every.items()},
      "doubled_tree": {f"{name.split('/')[0]}/{name}": data for name, data in every.items()},
      "deeper": {f"downloads/aihub/79/kfood/{name}": data for name, data in every.items()},
  }


def write_layouts(root: pathlib.Path,
                  groups: Mapping[str, Mapping[str, bytes]]) -> dict[str, pathlib.Path]:
  """Writes every form of `layouts` into its own folder; form -> that folder."""
  forms = layouts(groups)
  for form, files in forms.items():
    write_tree(root / form, files)
  return {form: root / form for form in forms}

"""What the scan's decode keeps and what it skips, on both sides: damaged
copies of real photos (to skip) and valid files with padding or of unusual
kinds (to keep), against today's rule and PIL alone.

  python benchmarks/damage_detection.py [--photos 20] [--garbage 64]

Reads `--photos` real photos of ../shared/realdata/kfood (the AIHub photos,
never written anywhere) and prints four tables:

1. Each format the corpus holds (the photos re-encoded): `--garbage` random
   bytes written at 9 places spread over the compressed data (10 % to 90 % of
   the file), and a cut at 2/3: how many `images.inspect_image` rejects.
2. The real JPEGs as they are, damaged at 5 places (1/6 to 5/6 of the file)
   in three ways: 96 bytes overwritten by random ones, 64 bytes flipped (each
   XOR 0xFF), 64 random bytes inserted: how many are caught, and of the
   copies the scan's rule keeps but the rule before caught, how many PIL
   decodes to the intact photo's pixels (damage to metadata only).
3. The real JPEGs as they are, padded where encoders pad (zeros, 0xFF, both,
   or a few arbitrary bytes; before the end marker, between header segments,
   before the scan, after the end marker): how many are kept.
4. Valid files of every unusual kind made from the photos
   (`testing.unusual_photos`): how many are kept.

Every count is given for the scan's rule (padding tolerated,
`images.jpeg_padding`), for the rule before it (libjpeg's every warning about
the compressed data an error: the same decode, rejecting wherever padding was
tolerated) and for PIL's decode alone (`strict=False`). Then the decode's
cost: the CPU time of `images.decode_and_inspect` (the scan's decode and
hashes) on the real JPEGs as they are and padded with 300 zeros before the
end marker, strict, and as PIL alone (medians of 5 passes in turns,
`time.process_time`, so other work on a shared machine does not count).
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import time
from collections.abc import Callable

import numpy as np
from PIL import Image

from photo_datasets import testing
from photo_datasets.photos import images

import benchmark_corpus

REAL_KFOOD = benchmark_corpus.REALDATA / "kfood"
RULES = ("scan's rule", "rule before", "PIL alone")


def _verdicts(data: bytes) -> tuple[bool, bool, bool]:
  """Whether each of `RULES` rejects `data`."""
  try:
    padding = images.inspect_image(data).padding
    rejected = False
  except images.BadImage:
    padding, rejected = 0, True
  try:
    images.inspect_image(data, strict=False)
    alone = False
  except images.BadImage:
    alone = True
  return rejected, rejected or padding > 0, alone


def _counts(copies: list[bytes], keep: bool) -> str:
  """'a | b | c' of N: how many copies each rule keeps (`keep`) or rejects."""
  verdicts = [_verdicts(data) for data in copies]
  counted = [sum(v[rule] != keep for v in verdicts) for rule in range(len(RULES))]
  return " | ".join(f"{n} of {len(copies)}" for n in counted)


def _damaged(data: bytes, kind: str, offset: int) -> bytes:
  noise = random.Random(offset).randbytes(96 if kind == "overwritten" else 64)
  if kind == "overwritten":
    return data[:offset] + noise + data[offset + len(noise):]
  if kind == "flipped":
    return data[:offset] + bytes(b ^ 0xFF for b in data[offset:offset + 64]) + data[offset + 64:]
  return data[:offset] + noise + data[offset:]


def _header(*columns: str) -> str:
  names = [columns[0], *RULES, *columns[1:]]
  return f"| {' | '.join(names)} |\n|{' --- |' * len(names)}"


def _pixels(data: bytes) -> np.ndarray:
  return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


STRAY = {f"arbitrary_{n}": bytes(range(1, n + 1)) for n in (2, 4, 8, 16)}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--photos", type=int, default=20)
  parser.add_argument("--garbage", type=int, default=64)
  args = parser.parse_args()
  paths = sorted(p for p in REAL_KFOOD.glob("*/*/*") if p.suffix.lower() == ".jpg")[:args.photos]
  pictures = [Image.open(p).convert("RGB") for p in paths]
  jpegs = [data for data in (p.read_bytes() for p in paths) if data.startswith(b"\xff\xd8")]
  print(f"{len(pictures)} real photos of {REAL_KFOOD} ({len(jpegs)} JPEGs); "
        f"counts per rule: {', '.join(RULES)}")

  print(f"\n1. Damage caught: each format, {args.garbage} bytes of garbage at 9 places, "
        "or a cut at 2/3\n")
  print(_header("format, damage"))
  for name in testing.CORPUS_FORMATS:
    encoded = [testing.encoded(picture, name) for picture in pictures]
    garbage = [testing.with_garbage(data, len(data) * tenth // 10, args.garbage)
               for data in encoded for tenth in range(1, 10)]
    print(f"| {name}, garbage | {_counts(garbage, keep=False)} |")
    print(f"| {name}, cut "
          f"| {_counts([data[:len(data) * 2 // 3] for data in encoded], keep=False)} |")

  print("\n2. Damage caught: the real JPEGs at 5 places\n")
  print(_header("damage", "newly kept, pixels intact"))
  for kind in ("overwritten", "flipped", "inserted"):
    copies = [(data, _damaged(data, kind, len(data) * sixth // 6))
              for data in jpegs for sixth in range(1, 6)]
    # Damage the scan's rule keeps and the rule before caught: decoded to the intact photo's pixels?
    newly_kept = [(data, bad) for data, bad in copies if _verdicts(bad)[:2] == (False, True)]
    intact = sum(np.array_equal(_pixels(bad), _pixels(data)) for data, bad in newly_kept)
    print(f"| {kind} | {_counts([bad for _, bad in copies], keep=False)} "
          f"| {intact} of {len(newly_kept)} |")

  print("\n3. Kept: the real JPEGs padded\n")
  print(_header("place, padding"))
  for place in testing.PADDING_PLACES:
    for name, padding in (testing.PADDINGS | STRAY).items():
      print(f"| {place}, {name} "
            f"| {_counts([testing.padded(d, place, padding) for d in jpegs], keep=True)} |")

  print("\n4. Kept: valid files of unusual kinds\n")
  print(_header("kind"))
  unusual = [testing.unusual_photos(picture) for picture in pictures]
  for kind in unusual[0]:
    print(f"| {kind} | {_counts([files[kind][0] for files in unusual], keep=True)} |")

  padded = [testing.padded(data, "before_end_marker", bytes(300)) for data in jpegs]

  def cpu_seconds(files: list[bytes], strict: bool) -> Callable[[], float]:
    def timed() -> float:
      start = time.process_time()
      for data in files:
        images.decode_and_inspect(data, strict)
      return time.process_time() - start
    return timed

  runs = {"strict": cpu_seconds(jpegs, True), "PIL alone": cpu_seconds(jpegs, False),
          "strict, padded": cpu_seconds(padded, True),
          "PIL alone, padded": cpu_seconds(padded, False)}
  seconds: dict[str, list[float]] = {name: [] for name in runs}
  for _ in range(5):  # In turns, so a change in the machine's load touches all alike.
    for name, run in runs.items():
      seconds[name].append(run())
  ms = {name: 1000 * statistics.median(values) / len(jpegs) for name, values in seconds.items()}
  print(f"\ndecode_and_inspect of {len(jpegs)} real JPEGs, ms CPU a photo: "
        + ", ".join(f"{name} {value:.2f}" for name, value in ms.items())
        + f" (strict / PIL alone: {ms['strict'] / ms['PIL alone']:.2f}x as they are, "
        f"{ms['strict, padded'] / ms['PIL alone, padded']:.2f}x padded)")


if __name__ == "__main__":
  main()

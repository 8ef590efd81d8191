"""How many damaged copies of real photos the scan's decode rejects, per format.

  python benchmarks/damage_detection.py [--photos 20] [--garbage 64]

Re-encodes `--photos` real photos of ../shared/realdata/kfood (the AIHub
photos, never written anywhere) in each format the corpus holds, then damages
each copy by `--garbage` random bytes at 9 places spread over its compressed
data (10 % to 90 % of the file), and by a cut at 2/3. Prints, per format, how
many damaged copies `images.inspect_image` rejects, and for JPEGs how many PIL's
decode alone (`strict=False`) would have rejected; then the strict decode's
cost: the CPU time of `images.decode_and_inspect` (the scan's decode and
hashes) on the real JPEGs as they are, strict and as PIL alone (medians of 5
passes in turns, `time.process_time`, so other work on a shared machine does
not count).
"""

from __future__ import annotations

import argparse
import statistics
import time

from PIL import Image

from photo_datasets import testing
from photo_datasets.photos import images

import benchmark_corpus

REAL_KFOOD = benchmark_corpus.REALDATA / "kfood"


def _rejected(data: bytes, strict: bool = True) -> bool:
  try:
    images.inspect_image(data, strict)
  except images.BadImage:
    return True
  return False


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--photos", type=int, default=20)
  parser.add_argument("--garbage", type=int, default=64)
  args = parser.parse_args()
  paths = sorted(p for p in REAL_KFOOD.glob("*/*/*") if p.suffix.lower() == ".jpg")[:args.photos]
  pictures = [Image.open(p).convert("RGB") for p in paths]
  print(f"{len(pictures)} real photos of {REAL_KFOOD}, {args.garbage} bytes of garbage at 9 places, and a cut")
  print("| format | garbage rejected | cut rejected | garbage rejected by PIL alone |")
  print("| --- | --- | --- | --- |")
  for name, (pil_format, _) in testing.CORPUS_FORMATS.items():
    garbage = plain = cut = 0
    for picture in pictures:
      data = testing.encoded(picture, name)
      cut += _rejected(data[:len(data) * 2 // 3])
      for tenth in range(1, 10):
        bad = testing.with_garbage(data, len(data) * tenth // 10, args.garbage)
        garbage += _rejected(bad)
        plain += _rejected(bad, strict=False)
    total = len(pictures) * 9
    alone = f"{plain} of {total}" if pil_format == "JPEG" else ""
    print(f"| {name} | {garbage} of {total} | {cut} of {len(pictures)} | {alone} |")
  jpegs = [data for data in (p.read_bytes() for p in paths) if data.startswith(b"\xff\xd8")]

  def cpu_seconds(strict: bool) -> float:
    start = time.process_time()
    for data in jpegs:
      images.decode_and_inspect(data, strict)
    return time.process_time() - start

  timed: dict[bool, list[float]] = {True: [], False: []}
  for _ in range(5):  # In turns, so a change in the machine's load touches both alike.
    for strict in timed:
      timed[strict].append(cpu_seconds(strict))
  with_check, without = (statistics.median(timed[strict]) for strict in (True, False))
  print(f"decode_and_inspect of {len(jpegs)} real JPEGs: {1000 * with_check / len(jpegs):.2f} ms CPU a photo "
        f"strict, {1000 * without / len(jpegs):.2f} ms as PIL alone ({with_check / without:.2f}x)")


if __name__ == "__main__":
  main()

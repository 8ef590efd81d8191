"""CPU time of the quality flags per photo, as the scan pays it.

  python benchmarks/quality_cost.py [--photos 300] [--repeats 5]

Makes `--photos` photos of `benchmarks/benchmark_corpus.py` (mosaics of the
real photos in ../shared/realdata at AIHub's sizes and JPEG qualities where
that folder is present, generated pictures otherwise; the table names which),
decodes each as the scan does (`images.decode_and_inspect`), then times
`quality.measure` on those pixels: for each photo the median of `--repeats`
runs, in CPU time of this process (`time.process_time`, one core), so other
work on a shared machine does not count. Prints the median and 90th percentile
over the photos, and the scan's own decode time for scale.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from photo_datasets.photos import images, quality

import benchmark_corpus


def _cpu_ms(function: Callable[[Any], object], argument: Any, repeats: int) -> float:
  """The median CPU time of `function(argument)` over `repeats` runs, in ms."""
  times = []
  for _ in range(repeats):
    start = time.process_time()
    function(argument)
    times.append(time.process_time() - start)
  return float(np.median(times)) * 1000


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--photos", type=int, default=300)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args()
  name, photos = benchmark_corpus.photos(args.photos, args.seed)
  decoded = [images.decode_and_inspect(data)[1] for data in photos]
  quality.measure(decoded[0])  # Warm-up: numpy's first calls.
  flags = [_cpu_ms(quality.measure, pixels, args.repeats) for pixels in decoded]
  decodes = [_cpu_ms(images.decode_and_inspect, data, 1) for data in photos[:50]]
  sides = sorted(min(p.size) for p in decoded)
  print(f"corpus: {name}")
  print(f"{len(photos)} photos, scan pixels {sides[0]}-{sides[-1]} px on the short side "
        f"(median {sides[len(sides) // 2]}); CPU time per photo, "
        f"median of {args.repeats} runs each:")
  print(f"  quality.measure: median {np.median(flags):.3f} ms, "
        f"90th percentile {np.percentile(flags, 90):.3f} ms, max {max(flags):.3f} ms")
  print("  the scan's decode_and_inspect (for scale, 50 photos): "
        f"median {np.median(decodes):.2f} ms")


if __name__ == "__main__":
  main()

"""Credits of the flower photos, from the archive's `LICENSE.txt`.

Lines come in two orders, both used by the real file:
  `daisy/1.jpg CC-BY by Ana María - https://www.flickr.com/photos/x/1/`
  `daisy/2.jpg CC-BY https://www.flickr.com/photos/y/ - by Joe Martin`
Both become `CC-BY by <author> - <url>`.
"""

from __future__ import annotations

import re

_AUTHOR_FIRST = re.compile(r"^CC-BY by (?P<author>.+?) - (?P<url>\S+)$")
_URL_FIRST = re.compile(r"^CC-BY (?P<url>\S+) - by (?P<author>.+)$")


def parse_attributions(text: str) -> dict[str, str]:
  """Maps `<class>/<file>` to its credit line; other lines are ignored."""
  credits = {}
  for line in text.splitlines():
    path, _, rest = line.strip().partition(" ")
    match = _AUTHOR_FIRST.match(rest) or _URL_FIRST.match(rest)
    if "/" in path and match:
      credits[path] = f"CC-BY by {match['author'].strip()} - {match['url']}"
  return credits

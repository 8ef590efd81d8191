"""The read side's checks of its callers' numbers, one wording for all."""

from __future__ import annotations

POSITIVE = range(1, 2**63)
NON_NEGATIVE = range(0, 2**63)


def whole_number(value: object, name: str, allowed: range) -> int:
  """`value` itself where it is an int in `allowed` (not a bool); else a
  ValueError naming `name`."""
  if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
    bound = (f"an integer from {allowed.start} to {allowed.stop - 1}" if allowed.stop < 2**62
             else f">= {allowed.start}")
    raise ValueError(f"{name} must be {bound}, got {value!r}.")
  return value

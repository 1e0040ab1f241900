"""The number grammar: digit groups with decimal or thousands separators, and unit words."""

from __future__ import annotations

import math

# Longer digit strings are absurd for every field here; reading them is pointless (and int() of
# thousands of digits is slow): they count as infinite and fail the range checks.
MAX_DIGITS = 24


def number_value(s: str) -> float:
    """Value of a digit run with separators: "1,5" = 1.5, "1,500" = 1500, "1.234,5" = 1234.5.

    A comma followed by exactly three digits groups thousands (English "1,500"); otherwise a comma
    is a decimal mark (Russian "2,7"). A point is decimal unless it repeats with three-digit groups.
    """
    if len(s) > MAX_DIGITS:
        return math.inf
    has_comma, has_point = "," in s, "." in s
    if not has_comma and not has_point:
        return float(s)
    if has_comma and has_point:
        last = max(s.rfind(","), s.rfind("."))
        whole = s[:last].replace(",", "").replace(".", "")
        return float(f"{whole}.{s[last + 1:]}")
    parts = s.split("," if has_comma else ".")
    if len(parts) > 2:
        if all(len(p) == 3 for p in parts[1:]):
            return float("".join(parts))
        return float(f"{parts[0]}.{parts[1]}")  # a version-like "1.2.3": keep the first two
    if has_comma and len(parts[1]) == 3:
        return float(parts[0] + parts[1])
    return float(f"{parts[0]}.{parts[1]}")


def whole(v: float) -> bool:
    """A positive whole number (huge ones too, so that range checks can report them)."""
    return 1 <= v < 1e18 and v == int(v)


def is_count(v: float, limit: float = 100_000) -> bool:
    """A whole number usable as a count."""
    return 1 <= v <= limit and v == int(v)

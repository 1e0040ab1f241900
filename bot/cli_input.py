"""What the command line reads, read safely: bounded lines, arguments that are not UTF-8, hostile JSON.

- `read_lines(stream, limit)`: one line at a time, at most `limit` characters of it held in memory; a
  longer line is consumed in chunks and comes out as `None` (the caller answers "input line too long").
- `bad_argument(argv)`: the first argument that is not valid UTF-8 (Python hands it over with lone
  surrogates, which no UTF-8 output can carry).
- `dumps_line(obj)`: one JSON line; text that came in undecodable is escaped rather than a crash.
- `loads_limited(text)`: JSON with a nesting limit and a digit limit for integers, each with a message that
  says which, instead of RecursionError or Python's 4,300-digit ValueError.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

MAX_DEPTH = 64  # a request is 3 levels deep; a config.json about 4
MAX_INT_DIGITS = 30  # more than any count, size or price a request holds
CHUNK = 1 << 16


def read_lines(stream: Any, limit: int) -> Iterator[str | None]:
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        if len(raw) > limit and not raw.endswith("\n"):
            while (rest := stream.readline(CHUNK)) and not rest.endswith("\n"):
                pass  # the rest of an over-long line, dropped as it is read
            yield None
            continue
        line = raw[:-1] if raw.endswith("\n") else raw
        yield line[:-1] if line.endswith("\r") else line


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def bad_argument(argv: list[str]) -> int | None:
    """The position (from 1) of the first argument that is not valid UTF-8, or None."""
    for n, arg in enumerate(argv, start=1):
        if not is_utf8(arg):
            return n
    return None


def dumps_line(obj: Any) -> str:
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if not is_utf8(text):  # a lone surrogate from undecodable input: \\u-escaped, still valid JSON
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    return text


class JsonTooHostile(ValueError):
    """JSON that parses only at an unreasonable cost; str() is the message for the user."""


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonTooHostile(f"a number with {len(digits.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(digits)


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def loads_limited(text: str) -> Any:
    """`json.loads` that raises `JsonTooHostile` for nesting deeper than MAX_DEPTH or an integer with more
    than MAX_INT_DIGITS digits, and `json.JSONDecodeError` for what is not JSON."""
    try:
        value = json.loads(text, parse_int=_int)
    except RecursionError:
        raise JsonTooHostile(f"nested more than {MAX_DEPTH} levels deep") from None
    if _depth(value) > MAX_DEPTH:
        raise JsonTooHostile(f"nested more than {MAX_DEPTH} levels deep")
    return value

"""`--key value`, `--key=value` and bare switches of a command line, as a mapping."""

from __future__ import annotations

import re


def flags(args: list[str]) -> tuple[dict[str, str | list[str] | bool], list[str]]:
    """`--key value`, `--key=value`, bare `--switch` → mapping; and the positional arguments."""
    out: dict[str, str | list[str] | bool] = {}
    pos: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and len(a) > 1 and not re.fullmatch(r"-\d+(\.\d+)?", a):
            key, eq, val = a.partition("=")
            if eq:
                out[key] = val
            else:
                vals = []
                while i + 1 < len(args) and not (args[i + 1].startswith("-") and len(args[i + 1]) > 1
                                                 and not re.fullmatch(r"-\d+(\.\d+)?", args[i + 1])):
                    i += 1
                    vals.append(args[i])
                out[key] = True if not vals else vals[0] if len(vals) == 1 else vals
        else:
            pos.append(a)
        i += 1
    return out, pos

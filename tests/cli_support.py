"""`gpu-advisor` run in process through `bot.cli.main(argv)`, its standard streams captured: what a subprocess would
print and exit with, without starting Python for every case (tests/bot/test_cli_input.py keeps real processes for
what only a process shows: bytes in argv, a closed pipe, a huge stdin)."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, stdin: str | bytes = "") -> Ran:
    from bot.cli import main

    data = stdin.encode() if isinstance(stdin, str) else stdin
    fin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")
    out, err = io.BytesIO(), io.BytesIO()
    fout = io.TextIOWrapper(out, encoding="utf-8", newline="\n", write_through=True)
    ferr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = fin, fout, ferr
    try:
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: a usage error is exit 2
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        fout.flush()
        ferr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return Ran(code or 0, out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace"))

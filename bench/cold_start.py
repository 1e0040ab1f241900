"""Cold start of the CLI and the bot, as a ratio to `python -c pass` measured in the same run.

    python bench/cold_start.py [--runs 5]

Each command runs in a fresh interpreter `--runs` times, interleaved with the baseline; the median wall time of
each is printed with its ratio to the baseline's median. `python -X importtime -m bot ask ...` shows where the
time goes module by module.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

QUESTION = "70B QLoRA на H100?"
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "ask": [sys.executable, "-m", "bot", "ask", QUESTION],
    "estimate": [sys.executable, "-m", "bot", "estimate", QUESTION],
    "bot import": [sys.executable, "-c", "import bot.app"],
}


def once(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    for argv in COMMANDS.values():  # warm the file cache and the bytecode
        once(argv)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, argv in COMMANDS.items():
            times[name].append(once(argv))
    base = statistics.median(times["python -c pass"])
    print(f"{'command':<16} {'median s':>9} {'x pass':>8}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<16} {median:9.3f} {median / base:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

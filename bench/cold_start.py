"""Cold start of the CLI and the bot, as a ratio to `python -c pass` measured in the same run.

    python bench/cold_start.py [--runs 5]

Each command runs in a fresh interpreter `--runs` times, interleaved with the baseline; the median wall time of
each is printed with its ratio to the baseline's median, and the median CPU time (user + system) of the child, which
a busy machine inflates less than the wall time. The load average is printed with the figures: on a shared machine
only a run at a load well under the core count says what a quiet one would. The children run with bytecode caching
on (PYTHONDONTWRITEBYTECODE dropped), as an installed wheel does. `python -X importtime -m bot ask ...` shows where
the time goes module by module.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

QUESTION = "70B QLoRA на H100?"
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "ask": [sys.executable, "-m", "bot", "ask", QUESTION],
    "estimate": [sys.executable, "-m", "bot", "estimate", QUESTION],
    "--version": [sys.executable, "-m", "bot", "--version"],
    "bot import": [sys.executable, "-c", "import bot.app"],
}


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def once(argv: list[str]) -> tuple[float, float]:
    """(wall, cpu) seconds of one run."""
    cpu, started = _cpu(), time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=ENV)
    return time.perf_counter() - started, _cpu() - cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    for argv in COMMANDS.values():  # warm the file cache and the bytecode
        once(argv)
    load = os.getloadavg()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, argv in COMMANDS.items():
            times[name].append(once(argv))
    base = statistics.median(wall for wall, _ in times["python -c pass"])
    print(f"load average {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end ({os.cpu_count()} cores)")
    print(f"{'command':<16} {'median s':>9} {'x pass':>8} {'cpu s':>7}")
    for name, values in times.items():
        median = statistics.median(wall for wall, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"{name:<16} {median:9.3f} {median / base:8.1f} {cpu:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

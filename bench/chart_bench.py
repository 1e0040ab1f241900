"""How long one memory chart takes (matplotlib's Agg, 800 × 500 px): figures, not a test.

Usage: python bench/chart_bench.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bot.views.chart import chart_png
from engine.answer import answer
from engine.parse import parse

QUESTIONS = ("full fine-tune 7B", "70B QLoRA на H100?", "LoRA Llama 3.1 8B on a 4090, 8k context")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    rounds = ap.parse_args().rounds
    for question in QUESTIONS:
        a = answer(parse(question))
        chart_png(a, "ru")  # warm: fonts loaded
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            chart_png(a, "ru")
            times.append(time.perf_counter() - t)
        print(f"{question!r}: median {statistics.median(times) * 1e3:.0f} ms, max {max(times) * 1e3:.0f} ms "
              f"per chart ({rounds} rounds)")


if __name__ == "__main__":
    main()

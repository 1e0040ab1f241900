"""How long one chart takes warm (matplotlib's Agg, 1080 × 1350 px, PNG included), training and serving answers:
figures, not a test.

Usage: python bench/chart_bench.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bot.views.chart import chart_png
from engine.answer import answer
from engine.parse import parse

QUESTIONS = ("full fine-tune 7B", "70B QLoRA на H100?", "LoRA Llama 3.1 8B on a 4090, 8k context",
             # serving charts (bot/views/serving_chart.py)
             "Llama 3.1 70B на vLLM для 32 пользователей, контекст 8k", "Llama 3.1 70B vLLM 128 users 8k on 4xH100",
             "Llama 3.1 8B on ollama")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    rounds = ap.parse_args().rounds
    for question in QUESTIONS:
        a = answer(parse(question))
        chart_png(a, "ru")  # warm: fonts loaded
        times, cpu = [], []
        for _ in range(rounds):
            t, c = time.perf_counter(), time.process_time()
            chart_png(a, "ru")
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        # CPU time is what the chart costs on an idle core; wall time also counts waiting for a busy machine's CPU
        print(f"{question!r}: median {statistics.median(times) * 1e3:.0f} ms wall, "
              f"{statistics.median(cpu) * 1e3:.0f} ms CPU, max {max(times) * 1e3:.0f} ms wall per chart "
              f"({rounds} rounds)")


if __name__ == "__main__":
    main()

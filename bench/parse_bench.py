"""Print how long `engine.parse.parse` takes per question, in process (median, p95, max).

Usage: python bench/parse_bench.py [QUESTIONS.jsonl] [--rounds N]

A script that prints figures, not a timed test: the target is a median of 0.2 ms or less per
question. The name indexes are built once before timing (as the bot does at start-up).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from engine.parse import parse, warm

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "examples" / "questions.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("questions", nargs="?", default=str(DEFAULT))
    ap.add_argument("--rounds", type=int, default=50)
    a = ap.parse_args()
    questions = [json.loads(line)["q"] for line in Path(a.questions).read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    t0 = time.perf_counter()
    warm()
    print(f"index build (once): {(time.perf_counter() - t0) * 1e3:.1f} ms")
    times: list[float] = []
    for _ in range(a.rounds):
        for q in questions:
            t = time.perf_counter()
            parse(q)
            times.append(time.perf_counter() - t)
    times.sort()
    p95 = times[int(0.95 * (len(times) - 1))]
    print(f"{len(questions)} questions x {a.rounds} rounds")
    print(f"median {statistics.median(times) * 1e3:.3f} ms  p95 {p95 * 1e3:.3f} ms  "
          f"max {times[-1] * 1e3:.3f} ms per question")
    long_text = ("QLoRA 70B на H100 с контекстом 8k, батч 4, 3 эпохи; " * 80)[:4096]
    for label, text in (("4096-char question", long_text), ("4000-digit number", "9" * 4000)):
        t = time.perf_counter()
        parse(text)
        print(f"{label}: {(time.perf_counter() - t) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

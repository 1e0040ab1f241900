"""Print how long the parser takes per question, in process (median, p95, max), and for long texts.

Usage: python bench/parse_bench.py [QUESTIONS.jsonl ...] [--rounds N]

A script that prints figures, not a timed test: the targets are a median of 0.2 ms or less per question
and 10 ms or less for a 4096-character text. The name indexes and the typo index are built once before
timing (as the bot does at start-up). Without arguments it reads shared/examples/questions.jsonl and the
project's own tests/parse_v2_questions.jsonl, and also times the follow-up reader (tests/parse_followups.jsonl)
and the /price reader.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from engine.edits import merge_follow_up
from engine.parse import parse, warm
from engine.parse.followup import read_follow_up
from engine.parse.price import read_price_args

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [ROOT.parent / "shared" / "examples" / "questions.jsonl", ROOT / "tests" / "parse_v2_questions.jsonl"]
FOLLOWUPS = ROOT / "tests" / "parse_followups.jsonl"
PRICES = ["H100", "H100 200 руб", "H100 2.5$", "H100 = 200₽", "A100 40GB 1,2", "4090 0.4 $/час", "Foo 9000 2$"]
LONG = {
    "4096-char question": "QLoRA 70B на H100 с контекстом 8k, батч 4, 3 эпохи; ",
    "4096-char v2 question": "GRPO qwen 7b unsloth на 8 аш сотках, 8 генераций, tp=2, бюджет 50 тыс рублей за сутки; ",
    "4096 chars of 'a '": "a ",
    "4096 chars of '8x'": "8x",
    "4096 chars of 'a1'": "a1",
    "4096 chars of '8k '": "8k ",
    "4096 chars of emoji": "😀",
    "4096 chars of typos": "qlroa infernce unslot mistarl ",
    "4000-digit number": "9",
}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _per_call(fn: Callable[[str], object], texts: list[str], rounds: int) -> list[float]:
    times: list[float] = []
    for _ in range(rounds):
        for q in texts:
            t = time.perf_counter()
            fn(q)
            times.append(time.perf_counter() - t)
    return sorted(times)


def _report(label: str, times: list[float]) -> None:
    p95 = times[int(0.95 * (len(times) - 1))]
    print(f"{label}: median {statistics.median(times) * 1e3:.3f} ms  p95 {p95 * 1e3:.3f} ms  "
          f"max {times[-1] * 1e3:.3f} ms")


def _best(text: str, tries: int = 5) -> float:
    """The fastest of a few parses with the collector paused: the parser's own work."""
    gc.disable()
    try:
        best = float("inf")
        for _ in range(tries):
            t = time.perf_counter()
            parse(text)
            best = min(best, time.perf_counter() - t)
        return best
    finally:
        gc.enable()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("questions", nargs="*", default=[str(p) for p in DEFAULT])
    ap.add_argument("--rounds", type=int, default=50)
    a = ap.parse_args()
    questions = [c["q"] for path in a.questions for c in _lines(Path(path))]
    t0 = time.perf_counter()
    warm()
    print(f"index build (once): {(time.perf_counter() - t0) * 1e3:.1f} ms")
    print(f"{len(questions)} questions x {a.rounds} rounds")
    _report("parse, per question", _per_call(parse, questions, a.rounds))
    if FOLLOWUPS.exists():
        cases = _lines(FOLLOWUPS)
        previous = {c["previous"]: parse(c["previous"]) for c in cases}

        def follow(text: str, prev=previous[cases[0]["previous"]]) -> object:
            fu = read_follow_up(text)
            return merge_follow_up(prev, fu) if fu.is_follow_up else fu

        _report(f"follow-up read + merge ({len(cases)} messages)", _per_call(follow, [c["q"] for c in cases],
                                                                           a.rounds))
    _report(f"/price arguments ({len(PRICES)})", _per_call(read_price_args, PRICES, a.rounds))
    worst = 0.0
    for label, piece in LONG.items():
        text = (piece * (4096 // len(piece) + 1))[:4096 if piece != "9" else 4000]
        took = _best(text)
        worst = max(worst, took)
        print(f"{label}: {took * 1e3:.2f} ms")
    print(f"slowest 4096-char text: {worst * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

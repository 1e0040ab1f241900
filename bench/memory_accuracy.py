"""Print the memory estimate's error against measured peaks of real runs, per method and per source.

Usage: python bench/memory_accuracy.py [MEASURED.jsonl] [-v]

Same yardstick as shared/tools/eval_memory.py: the truth is the measured peak, times 1.1 when it
was measured as allocated/active memory (the estimate is of the reserved peak); the error is
estimate / truth − 1; the band is −10 % … +25 %. A script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from engine.contract import estimate_request

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "measured-memory.jsonl"
ALLOCATOR_RESERVE = 1.10


def in_band(errors: list[float]) -> float:
    return sum(-0.10 <= e <= 0.25 for e in errors) / len(errors)


def table(title: str, groups: dict[str, list[float]]) -> None:
    print(f"\n| {title} | n | median abs error | in band (-10..+25%) | worst under |")
    print("|---|---|---|---|---|")
    for key, errs in sorted(groups.items()):
        med = statistics.median(abs(e) for e in errs)
        print(f"| {key} | {len(errs)} | {med:.1%} | {in_band(errs):.0%} | {min(errs):+.1%} |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", nargs="?", default=str(DEFAULT))
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    with open(args.bench, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    by_method: dict[str, list[float]] = defaultdict(list)
    by_source: dict[str, list[float]] = defaultdict(list)
    errors = []
    for case in cases:
        m = case["measured"]
        truth = m["peak_gib"] * (ALLOCATOR_RESERVE if m["metric"] in ("allocated", "active") else 1.0)
        result = estimate_request(case["request"])
        est = result["per_gpu"]["total"] if "per_gpu" in result else float("nan")
        e = est / truth - 1
        errors.append(e)
        by_method[case["request"]["method"]].append(e)
        by_source[case.get("source_id", "?")].append(e)
        if args.v:
            r = case["request"]
            print(f"{case['id']:>5} {case.get('source_id', '?')} {r['method']:9} {r['model']['name'][:22]:22} "
                  f"s {r['seq_len']:>6} b {r['batch_size']:>2} ck {r['gradient_checkpointing']!s:5} "
                  f"{r['sharding']:5} n{r['gpus'][0]['count']} est {est:7.2f} truth {truth:7.2f} {e:+.1%}")
    table("method", by_method)
    table("source", by_source)
    med = statistics.median(abs(e) for e in errors)
    print(f"\nall: n={len(errors)} median |error| {med:.1%}, in band {in_band(errors):.0%}, "
          f"worst under-estimate {min(errors):+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

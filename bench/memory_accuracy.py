"""Print the memory estimate's error against measured peaks of real runs: per method, per source, per framework,
with and without each run's framework in its request (as shared/tools/eval_memory.py --framework sends it).

Usage: python bench/memory_accuracy.py [MEASURED.jsonl] [-v] [--out-of-band]

Same yardstick as shared/tools/eval_memory.py: the truth is the measured peak, times 1.1 when it was
measured as allocated/active memory (the estimate is of the reserved peak); the error is
estimate / truth − 1; the band is −10 % … +25 %. A script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from engine.contract import estimate_request

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "measured-memory.jsonl"
ALLOCATOR_RESERVE = 1.10


def in_band(errors: list[float]) -> float:
    return sum(-0.10 <= e <= 0.25 for e in errors) / len(errors)


def truth(case: dict[str, Any]) -> float:
    m = case["measured"]
    return float(m["peak_gib"]) * (ALLOCATOR_RESERVE if m["metric"] in ("allocated", "active") else 1.0)


def request(case: dict[str, Any], with_framework: bool) -> dict[str, Any]:
    r = dict(case["request"])
    if with_framework and case.get("framework"):
        r["framework"] = case["framework"]
    return r


def errors(cases: list[dict[str, Any]], with_framework: bool) -> list[tuple[dict[str, Any], float, float]]:
    out = []
    for case in cases:
        result = estimate_request(request(case, with_framework))
        est = float(result["per_gpu"]["total"]) if "per_gpu" in result else float("nan")
        out.append((case, est, est / truth(case) - 1))
    return out


def table(title: str, groups: dict[str, list[float]]) -> None:
    print(f"\n| {title} | n | median abs error | in band (-10..+25%) | worst under |")
    print("|---|---|---|---|---|")
    for key, errs in sorted(groups.items()):
        med = statistics.median(abs(e) for e in errs)
        print(f"| {key} | {len(errs)} | {med:.1%} | {in_band(errs):.0%} | {min(errs):+.1%} |")


def summary(label: str, rows: list[tuple[dict[str, Any], float, float]]) -> str:
    errs = [e for _c, _est, e in rows]
    med = statistics.median(abs(e) for e in errs)
    return (f"{label}: n={len(errs)} median |error| {med:.1%}, in band {in_band(errs):.0%} "
            f"({sum(-0.10 <= e <= 0.25 for e in errs)}), worst under-estimate {min(errs):+.1%}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", nargs="?", default=str(DEFAULT))
    ap.add_argument("-v", action="store_true", help="print every run")
    ap.add_argument("--out-of-band", action="store_true", help="print the runs outside the band")
    args = ap.parse_args()
    with open(args.bench, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    results = {False: errors(cases, False), True: errors(cases, True)}
    for with_framework, rows in results.items():
        label = "with --framework (each run's stack)" if with_framework else "without a framework (HF + TRL assumed)"
        print(f"\n## {label}")
        by_method: dict[str, list[float]] = defaultdict(list)
        by_source: dict[str, list[float]] = defaultdict(list)
        by_framework: dict[str, list[float]] = defaultdict(list)
        for case, est, e in rows:
            r = case["request"]
            by_method[r["method"]].append(e)
            by_source[case.get("source_id", "?")].append(e)
            by_framework[case.get("framework") or "?"].append(e)
            outside = not -0.10 <= e <= 0.25
            if args.v or (args.out_of_band and outside):
                gpus = r.get("gpus") or [{}]
                print(f"{case['id']:>5} {case.get('source_id', '?')} {case.get('framework', '?'):9} {r['method']:9} "
                      f"{r['model'].get('name', '')[:22]:22} s {r.get('seq_len')!s:>6} b {r.get('batch_size')!s:>2} "
                      f"ck {r.get('gradient_checkpointing')!s:5} {r.get('sharding')!s:5} n{gpus[0].get('count', 1)} "
                      f"est {est:7.2f} truth {truth(case):7.2f} {e:+.1%}")
        table("method", by_method)
        table("framework", by_framework)
        table("source", by_source)
    print()
    print(summary("without framework", results[False]))
    print(summary("with framework", results[True]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

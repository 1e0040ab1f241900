"""Verdict agreement: every measured run that names its card must be told it fits (or fits tightly) on that card.

Usage: python bench/verdict_agreement.py [MEASURED.jsonl] [--framework]

For each run of shared/data/measured-memory.jsonl whose request names its GPU, the estimate's peak plus the CUDA
context is compared with the card's usable memory by the answer's own rule (engine.fit.capacity: the
driver-reported total, an "80 GB" A100 is 78.88 GiB; fits when total + cuda_context <= capacity; tight under
10 % to spare). The run really ran on that card, so "doesn't fit" is a wrong verdict. Prints the count
(without and with each run's framework) and the rows told "doesn't fit". A script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from engine.catalog import find_gpu
from engine.contract import estimate_request
from engine.fit import NO_HEADROOM, capacity, fits, need_gb, tight
from engine.schema import Breakdown

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "measured-memory.jsonl"


def verdict(case: dict[str, Any], with_framework: bool) -> tuple[str, float, float] | None:
    """("fits" | "tight" | "no_fit", need GiB, usable GiB), or None when the run names no card. The rule is
    the answer's own (engine.fit: capacity, fits, tight), on the breakdown `estimate` reports."""
    r = dict(case["request"])
    gpus = r.get("gpus") or []
    if not gpus or not gpus[0].get("name"):
        return None
    if with_framework and case.get("framework"):
        r["framework"] = case["framework"]
    result = estimate_request(r)
    if "per_gpu" not in result:
        return ("no_fit", float("inf"), 0.0)
    gpu = find_gpu(gpus[0]["name"], gpus[0].get("memory_gb"))
    room = capacity(gpus[0]["name"], gpus[0].get("memory_gb") or (gpu.memory_gb if gpu else 0.0))
    b = Breakdown.model_validate({**result["per_gpu"], "cpu_ram": 0.0, "trainable_params": 0.0})
    if not fits(b, room, NO_HEADROOM):
        return ("no_fit", need_gb(b), room)
    return ("tight" if tight(b, room) else "fits", need_gb(b), room)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", nargs="?", default=str(DEFAULT))
    args = ap.parse_args()
    with open(args.bench, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    for with_framework in (False, True):
        label = "with each run's framework" if with_framework else "without a framework (HF + TRL)"
        named = 0
        wrong = []
        for case in cases:
            v = verdict(case, with_framework)
            if v is None:
                continue
            named += 1
            if v[0] == "no_fit":
                wrong.append((case, v))
        print(f"\n{label}: {named - len(wrong)} of {named} runs that name their card are told fits/tight "
              f"({(named - len(wrong)) / named:.1%}); {len(wrong)} told \"doesn't fit\"")
        for case, (_kind, need, usable) in wrong:
            r = case["request"]
            g = r["gpus"][0]
            print(f"  {case['id']:>4} {case.get('source_id')} {case.get('framework', '?'):9} {r['method']:9} "
                  f"{r['model'].get('name', '')[:22]:22} s {r.get('seq_len')} b {r.get('batch_size')} "
                  f"{r.get('sharding')} x{g.get('count', 1)} on {g['name']}: needs {need:.1f} GiB of {usable:.1f} "
                  f"(measured {case['measured']['peak_gib']:.1f} {case['measured']['metric']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

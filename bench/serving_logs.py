"""Per engine and version: the serving model's median error on start-up logs, for the KV pool, KV tokens, the
activation peak and max concurrency; on the public logs (shared/data/serving-logs.jsonl, each row as
shared/tools/eval_serving.py requests it) and on the start-up logs under tests/data/logs read back by `check`.

Usage: python bench/serving_logs.py [SERVING-LOGS.jsonl]
A script that prints figures, not a test. The fixtures under tests/data/logs are written for the reader tests
(their figures follow each engine's arithmetic, not a measurement): their column checks that a log read back is
estimated as its own settings say, not the model's accuracy.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from bench.serving_accuracy import request
from engine.configs.logcheck import check_log
from engine.contract import estimate_request

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = Path("/work/shared/data/serving-logs.jsonl")
FIXTURES = ROOT / "tests" / "data" / "logs"
FIXTURE_GPUS = {"l40s": "L40S", "a10g": "A10G", "h100": "H100", "a100": "A100", "4090": "RTX 4090"}
METRICS = (("kv_cache_gib", "kv_pool_gib", "KV pool"), ("kv_tokens", "kv_tokens", "KV tokens"),
           ("activation_peak_gib", "activation_peak_gib", "activation peak"),
           ("max_concurrency", "max_concurrency", "max concurrency"))


def version_key(engine: str, family: str, version: str | None) -> str:
    m = re.search(r"(\d+)\.(\d+)", version or "")
    return f"{family} {m.group(1)}.{m.group(2)}" if m else f"{family} (no version)" if family else engine


def table(title: str, errs: dict[str, dict[str, list[float]]], answered: int, total: int) -> None:
    print(f"\n{title}: answered {answered}/{total}")
    print("| engine, version | rows | " + " | ".join(label for *_, label in METRICS) + " |")
    print("|---|---|" + "---|" * len(METRICS))
    for key in sorted(errs):
        cells = []
        for _, _, label in METRICS:
            es = errs[key].get(label, [])
            cells.append(f"{statistics.median(abs(e) for e in es):.1%} (n={len(es)})" if es else "-")
        print(f"| {key} | {max(len(v) for v in errs[key].values()) if errs[key] else 0} | " + " | ".join(cells) + " |")
    every = {label: [e for k in errs for e in errs[k].get(label, [])] for *_, label in METRICS}
    print("| all | | " + " | ".join(f"{statistics.median(abs(e) for e in es):.1%} (n={len(es)})" if es else "-"
                                     for es in every.values()) + " |")


def public(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    errs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    answered = 0
    for r in rows:
        s = estimate_request(request(r)).get("serving") or {}
        if "kv_pool_gib" not in s:
            continue
        answered += 1
        key = version_key(r.get("engine") or "vllm", s.get("engine_family") or "", r.get("engine_version"))
        for truth_key, ours, label in METRICS:
            truth, est = (r.get("measured") or {}).get(truth_key), s.get(ours)
            if truth and est is not None:
                errs[key][label].append(float(est) / float(truth) - 1)
    table(f"public logs ({path.name})", errs, answered, len(rows))


def fixtures() -> None:
    errs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    files = sorted(p for p in FIXTURES.iterdir() if p.suffix in (".log", ".txt"))
    answered = 0
    for p in files:
        gpu = next((g for k, g in FIXTURE_GPUS.items() if k in p.name), None)
        out = check_log(p.read_text(encoding="utf-8"), gpu)
        if not out or not out.get("components"):
            continue
        answered += 1
        key = version_key(out["format"], (out.get("estimate") or {}).get("engine_family") or "",
                          out.get("engine_version"))
        for row in out["components"]:
            if row["diff_pct"] is not None and row["component"] in {label for *_, label in METRICS}:
                errs[key][row["component"]].append(row["diff_pct"] / 100)
    table("start-up logs read back by check (tests/data/logs)", errs, answered, len(files))


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else PUBLIC
    if path.exists():
        public(path)
    fixtures()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

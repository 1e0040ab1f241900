"""The held-out judge: start-up logs the engine was never calibrated on (bench/data/serving_logs_unseen.jsonl),
answered through the engine two ways, per engine and version: answered %, and the median error of the KV pool, KV
tokens, max concurrency and the activation peak.

1. request: each row as shared/tools/eval_serving.py requests it (model, engine, format, TP/PP, the GPU as logged,
   engine options; bench.serving_accuracy.request);
2. check: the row's quoted log lines read back by `check` (engine/configs/logcheck.py check_log) with the row's GPU
   and model named (`check --gpu --model`; a model the log names wins), as a team pasting that log would get it.
   Quotes that are not a log (a parsed run file) are skipped here.

Usage: python -m bench.serving_logs_unseen [FILE] [-v]
A script that prints figures, not a test. Do not tune constants to these rows: they judge the mechanisms.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.serving_accuracy import request
from bench.serving_logs import version_key
from engine.configs.logcheck import check_log
from engine.contract import estimate_request

DEFAULT = Path(__file__).resolve().parent / "data" / "serving_logs_unseen.jsonl"
METRICS = (("kv_cache_gib", "kv_pool_gib", "KV pool"), ("kv_tokens", "kv_tokens", "KV tokens"),
           ("max_concurrency", "max_concurrency", "max concurrency"),
           ("activation_peak_gib", "activation_peak_gib", "activation peak"))
GPU_WORDS = (("3090", "RTX 3090"), ("4090", "RTX 4090"), ("H100", "H100"), ("H200", "H200"), ("A100", "A100"),
             ("T4", "T4"), ("L4", "L4"), ("L40S", "L40S"), ("A10G", "A10G"), ("MI300X", "MI300X"), ("B200", "B200"),
             ("A6000", "RTX A6000"), ("3070", "RTX 3070"), ("4060", "RTX 4060"))

Errors = dict[str, dict[str, list[float]]]


def _median(values: list[float]) -> float:
    s = sorted(abs(v) for v in values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _gpu_name(row: dict[str, Any]) -> str | None:
    text = row.get("gpu") or ""
    return next((name for word, name in GPU_WORDS if word in text), None)


def _record(errs: Errors, key: str, label: str, est: Any, truth: Any) -> None:
    if truth and est is not None:
        errs[key][label].append(float(est) / float(truth) - 1)


def by_request(rows: list[dict[str, Any]], verbose: bool) -> tuple[Errors, int]:
    errs: Errors = defaultdict(lambda: defaultdict(list))
    answered = 0
    for r in rows:
        s = estimate_request(request(r)).get("serving") or {}
        key = version_key(r.get("engine") or "vllm", s.get("engine_family") or r.get("engine") or "vllm",
                          r.get("engine_version"))
        if "kv_pool_gib" not in s:
            errs.setdefault(key, defaultdict(list))
            if verbose:
                print(f"  unanswered: {r['id']}: {s.get('error') or 'no serving block'}")
            continue
        answered += 1
        for truth_key, ours, label in METRICS:
            _record(errs, key, label, s.get(ours), (r.get("measured") or {}).get(truth_key))
        if verbose:
            m = r.get("measured") or {}
            print(f"  {r['id']}: pool {s.get('kv_pool_gib')} vs {m.get('kv_cache_gib')}, "
                  f"tokens {s.get('kv_tokens')} vs {m.get('kv_tokens')}, "
                  f"act {s.get('activation_peak_gib')} vs {m.get('activation_peak_gib')}, "
                  f"weights {s.get('weights_gib')} vs {m.get('weights_gib')}")
    return errs, answered


def by_check(rows: list[dict[str, Any]], verbose: bool) -> tuple[Errors, int, int]:
    errs: Errors = defaultdict(lambda: defaultdict(list))
    answered = tried = 0
    labels = {label for *_, label in METRICS}
    for r in rows:
        quote = r.get("quote") or ""
        if quote.lstrip().startswith("{"):
            continue
        tried += 1
        out = check_log(quote, _gpu_name(r), r.get("model")) or {}  # --gpu / --model, as a team would name them
        family = (out.get("estimate") or {}).get("engine_family") or r.get("engine") or "vllm"
        key = version_key(r.get("engine") or "vllm", family, r.get("engine_version"))
        if not out.get("components"):
            errs.setdefault(key, defaultdict(list))
            if verbose:
                print(f"  check unanswered: {r['id']}: {out.get('error') or out.get('note') or 'not read as a log'}")
            continue
        answered += 1
        for row in out["components"]:
            if row["component"] in labels and row["diff_pct"] is not None:
                errs[key][row["component"]].append(row["diff_pct"] / 100)
    return errs, answered, tried


def table(title: str, errs: Errors, answered: int, total: int) -> None:
    share = f"{answered / total:.0%}" if total else "-"
    print(f"\n{title}: answered {answered}/{total} ({share})")
    print("| engine, version | " + " | ".join(label for *_, label in METRICS) + " |")
    print("|---|" + "---|" * len(METRICS))
    for key in sorted(errs):
        cells = [f"{_median(es):.1%} (n={len(es)})" if (es := errs[key].get(label)) else "-" for *_, label in METRICS]
        print(f"| {key} | " + " | ".join(cells) + " |")
    every = [[e for k in errs for e in errs[k].get(label, [])] for *_, label in METRICS]
    print("| all | " + " | ".join(f"{_median(es):.1%} (n={len(es)})" if es else "-" for es in every) + " |")


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    paths = [a for a in argv if not a.startswith("-")]
    path = Path(paths[0]) if paths else DEFAULT
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    errs, answered = by_request(rows, verbose)
    table(f"unseen logs ({path.name}), as eval_serving requests them", errs, answered, len(rows))
    cerrs, canswered, tried = by_check(rows, verbose)
    table(f"unseen logs ({path.name}), the quoted lines read back by check", cerrs, canswered, tried)
    sources: dict[str, int] = defaultdict(int)
    for r in rows:
        sources[re.sub(r"\s.*", "", r.get("source") or "?")] += 1
    print("\nrows by source: " + ", ".join(f"{k} {v}" for k, v in sorted(sources.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

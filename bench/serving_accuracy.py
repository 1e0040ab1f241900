"""Print the serving model's error against real start-up logs, per metric and per engine.

Usage: python bench/serving_accuracy.py [SERVING-LOGS.jsonl] [-v]

Each log row becomes a CONTRACT v2 request with its own settings (model, engine, format, TP/PP, the GPU as the
engine logged it, engine options), as shared/tools/eval_serving.py builds it; the error is estimate / truth - 1
on the `serving` block. -v prints every row's figures. A script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from engine.contract import estimate_request

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "serving-logs.jsonl"
METRICS = (("weights_gib", "weights_gib"), ("activation_peak_gib", "activation_peak_gib"),
           ("kv_cache_gib", "kv_pool_gib"), ("kv_tokens", "kv_tokens"), ("max_concurrency", "max_concurrency"),
           ("non_torch_gib", "non_torch_gib"), ("cuda_graph_gib", "cuda_graph_gib"))


def request(r: dict[str, Any]) -> dict[str, Any]:
    opts = {k: r.get(k) for k in ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "max_model_len")}
    opts["engine_version"] = (r.get("engine_version") or "").split(" ")[0] or None
    total = r.get("gpu_total_gib")
    m = re.search(r"(\d+)\s*GB", r.get("gpu") or "")
    mem = round(total / 0.9313) if total else (int(m.group(1)) if m else None)
    name = re.sub(r"\s*\(.*?\)|\s*\d+\s*GB.*$", "", r.get("gpu") or "").strip() or None
    tp, pp = r.get("tp") or 1, r.get("pp") or 1
    q: dict[str, Any] = {"model": {"name": r["model"]}, "method": "inference",
                         "serving_engine": r.get("engine") or "vllm", "tensor_parallel": tp, "pipeline_parallel": pp,
                         "gpus": [{"name": name, "memory_gb": mem, "count": tp * pp, "total_gib": total}],
                         "engine_options": {k: v for k, v in opts.items() if v is not None}}
    if r.get("quantization"):
        q["quantization"] = r["quantization"]
    if r.get("kv_cache_dtype") and r["kv_cache_dtype"] not in ("auto", None):
        q["kv_cache_dtype"] = "fp8" if "fp8" in r["kv_cache_dtype"] else r["kv_cache_dtype"]
    if r.get("max_model_len"):
        q["seq_len"] = r["max_model_len"]
    return q


# Decode yardstick: QwenLM/Qwen2.5 docs/source/benchmark/speed_benchmark.rst, vLLM tables (vLLM 0.6.3, A100 80GB,
# batch 1, 2048 tokens generated; speed = 2048 / (prefill + decode)). (model, format, GPUs, input tokens, tokens/s)
QWEN_VLLM = (
    ("Qwen2.5-14B", "bf16", 1, 1, 46.30), ("Qwen2.5-14B", "bf16", 1, 6144, 43.83),
    ("Qwen2.5-14B", "bf16", 1, 14336, 41.91), ("Qwen2.5-14B", "bf16", 1, 30720, 37.18),
    ("Qwen2.5-14B", "bf16", 1, 63488, 26.85), ("Qwen2.5-14B", "int8", 1, 1, 70.40),
    ("Qwen2.5-14B", "int8", 1, 6144, 64.33), ("Qwen2.5-14B", "int8", 1, 14336, 59.21),
    ("Qwen2.5-14B", "int8", 1, 30720, 49.23), ("Qwen2.5-14B", "gptq", 1, 1, 98.02),
    ("Qwen2.5-14B", "gptq", 1, 6144, 86.10), ("Qwen2.5-14B", "gptq", 1, 14336, 76.85),
    ("Qwen2.5-14B", "gptq", 1, 30720, 60.91), ("Qwen2.5-32B", "bf16", 2, 30720, 31.82),
    ("Qwen2.5-32B", "bf16", 2, 63488, 24.45), ("Qwen2.5-32B", "gptq", 1, 1, 55.83),
    ("Qwen2.5-32B", "gptq", 1, 6144, 49.96), ("Qwen2.5-32B", "gptq", 1, 14336, 44.79),
    ("Qwen2.5-72B", "bf16", 4, 1, 31.37), ("Qwen2.5-72B", "bf16", 4, 6144, 29.90),
    ("Qwen2.5-72B", "bf16", 4, 14336, 30.10), ("Qwen2.5-72B", "bf16", 4, 30720, 27.53),
    ("Qwen2.5-72B", "bf16", 4, 63488, 20.74), ("Qwen2.5-72B", "int8", 2, 1, 31.40),
    ("Qwen2.5-72B", "int8", 2, 6144, 29.37), ("Qwen2.5-72B", "int8", 2, 14336, 27.20),
    ("Qwen2.5-72B", "int8", 2, 30720, 23.32), ("Qwen2.5-72B", "awq", 2, 1, 44.30),
    ("Qwen2.5-72B", "awq", 2, 6144, 40.67), ("Qwen2.5-72B", "awq", 2, 14336, 36.63),
    ("Qwen2.5-72B", "awq", 2, 30720, 30.02),
)


def speed_table() -> None:
    errs: dict[str, list[float]] = defaultdict(list)
    for model, fmt, gpus, prompt, truth in QWEN_VLLM:
        s = estimate_request({"model": {"name": model}, "method": "inference", "serving_engine": "vllm",
                              "quantization": fmt, "concurrency": 1, "prompt_len": prompt, "output_len": 2048,
                              "tensor_parallel": gpus, "gpus": [{"name": "A100 80GB SXM", "count": gpus}],
                              "engine_options": {"engine_version": "0.6.3",
                                                 "max_model_len": max(32768, prompt + 2048)}})["serving"]
        seconds = s["ttft_s"] + 2048 / s["decode_tokens_per_s"]["per_user"]
        errs[fmt].append(2048 / seconds / truth - 1)
    every = [e for es in errs.values() for e in es]
    print("\n| decode speed (Qwen2.5 vLLM benchmark) | n | median abs error | median error |")
    print("|---|---|---|---|")
    for fmt, es in sorted(errs.items()):
        print(f"| {fmt} | {len(es)} | {statistics.median(abs(e) for e in es):.1%} | {statistics.median(es):+.1%} |")
    print(f"| all | {len(every)} | {statistics.median(abs(e) for e in every):.1%} | {statistics.median(every):+.1%} |")


# MLA + MoE decode rows (DeepSeek-V3, TP 8, SGLang): (GPU, batch, input, output, tokens/s per request); the rows
# serving.toml's mla_moe_layer_floor_us is the median per-layer excess of (sgl-project/sglang#2643, #6111)
DEEPSEEK_SGLANG = (("H200 SXM", 1, 128, 256, 30.29), ("H200 SXM", 8, 128, 256, 206.32 / 8),
                   ("H200 SXM", 32, 128, 256, 760.52 / 32), ("B200", 1, 512, 512, 46.75),
                   ("B200", 32, 512, 512, 1179.25 / 32))


def deepseek_table() -> None:
    print("\n| DeepSeek-V3 decode (SGLang, TP 8) | batch | tok/s a request | measured | error |")
    print("|---|---|---|---|---|")
    for gpu, batch, prompt, output, truth in DEEPSEEK_SGLANG:
        s = estimate_request({"model": {"name": "DeepSeek-V3"}, "method": "inference", "serving_engine": "sglang",
                              "concurrency": batch, "prompt_len": prompt, "output_len": output,
                              "tensor_parallel": 8, "gpus": [{"name": gpu, "count": 8}]})["serving"]
        got = s["decode_tokens_per_s"]["per_user"]
        print(f"| 8×{gpu} | {batch} | {got:.1f} | {truth:.1f} | {got / truth - 1:+.0%} |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="?", default=str(DEFAULT))
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    rows = [json.loads(line) for line in Path(args.logs).read_text().splitlines() if line.strip()]
    errs: dict[str, list[float]] = defaultdict(list)
    by_engine: dict[tuple[str, str], list[float]] = defaultdict(list)
    answered = 0
    for r in rows:
        s = estimate_request(request(r)).get("serving") or {}
        if "weights_gib" not in s:
            if args.v:
                print(f"  {r['id']}: not answered ({s.get('error') or 'no serving block'})")
            continue
        answered += 1
        family = s.get("engine_family") or r.get("engine")
        line = []
        for truth_key, key in METRICS:
            truth, est = (r.get("measured") or {}).get(truth_key), s.get(key)
            if truth and est is not None:
                e = float(est) / float(truth) - 1
                errs[truth_key].append(e)
                by_engine[(family, truth_key)].append(e)
                line.append(f"{truth_key} {est} / {truth} ({e:+.0%})")
        if args.v:
            print(f"  {r['id']}: " + "; ".join(line))
    print(f"answered {answered}/{len(rows)}")
    print("\n| metric | n | median abs error | worst |")
    print("|---|---|---|---|")
    for truth_key, _ in METRICS:
        es = errs[truth_key]
        if es:
            print(f"| {truth_key} | {len(es)} | {statistics.median(abs(e) for e in es):.1%} |"
                  f" {max(es, key=abs):+.0%} |")
    print("\n| engine | metric | n | median abs error |")
    print("|---|---|---|---|")
    for (family, truth_key), es in sorted(by_engine.items()):
        print(f"| {family} | {truth_key} | {len(es)} | {statistics.median(abs(e) for e in es):.1%} |")
    speed_table()
    deepseek_table()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

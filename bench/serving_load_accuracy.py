"""Print the load model's error against published serving benchmarks (engine/catalog/serving_load_measured.toml):
median |estimate / measured - 1| for throughput, TTFT and TPOT per engine and GPU, on the calibration half and
on the held-out half, and the share of runs answered (a rate the source itself ran above its capacity counts as
answered when the model says the rate is above capacity; `overloaded_in_source` in the data file).
A script that prints figures, not a test.

Usage: python bench/serving_load_accuracy.py [-v] [--by-source]
"""

from __future__ import annotations

import argparse
import statistics
import tomllib
from collections import defaultdict
from typing import Any

from engine.catalog import HERE
from engine.schema import MAX_BATCH, Request
from engine.serving import serve

METRICS = (("output_tokens_s", "throughput"), ("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"))


def runs() -> list[dict[str, Any]]:
    """Every run, with its source's `ttft_stat` (what its TTFT column is: "median" unless the source says "mean")."""
    with (HERE / "serving_load_measured.toml").open("rb") as f:
        doc = tomllib.load(f)
    sources = doc.get("sources", {})
    return [{"ttft_stat": sources.get(r["source"], {}).get("ttft_stat", "median"), **r} for r in doc["runs"]]


def request(r: dict[str, Any]) -> Request:
    opts = {k: r[k] for k in ("max_num_seqs", "max_model_len", "engine_version", "num_scheduler_steps") if k in r}
    rate = r.get("request_rate")  # an open Poisson stream (bench_serving --request-rate), else a closed loop
    inf = r.get("concurrency") == "inf"
    q: dict[str, Any] = {"model": {"name": r["model"]}, "method": "inference", "serving_engine": r["engine"],
                         "tensor_parallel": r["tp"], "gpus": [{"name": r["gpu"], "count": r["tp"]}],
                         "prompt_len": r["prompt"], "output_len": r["output"]}
    if rate is not None:
        q["request_rate"] = float(rate)
    else:
        q["concurrency"] = MAX_BATCH if inf else int(r["concurrency"])
    if r.get("quantization") and r["quantization"] != "bf16":
        q["quantization"] = r["quantization"]
    if r.get("kv_cache_dtype"):
        q["kv_cache_dtype"] = r["kv_cache_dtype"]
    if r.get("dp_attention"):
        q["dp_attention"] = True
    if opts:
        q["engine_options"] = opts
    return Request.model_validate(q)


def estimate(r: dict[str, Any]) -> dict[str, float] | None:
    res = serve(request(r))
    if res.load is None or not res.load.point.stable:
        return None
    p = res.load.point
    ttft = p.ttft_mean_ms if r["ttft_stat"] == "mean" else p.ttft_ms.get("p50")
    return {"output_tokens_s": (p.output_tokens_s or 0.0) * res.load.replicas, "ttft_ms": ttft or 0.0,
            "tpot_ms": p.tpot_ms.get("p50", 0.0)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--by-source", action="store_true", help="group by source and GPU instead of engine and GPU")
    args = ap.parse_args()
    errors: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    answered: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    overloaded: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # [said stable, said above capacity]
    for r in runs():
        got = estimate(r)
        answered[r["half"]][1] += 1
        if r.get("overloaded_in_source"):  # no steady state to compare: answered when the model says so too
            answered[r["half"]][0] += got is None
            overloaded[r["half"]][got is None] += 1
            continue
        if got is None:
            continue
        answered[r["half"]][0] += 1
        for key, label in METRICS:
            if key in r:
                e = got[key] / float(r[key]) - 1.0
                errors[(r["half"], r["source"] if args.by_source else r["engine"], r["gpu"], label)].append(e)
                errors[(r["half"], "all", "all", label)].append(e)
                if args.v:
                    print(f"{r['source']:22} {r['model']:15} {r['gpu']:9} "
                          f"{'rps=' + str(r['request_rate']) if 'request_rate' in r else 'c=' + str(r['concurrency'])} "
                          f"{r['prompt']}/{r['output']} {label:10} measured {float(r[key]):10.1f} "
                          f"ours {got[key]:10.1f} {e:+.0%}")
    group = "source" if args.by_source else "engine"
    print(f"| half | {group} | GPU | metric | runs | median abs error | median signed |")
    print("|---|---|---|---|---|---|---|")
    for (half, engine, gpu, label), es in sorted(errors.items()):
        med = statistics.median(abs(x) for x in es)
        print(f"| {half} | {engine} | {gpu} | {label} | {len(es)} | {med:.0%} | {statistics.median(es):+.0%} |")
    for half, (ok, n) in sorted(answered.items()):
        over = overloaded.get(half)
        extra = f" ({over[1]}/{sum(over)} rates above the source's own capacity said so)" if over else ""
        print(f"{half}: {ok}/{n} runs answered{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

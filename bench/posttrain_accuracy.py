"""Print the post-training / long-context estimate's error per stage against shared/data/posttrain-memory.jsonl.

Usage: python bench/posttrain_accuracy.py [POSTTRAIN.jsonl] [-v] [--resolve-names]

Same yardstick as shared/tools/eval_posttrain.py (whose row → request mapping this mirrors): `measured` rows give
estimate / truth − 1 (truth × 1.1 when measured as allocated), band −10 % … +25 %; `oom` rows must be estimated
above their bound, `fits` rows at or under their card. Rows are split by whether engine/posttrain handles them
(a post-training stage or context parallelism) or the plain memory model does. --resolve-names retries model names
the catalog does not know without their organisation prefix and -Instruct/-Chat suffix (a diagnostic of the
catalog's name lookup, not part of the score). A script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from engine.catalog import find_model
from engine.contract import estimate_request

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "posttrain-memory.jsonl"
STAGE = {"dpo": "dpo", "orpo": "orpo", "kto": "kto", "rm": "rm", "ppo": "ppo", "grpo": "grpo",
         "sft-long": "sft", "sft-unsloth-vs-hf": "sft"}
FRAMEWORKS = (("unsloth", "unsloth"), ("ms-swift", "ms-swift"), ("llama-factory", "llama-factory"),
              ("verl", "verl"), ("trl", "trl"), ("torchtitan", None), ("arctic", "deepspeed"), ("hf", "hf"))
GPUS = ("A100", "A800", "H100", "H200", "H20", "T4", "A10G", "L40S", "4090", "3090")


def _framework(name: str | None) -> str | None:
    n = (name or "").lower()
    return next((fw for key, fw in FRAMEWORKS if key in n), None)


def _gpus(r: dict[str, Any]) -> list[dict[str, Any]]:
    g = r.get("gpus") or {}
    text = str(g.get("model") or "")
    m = re.search(r"(\d+)\s*GB", text) or re.search(r"(\d+)GiB", text)
    mem = int(m.group(1)) if m else None
    name = next((c for c in GPUS if c.lower() in text.lower()), None)
    if name == "T4":
        mem = mem or 16
    return [{"name": name, "memory_gb": mem or 80, "count": g.get("count") or 1}]


def resolved(name: str) -> str:
    if find_model(name):
        return name
    bare = name.split("/", 1)[-1]
    for cand in (bare, re.sub(r"-(Instruct|Chat|it)(-\d+)?$", "", bare, flags=re.I)):
        if find_model(cand):
            return cand
    return name


def request(r: dict[str, Any], resolve: bool) -> dict[str, Any]:
    name = r["model"].split(" ")[0]
    q: dict[str, Any] = {"model": {"name": resolved(name) if resolve else name, "params_b": r.get("params_b")},
                         "stage": STAGE.get(r["kind"], "sft"), "gpus": _gpus(r)}
    if r.get("method") in ("full", "lora", "qlora"):
        q["method"] = r["method"]
    fw = _framework((r.get("framework") or {}).get("name"))
    if fw:
        q["framework"] = fw
    for src, dst in (("lora_rank", "lora_rank"), ("seq_len", "seq_len"), ("prompt_len", "prompt_len"),
                     ("completion_len", "output_len"), ("num_generations", "num_generations"),
                     ("micro_batch", "batch_size"), ("gradient_checkpointing", "gradient_checkpointing"),
                     ("reference_model", "reference_model")):
        if r.get(src) is not None:
            q[dst] = r[src]
    if str(r.get("offload") or "none").lower() not in ("none", "null"):
        q["offload"] = True
    sh = str(r.get("sharding") or "none").lower()
    q["sharding"] = {"zero3": "zero3", "zero2": "zero2", "fsdp": "fsdp", "ddp": "ddp"}.get(sh, "none")
    cp = r.get("context_parallel")
    if cp and cp.get("degree"):
        q["context_parallel"] = cp["degree"]
    v = r.get("vllm")
    if v:
        util = v.get("gpu_memory_utilization")
        q["rollout"] = {"engine": "vllm", "mode": "colocate" if "colocate" in str(v.get("mode")) else "server",
                        "gpu_memory_utilization": util if isinstance(util, int | float) else None,
                        "tensor_parallel": v.get("tp") or 1}
    return q


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", nargs="?", default=str(DEFAULT))
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--resolve-names", action="store_true")
    args = ap.parse_args()
    rows = [json.loads(line) for line in Path(args.data).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["status"] in ("measured", "oom", "fits")]
    errors: dict[str, list[float]] = defaultdict(list)
    bounds: dict[str, list[bool]] = defaultdict(list)
    layer: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        q = request(r, args.resolve_names)
        out = estimate_request(q)
        est = (out.get("per_gpu") or {}).get("total")
        owner = "posttrain" if "posttrain" in out else "memory"
        m = r.get("measured") or {}
        if r["status"] == "measured" and m.get("peak_gib"):
            truth = m["peak_gib"] * (1.1 if m.get("metric") == "allocated" else 1.0)
            e = float(est) / truth - 1 if est is not None else float("inf")
            errors[r["kind"]].append(e)
            layer[owner].append(e)
            if args.v:
                print(f"  {r['id']:>22} {r['kind']:18} {owner:9} est {est} truth {truth:.1f} ({e:+.0%})")
        elif r["status"] != "measured":
            b = m.get("bound_gib") or m.get("peak_gib")
            good = est is not None and b is not None and ((est > b) if r["status"] == "oom" else (est <= b))
            bounds[r["kind"]].append(bool(good))
            if args.v and not good:
                print(f"  {r['id']:>22} {r['status']}: est {est} bound {b}")

    def row(key: str, errs: list[float]) -> str:
        med = statistics.median(abs(e) for e in errs)
        band = sum(-0.10 <= e <= 0.25 for e in errs) / len(errs)
        return f"| {key} | {len(errs)} | {med:.1%} | {band:.0%} | {min(errs):+.0%} | {max(errs):+.0%} |"

    print("\n| stage (data kind) | n | median abs error | in band (-10..+25%) | worst under | worst over |")
    print("|---|---|---|---|---|---|")
    for key in sorted(errors):
        print(row(key, errors[key]))
    for key in sorted(layer):
        print(row(f"all rows estimated by engine/{key}", layer[key]))
    print(row("all measured", [e for v in errors.values() for e in v]))
    print("\n| bounds (oom above, fits under) | right |\n|---|---|")
    for key in sorted(bounds):
        print(f"| {key} | {sum(bounds[key])}/{len(bounds[key])} |")
    print(f"| all | {sum(sum(v) for v in bounds.values())}/{sum(len(v) for v in bounds.values())} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

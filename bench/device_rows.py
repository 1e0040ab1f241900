"""Turn the device runs of bench/device/train_peaks.py into measured rows, and score the engine on them.

Usage: python bench/device_rows.py [RESULTS.jsonl ...] [--write]

Each result (bench/data/device/*.results.jsonl: one training step loop on a real GPU, a model built from its
config with random weights) becomes a row in the shape of shared/data/measured-memory.jsonl, with the peak the
allocator reserved (torch.cuda.max_memory_reserved, metric "reserved") as the figure and the allocated peak beside
it. --write rewrites bench/data/measured_device.jsonl from them; without it the rows are only scored. The scorer is
the public one (shared/tools/eval_memory.py's rule: error = estimate / measured - 1, band -10 % … +25 %), run through
engine.contract.estimate_request with each row's framework. A run that ran out of memory is a bound: the estimate
must not say it fits on that card. A script that prints figures, not a test.
"""

from __future__ import annotations

import json
import runpy
import statistics
import sys
from pathlib import Path
from typing import Any

from engine.contract import estimate_request

HERE = Path(__file__).resolve().parent
# the same configs the runs were built from (bench/device/train_peaks.py is a script for the device, not a package)
MODELS = runpy.run_path(str(HERE / "device" / "train_peaks.py"))["MODELS"]
RESULTS = sorted((HERE / "data" / "device").glob("*.results.jsonl"))
ROWS = HERE / "data" / "measured_device.jsonl"
CONFIG_KEYS = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
               "head_dim", "vocab_size", "tie_word_embeddings")
# The card as the catalog names it, by the name torch.cuda.get_device_name() prints.
CARDS = {"NVIDIA H200": ("H200", 141), "NVIDIA H100 80GB HBM3": ("H100 SXM", 80)}


def model_config(spec: dict[str, Any]) -> dict[str, Any]:
    config = {k: spec.get(k) for k in CONFIG_KEYS}
    if config["head_dim"] is None:
        config["head_dim"] = spec["hidden_size"] // spec["num_attention_heads"]
    config.update(num_local_experts=None, num_experts_per_tok=None, moe_intermediate_size=None)
    return config


def row(result: dict[str, Any], source: str) -> dict[str, Any]:
    case = result["case"]
    s = result.get("settings") or {}
    rank, targets = case.get("lora", (16, "all-linear"))
    lora = case["method"] == "lora"
    params = (s.get("total_params", 0) - (s.get("trainable_params", 0) if lora else 0)) / 1e9
    name, memory_gb = CARDS.get(result.get("gpu", ""), (result.get("gpu"), None))
    request: dict[str, Any] = {
        "model": {"name": case["model"], "params_b": round(params, 4) or None,
                  "config": model_config(MODELS[case["model"]])},
        # the optimizer that ran: the Trainer's default adamw_torch_fused (transformers >= 4.54 with torch >= 2.8)
        # unless the case set optim="adamw_torch" (foreach)
        "method": case["method"], "bits": 16,
        "optimizer": "adamw_fused" if "FUSED" in str(s.get("optim", "")).upper() else "adamw",
        "mixed_precision": case["mp"],
        "lora_rank": rank if lora else None,
        "lora_targets": ("qv" if targets == "qv" else "all_linear") if lora else None,
        "seq_len": case["seq"], "batch_size": case["batch"], "gradient_checkpointing": case["ckpt"],
        "flash_attention": True, "gpus": [{"name": name, "memory_gb": memory_gb, "count": 1}],
        "sharding": "none", "offload": False, "fused_loss": case.get("loss") == "liger",
    }
    framework = "trl" if case.get("trainer") in ("dpo", "sft") else "hf"
    # the release that ran: TRL's for its trainers (whose loss changed with releases: engine/frameworks/trl.toml
    # [versions]), transformers' for the Trainer
    request["framework_version"] = s.get("trl" if framework == "trl" else "transformers", "").split("+")[0] or None
    if framework == "trl":
        request["fused_loss"] = None  # the release's own loss, as the engine reads it from framework_version
    if case.get("trainer") == "dpo":
        request["stage"] = "dpo"
        request["reference_model"] = case["method"] == "full"
    out: dict[str, Any] = {
        "id": f"H200-{case['name']}", "request": request, "framework": framework,
        "source": source, "settings": s | {"case": case.get("name"), "env": case.get("env")},
    }
    if result.get("ok"):
        out["measured"] = {"peak_gib": round(result["peak_reserved_gib"], 3), "metric": "reserved",
                           "allocated_gib": round(result["peak_allocated_gib"], 3),
                           "step_s": round(statistics.median(result["step_s"][1:]), 3)}
        out["confidence"] = "high"
    else:
        out["measured"] = {"oom": True, "allocated_before_oom_gib": round(result.get("peak_allocated_gib", 0), 3),
                           "error": (result.get("error") or "")[:160]}
        out["confidence"] = "bound"
    return out


def score(rows: list[dict[str, Any]]) -> None:
    errors = []
    for r in rows:
        req = dict(r["request"], framework=r["framework"])
        answer = estimate_request(req)
        est = float((answer.get("per_gpu") or {}).get("total", float("nan")))
        m = r["measured"]
        if m.get("oom"):
            verdict = answer.get("verdict")
            ok = verdict not in ("fits", "tight")
            print(f"{r['id']:44} OOM on the card (allocated {m['allocated_before_oom_gib']:.1f} GiB when it failed): "
                  f"estimate {est:6.1f} GiB, verdict {verdict} {'right' if ok else 'WRONG'}")
            continue
        e = est / m["peak_gib"] - 1
        errors.append(e)
        print(f"{r['id']:44} est {est:6.1f}  reserved {m['peak_gib']:6.1f}  allocated {m['allocated_gib']:6.1f}  "
              f"err {e:+6.1%}")
    if errors:
        band = sum(-0.10 <= e <= 0.25 for e in errors) / len(errors)
        print(f"device rows: median |error| {statistics.median(abs(e) for e in errors):.1%}, in band {band:.0%} "
              f"of {len(errors)}, worst under-estimate {min(errors):+.1%}")


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv if not a.startswith("--")] or RESULTS
    rows = []
    for path in paths:
        source = f"gpu-advisor device run, bench/device/train_peaks.py -> {path.relative_to(HERE.parent)}"
        rows += [row(json.loads(line), source) for line in path.open(encoding="utf-8") if line.strip()]
    if "--write" in argv:
        ROWS.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    score(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Held-out check (not calibrated on): the ALST recipes of ArcticTraining (snowflakedb/ArcticTraining b28638e6
projects/sequence-parallelism/run-*.yml), full fine-tuning on H100 80GB / H200 141GB with DeepSpeed ZeRO-3 and
the CPU optimizer (offload_optimizer: cpu; the single-GPU recipes offload the parameters too),
gradient checkpointing, FlashAttention, batch 1, at the `max_length` each recipe sets (the two "no-ulysses"
recipes still set sequence_parallel_size: 8, and are read as they are written).

Each recipe's comment says how it ran at that length: "NV 71.55 GB" (the GPU's memory in use, read as GiB with the
CUDA context: our per_gpu.total + cuda_context is compared with it), "ok" (ran: ours must fit the card), "close to
oom" (ran at the card's edge: compared with the card). In band is -10 % ... +25 % for a measured figure; a run that
ran is right when we say it fits. Usage: bench/alst_recipes.py [-v]
"""
from __future__ import annotations

import statistics
import sys

from engine.contract import estimate_request

MODELS = {"llama-8b": "Llama-3.1-8B-Instruct", "llama-70b": "Llama-3.1-70B-Instruct", "qwen3-32b": "Qwen3-32B"}
# (recipe, GPU, GPUs = SP degree, model, max_length, liger, activation checkpoint offload, tiled MLP,
#  parameter offload too, measured GiB or None, how it ran: "measured" | "ok" | "edge")
ROWS = [
    ("run-h100-sp1-llama-8b-baseline", "H100", 1, "llama-8b", 32_000, False, False, False, True, 71.91, "measured"),
    ("run-h100-sp1-llama-8b", "H100", 1, "llama-8b", 500_000, True, True, True, True, None, "ok"),
    ("run-h100-sp1-qwen3-32b", "H100", 1, "qwen3-32b", 230_000, True, True, True, True, None, "ok"),
    ("run-h100-sp8-llama-8b", "H100", 8, "llama-8b", 3_800_000, True, True, True, False, None, "ok"),
    ("run-h100-sp8-llama-8b-yes-act-offload", "H100", 8, "llama-8b", 2_400_000, True, True, False, False, None, "ok"),
    ("run-h100-sp8-llama-8b-yes-mlp", "H100", 8, "llama-8b", 1_200_000, True, False, True, False, None, "ok"),
    ("run-h100-sp8-llama-8b-no-mlp-no-act-offload", "H100", 8, "llama-8b", 1_100_000, True, False, False, False, None,
     "ok"),
    ("run-h100-sp8-llama-8b-no-ulysses-yes-liger-no-extras", "H100", 8, "llama-8b", 160_000, True, False, False,
     False, None, "ok"),
    ("run-h100-sp8-llama-8b-no-ulysses-no-liger-no-extras", "H100", 8, "llama-8b", 32_000, False, False, False,
     False, None, "ok"),
    ("run-h100-sp8-llama-70b", "H100", 8, "llama-70b", 200_000, True, False, True, False, None, "ok"),
    ("run-h100-sp8-qwen3-32b", "H100", 8, "qwen3-32b", 1_550_000, True, True, True, False, None, "ok"),
    ("run-h100-sp16-llama-8b", "H100", 16, "llama-8b", 8_000_000, True, True, True, False, None, "edge"),
    ("run-h100-sp16-llama-70b", "H100", 16, "llama-70b", 1_200_000, True, True, True, False, None, "ok"),
    ("run-h100-sp16-qwen3-32b", "H100", 16, "qwen3-32b", 4_000_000, True, True, True, False, None, "ok"),
    ("run-h100-sp32-llama-70b", "H100", 32, "llama-70b", 4_000_000, True, True, True, False, 47.70, "measured"),
    ("run-h100-sp32-qwen3-32b", "H100", 32, "qwen3-32b", 7_000_000, True, True, True, False, 71.55, "measured"),
    ("run-h100-sp64-llama-70b", "H100", 64, "llama-70b", 10_000_000, True, True, True, False, 53.83, "measured"),
    ("run-h100-sp64-qwen3-32b", "H100", 64, "qwen3-32b", 15_000_000, True, True, True, False, 71.00, "measured"),
    ("run-h200-sp1-llama-8b-baseline", "H200", 1, "llama-8b", 65_000, False, False, False, True, 137.36, "measured"),
    ("run-h200-sp1-llama-8b-liger", "H200", 1, "llama-8b", 300_000, True, False, False, True, 134.96, "measured"),
    ("run-h200-sp1-llama-8b-liger-offload", "H200", 1, "llama-8b", 650_000, True, True, False, True, 126.81,
     "measured"),
    ("run-h200-sp1-llama-8b-liger-offload-tiled-mlp", "H200", 1, "llama-8b", 1_200_000, True, True, True, True,
     136.15, "measured"),
]
CARD_GIB = {"H100": 79.2, "H200": 139.8}  # what the driver reports for the card (catalog gpus.toml total_gib)


def request(gpu: str, count: int, model: str, length: int, liger: bool, act_offload: bool,
            tiled: bool) -> dict[str, object]:
    """The recipe as a request, on ArcticTraining (the trainer every recipe runs, the sp1 baselines too). What `offload`
    moves is the stack's preset (engine/frameworks/arctictraining.toml: the optimizer, and on one GPU the parameters
    too): a request cannot say a parameter offload apart, so the recipes that set one are marked."""
    req: dict[str, object] = {
        "model": {"name": MODELS[model]}, "stage": "sft", "method": "full", "framework": "arctictraining",
        "sharding": "zero3", "offload": True, "gradient_checkpointing": True, "flash_attention": True,
        "batch_size": 1, "seq_len": length, "fused_loss": liger, "activation_offload": act_offload,
        "tiled_mlp": tiled, "gpus": [{"name": gpu, "count": count}],
    }
    if count > 1:
        req["context_parallel"] = count
    return req


def main() -> int:
    verbose = "-v" in sys.argv
    errors: list[float] = []
    right = total = 0
    for name, gpu, count, model, length, liger, act, tiled, params, measured, how in ROWS:
        req = request(gpu, count, model, length, liger, act, tiled)
        out = estimate_request(req)
        if "error" in out:
            print(f"{name}: {out['error']}")
            continue
        need = out["per_gpu"]["total"] + out["per_gpu"]["cuda_context"]
        card = CARD_GIB[gpu]
        total += 1
        fits = need <= card
        if how == "measured":
            e = need / measured - 1
            errors.append(e)
            right += fits
            tag = f"measured {measured:6.1f}  {e:+.0%}"
        elif how == "edge":
            e = need / card - 1
            errors.append(e)
            right += fits or e <= 0.10
            tag = f"at the edge of {card:.0f}  {e:+.0%}"
        else:
            right += fits
            tag = f"ran: {'fits' if fits else 'TOLD NO FIT'}"
        if verbose:
            print(f"{name:52} {length:>10,}  ours {need:7.1f} GiB  {tag}{'  (params offloaded too)' if params else ''}")
    if errors:
        band = sum(-0.10 <= e <= 0.25 for e in errors) / len(errors)
        print(f"ALST recipes: n={len(errors)} figures, median |error| {statistics.median(abs(e) for e in errors):.1%}, "
              f"in band {band:.0%}; runs told they fit: {right}/{total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

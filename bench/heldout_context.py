#!/usr/bin/env python3
"""Held-out check (not calibrated on): the maximum context lengths docs.unsloth.ai/basics/unsloth-benchmarks states
per GPU size for Llama 3.1 8B and Llama 3.3 70B, 4-bit QLoRA on all linear layers, rank 32, batch 1, sequences padded
to the length. At the stated maximum the run's peak is about the GPU's memory, so ours at that length is compared
with the GPU size: the error is estimate / GPU GB - 1; within -10 % ... +25 % is in band. The HF + FA2 column is
read as Hugging Face + PEFT's QLoRA recipe with FlashAttention-2 (framework "hf": prepare_model_for_kbit_training, as
TRL of that time ran it too; TRL since 2af35fb0d no longer upcasts, engine/frameworks/trl.toml); the Unsloth
column as Unsloth with its offloaded gradient checkpointing and Cut Cross-Entropy (fused loss).
Usage: bench/heldout_context.py [-v]
"""
from __future__ import annotations

import statistics
import sys

from engine.contract import estimate_request

# (model, GPU GB, Unsloth max context, HF + FA2 max context or None for OOM)
ROWS = [
    ("Llama-3.1-8B", 8, 2972, None), ("Llama-3.1-8B", 12, 21848, 932), ("Llama-3.1-8B", 16, 40724, 2551),
    ("Llama-3.1-8B", 24, 78475, 5789), ("Llama-3.1-8B", 40, 153977, 12264), ("Llama-3.1-8B", 48, 191728, 15502),
    ("Llama-3.1-8B", 80, 342733, 28454), ("Llama-3.3-70B", 48, 12106, None), ("Llama-3.3-70B", 80, 89389, 6916),
]
BASE = {"method": "qlora", "lora_rank": 32, "lora_targets": "all_linear", "batch_size": 1,
        "gradient_checkpointing": True, "optimizer": "adamw_8bit"}


def main() -> int:
    verbose = "-v" in sys.argv
    errors: dict[str, list[float]] = {"hf": [], "unsloth": []}
    for model, gb, unsloth_len, hf_len in ROWS:
        for stack, length in (("unsloth", unsloth_len), ("hf", hf_len)):
            if length is None:
                continue
            req = {**BASE, "model": {"name": model}, "seq_len": length, "gpus": [{"memory_gb": gb}],
                   "framework": "unsloth" if stack == "unsloth" else "hf", "flash_attention": True}
            if stack == "unsloth":
                req.update(offload=True, fused_loss=True)
            out = estimate_request(req)
            if "error" in out:
                print(f"{model} {gb} GB {stack}: {out['error']}")
                continue
            need = out["per_gpu"]["total"] + out["per_gpu"]["cuda_context"]
            e = need / (gb * 0.931) - 1  # GB of the card -> GiB
            errors[stack].append(e)
            if verbose:
                print(f"{model:14} {gb:3} GB {stack:8} ctx {length:>7}  ours {need:6.1f} GiB  {e:+.0%}")
    for stack, es in errors.items():
        band = sum(-0.10 <= e <= 0.25 for e in es) / len(es)
        print(f"held-out {stack}: n={len(es)} median |error| {statistics.median(abs(e) for e in es):.1%}, "
              f"in band {band:.0%}, worst under-estimate {min(es):+.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Training time against published records: MLPerf Training's Llama-2-70B LoRA and 1B pretraining at a published MFU.

MLPerf Training v4.0/v4.1/v5.0 "llama2_70b_lora" (MLCommons results, closed division, NVIDIA NeMo submissions in
FP8): Llama-2-70B, LoRA r16 on q, k, v and o, GovReport packed to 8,192 tokens, about 28.8M training tokens to the
target; about 28 min on 8xH100, 24 min on 8xH200 and 13 min on 8xB200. Prints ours, the record, the error, and what
the time assumed (MFU, precision, stack). Usage: bench/mlperf_time.py
"""
from __future__ import annotations

from engine.catalog import find_gpu
from engine.scenario import build_scenario, for_gpu
from engine.schema import Request
from engine.speed import training_time

LORA = {"model": {"name": "Llama-2-70B"}, "method": "lora", "seq_len": 8192, "lora_rank": 16, "lora_targets": "qkvo"}
TITAN = {"model": {"name": "Llama-3.1-8B"}, "method": "full", "framework": "torchtitan", "seq_len": 8192,
         "batch_size": 2, "selective_checkpointing": True, "pretraining": True}
CASES = [
    ("MLPerf Llama-2-70B LoRA, NeMo FP8", {**LORA, "framework": "nemo", "quantization": "fp8"}, "H100 SXM", 8,
     28.8e6, 28.0 / 60),
    ("MLPerf Llama-2-70B LoRA, NeMo FP8", {**LORA, "framework": "nemo", "quantization": "fp8"}, "H200", 8,
     28.8e6, 24.0 / 60),
    ("MLPerf Llama-2-70B LoRA, NeMo FP8", {**LORA, "framework": "nemo", "quantization": "fp8"}, "B200", 8,
     28.8e6, 13.0 / 60),
    ("same job, HF + PEFT bf16 (no record)", LORA, "H100 SXM", 8, 28.8e6, None),
    ("pretrain 1B on 100B tokens (6ND at 38-43 % MFU: 60-68 h)", {"model": {"name": "Llama-3.2-1B"},
                                                                   "pretraining": True}, "H100 SXM", 8, 1e11, 64.0),
    # torchtitan's benchmark Table 3 (Llama 3.1 8B, FSDP 128, local batch 2, 8K, selective AC; TPS/GPU 5,605 eager,
    # 6,514 compiled, 8,380 compiled + Float8): hours for 1B tokens at that throughput. The profile's MFU and speed-ups
    # come from its Table 1 (8 GPUs), so these rows check them at 128 GPUs, not independently of the tables.
    ("torchtitan 8B FSDP 128, 8K, SAC (Table 3)", TITAN, "H100 SXM", 128, 1e9, 1e9 / (5605 * 128) / 3600),
    ("torchtitan 8B FSDP 128, 8K, SAC, compile (Table 3)", {**TITAN, "torch_compile": True}, "H100 SXM", 128, 1e9,
     1e9 / (6514 * 128) / 3600),
    ("torchtitan 8B FSDP 128, 8K, SAC, compile, Float8 (Table 3)", {**TITAN, "torch_compile": True, "float8": True},
     "H100 SXM", 128, 1e9, 1e9 / (8380 * 128) / 3600),
]


def main() -> int:
    for label, req, gpu, count, tokens, record in CASES:
        g = find_gpu(gpu)
        assert g is not None
        s = for_gpu(build_scenario(Request.model_validate({**req, "gpus": [{"name": gpu, "count": count}]})), g)
        t = training_time(s, g, count, tokens)
        assumed = next((a.value for a in s.assumptions if a.key == "training_speed"), "fine-tuning step model")
        err = f"{t.hours / record - 1:+.0%}" if record else "—"
        shown = f"{record * 60:.1f} min" if record and record < 2 else (f"{record:.0f} h" if record else "—")
        ours = f"{t.hours * 60:.1f} min" if t.hours < 2 else f"{t.hours:.1f} h"
        print(f"{label:58} {count}x{gpu:9} ours {ours:>10}  record {shown:>7}  {err:>5}  [{assumed}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

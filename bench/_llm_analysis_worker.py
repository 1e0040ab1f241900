"""Worker for bench/llm_analysis_compare.py: runs inside the llm-analysis virtual environment.

Reads {"repeats": N, "cases": [...]} as JSON on stdin, writes {"version": ..., "results": [...]} as
JSON on stdout. Each case carries the architecture numbers from our catalog, so llm-analysis sees
the same shapes; each result holds llm-analysis's training memory per GPU in bytes and the median
wall time of one estimate (building LLMAnalysis from config objects + `training()`).

This file must not import the project (`engine`): it runs under another interpreter.
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
import time
from importlib.metadata import version
from typing import Any

from llm_analysis.analysis import ActivationRecomputation, DSZeRO, LLMAnalysis
from llm_analysis.config import DtypeConfig, GPUConfig, ModelConfig, ParallelismConfig
from llm_analysis.logger import logger

# llm-analysis logs every intermediate figure; printing them would be timed too. Its f-strings are
# still built (that is part of its cost), only the output is dropped.
logger.setLevel(logging.ERROR)

# An A100-SXM-80GB (llm-analysis's own a100-sxm-80gb.json) with unbounded memory: `training()`
# asserts batch_size_per_gpu <= the largest batch that fits, so a configuration that does not fit
# in 80 GB would raise instead of being estimated. The memory figures do not depend on it.
GPU = GPUConfig(
    name="a100-sxm-80gb-unbounded", mem_per_GPU_in_GB=1e9, hbm_bandwidth_in_GB_per_sec=2039,
    intra_node_bandwidth_in_GB_per_sec=300, intra_node_min_message_latency=8e-06, peak_fp16_TFLOPS=312,
)
ADAMW_STATE_BYTES = 8  # fp32 m and v; llm-analysis adds master_weights_dtype_bytes (fp32 master) on top
MASTER_BYTES = 4


def model_config(m: dict[str, Any]) -> ModelConfig:
    """llm-analysis counts two MLP matrices (2·h·ffn); a gated MLP has three (3·h·f), so the
    isoparametric width 1.5·f gives the same parameter count (its own SwiGLU convention)."""
    ffn = m["ffn"] * (1.5 if m["gated"] else 1.0)
    return ModelConfig(
        name=m["name"], num_layers=m["layers"], n_head=m["heads"], hidden_dim=m["hidden"],
        vocab_size=m["vocab"], max_seq_len=m["max_seq_len"], num_key_value_heads=m["kv_heads"],
        ffn_embed_dim=int(ffn), expansion_ratio=ffn / m["hidden"], model_type="llama",
    )


def estimate(case: dict[str, Any], mc: ModelConfig) -> dict[str, Any]:
    analysis = LLMAnalysis(mc, GPU, DtypeConfig(), ParallelismConfig(dp_size=case["gpus"]))
    recompute = ActivationRecomputation.FULL if case["checkpointing"] else ActivationRecomputation.NONE
    return analysis.training(
        batch_size_per_gpu=case["batch_size"], seq_len=case["seq_len"], activation_recomputation=recompute,
        ds_zero=DSZeRO.STAGE_3 if case["zero3"] else DSZeRO.NONE,
        master_weights_dtype_bytes=MASTER_BYTES, other_op_bytes=ADAMW_STATE_BYTES, flash_attn=True,
    )


def main() -> int:
    job = json.load(sys.stdin)
    repeats = int(job["repeats"])
    results = []
    for case in job["cases"]:
        mc = model_config(case["model"])
        summary = estimate(case, mc)
        for _ in range(max(3, repeats // 20)):  # warm-up
            estimate(case, mc)
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            estimate(case, mc)
            times.append(time.perf_counter() - t)
        results.append({
            "id": case["id"],
            "params": summary["num_params_total"],
            "weights": summary["weight_memory_per_gpu"],
            "gradients": summary["gradient_memory_per_gpu"],
            "optimizer": summary["optimizer_state_memory_per_gpu"],
            "activations": summary["activation_memory_per_gpu"],
            "logits": summary["activation_memory_embedding_output_per_gpu"],
            "total": summary["(weight+op_state+grad+act)_memory_per_gpu"],
            "seconds": statistics.median(times),
        })
    json.dump({"version": version("llm-analysis"), "python": sys.version.split()[0], "results": results},
              sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Post-training (DPO, ORPO, KTO, SimPO, reward models, PPO, GRPO with vLLM) and long-context training (context and
tensor parallelism, ALST offload and TiledMLP) as a layer over engine.memory.

API for the answer/plan layers:
    posttrain_result(request, options=None) -> PostTrainResult      # per-GPU peak, extra lines, settings, changes
    long_context_options(request, options=None, memory_gib=None)    # ways to fit a long sequence, fitting first
    applies(request) -> bool                                        # whether estimate() should use this layer
    estimate_block(request) -> (per_gpu_total, block dict)           # what engine/contract.py's estimate hook needs
"""

from __future__ import annotations

from typing import Any

from engine.posttrain.advice import long_context_options
from engine.posttrain.models import (
    POSTTRAIN_STAGES,
    Change,
    Line,
    LongContextOption,
    PostTrainOptions,
    PostTrainResult,
    RlTime,
    Settings,
)
from engine.posttrain.result import posttrain_result
from engine.schema import Request


def applies(request: Request) -> bool:
    """Post-training stages, context parallelism, or tensor parallelism of a training stage."""
    return request.stage in POSTTRAIN_STAGES or (request.context_parallel or 1) > 1 \
        or ((request.tensor_parallel or 1) > 1 and request.stage in ("sft", "pretrain"))


def estimate_block(request: Request) -> tuple[float, dict[str, Any]]:
    """(per_gpu.total, the `posttrain` block of the estimate answer)."""
    r = posttrain_result(request)
    return r.per_gpu_total, r.model_dump(exclude={"per_gpu_total"})


__all__ = ["POSTTRAIN_STAGES", "Change", "Line", "LongContextOption", "PostTrainOptions", "PostTrainResult", "RlTime",
           "Settings", "applies", "estimate_block", "long_context_options", "posttrain_result"]

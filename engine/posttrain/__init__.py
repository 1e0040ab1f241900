"""Post-training (DPO, ORPO, KTO, SimPO, reward models, PPO, GRPO with vLLM) and long-context training (context and
tensor parallelism, ALST offload and TiledMLP) as a layer over engine.memory.

API for the answer/plan layers:
    posttrain_result(request, options=None) -> PostTrainResult      # per-GPU peak, extra lines, settings, changes
    long_context_options(request, options=None, memory_gib=None)    # ways to fit a long sequence, fitting first
    pick_long_context(request, options=None, memory_gib=None)       # the one the planner takes, or None
    applies(request) -> bool                                        # whether estimate() should use this layer
    estimate_block(request) -> (per_gpu_total, block dict)           # what engine/contract.py's estimate hook needs
    breakdown_for(request, count=, gpu_name=, memory_gb=) -> Breakdown  # for the plan search: one arrangement
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.memo import by_value
from engine.schema import Breakdown, Change, GpuRef, Request
from engine.schema.posttrain import (
    POSTTRAIN_STAGES,
    Line,
    LongContextOption,
    PostTrainOptions,
    PostTrainResult,
    RlTime,
    Settings,
)

if TYPE_CHECKING:
    from engine.posttrain.advice import long_context_options, pick_long_context
    from engine.posttrain.result import posttrain_result

# The layer itself (setup, timing, advice, result) loads on first use: engine.answer and engine.contract import this
# package to ask `applies`, and a plain fine-tuning question needs nothing else of it.
_LAZY = {"long_context_options": "engine.posttrain.advice", "pick_long_context": "engine.posttrain.advice",
         "posttrain_result": "engine.posttrain.result"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def applies(request: Request) -> bool:
    """Post-training stages, context parallelism, or tensor or pipeline parallelism of a training stage (a request
    with no stage is supervised fine-tuning)."""
    split = (request.tensor_parallel or 1) > 1 or (request.pipeline_parallel or 1) > 1
    return request.stage in POSTTRAIN_STAGES or (request.context_parallel or 1) > 1 \
        or (split and request.stage in (None, "sft", "pretrain") and request.method != "inference") \
        or bool(request.activation_offload) or bool(request.tiled_mlp)  # CONTRACT v2.1: ALST's switches


@by_value()
def breakdown_for(request: Request, *, count: int | None = None, gpu_name: str | None = None,
                  memory_gb: float | None = None) -> Breakdown:
    """The memory model's Breakdown of the policy with `total` the post-training peak, for one arrangement
    (gpu × count): what engine/plan's search can use in place of engine.memory.breakdown when `applies(request)`.
    Raises engine.scenario.ScenarioError (a ValueError) when the arrangement cannot run the job."""
    from engine import memory
    from engine.posttrain.result import posttrain_result
    from engine.scenario import build_scenario

    gpus = request.gpus
    if count is not None or gpu_name is not None or memory_gb is not None:
        first = gpus[0] if gpus else GpuRef()
        gpus = [first.model_copy(update={k: v for k, v in (("count", count), ("name", gpu_name),
                                                          ("memory_gb", memory_gb)) if v is not None})]
    req = request.model_copy(update={"gpus": gpus})
    r = posttrain_result(req, advise=False)
    b = memory.breakdown(build_scenario(req))
    # the policy's lines per GPU as the post-training layer splits them (TP, PP, the distributed optimizer), so the
    # lines a table shows are the busiest GPU's, not the unsplit scenario's
    keys = ("weights", "adapters", "gradients", "optimizer", "activations", "logits")
    lines: dict[str, Any] = {k: r.policy[k] for k in keys if k in r.policy}
    return b.model_copy(update={**lines, "total": r.per_gpu_total, "cpu_ram": max(b.cpu_ram, r.host_ram_gib)})


def estimate_block(request: Request) -> tuple[float, dict[str, Any]]:
    """(per_gpu.total, the `posttrain` block of the estimate answer)."""
    from engine.posttrain.result import posttrain_result

    r = posttrain_result(request)
    block = r.model_dump(exclude={"per_gpu_total"})
    # the contract's shapes: a change as key, params, the peak it gives, whether it fits; assumptions as "key=value"
    block["changes"] = [{"key": c.key, "params": c.params, "per_gpu_total": c.per_gpu_total, "fits": c.fits,
                         "tight": c.tight} for c in r.changes]
    block["assumptions"] = [str(x) for x in r.assumptions]
    return r.per_gpu_total, block


__all__ = ["POSTTRAIN_STAGES", "Change", "Line", "LongContextOption", "PostTrainOptions", "PostTrainResult", "RlTime",
           "Settings", "applies", "breakdown_for", "estimate_block", "long_context_options", "pick_long_context",
           "posttrain_result"]

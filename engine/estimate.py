"""Request → estimate: the scenario, its breakdown and the fit on each GPU (CONTRACT.md `estimate`)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from engine.catalog import Gpu, find_gpu, gpus
from engine.memory import breakdown
from engine.scenario import ScenarioError, build_scenario
from engine.schema import Breakdown, Fit, Request, Scenario

# Usable share of a GPU's labelled memory: drivers and ECC keep some back (an "80 GB" H100 shows
# 79.2 GiB to PyTorch); a plan also wants headroom, which the planner adds on top.
USABLE_FRACTION = 0.98


def candidate_gpus(request: Request) -> list[tuple[str, float, int]]:
    """(name, memory GiB, count) for each GPU of the request, or every catalog GPU at the job's count."""
    count = max((g.count for g in request.gpus), default=1)
    if not request.gpus:
        return [(g.name, g.memory_gb, count) for g in gpus()]
    out = []
    for ref in request.gpus:
        gpu: Gpu | None = find_gpu(ref.name, ref.memory_gb)
        name = gpu.name if gpu else (ref.name or f"{ref.memory_gb or 0:g} GB GPU")
        memory = ref.memory_gb or (gpu.memory_gb if gpu else None)
        if memory is not None:
            out.append((name, float(memory), ref.count))
    return out


def fits(b: Breakdown, candidates: list[tuple[str, float, int]]) -> list[Fit]:
    return [
        Fit(gpu=name, memory_gb=memory, count=count, fits=b.total + b.cuda_context <= memory * USABLE_FRACTION,
            headroom_gb=round(memory * USABLE_FRACTION - b.total - b.cuda_context, 2))
        for name, memory, count in candidates
    ]


def scenario_dict(s: Scenario) -> dict[str, Any]:
    return {
        "model": {"name": s.arch.name, "params_b": round(s.arch.params / 1e9, 4),
                  "active_params_b": round(s.arch.active_params / 1e9, 4) if s.arch.experts else None,
                  "known": s.arch.known},
        "method": s.method, "bits": s.bits, "optimizer": s.optimizer, "mixed_precision": s.mixed_precision,
        "lora_rank": s.lora_rank or None, "lora_targets": s.lora_targets or None, "seq_len": s.seq_len,
        "batch_size": s.batch_size, "gradient_checkpointing": s.gradient_checkpointing,
        "flash_attention": s.flash_attention, "fused_loss": s.fused_loss, "sharding": s.sharding,
        "offload": s.offload, "gpu_count": s.gpu_count,
    }


def estimate(request: Request) -> dict[str, Any]:
    """The `estimate` answer for a validated request; raises ScenarioError when it cannot be made."""
    scenario = build_scenario(request)
    b = breakdown(scenario)
    per_gpu = {k: round(v, 3) for k, v in b.model_dump().items() if k not in ("cpu_ram", "trainable_params")}
    return {
        "request": scenario_dict(scenario),
        "assumptions": scenario.assumptions,
        "per_gpu": per_gpu,
        "cpu_ram_gb": round(b.cpu_ram, 2),
        "trainable_params": round(b.trainable_params),
        "gpu_count": scenario.gpu_count,
        "fits": [f.model_dump() for f in fits(b, candidate_gpus(request))],
    }


def estimate_request(data: object) -> dict[str, Any]:
    """`estimate --request` for one decoded JSON value: an answer, or {"error": reason}."""
    try:
        request = Request.model_validate(data)
    except ValidationError as exc:
        return {"error": validation_reason(exc)}
    try:
        return estimate(request)
    except (ScenarioError, ValueError) as exc:
        return {"error": str(exc)}


def validation_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "request"
    return f"{where}: {first['msg']}"


def estimate_parsed(text: str) -> dict[str, Any]:
    """`estimate TEXT`: parse the question, then estimate it."""
    from engine.parse import parse

    request = parse(text)
    if request.model is None:
        return {"error": request.error or "no model size in the question"}
    return estimate_request(request.model_dump(exclude={"language", "intent", "error"}))

"""The JSON shapes of the command line (CONTRACT.md): `parse`, `estimate`, `plan`. Nothing else in the
engine knows them; the CLI reads the text and writes the lines."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from engine import posttrain
from engine.answer import answer, serving_verdict
from engine.fit import NO_HEADROOM, capacity, fits, headroom_gb
from engine.memory import breakdown
from engine.plan.search import all_arrangements, asked_arrangements
from engine.scenario import ScenarioError, build_scenario
from engine.schema import PARSE_FIELDS, Answer, Change, Fit, Request, Scenario
from engine.serving import is_serving_request, serve, serving_block

NO_MODEL = "no model size in the question"


def parse_json(request: Request) -> dict[str, Any]:
    """`parse`: what the question said."""
    return request.model_dump(include=set(PARSE_FIELDS), mode="json")


def scenario_json(s: Scenario) -> dict[str, Any]:
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


def estimate_json(request: Request) -> dict[str, Any]:
    """`estimate` for a validated request; raises ScenarioError when it cannot be made."""
    scenario = build_scenario(request)
    b = breakdown(scenario)
    extra: dict[str, Any] = {}
    if posttrain.applies(request):  # post-training stages and long-context parallelism (engine/posttrain)
        total, extra["posttrain"] = posttrain.estimate_block(request)
        b = b.model_copy(update={"total": total})
    per_gpu = {k: round(v, 3) for k, v in b.model_dump().items() if k not in ("cpu_ram", "trainable_params")}
    count = max((g.count for g in request.gpus), default=1)
    candidates = asked_arrangements(request) if request.gpus else all_arrangements(count)
    out = {**extra,
        "request": scenario_json(scenario),
        "assumptions": [str(a) for a in scenario.assumptions],
        "per_gpu": per_gpu,
        "cpu_ram_gb": round(b.cpu_ram, 2),
        "trainable_params": round(b.trainable_params),
        "gpu_count": scenario.gpu_count,
        "fits": [Fit(gpu=c.gpu, memory_gb=c.memory_gb, count=c.count,
                     fits=fits(b, capacity(c.gpu, c.memory_gb), NO_HEADROOM),
                     headroom_gb=headroom_gb(b, capacity(c.gpu, c.memory_gb))).model_dump() for c in candidates],
    }
    out["cluster_total_gib"] = round((b.total + b.cuda_context) * scenario.gpu_count, 3)  # CONTRACT.md v2
    if is_serving_request(request):  # CONTRACT.md v2 `serving` block, and the verdict on the GPUs asked
        result = serve(request)
        out["serving"] = serving_block(result)
        out["verdict"] = serving_verdict(request, result)
    elif request.gpus:  # the reply's own verdict (engine.answer decides it once); a comparison has none
        verdict = answer(request).verdict
        out["verdict"] = None if verdict == "compare" else verdict
    else:
        out["verdict"] = None
    return out


def estimate_request(data: object) -> dict[str, Any]:
    """`estimate --request` for one decoded JSON value: an answer, or {"error": reason}."""
    try:
        request = Request.model_validate(data)
    except ValidationError as exc:
        return {"error": validation_reason(exc)}
    try:
        return estimate_json(request)
    except (ScenarioError, ValueError) as exc:
        return {"error": str(exc)}


def validation_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "request"
    return f"{where}: {first['msg']}"


def plan_json(a: Answer) -> dict[str, Any]:
    """`plan`: ranked arrangements, the changes as short lines, whether the asked GPU fits."""
    if a.errors or a.scenario is None:
        reason = a.errors[0].params.get("reason") if a.errors else None
        return {"error": reason or a.request.error or NO_MODEL}
    asked_fits = None if a.verdict in (None, "compare") else a.verdict in ("fits", "tight")
    return {
        "plans": [{"gpu": p.gpu, "count": p.count, "techniques": p.techniques, "per_gpu_gb": p.per_gpu_gb,
                   "hours": p.hours, "usd": p.usd, "usd_per_hour": p.usd_per_hour,
                   "hours_per_100m_tokens": p.hours_per_100m_tokens, "headroom_gb": p.headroom_gb}
                  for p in a.plans],
        "suggestions": [change_line(c) for c in a.changes],
        "asked_fits": asked_fits,
        "assumptions": [str(x) for x in a.assumptions],
    }


def change_line(c: Change) -> str:
    """"shorter_context(from=8192, to=4096): -3.1 GB (fits)": a machine-readable line, not a sentence."""
    params = ", ".join(f"{k}={v}" for k, v in c.params.items())
    return f"{c.key}{'(' + params + ')' if params else ''}: -{c.saves_gb} GB" + (" (fits)" if c.fits else "")

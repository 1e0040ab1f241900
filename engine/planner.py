"""Request → ranked plans: which GPUs × counts × techniques fit, how long they run, what they cost,
and what to change when the asked arrangement does not fit.

Memory depends on the GPU count and the techniques, not on the GPU model, so each (count,
techniques) breakdown is computed once and checked against every candidate GPU.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel

from engine import pricing, speed
from engine.catalog import Gpu, find_gpu, gpus
from engine.estimate import USABLE_FRACTION, candidate_gpus
from engine.memory import breakdown
from engine.scenario import ScenarioError, build_scenario
from engine.schema import Breakdown, Request, Scenario

HEADROOM = 0.10  # a plan keeps 10 % of usable memory free: allocator spikes, longer samples
COUNTS = (1, 2, 4, 8)
NODE_COUNTS = (16, 32, 64)  # across nodes, only when nothing fits on one node
MAX_PLANS = 8


class Plan(BaseModel):
    gpu: str
    count: int
    techniques: list[str]
    per_gpu_gb: float
    memory_gb: float
    headroom_gb: float
    hours: float | None
    hours_per_100m_tokens: float | None
    usd: dict[str, float] | None  # the whole run: min / typical / max
    usd_per_hour: float | None  # all GPUs together, typical
    price_date: str | None
    slowdown: float  # time factor of the techniques against the plain arrangement


class Suggestion(BaseModel):
    key: str  # message key: gradient_checkpointing, optimizer_8bit, shorter_context, ...
    params: dict[str, Any]
    saves_gb: float
    fits: bool


class PlanResult(BaseModel):
    scenario: Scenario
    breakdown: Breakdown
    plans: list[Plan]
    suggestions: list[Suggestion]
    asked_fits: bool | None  # None when no GPU was named
    tokens: float | None  # training tokens (dataset × epochs), when known


# Time cost of each technique (seed claim S12: checkpointing +20–30 %; 8-bit Adam ~free;
# ZeRO-3 communication; offload bounded by PCIe: speed.py models it in the hours).
TECHNIQUES: dict[str, dict[str, Any]] = {
    "gradient_checkpointing": {"update": {"gradient_checkpointing": True}},
    "optimizer_8bit": {"update": {"optimizer": "adamw_8bit"}},
    "zero3": {"update": {"sharding": "zero3"}, "multi_gpu": True},
    "cpu_offload": {"update": {"offload": True}},
}


def _variants(base: Scenario) -> list[tuple[list[str], Scenario]]:
    out: list[tuple[list[str], Scenario]] = [([], base)]
    if base.method == "inference":
        return out
    applicable = []
    if not base.gradient_checkpointing:
        applicable.append("gradient_checkpointing")
    if base.optimizer in ("adamw", "paged_adamw") and base.method == "full":
        applicable.append("optimizer_8bit")
    if base.method == "full" and base.sharding not in ("zero3", "fsdp"):
        applicable.append("zero3")
    if base.method == "full" and not base.offload:
        applicable.append("cpu_offload")
    current = base
    used: list[str] = []
    for name in applicable:  # cumulative: each adds to the ones before, cheapest in time first
        current = current.model_copy(update=TECHNIQUES[name]["update"])
        used = [*used, name]
        out.append((used, current))
    return out


@cache
def _priced_gpus() -> tuple[Gpu, ...]:
    out = []
    for g in gpus():
        try:
            pricing.price_range(g.name)
        except (LookupError, ValueError):
            continue
        out.append(g)
    return tuple(out)


def _slowdown(base: Scenario, variant: Scenario) -> float:
    factor = 1.0
    if variant.gradient_checkpointing and not base.gradient_checkpointing:
        factor *= 1.25
    return factor


def _training_tokens(request: Request) -> float | None:
    if request.tokens is None:
        return None
    return request.tokens * (request.epochs or 1)


def _plan(base: Scenario, variant: Scenario, techniques: list[str], b: Breakdown, gpu_name: str,
          memory_gb: float, count: int, tokens: float | None, overrides: dict[str, float] | None) -> Plan:
    gpu = find_gpu(gpu_name)
    hours = per100 = None
    usd = None
    usd_per_hour = None
    price_date = None
    if gpu is not None:
        if variant.method != "inference":
            t = speed.training_time(variant, gpu, count, tokens or speed.TOKENS_100M)
            per100 = t.hours * (speed.TOKENS_100M / (tokens or speed.TOKENS_100M))
            hours = t.hours if tokens else None
        try:
            price = pricing.price_range(gpu.name, overrides=overrides)
            usd_per_hour = price.typical * count
            price_date = price.date
            if hours is not None:
                usd = {k: round(getattr(price, k) * count * hours, 2) for k in ("min", "typical", "max")}
        except (LookupError, ValueError):
            pass
    usable = memory_gb * USABLE_FRACTION - b.cuda_context
    return Plan(gpu=gpu_name, count=count, techniques=techniques, per_gpu_gb=round(b.total, 2), memory_gb=memory_gb,
                headroom_gb=round(usable - b.total, 2), hours=round(hours, 2) if hours is not None else None,
                hours_per_100m_tokens=round(per100, 2) if per100 is not None else None, usd=usd,
                usd_per_hour=round(usd_per_hour, 2) if usd_per_hour is not None else None,
                price_date=price_date, slowdown=_slowdown(base, variant))


def _fits(b: Breakdown, memory_gb: float, headroom: float = HEADROOM) -> bool:
    return b.total + b.cuda_context <= memory_gb * USABLE_FRACTION * (1 - headroom)


def _rank_key(p: Plan) -> tuple[float, float]:
    # cheapest first: money per 100M tokens for training, money per hour for serving
    per_hour = p.usd_per_hour if p.usd_per_hour is not None else float("inf")
    work = p.hours_per_100m_tokens if p.hours_per_100m_tokens is not None else 1.0
    return (per_hour * work, work)


def plan(request: Request, overrides: dict[str, float] | None = None) -> PlanResult:
    base = build_scenario(request)
    b0 = breakdown(base)
    tokens = _training_tokens(request)
    named = candidate_gpus(request) if request.gpus else []
    candidates = named or [(g.name, g.memory_gb, 1) for g in _priced_gpus()]

    plans: list[Plan] = []
    for counts in (COUNTS, NODE_COUNTS):
        for count in counts:
            for techniques, variant in _variants(base):
                if count == 1 and "zero3" in techniques:
                    continue
                scenario = variant.model_copy(update={"gpu_count": count, "sharding": _sharding(variant, count)})
                b = breakdown(scenario)
                for name, memory, _ in candidates:
                    if _fits(b, memory):
                        plans.append(_plan(base, scenario, techniques, b, name, memory, count, tokens, overrides))
        if plans:
            break
    plans = _best_per_gpu_count(sorted(plans, key=_rank_key))[:MAX_PLANS]

    asked_fits = None
    suggestions: list[Suggestion] = []
    if named:
        asked_fits = any(_fits(b0, memory, headroom=0.0) for _, memory, _ in named)
        name, memory, _ = named[0]
        if not asked_fits:
            suggestions = what_to_change(base, b0, memory)
    return PlanResult(scenario=base, breakdown=b0, plans=plans, suggestions=suggestions, asked_fits=asked_fits,
                      tokens=tokens)


def _sharding(variant: Scenario, count: int) -> Any:
    if count == 1:
        return "none" if variant.sharding in ("ddp", "zero3", "fsdp", "zero2", "zero1") else variant.sharding
    if variant.sharding == "none":
        return "zero3" if variant.method == "full" else "ddp"
    return variant.sharding


def _best_per_gpu_count(plans: list[Plan]) -> list[Plan]:
    """Keep the cheapest technique set for each (GPU, count): fewer, clearer plans."""
    seen: set[tuple[str, int]] = set()
    out = []
    for p in plans:
        if (p.gpu, p.count) not in seen:
            seen.add((p.gpu, p.count))
            out.append(p)
    return out


def what_to_change(base: Scenario, b0: Breakdown, memory_gb: float) -> list[Suggestion]:
    """Single changes to the asked arrangement, each with what it saves; the ones that fit first."""
    changes: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    if base.method != "inference":
        if not base.gradient_checkpointing:
            changes.append(("gradient_checkpointing", {}, {"gradient_checkpointing": True}))
        if base.method == "full" and base.optimizer in ("adamw", "paged_adamw"):
            changes.append(("optimizer_8bit", {}, {"optimizer": "adamw_8bit"}))
        if base.method == "full":
            changes.append(("method", {"to": "lora"},
                            {"method": "lora", "lora_rank": 16, "lora_targets": "all_linear"}))
        if base.method == "lora":
            changes.append(("method", {"to": "qlora"}, {"method": "qlora", "bits": 4}))
        if not base.fused_loss:
            changes.append(("fused_loss", {}, {"fused_loss": True}))
        if base.method == "full" and not base.offload:
            changes.append(("cpu_offload", {}, {"offload": True}))
    else:
        if base.bits > 8:
            changes.append(("bits", {"to": 8}, {"bits": 8}))
        if base.bits > 4:
            changes.append(("bits", {"to": 4}, {"bits": 4}))
    if base.seq_len >= 1024:
        changes.append(("shorter_context", {"from": base.seq_len, "to": base.seq_len // 2},
                        {"seq_len": base.seq_len // 2}))
    if base.batch_size > 1:
        changes.append(("smaller_batch", {"from": base.batch_size, "to": 1}, {"batch_size": 1}))
    for count in (2, 4, 8):
        sharding = "zero3" if base.method != "inference" else "none"
        changes.append(("more_gpus", {"count": count, "sharding": sharding},
                        {"gpu_count": count, "sharding": sharding}))
    out = []
    for key, params, update in changes:
        b = breakdown(base.model_copy(update=update))
        out.append(Suggestion(key=key, params=params, saves_gb=round(b0.total - b.total, 1),
                              fits=_fits(b, memory_gb, headroom=0.0)))
    more = [s for s in out if s.key == "more_gpus"]
    first_more = next((s for s in more if s.fits), None)
    out = [s for s in out if s.key != "more_gpus"] + ([first_more] if first_more else [])
    return sorted([s for s in out if s.saves_gb > 0], key=lambda s: (not s.fits, -s.saves_gb))


def plan_json(result: PlanResult) -> dict[str, Any]:
    """The `plan` answer of CONTRACT.md."""
    return {
        "plans": [{"gpu": p.gpu, "count": p.count, "techniques": p.techniques, "per_gpu_gb": p.per_gpu_gb,
                   "hours": p.hours, "usd": p.usd, "usd_per_hour": p.usd_per_hour,
                   "hours_per_100m_tokens": p.hours_per_100m_tokens, "headroom_gb": p.headroom_gb}
                  for p in result.plans],
        "suggestions": [_suggestion_text(s) for s in result.suggestions],
        "asked_fits": result.asked_fits,
        "assumptions": result.scenario.assumptions,
    }


def _suggestion_text(s: Suggestion) -> str:
    params = ", ".join(f"{k}={v}" for k, v in s.params.items())
    return f"{s.key}{'(' + params + ')' if params else ''}: -{s.saves_gb} GB" + (" (fits)" if s.fits else "")


def plan_text(text: str) -> dict[str, Any]:
    """`plan TEXT`: parse, plan, and answer in CONTRACT.md's shape (or an error object)."""
    from engine.parse import parse

    request = parse(text)
    if request.model is None:
        return {"error": request.error or "no model size in the question"}
    try:
        return plan_json(plan(request))
    except ScenarioError as exc:
        return {"error": str(exc)}

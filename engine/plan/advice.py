"""Advice around the plans: what to change when the asked GPU does not fit, a cheaper GPU when it is
mostly idle, a side-by-side comparison of named GPUs, monthly against hourly rental."""

from __future__ import annotations

from typing import Any

from engine import pricing
from engine.fit import HEADROOM, NO_HEADROOM, SPARE_SHARE, fits, need_gb
from engine.memory import breakdown
from engine.plan.costing import Job, Option, cost_key, cost_plan
from engine.plan.search import at_count, catalog_arrangements, plan_of, useless, variants
from engine.schema import Arrangement, Breakdown, Change, Comparison, Monthly, Plan, PlanResult, PriceOptions, Scenario


def what_to_change(base: Scenario, b0: Breakdown, memory_gb: float) -> list[Change]:
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
        out.append(Change(key=key, params=params, saves_gb=round(b0.total - b.total, 1),
                          fits=fits(b, memory_gb, NO_HEADROOM)))
    more = [s for s in out if s.key == "more_gpus"]
    first_more = next((s for s in more if s.fits), None)
    out = [s for s in out if s.key != "more_gpus"] + ([first_more] if first_more else [])
    return sorted([s for s in out if s.saves_gb > 0], key=lambda s: (not s.fits, -s.saves_gb))


def compare(job: Job, named: Arrangement) -> Comparison:
    """The named GPU at the count asked: the cheapest technique set that fits, or the shortfall."""
    count = named.count
    best: Plan | None = None
    for techniques, variant in variants(job.base):
        if useless(techniques, count):
            continue
        scenario = at_count(variant, count)
        b = breakdown(scenario)
        if fits(b, named.memory_gb, NO_HEADROOM):
            best = plan_of(job, Option(techniques, scenario, b, named.gpu, named.memory_gb, count))
            break
    first = breakdown(at_count(job.base, count))
    return Comparison(gpu=named.gpu, count=count, fits=best is not None, need_gb=round(need_gb(first), 2),
                      memory_gb=named.memory_gb, plan=best)


def cheaper_gpu(job: Job, b0: Breakdown, named: Arrangement, plans: list[Plan]) -> Plan | None:
    """When the asked GPU leaves much of its memory unused, the cheapest catalog GPU that also fits."""
    if not fits(b0, named.memory_gb, SPARE_SHARE):
        return None
    asked = next((p for p in plans if p.gpu == named.gpu and p.count == named.count), None)
    if asked is None or asked.per_hour is None:
        return None
    scenario = at_count(job.base, named.count)
    b = breakdown(scenario)
    options = [cost_plan(job, Option([], scenario, b, c.gpu, c.memory_gb, named.count))
               for c in catalog_arrangements() if c.memory_gb < named.memory_gb and fits(b, c.memory_gb, HEADROOM)]
    # cheaper for the whole run (money per token), not only per hour: a slow GPU can cost more in the end
    cheaper = [p for p in options if cost_key(p)[0] < cost_key(asked)[0] * 0.9]
    return min(cheaper, key=cost_key) if cheaper else None


def monthly(result: PlanResult, prices: PriceOptions) -> Monthly | None:
    """Monthly against hourly for the best plan's GPU, when a monthly offer exists."""
    if not result.plans or result.scenario.method == "inference":
        return None
    best = result.plans[0]
    if best.own_price:
        return None
    try:
        m = pricing.monthly_vs_hourly(best.gpu, pricing.HOURS_PER_MONTH, currency=prices.currency)
    except (LookupError, ValueError):
        return None
    return Monthly(gpu=m.gpu, count=best.count, currency=m.currency, monthly_price=round(m.monthly_price, 2),
                   hourly_price=round(m.hourly_price, 2), break_even_hours=round(m.break_even_hours, 1),
                   run_hours=best.hours)

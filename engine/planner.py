"""Request → ranked plans: which GPUs × counts × techniques fit, how long they run, what they cost,
and what to change when the asked arrangement does not fit.

Memory depends on the GPU count and the techniques, not on the GPU model, so each (count,
techniques) breakdown is computed once and checked against every candidate GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, Field

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
SPARE_SHARE = 0.40  # the asked GPU leaves this share of its memory free: a cheaper GPU may do
MICRO_BATCH_SLOWDOWN = 1.10  # micro-batch 1 + accumulation: smaller GEMMs, same tokens (S12 order of magnitude)
TOKENS_1M = 1e6

PricePick = Literal["cheapest", "typical", "premium"]
RankBy = Literal["cost", "time"]
PICK_FIELD = {"cheapest": "min", "typical": "typical", "premium": "max"}


class PriceOptions(BaseModel):
    """How to price plans: the currency, which figure of the market range leads, the user's own prices."""

    currency: pricing.Currency = "USD"
    pick: PricePick = "typical"
    overrides: dict[str, float] = Field(default_factory=dict)  # own price per GPU-hour in `currency`
    usd_rub: float | None = None
    rank_by: RankBy | None = None  # None: the request's wish, else cost


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
    currency: str = "USD"
    cost: dict[str, float] | None = None  # the whole run in `currency`: min / typical / max
    per_hour: float | None = None  # all GPUs together, in `currency`, the picked figure of the range
    cost_per_1m_tokens: float | None = None  # trained or generated tokens, in `currency`
    tokens_per_second: float | None = None  # inference: decode tokens/s of the whole batch
    own_price: bool = False
    cpu_ram_gb: float = 0.0  # host memory the offload needs on each machine (its GPUs' shares together)


class Suggestion(BaseModel):
    key: str  # message key: gradient_checkpointing, optimizer_8bit, shorter_context, ...
    params: dict[str, Any]
    saves_gb: float
    fits: bool


class Note(BaseModel):
    """Something in the input that was not used as given, and what was used instead (a message key)."""

    key: str  # unknown_gpu, gpu_count, price, parse error keys ("context length out of range", ...)
    params: dict[str, Any] = Field(default_factory=dict)


class Comparison(BaseModel):
    """One named GPU in a side-by-side comparison, at the count asked."""

    gpu: str
    count: int
    fits: bool
    need_gb: float  # per GPU, with the CUDA context
    memory_gb: float
    plan: Plan | None  # the cheapest arrangement of this GPU at this count that fits


class Monthly(BaseModel):
    """Renting the best plan's GPU by the month against by the hour."""

    gpu: str
    count: int  # GPUs of the best plan (the monthly price is per GPU)
    currency: str
    monthly_price: float  # per GPU
    hourly_price: float  # per GPU-hour
    break_even_hours: float  # of use per month
    run_hours: float | None  # the whole run's wall-clock hours, when known


class PlanResult(BaseModel):
    scenario: Scenario
    breakdown: Breakdown
    plans: list[Plan]
    suggestions: list[Suggestion]
    asked_fits: bool | None  # None when no GPU was named
    tokens: float | None  # training tokens (dataset × epochs), when known
    currency: str = "USD"
    rank_by: RankBy = "cost"
    comparison: list[Comparison] = Field(default_factory=list)  # two or more GPUs named
    alternatives: list[Plan] = Field(default_factory=list)  # catalog plans: the named GPU fails, or a cheaper one
    notes: list[Note] = Field(default_factory=list)
    monthly: Monthly | None = None


# Time cost of each technique (seed claim S12: checkpointing +20–30 %; 8-bit Adam ~free;
# ZeRO-3 communication; offload bounded by PCIe: speed.py models it in the hours).
TECHNIQUES: dict[str, dict[str, Any]] = {
    "gradient_checkpointing": {"update": {"gradient_checkpointing": True}},
    "fused_loss": {"update": {"fused_loss": True}},
    "micro_batch_1": {"update": {"batch_size": 1}},
    "optimizer_8bit": {"update": {"optimizer": "adamw_8bit"}},
    "zero3": {"update": {"sharding": "zero3"}, "multi_gpu": True},
    "cpu_offload": {"update": {"offload": True}},
}


def _variants(base: Scenario) -> list[tuple[list[str], Scenario]]:
    """Technique sets to try: cumulative chains, cheapest in time first (each adds to the ones before).

    A chunked loss costs no time but needs a kernel library, so it leads a second chain rather than
    being forced into every plan: a plan names it only when it is what makes the run fit.
    """
    if base.method == "inference":
        return [([], base)]
    chain = []
    if not base.gradient_checkpointing:
        chain.append("gradient_checkpointing")
    if base.batch_size > 1:
        chain.append("micro_batch_1")
    if base.optimizer in ("adamw", "paged_adamw") and base.method == "full":
        chain.append("optimizer_8bit")
    if base.sharding not in ("zero3", "fsdp"):
        chain.append("zero3")  # full, and LoRA/QLoRA too (PEFT with DeepSpeed ZeRO-3 or FSDP)
    if base.method == "full" and not base.offload:
        chain.append("cpu_offload")
    chains = [chain]
    if not base.fused_loss:
        chains.append(["fused_loss", *chain])  # chunked cross-entropy (Liger, Unsloth, Cut Cross-Entropy)
    out: list[tuple[list[str], Scenario]] = [([], base)]
    for names in chains:
        current = base
        for i, name in enumerate(names):
            current = current.model_copy(update=TECHNIQUES[name]["update"])
            out.append((names[: i + 1], current))
    return out


@cache
def _priced_gpus() -> tuple[Gpu, ...]:
    out = []
    for g in gpus():
        try:
            pricing.market_range(g.name)
        except (LookupError, ValueError):
            continue
        out.append(g)
    return tuple(out)


def _training_tokens(request: Request) -> float | None:
    if request.tokens is None:
        return None
    return request.tokens * (request.epochs or 1)


def _price(gpu: Gpu, prices: PriceOptions) -> pricing.PriceRange | None:
    try:
        if prices.overrides:
            return pricing.price_range(gpu.name, overrides=prices.overrides, currency=prices.currency,
                                       usd_rub=prices.usd_rub)
        return pricing.market_range(gpu.name, None, prices.currency, prices.usd_rub)
    except (LookupError, ValueError):
        return None


def _market_usd(gpu: Gpu) -> pricing.PriceRange | None:
    try:
        return pricing.market_range(gpu.name)  # the contract's USD figures stay market prices
    except (LookupError, ValueError):
        return None


def _plan(base: Scenario, variant: Scenario, techniques: list[str], b: Breakdown, gpu_name: str,
          memory_gb: float, count: int, tokens: float | None, prices: PriceOptions) -> Plan:
    gpu = find_gpu(gpu_name)
    hours = per100 = tps = None
    usd = usd_per_hour = cost = per_hour = per_1m = None
    price_date = None
    own = False
    if gpu is not None:
        if variant.method != "inference":
            t = speed.training_time(variant, gpu, count)
            # speed.py counts the recompute of checkpointing and offload's PCIe traffic in its time;
            # a smaller micro-batch (same tokens, smaller matmuls) it does not
            accumulation = MICRO_BATCH_SLOWDOWN if variant.batch_size < base.batch_size else 1.0
            per100 = t.hours * accumulation
            hours = per100 * tokens / speed.TOKENS_100M if tokens else None
        else:
            tps = speed.inference_speed(variant, gpu, count).tokens_per_second
        price = _price(gpu, prices)
        usd_price = price if prices.currency == "USD" else _market_usd(gpu)
        if usd_price is not None:
            usd_per_hour = usd_price.typical * count
            if hours is not None:
                usd = {k: round(getattr(usd_price, k) * count * hours, 2) for k in ("min", "typical", "max")}
        if price is not None:
            own = price.override
            price_date = price.date
            per_hour = getattr(price, PICK_FIELD[prices.pick]) * count
            if hours is not None:
                cost = {k: round(getattr(price, k) * count * hours, 2) for k in ("min", "typical", "max")}
            if per100 is not None:
                per_1m = per_hour * per100 * TOKENS_1M / speed.TOKENS_100M
            elif tps:
                per_1m = per_hour / (tps * 3600) * TOKENS_1M
    usable = memory_gb * USABLE_FRACTION - b.cuda_context
    return Plan(gpu=gpu_name, count=count, techniques=techniques, per_gpu_gb=round(b.total, 2), memory_gb=memory_gb,
                headroom_gb=round(usable - b.total, 2), hours=_round(hours), hours_per_100m_tokens=_round(per100),
                usd=usd, usd_per_hour=_round(usd_per_hour), price_date=price_date, slowdown=1.0,
                currency=prices.currency, cost=cost, per_hour=_round(per_hour), cost_per_1m_tokens=_round(per_1m, 4),
                tokens_per_second=_round(tps, 1), own_price=own,
                cpu_ram_gb=round(b.cpu_ram * min(count, speed.gpus_per_node()), 1))


def _round(value: float | None, digits: int = 2) -> float | None:
    return round(value, digits) if value is not None else None


def _fits(b: Breakdown, memory_gb: float, headroom: float = HEADROOM) -> bool:
    return b.total + b.cuda_context <= memory_gb * USABLE_FRACTION * (1 - headroom)


def _cost_key(p: Plan) -> tuple[float, float, int]:
    # cheapest first: money per 100M tokens for training, money per hour for serving; then fewer techniques
    per_hour = p.per_hour if p.per_hour is not None else math.inf
    work = p.hours_per_100m_tokens if p.hours_per_100m_tokens is not None else 1.0
    return (per_hour * work, work, len(p.techniques))


@dataclass(frozen=True)
class _Option:
    """An arrangement that fits, before it becomes a Plan: just what ranking it takes."""

    key: tuple[float, float, int]
    techniques: list[str]
    scenario: Scenario
    b: Breakdown
    gpu: str
    memory: float
    count: int


def _rank_key(base: Scenario, scenario: Scenario, techniques: list[str], gpu_name: str, count: int,
              prices: PriceOptions, rank_by: RankBy) -> tuple[float, float, int]:
    """The order of `_cost_key` (or fastest first) without building the plan: seconds per token × price."""
    gpu = find_gpu(gpu_name)
    if gpu is None:
        return (math.inf, math.inf, len(techniques))
    price = _price(gpu, prices)
    per_hour = getattr(price, PICK_FIELD[prices.pick]) * count if price is not None else math.inf
    if scenario.method == "inference":
        tps = speed.inference_speed(scenario, gpu, count).tokens_per_second
        work = 1.0 if rank_by == "cost" else 1 / tps
    else:
        accumulation = MICRO_BATCH_SLOWDOWN if scenario.batch_size < base.batch_size else 1.0
        work = speed.seconds_per_token(scenario, gpu, count) * accumulation
    if rank_by == "time":
        return (work, per_hour, len(techniques))
    return (per_hour * work, work, len(techniques))


def _search(base: Scenario, candidates: list[tuple[str, float, int]], tokens: float | None,
            prices: PriceOptions, rank_by: RankBy, headroom: float = HEADROOM, every_count: bool = True) -> list[Plan]:
    """Arrangements that fit, best first. Named GPUs are tried at the counts named too, and with the
    verdict's own rule (no headroom), so that the answer never says "fits" above plans that disagree.

    Without `every_count` (the whole catalog, cheapest first) a GPU that fits as asked stops growing: more
    of it, with no technique to drop, only costs more per token (scaling losses), so it cannot rank higher.
    """
    options: list[_Option] = []
    variants = _variants(base)
    named_counts = tuple(sorted({c for _, _, c in candidates} - set(COUNTS) - {1}))
    settled: set[str] = set()
    for counts in (tuple(sorted({*COUNTS, *named_counts})), NODE_COUNTS):
        for count in counts:
            pool = [c for c in candidates if c[0] not in settled]
            # techniques only add time: a set that contains one that already fits a GPU is not worth a plan
            fitted: dict[str, list[set[str]]] = {}
            for techniques, variant in variants:
                if count == 1 and techniques[-1:] == ["zero3"]:  # ZeRO-3 alone does nothing on one GPU
                    continue
                used = set(techniques)
                open_gpus = [c for c in pool if not any(f <= used for f in fitted.get(c[0], ()))]
                if not open_gpus:
                    continue
                scenario = variant.model_copy(update={"gpu_count": count, "sharding": _sharding(variant, count)})
                b = breakdown(scenario)
                for name, memory, _ in open_gpus:
                    if _fits(b, memory, headroom):
                        fitted.setdefault(name, []).append(used)
                        if not techniques and not every_count and rank_by == "cost":
                            settled.add(name)
                        key = _rank_key(base, scenario, techniques, name, count, prices, rank_by)
                        options.append(_Option(key, techniques, scenario, b, name, memory, count))
        if options:
            break
    # the cheapest (or fastest) technique set for each (GPU, count); only the kept ones become plans
    kept: dict[tuple[str, int], _Option] = {}
    for o in sorted(options, key=lambda o: o.key):
        if (o.gpu, o.count) not in kept and len(kept) < MAX_PLANS:
            kept[(o.gpu, o.count)] = o
    return [_with_slowdown(base, _plan(base, o.scenario, o.techniques, o.b, o.gpu, o.memory, o.count, tokens, prices))
            for o in kept.values()]


def _with_slowdown(base: Scenario, p: Plan) -> Plan:
    """What the plan's techniques cost in time against the plain arrangement on the same GPUs (kept plans
    only: one more time estimate each)."""
    gpu = find_gpu(p.gpu)
    if not p.techniques or gpu is None or p.hours_per_100m_tokens is None:
        return p
    plain = base.model_copy(update={"gpu_count": p.count, "sharding": _sharding(base, p.count)})
    return p.model_copy(update={"slowdown": round(p.hours_per_100m_tokens / speed.training_time(plain, gpu).hours, 2)})


def _catalog_candidates() -> list[tuple[str, float, int]]:
    return [(g.name, g.memory_gb, 1) for g in _priced_gpus()]


def plan(request: Request, prices: PriceOptions | None = None) -> PlanResult:
    notes, prices = _checked_inputs(request, prices or PriceOptions())
    rank_by: RankBy = prices.rank_by or request.rank_by or "cost"
    base = build_scenario(request)
    b0 = breakdown(base)
    tokens = _training_tokens(request)
    named = list(dict.fromkeys(candidate_gpus(request))) if request.gpus else []  # "H100 vs H100" once
    if named:
        plans = _search(base, named, tokens, prices, rank_by, headroom=0.0)
    else:
        plans = _search(base, _catalog_candidates(), tokens, prices, rank_by, every_count=False)

    asked_fits = None
    suggestions: list[Suggestion] = []
    alternatives: list[Plan] = []
    comparison: list[Comparison] = []
    if len(named) > 1:
        comparison = [_compare(base, b0, g, tokens, prices) for g in named]
    elif named:
        memory = named[0][1]
        asked_fits = _fits(b0, memory, headroom=0.0)
        if not asked_fits:
            suggestions = what_to_change(base, b0, memory)
        if not plans:
            alternatives = _search(base, _catalog_candidates(), tokens, prices, rank_by, every_count=False)[:3]
        elif asked_fits and plans:
            cheaper = _cheaper_gpu(base, b0, named[0], plans, tokens, prices)
            if cheaper is not None:
                alternatives = [cheaper]
    result = PlanResult(scenario=base, breakdown=b0, plans=plans, suggestions=suggestions, asked_fits=asked_fits,
                        tokens=tokens, currency=prices.currency, rank_by=rank_by, comparison=comparison,
                        alternatives=alternatives, notes=notes)
    result.monthly = _monthly(result, prices)
    return result


def _compare(base: Scenario, b0: Breakdown, named: tuple[str, float, int], tokens: float | None,
             prices: PriceOptions) -> Comparison:
    """The named GPU at the count asked: the cheapest technique set that fits, or the shortfall."""
    name, memory, count = named
    best: Plan | None = None
    for techniques, variant in _variants(base):
        if count == 1 and techniques[-1:] == ["zero3"]:  # ZeRO-3 alone does nothing on one GPU
            continue
        scenario = variant.model_copy(update={"gpu_count": count, "sharding": _sharding(variant, count)})
        b = breakdown(scenario)
        if _fits(b, memory, headroom=0.0):
            best = _with_slowdown(base, _plan(base, scenario, techniques, b, name, memory, count, tokens, prices))
            break
    first = breakdown(base.model_copy(update={"gpu_count": count, "sharding": _sharding(base, count)}))
    return Comparison(gpu=name, count=count, fits=best is not None, need_gb=round(first.total + first.cuda_context, 2),
                      memory_gb=memory, plan=best)


def _cheaper_gpu(base: Scenario, b0: Breakdown, named: tuple[str, float, int], plans: list[Plan],
                 tokens: float | None, prices: PriceOptions) -> Plan | None:
    """When the asked GPU leaves much of its memory unused, the cheapest catalog GPU that also fits."""
    name, memory, count = named
    if b0.total + b0.cuda_context > memory * USABLE_FRACTION * (1 - SPARE_SHARE):
        return None
    asked = next((p for p in plans if p.gpu == name and p.count == count), None)
    if asked is None or asked.per_hour is None:
        return None
    scenario = base.model_copy(update={"gpu_count": count, "sharding": _sharding(base, count)})
    b = breakdown(scenario)
    options = [_plan(base, scenario, [], b, n, m, count, tokens, prices)
               for n, m, _ in _catalog_candidates() if m < memory and _fits(b, m)]
    # cheaper for the whole run (money per token), not only per hour: a slow GPU can cost more in the end
    cheaper = [p for p in options if _cost_key(p)[0] < _cost_key(asked)[0] * 0.9]
    return min(cheaper, key=_cost_key) if cheaper else None


def _monthly(result: PlanResult, prices: PriceOptions) -> Monthly | None:
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


def _checked_inputs(request: Request, prices: PriceOptions) -> tuple[list[Note], PriceOptions]:
    """What the input said that cannot be used as given (parse errors, unknown GPUs, impossible prices and
    rates), and the price options without the unusable parts."""
    notes = [Note(key=reason.strip()) for reason in (request.error or "").split(";") if reason.strip()]
    known = [ref.memory_gb is not None or find_gpu(ref.name) is not None for ref in request.gpus]
    for ref, ok in zip(request.gpus, known, strict=True):
        if ref.name and not ok:
            notes.append(Note(key="unknown_gpu", params={"name": ref.name, "others": any(known)}))
    usd_rub = prices.usd_rub
    if usd_rub is not None:
        try:
            pricing.validate_rate(usd_rub)
        except ValueError:
            notes.append(Note(key="rate", params={"value": usd_rub}))
            usd_rub = None
    overrides = {}
    for gpu_name, value in prices.overrides.items():
        why = "unknown GPU" if find_gpu(gpu_name) is None else None
        if why is None:
            try:
                overrides[gpu_name] = pricing.validate_price(value, prices.currency)
                continue
            except ValueError:
                why = "impossible"
        notes.append(Note(key="price", params={"gpu": gpu_name, "value": value, "why": why}))
    return notes, prices.model_copy(update={"usd_rub": usd_rub, "overrides": overrides})


def _sharding(variant: Scenario, count: int) -> Any:
    if count == 1 and variant.offload and variant.sharding in ("zero3", "fsdp", "zero2"):
        return variant.sharding  # ZeRO-Offload on one GPU: fp32 master weights and optimizer in CPU RAM
    if count == 1:
        return "none" if variant.sharding in ("ddp", "zero3", "fsdp", "zero2", "zero1") else variant.sharding
    if variant.sharding == "none":
        return "zero3" if variant.method == "full" else "ddp"
    return variant.sharding


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

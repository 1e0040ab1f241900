"""A plan's hours and money: time on the GPUs from `speed`, prices from `pricing`, ranking keys.

A `Job` carries what every plan of one request shares (the plain scenario, the tokens, how to price),
so that costing one arrangement takes the job and the arrangement, not nine positional arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from engine import pricing, speed
from engine.catalog import Gpu, find_gpu, gpus
from engine.catalog.lookup import data_file
from engine.fit import capacity, headroom_gb
from engine.schema import Breakdown, Plan, PriceOptions, RankBy, Request, Scenario

TOKENS_1M = 1e6
PICK_FIELD = {"cheapest": "min", "typical": "typical", "premium": "max"}


@dataclass(frozen=True)
class Job:
    """What every plan of one request shares."""

    base: Scenario  # the arrangement as asked, before any technique
    tokens: float | None  # training tokens (dataset × epochs), when known
    prices: PriceOptions
    rank_by: RankBy = "cost"
    request: Request | None = None  # what the user said (hardware conflicts are about what was said)


@dataclass(frozen=True)
class Option:
    """One arrangement with its techniques and its breakdown: what a plan is costed from."""

    techniques: list[str]
    scenario: Scenario  # at the option's GPU count, with its techniques
    b: Breakdown
    gpu: str
    memory: float
    count: int


@cache
def priced_gpus() -> tuple[Gpu, ...]:
    """Catalog GPUs with market prices: the ones a catalog-wide search may offer."""
    out = []
    for g in gpus():
        try:
            pricing.market_range(g.name)
        except (LookupError, ValueError):
            continue
        out.append(g)
    return tuple(out)


def price(gpu: Gpu, prices: PriceOptions) -> pricing.PriceRange | None:
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


def cost_plan(job: Job, o: Option) -> Plan:
    """The option as a plan: its hours (or decode speed), money in the job's currency and in dollars."""
    prices = job.prices
    gpu = find_gpu(o.gpu)
    hours = per100 = tps = None
    usd = usd_per_hour = cost = per_hour = per_1m = per_100m = None
    price_date = None
    own = False
    timed = gpu or stand_in(o.gpu, o.memory)
    if gpu is None and timed is not None and o.scenario.method != "inference":
        per100 = speed.training_time(o.scenario, timed, o.count).hours  # a bare "24 GB": a typical card's hours
        hours = per100 * job.tokens / speed.TOKENS_100M if job.tokens else None
    if gpu is not None:
        if o.scenario.method != "inference":
            per100 = speed.training_time(o.scenario, gpu, o.count).hours
            hours = per100 * job.tokens / speed.TOKENS_100M if job.tokens else None
        else:
            tps = speed.inference_speed(o.scenario, gpu, o.count).tokens_per_second
        found = price(gpu, prices)
        usd_price = found if prices.currency == "USD" else _market_usd(gpu)
        if usd_price is not None:
            usd_per_hour = usd_price.typical * o.count
            if hours is not None:
                usd = {k: round(getattr(usd_price, k) * o.count * hours, 2) for k in ("min", "typical", "max")}
        if found is not None:
            own = found.override
            price_date = found.date
            per_hour = getattr(found, PICK_FIELD[prices.pick]) * o.count
            if hours is not None:
                cost = {k: round(getattr(found, k) * o.count * hours, 2) for k in ("min", "typical", "max")}
            if per100 is not None:
                per_1m = per_hour * per100 * TOKENS_1M / speed.TOKENS_100M
                per_100m = {k: round(getattr(found, k) * o.count * per100, 2) for k in ("min", "typical", "max")}
            elif tps:
                per_1m = per_hour / (tps * 3600) * TOKENS_1M
    extra: dict[str, float | int] = {}
    if gpu is not None and o.scenario.method != "inference":
        if o.scenario.offload:
            off = speed.offload_cost(o.scenario, gpu, o.count)
            extra.update(offload_slowdown=round(off.slowdown, 2),
                         pcie_gb_per_step=round(off.pcie_bytes_per_step / 1e9, 1))
        if o.count > speed.gpus_per_node():
            net = speed.multi_node_cost(o.scenario, gpu, o.count)
            extra.update(nodes=net.nodes, network_slowdown=round(net.slowdown, 2))
    return Plan(**extra, gpu=o.gpu, count=o.count, techniques=o.techniques, per_gpu_gb=round(o.b.total, 2),
                memory_gb=o.memory, headroom_gb=headroom_gb(o.b, capacity(o.gpu, o.memory)), hours=_round(hours),
                hours_per_100m_tokens=_round(per100), usd=usd, usd_per_hour=_round(usd_per_hour),
                price_date=price_date, slowdown=1.0, currency=prices.currency, cost=cost,
                per_hour=_round(per_hour), cost_per_1m_tokens=_round(per_1m, 4), tokens_per_second=_round(tps, 1),
                own_price=own, cpu_ram_gb=round(o.b.cpu_ram * min(o.count, speed.gpus_per_node()), 1),
                cost_per_100m=per_100m, timed_as=timed.name if gpu is None and timed is not None and per100 else None)


def bare_name(memory_gb: float | None) -> str:
    """The name an arrangement given only by its memory goes by ("24 GB GPU")."""
    return f"{memory_gb or 0:g} GB GPU"


@cache
def stand_in(name: str, memory_gb: float) -> Gpu | None:
    """The card whose hours a GPU given only by its memory ("LoRA 8B on 24 GB") gets, said as assumed: of the
    catalog's NVIDIA cards with that memory, the one the most providers rent (engine.pricing); none rented, the one
    most people own (gpus.toml [typical_by_memory]) or the only one. None for a named card the catalog lacks:
    another card's speed would be a guess."""
    if name != bare_name(memory_gb):
        return None
    same = [g for g in gpus() if g.vendor == "NVIDIA" and g.memory_gb == memory_gb]
    ranked = []
    for g in same:
        try:
            ranked.append((len(pricing.market_range(g.name).providers), g.name, g))
        except (LookupError, ValueError):
            continue
    if ranked:
        return max(ranked, key=lambda x: (x[0], x[1]))[2]
    owned = data_file("gpus.toml").get("typical_by_memory", {}).get(str(int(memory_gb)))
    if owned is not None and memory_gb == int(memory_gb):
        return find_gpu(owned)  # none of that size rented: the card most people own (catalog gpus.toml)
    return same[0] if len(same) == 1 else None  # the only card of that size


def _round(value: float | None, digits: int = 2) -> float | None:
    return round(value, digits) if value is not None else None


def cost_key(p: Plan) -> tuple[float, float, int]:
    """Cheapest first: money per 100M tokens for training, money per hour for serving; then fewer techniques. A plan
    without a price comes after every priced one, and among such plans the fewest GPU-hours first (what any one price
    per GPU-hour would rank them by), not the most GPUs."""
    work = p.hours_per_100m_tokens if p.hours_per_100m_tokens is not None else 1.0
    return money_order(p.per_hour, work, p.count, len(p.techniques))


def money_order(per_hour: float | None, work: float, count: int, techniques: int) -> tuple[float, float, int]:
    """Cheapest first (price of all the GPUs x their time per unit of work), then the faster, then fewer techniques;
    unpriced after every priced one, the fewest GPU-hours first."""
    if per_hour is None:
        return (math.inf, work * count, techniques)
    return (per_hour * work, work, techniques)


def rank_key(job: Job, o: Option) -> tuple[float, float, int]:
    """The order of `cost_key` (or fastest first) without building the plan: seconds per token × price."""
    gpu = find_gpu(o.gpu)
    if gpu is None:
        return (math.inf, math.inf, len(o.techniques))
    found = price(gpu, job.prices)
    per_hour = getattr(found, PICK_FIELD[job.prices.pick]) * o.count if found is not None else math.inf
    if o.scenario.method == "inference":
        tps = speed.inference_speed(o.scenario, gpu, o.count).tokens_per_second
        work = 1.0 if job.rank_by == "cost" else 1 / tps
    else:
        work = speed.seconds_per_token(o.scenario, gpu, o.count)
    if job.rank_by == "time":
        return (work, per_hour, len(o.techniques))
    return money_order(per_hour if found is not None else None, work, o.count, len(o.techniques))


def with_slowdown(job: Job, p: Plan, plain: Scenario) -> Plan:
    """What the plan's techniques cost in time against `plain` (the asked arrangement on the same GPUs)."""
    gpu = find_gpu(p.gpu)
    if not p.techniques or gpu is None or p.hours_per_100m_tokens is None:
        return p
    return p.model_copy(update={"slowdown": round(p.hours_per_100m_tokens / speed.training_time(plain, gpu).hours, 2)})

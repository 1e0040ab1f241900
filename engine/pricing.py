"""What GPU time costs: price ranges per GPU, in dollars or roubles, and monthly against hourly rental.

Data: engine/catalog/prices.toml (built from shared/data/gpu-prices*.csv and the seed articles; every
figure keeps its provider, tier, date and source), loaded once by engine.catalog. No network here.

- `price_range(gpu)`: min / typical / max $ per GPU-hour over providers (typical = median of on-demand
  offers), or over one kind of offer (`tier="spot"`, …); a price the user gave for that GPU wins.
- `cost(hours, gpu, count)`: money = hours × count × $/GPU-hour, as a range (post-training runs; plans are
  costed in engine/plan/costing.py).
- Roubles: prices of Russian clouds in ₽ (incl. VAT) first where they exist; otherwise dollar prices
  converted at the configured rate (Bank of Russia, dated) and marked `converted`.
- `monthly_vs_hourly`: effective $/hour of a monthly rental at the hours actually used, and the
  break-even hours per month against hourly rental.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable
from functools import cache
from typing import Any

from engine.catalog import Gpu, data_file, find_gpu, gpus
from engine.schema import Currency, FxRate, MonthlyVsHourly, Offer, PriceRange, RunCost

HOURS_PER_MONTH = 730.0  # 365 × 24 / 12: "full use" of a monthly rental
# Above these a per-GPU-hour price is a typo (the dearest row in the data is $12.29 / 1,667 ₽).
MAX_PRICE = {"USD": 1_000.0, "RUB": 100_000.0}
MAX_MONTHLY = {"USD": 1_000_000.0, "RUB": 100_000_000.0}

KINDS: tuple[str, ...] = ("on_demand", "spot", "marketplace", "reserved", "serverless", "discounted",
                          "monthly", "other")


# ---- loading ---------------------------------------------------------------------------------------------


def catalog() -> dict[str, Any]:
    return data_file("prices.toml")


@cache
def offers() -> tuple[Offer, ...]:
    return tuple(
        Offer(gpu=r["gpu"], provider=r["provider"], price=float(r["usd"]), currency="USD", tier=r["tier"],
              kind=r["kind"], date=r["date"], source=r["source"], note=r.get("note", ""),
              weak=bool(r.get("weak", False)))
        for r in catalog()["offer"]
    )


@cache
def rub_offers() -> tuple[Offer, ...]:
    return tuple(
        Offer(gpu=r["gpu"], provider=r["provider"], price=float(r["rub"]), currency="RUB", tier=r["tier"],
              kind="on_demand", date=r["date"], source=r["source"], note=r.get("note", ""),
              weak=bool(r.get("weak", False)))
        for r in catalog()["rub"]
    )


@cache
def monthly_offers() -> tuple[Offer, ...]:
    return tuple(
        Offer(gpu=r["gpu"], provider=r["provider"], price=float(r["price"]) / int(r.get("gpus", 1)),
              currency=r["currency"], tier="monthly", kind="monthly", date=r["date"], source=r["source"],
              note=r.get("note", ""), weak=bool(r.get("weak", False)))
        for r in catalog()["monthly"]
    )


@cache
def _summaries() -> dict[str, dict[str, Any]]:
    return {s["gpu"]: s for s in catalog()["summary"]}


def default_rate() -> FxRate:
    fx = catalog()["fx"]
    return FxRate(rub_per_usd=float(fx["usd_rub"]), date=fx["usd_rub_date"], source=fx["usd_rub_source"])


# ---- validation ------------------------------------------------------------------------------------------


def validate_price(value: float, currency: Currency = "USD", what: str = "price per GPU-hour") -> float:
    """A usable price or a ValueError that says what is wrong with it."""
    limit = MAX_PRICE[currency]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{what} must be a finite number, got {value}")
    if value < 0:
        raise ValueError(f"{what} cannot be negative: {value:g} {currency}")
    if value > limit:
        raise ValueError(f"{what} of {value:g} {currency} is not plausible "
                         f"(more than {limit:g} per GPU-hour)")
    return float(value)


def validate_rate(rate: float) -> float:
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate):
        raise ValueError(f"USD→RUB rate must be a finite number, got {rate!r}")
    if not 1.0 <= rate <= 10_000.0:
        raise ValueError(f"USD→RUB rate of {rate:g} is not plausible")
    return float(rate)


# ---- GPU names -------------------------------------------------------------------------------------------


def _resolve(gpu_name: str) -> Gpu:
    gpu = find_gpu(gpu_name)
    if gpu is None:
        raise ValueError(f"unknown GPU: {gpu_name!r}")
    return gpu


def _siblings(gpu: Gpu) -> list[Gpu]:
    """Same family: same memory first (another form factor), then the family's default variant."""
    if not gpu.family:
        return []
    same = [g for g in gpus() if g.family == gpu.family and g.name != gpu.name]
    return sorted(same, key=lambda g: (abs(g.memory_gb - gpu.memory_gb) > 0.5, not g.family_default))


def _override_for(gpu: Gpu, overrides: dict[str, float] | None) -> float | None:
    """The user's price for this GPU, as given (validated by the caller, not coerced here)."""
    if not overrides:
        return None
    for name, value in overrides.items():
        found = find_gpu(name)
        if found is not None and found.name == gpu.name:
            return value
    return None


# ---- ranges ----------------------------------------------------------------------------------------------


def _iso(date: str) -> str:
    m = re.search(r"\d{4}(?:-(?:0[1-9]|1[0-2])(?:-\d{2})?)?(?!\d)", date)
    return m.group(0) if m else ""


def _range_of(gpu: str, rows: list[Offer], currency: Currency, where: str) -> PriceRange:
    lo = min(rows, key=lambda o: o.price)
    hi = max(rows, key=lambda o: o.price)
    dates = sorted(d for d in (_iso(o.date) for o in rows) if d)
    return PriceRange(
        gpu=gpu, currency=currency, min=lo.price, max=hi.price,
        typical=statistics.median(o.price for o in rows),
        min_where=f"{lo.provider} / {lo.tier}", typical_where=where, max_where=f"{hi.provider} / {hi.tier}",
        date=dates[-1] if dates else "undated", oldest=dates[0] if dates else "undated",
        providers=sorted({o.provider for o in rows}),
        source="; ".join(sorted({o.source for o in rows}))[:2000],
        weak=all(o.weak for o in rows),
    )


def _summary_range(gpu: str) -> PriceRange | None:
    s = _summaries().get(gpu)
    if s is None:
        return None
    providers = sorted({o.provider for o in offers() if o.gpu == gpu and not o.weak})
    return PriceRange(
        gpu=gpu, currency="USD", min=s["min_usd"], typical=s["typical_usd"], max=s["max_usd"],
        min_where=f"{s['min_where']} ({s['min_date']})", typical_where=s["typical_where"],
        max_where=f"{s['max_where']} ({s['max_date']})", date=s["newest"], oldest=s["oldest"],
        providers=providers,
        source=f"{s['typical_source']}; min: {s['min_source']}; max: {s['max_source']}",
    )


def _usd_range(gpu: str, tier: str | None) -> PriceRange | None:
    if tier is None:
        found = _summary_range(gpu)
        if found is not None:
            return found
    rows = [o for o in offers() if o.gpu == gpu and (tier is None or o.kind == tier)]
    strong = [o for o in rows if not o.weak]
    if not (strong or rows):
        return None
    where = f"median of {tier or 'all'} offers"
    return _range_of(gpu, strong or rows, "USD", where)


def _rub_range(gpu: str) -> PriceRange | None:
    rows = [o for o in rub_offers() if o.gpu == gpu]
    if not rows:
        return None
    strong = [o for o in rows if not o.weak]
    return _range_of(gpu, strong or rows, "RUB", "median of Russian-cloud prices per GPU-hour incl. VAT")


def _with_proxy(gpu: Gpu, find: Callable[[str], PriceRange | None]) -> PriceRange | None:
    """Prices of the GPU itself, else of its closest sibling in the family, marked as such."""
    own = find(gpu.name)
    if own is not None:
        return own
    for sibling in _siblings(gpu):
        found = find(sibling.name)
        if found is not None:
            found.proxy_of = sibling.name
            found.gpu = gpu.name
            return found
    return None


def price_range(gpu_name: str, tier: str | None = None, overrides: dict[str, float] | None = None,
                currency: Currency = "USD", usd_rub: float | None = None) -> PriceRange:
    """Price per GPU-hour for one GPU.

    `tier`: None for the market range (summary: min / median on-demand / max), or one offer kind
    (on_demand, spot, marketplace, reserved, serverless, discounted). `overrides`: the user's own prices
    per GPU-hour in `currency`, keyed by any GPU name or alias; the one for this GPU wins.
    `usd_rub`: RUB per USD for converting dollar prices (default: the configured Bank of Russia rate).
    """
    gpu = _resolve(gpu_name)
    if tier is not None and tier not in KINDS:
        raise ValueError(f"unknown price tier {tier!r}; one of {', '.join(KINDS)}")
    own = _override_for(gpu, overrides)
    if own is not None:
        value = validate_price(own, currency, f"your price for {gpu.name}")
        return PriceRange(gpu=gpu.name, currency=currency, min=value, typical=value, max=value,
                          min_where="your price", typical_where="your price", max_where="your price",
                          date="given", oldest="given", providers=["your price"], source="request",
                          override=True)
    return market_range(gpu.name, tier, currency, usd_rub).model_copy(deep=True)


MIN_PROVIDERS = 3  # fewer market offers than this and a price is too thin to rank by (issue 21: the A5000 on 2)


def uncorroborated(gpu_name: str) -> bool:
    """The catalog has no price for the GPU, or a thin one (thin_price): shown, said as such, but not used to rank a
    cost-ranked list (engine.plan.search.cuda_first) or a comparison."""
    try:
        market_range(gpu_name)
    except (LookupError, ValueError):
        return True
    return thin_price(gpu_name)


def thin_price(gpu_name: str) -> bool:
    """Priced, but on fewer than MIN_PROVIDERS providers or a stale list (`weak`): too little to rank by."""
    try:
        found = market_range(gpu_name)
    except (LookupError, ValueError):
        return False
    return found.weak or len(found.providers) < MIN_PROVIDERS


@cache
def market_range(gpu_name: str, tier: str | None = None, currency: Currency = "USD",
                 usd_rub: float | None = None) -> PriceRange:
    """The catalog's range for one GPU, cached and shared: read it, never change it (price_range copies)."""
    gpu = _resolve(gpu_name)
    if currency == "RUB" and tier is None:
        rub = _with_proxy(gpu, _rub_range)
        if rub is not None:
            return rub
    usd = _with_proxy(gpu, lambda name: _usd_range(name, tier))
    if usd is None:
        raise LookupError(f"no price data for {gpu.name}" + (f" ({tier})" if tier else "")
                          + "; give your own price per GPU-hour")
    if currency == "USD":
        return usd
    return convert(usd, usd_rub)


def convert(usd: PriceRange, usd_rub: float | None = None) -> PriceRange:
    """A dollar range in roubles at a stated rate, marked as converted."""
    fx = default_rate()
    rate = validate_rate(usd_rub) if usd_rub is not None else fx.rub_per_usd
    rate_date = fx.date if usd_rub is None else "given"
    return usd.model_copy(update={
        "currency": "RUB", "min": usd.min * rate, "typical": usd.typical * rate, "max": usd.max * rate,
        "converted": True, "rate": rate, "rate_date": rate_date,
        "rate_source": fx.source if usd_rub is None else "request",
    })


def cost(hours: float, gpu_name: str, count: int = 1, currency: Currency = "USD",
         overrides: dict[str, float] | None = None, tier: str | None = None,
         usd_rub: float | None = None) -> RunCost:
    """Money for `hours` of wall-clock time on `count` GPUs: hours × count × price per GPU-hour."""
    if isinstance(hours, bool) or not isinstance(hours, int | float) or not math.isfinite(hours) or hours < 0:
        raise ValueError(f"hours must be a finite non-negative number, got {hours!r}")
    if count < 1:
        raise ValueError(f"GPU count must be at least 1, got {count}")
    price = price_range(gpu_name, tier=tier, overrides=overrides, currency=currency, usd_rub=usd_rub)
    gpu_hours = hours * count
    return RunCost(currency=currency, min=gpu_hours * price.min, typical=gpu_hours * price.typical,
                 max=gpu_hours * price.max, hours=float(hours), count=count, gpu_hours=gpu_hours, price=price)


# ---- monthly against hourly --------------------------------------------------------------------------------


def monthly_vs_hourly(gpu_name: str, hours_per_month: float, monthly_price: float | None = None,
                      hourly_price: float | None = None, currency: Currency = "USD") -> MonthlyVsHourly:
    """Effective price per hour of a monthly rental used `hours_per_month`, and where it breaks even.

    `monthly_price` per GPU (default: the cheapest catalog monthly offer for this GPU in `currency`);
    `hourly_price` the alternative per GPU-hour (default: the typical hourly price).
    """
    gpu = _resolve(gpu_name)
    if isinstance(hours_per_month, bool) or not isinstance(hours_per_month, int | float) \
            or not math.isfinite(hours_per_month) or not 0 < hours_per_month <= 744:
        raise ValueError(f"hours per month must be between 0 and 744 (31 × 24), got {hours_per_month!r}")
    if monthly_price is None:
        found = [o for o in monthly_offers() if o.gpu == gpu.name and o.currency == currency and not o.weak]
        if not found:
            raise LookupError(f"no monthly offer for {gpu.name} in {currency}; give the monthly price")
        best = min(found, key=lambda o: o.price)
        monthly, monthly_source = best.price, f"{best.provider}, {best.date}: {best.source}"
    else:
        monthly = _validate_monthly(monthly_price, currency)
        monthly_source = "your price"
    if hourly_price is None:
        typical = price_range(gpu.name, currency=currency)
        hourly, hourly_source = typical.typical, f"typical {typical.typical_where} ({typical.date})"
    else:
        hourly, hourly_source = validate_price(hourly_price, currency, "hourly price"), "your price"
    effective = monthly / hours_per_month
    break_even = monthly / hourly if hourly > 0 else math.inf
    monthly_cheaper = hours_per_month >= break_even
    return MonthlyVsHourly(
        gpu=gpu.name, currency=currency, monthly_price=monthly, monthly_source=monthly_source,
        hours_per_month=float(hours_per_month), effective_hourly=effective,
        full_use_hourly=monthly / HOURS_PER_MONTH, hourly_price=hourly, hourly_source=hourly_source,
        break_even_hours=break_even, cheaper="monthly" if monthly_cheaper else "hourly",
        saving=abs(monthly - hourly * hours_per_month),
    )


def _validate_monthly(value: float, currency: Currency) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"monthly price must be a finite number, got {value!r}")
    if value <= 0:
        raise ValueError(f"monthly price must be positive, got {value:g} {currency}")
    if value > MAX_MONTHLY[currency]:
        raise ValueError(f"monthly price of {value:g} {currency} per GPU is not plausible")
    return float(value)

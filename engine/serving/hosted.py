"""Hosted-API prices of the served model (engine/catalog/hosted_prices.toml) at the workload's own mix of prompt
and output tokens: what our cost per 1M tokens at the load compares with, in dollars and in roubles at the
catalog's Bank of Russia rate (engine.pricing)."""

from __future__ import annotations

from functools import cache

from engine import pricing
from engine.catalog import data_file
from engine.schema.serving import HostedRange


@cache
def offers() -> tuple[dict[str, object], ...]:
    return tuple(data_file("hosted_prices.toml")["offer"])


def blended(offer: dict[str, object], prompt: int, output: int) -> float:
    """USD per 1M tokens of a workload with `prompt` tokens in and `output` out per request."""
    total = max(1, prompt + output)
    return (float(str(offer["input"])) * prompt + float(str(offer["output"])) * output) / total


def hosted_range(model: str, prompt: int, output: int) -> HostedRange | None:
    """The cheapest and dearest hosted offer of `model` at this mix (None when the catalog has none)."""
    rows = [o for o in offers() if str(o["model"]).lower() == model.lower()]
    if not rows:
        return None
    priced = sorted(((blended(o, prompt, output), o) for o in rows), key=lambda x: x[0])
    (low, lo), (high, hi) = priced[0], priced[-1]
    fx = pricing.default_rate()
    return HostedRange(low_usd=round(low, 4), high_usd=round(high, 4), low_provider=str(lo["provider"]),
                       high_provider=str(hi["provider"]), offers=len(rows),
                       oldest=min(str(o["date"]) for o in rows), rub_per_usd=fx.rub_per_usd, rate_date=fx.date,
                       sources=sorted({str(o["source"]) for o in rows}))

"""Prices as data: published offers, the range of a GPU-hour over providers, a run's cost, monthly against hourly
rental, the exchange rate, and how a chat prices its plans (engine.pricing computes them)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.schema.request import Currency, RankBy, Tier


class Offer(BaseModel):
    """One published price per GPU-hour (or per GPU-month for monthly offers)."""

    gpu: str
    provider: str
    price: float
    currency: Currency
    tier: str
    kind: str
    date: str
    source: str
    note: str = ""
    weak: bool = False


class PriceRange(BaseModel):
    """Price per GPU-hour over providers, with where each end comes from."""

    gpu: str
    currency: Currency
    min: float
    typical: float
    max: float
    min_where: str
    typical_where: str
    max_where: str
    date: str  # newest date among the figures used
    oldest: str
    providers: list[str]
    source: str
    converted: bool = False  # dollar prices converted at `rate`
    rate: float | None = None  # RUB per USD used for the conversion
    rate_date: str | None = None
    rate_source: str | None = None
    weak: bool = False  # only approximate/unattributed/undated figures were found
    override: bool = False  # the user's own price
    proxy_of: str | None = None  # prices of this sibling GPU stand in (no data for the asked one)


class RunCost(BaseModel):
    """Cost of `hours` on `count` GPUs: min / typical / max."""

    model_config = ConfigDict(defer_build=True)  # built on first use: a training answer makes none

    currency: Currency
    min: float
    typical: float
    max: float
    hours: float
    count: int
    gpu_hours: float
    price: PriceRange


class MonthlyVsHourly(BaseModel):
    gpu: str
    currency: Currency
    monthly_price: float
    monthly_source: str
    hours_per_month: float
    effective_hourly: float  # monthly price / hours actually used
    full_use_hourly: float  # monthly price / 730 h
    hourly_price: float  # the hourly alternative compared against
    hourly_source: str
    break_even_hours: float  # hours per month above which the monthly rental is cheaper
    cheaper: Literal["monthly", "hourly"]
    saving: float  # per month, of the cheaper option


class FxRate(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built on first use: a training answer makes none

    rub_per_usd: float
    date: str
    source: str




class Rental(BaseModel):
    """A GPU rented for a period at the market's hourly prices, all GPUs together, in the answer's currency."""

    model_config = ConfigDict(defer_build=True)  # built by the first rental answer

    count: int
    hours: float  # hours of use in the period
    cost: dict[str, float]  # min / typical / max
    monthly: MonthlyVsHourly | None = None  # per GPU, at the stated use per month

class PriceOptions(BaseModel):
    """How to price plans: the currency, which figure of the market range leads, the user's own prices."""

    currency: Currency = "USD"
    pick: Tier = "typical"
    overrides: dict[str, float] = Field(default_factory=dict)  # own price per GPU-hour in `currency`
    usd_rub: float | None = None
    rank_by: RankBy | None = None  # None: the request's wish, else cost

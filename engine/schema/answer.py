"""The engine's product for one request (engine.answer builds it): everything a view words, nothing it must compute."""

from __future__ import annotations

from pydantic import BaseModel, Field

from engine.schema.posttrain import PostTrainResult
from engine.schema.prices import PriceRange, Rental
from engine.schema.request import Currency, RankBy, Request, Verdict
from engine.schema.result import Arrangement, Breakdown, Change, Comparison, GpuLine, Limits, Monthly, Note, Plan
from engine.schema.scenario import Assumption, Scenario
from engine.schema.serving import ServingResult


class Answer(BaseModel):
    """The engine's product for one request: everything a view words, nothing it must compute.

    `errors` non-empty means no answer could be made (then `scenario` and `breakdown` are None)."""

    request: Request
    errors: list[Note] = Field(default_factory=list)
    scenario: Scenario | None = None
    breakdown: Breakdown | None = None
    verdict: Verdict | None = None  # None when no GPU was named
    asked: Arrangement | None = None  # the (first) GPU named, at its count
    need_gb: float = 0.0  # one GPU must hold this: the reserved peak plus the CUDA context
    cluster_gb: float = 0.0  # all GPUs of the job together
    cpu_ram_gb: float = 0.0  # host memory the offload needs on each machine
    plans: list[Plan] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)  # what to change when the asked GPU does not fit
    comparison: list[Comparison] = Field(default_factory=list)
    comparison_fix: list[Comparison] = Field(default_factory=list)  # none fits as asked: with QLoRA
    alternatives: list[Plan] = Field(default_factory=list)  # other GPUs: the named one never fits, or none named
    cheaper: Plan | None = None  # a cheaper GPU that fits too, when the asked one is mostly idle
    notes: list[Note] = Field(default_factory=list)
    assumptions: list[Assumption] = Field(default_factory=list)
    monthly: Monthly | None = None
    price_date: str | None = None  # the newest price date among the plans shown
    old_prices: dict[str, str] = Field(default_factory=dict)  # GPU → its price date, where older than the window
    currency: Currency = "USD"
    rank_by: RankBy = "cost"
    tokens: float | None = None
    shape_reference: str | None = None  # the catalog model an unknown model's shape is borrowed from
    capacity: list[GpuLine] = Field(default_factory=list)  # the asked GPU, those of the plans, common ones
    serving: ServingResult | None = None  # a serving question (engine.serving): its whole answer as data
    serving_users: int = 0  # requests of the asked context the serving arrangement runs at once (all replicas)
    posttrain: PostTrainResult | None = None  # post-training / long-context estimate (engine.posttrain)
    # appended (issue 11, verdict): the asked GPU's usable memory (engine.fit.capacity), the change or
    # combination that makes a "fits_with_changes" fit, what a fused linear cross-entropy would give when no
    # framework was named, and what the asked GPU cannot run (engine.scenario.hardware_conflicts keys)
    capacity_gib: float = 0.0
    fix: Change | None = None
    fused_loss_gb: float | None = None
    conflicts: list[str] = Field(default_factory=list)
    limits: Limits | None = None  # the question's budget / deadline against the plans
    # appended (issue 13 probe): "сколько стоит T4 в час" with no model: the GPU's market range per GPU-hour (the
    # figures /price shows, engine.pricing.market_range) and the chat's own price for it, in the answer's currency
    market: PriceRange | None = None
    own_price: float | None = None
    rental: Rental | None = None  # the market answer for a period: its cost, and monthly against hourly

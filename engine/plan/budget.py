"""Budget and deadline: which plans of an answer meet what the question allows ("бюджет 50 тыс рублей",
"успеть за сутки"), and, when none does, the cheapest and the fastest of them to say what they give.

A plan meets a budget when its whole run costs no more than the budget at the picked figure of the price
range (`PriceOptions.pick`), in the answer's currency; it meets a deadline when its wall-clock hours do.
Both need the run's length, so the amount of data must be known; else the check says why it cannot be made.
"""

from __future__ import annotations

from engine import pricing
from engine.plan.costing import PICK_FIELD
from engine.schema import Limits, Money, Plan, PriceOptions, Request


def budget_in(budget: Money, currency: str, usd_rub: float | None) -> float | None:
    """The budget in the answer's currency (USD or RUB), or None when it cannot be converted (EUR)."""
    if budget.currency == currency:
        return budget.amount
    if budget.currency == "EUR":
        return None  # the catalog has no euro rate
    rate = usd_rub if usd_rub is not None else pricing.default_rate().rub_per_usd
    return budget.amount * rate if currency == "RUB" else budget.amount / rate


def run_cost(p: Plan, pick: str) -> float | None:
    return p.cost[PICK_FIELD.get(pick, "typical")] if p.cost else None


def within_limits(request: Request, plans: list[Plan], prices: PriceOptions) -> Limits | None:
    """Which of `plans` meet the request's budget and deadline; None when the question set neither."""
    if request.budget is None and request.deadline_hours is None:
        return None
    budget = budget_in(request.budget, prices.currency, prices.usd_rub) if request.budget is not None else None
    limits = Limits(budget=round(budget, 2) if budget is not None else None,
                    budget_asked=request.budget, currency=prices.currency, deadline_hours=request.deadline_hours)
    if request.budget is not None and budget is None:
        limits.unchecked = "currency"
        return limits
    if not plans:
        return limits
    if any(p.hours is None for p in plans):
        limits.unchecked = "no_data_size"  # no run length: serving, or no amount of data said
        return limits
    if budget is not None and any(run_cost(p, prices.pick) is None for p in plans):
        limits.unchecked = "no_price"
        return limits

    def meets(p: Plan) -> bool:
        cost = run_cost(p, prices.pick)
        over_budget = budget is not None and cost is not None and cost > budget
        late = request.deadline_hours is not None and p.hours is not None and p.hours > request.deadline_hours
        return not over_budget and not late

    limits.meeting = [p for p in plans if meets(p)]
    if not limits.meeting:
        limits.cheapest = min(plans, key=lambda p: run_cost(p, prices.pick) or 0.0)
        limits.fastest = min(plans, key=lambda p: p.hours or 0.0)
    return limits

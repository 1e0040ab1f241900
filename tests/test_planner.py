"""Plans: arrangements that fit, cheapest first, and what to change when nothing fits."""

from __future__ import annotations

from engine.planner import plan, plan_json
from engine.schema import Request


def request(**fields: object) -> Request:
    return Request.model_validate(fields)


def test_plans_fit_with_headroom_and_are_ranked_by_cost() -> None:
    result = plan(request(model={"params_b": 13}, method="full", tokens=2e7, epochs=3))
    assert result.plans
    for p in result.plans:
        assert p.headroom_gb >= 0.1 * p.memory_gb * 0.98 - 1e-6
        assert p.hours is not None and p.usd is not None
        assert p.usd["min"] <= p.usd["typical"] <= p.usd["max"]
    costs = [p.usd_per_hour * p.hours_per_100m_tokens for p in result.plans]  # type: ignore[operator]
    assert costs == sorted(costs)


def test_without_data_amount_hours_and_money_are_null() -> None:
    answer = plan_json(plan(request(model={"params_b": 8}, method="lora", gpus=[{"name": "H100"}])))
    assert answer["plans"] and all(p["hours"] is None and p["usd"] is None for p in answer["plans"])
    assert all(p["hours_per_100m_tokens"] > 0 for p in answer["plans"])


def test_when_it_does_not_fit_the_smallest_changes_come_with_their_savings() -> None:
    result = plan(request(model={"params_b": 8}, method="lora", seq_len=8192, gradient_checkpointing=False,
                          gpus=[{"name": "RTX 3090"}]))
    assert result.asked_fits is False
    keys = [s.key for s in result.suggestions]
    assert "gradient_checkpointing" in keys
    assert all(s.saves_gb > 0 for s in result.suggestions)


def test_full_32b_lands_on_a_node_with_zero3() -> None:  # S11
    result = plan(request(model={"params_b": 32}, method="full", gpus=[{"name": "H200", "count": 8}]))
    assert result.asked_fits


def test_70b_full_needs_more_than_one_gpu() -> None:
    result = plan(request(model={"params_b": 70}, method="full"))
    assert result.plans and all(p.count > 1 or "cpu_offload" in p.techniques for p in result.plans)

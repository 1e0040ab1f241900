"""Price catalog, run costs, roubles, monthly against hourly (S14, S15)."""

from __future__ import annotations

import math

import pytest

from engine import pricing
from engine.catalog import gpus

CATALOG_NAMES = {g.name for g in gpus()}


# ---- the catalog file -------------------------------------------------------------------------------------


def test_every_figure_names_a_catalog_gpu_a_source_and_a_date() -> None:
    data = pricing.catalog()
    for section in ("summary", "offer", "rub", "monthly"):
        assert data[section], section
        for row in data[section]:
            assert row["gpu"] in CATALOG_NAMES, row
            fields = ("typical_source", "newest") if section == "summary" else ("source", "date", "provider")
            for field in fields:
                assert str(row[field]).strip(), (section, field, row)
    for s in data["summary"]:
        assert s["min_usd"] <= s["typical_usd"] <= s["max_usd"]
        assert s["min_date"] and s["max_date"] and s["min_source"] and s["max_source"]


def test_summary_ends_are_real_offers() -> None:
    for s in pricing.catalog()["summary"]:
        prices = {o.price for o in pricing.offers() if o.gpu == s["gpu"]}
        assert s["min_usd"] in prices and s["max_usd"] in prices, s["gpu"]


def test_default_rate_is_dated_and_sourced() -> None:
    fx = pricing.default_rate()
    assert fx.rub_per_usd == pytest.approx(81.2977)
    assert fx.date == "2025-09-05"
    assert "cbr.ru" in fx.source


# ---- USD ranges -------------------------------------------------------------------------------------------


def test_h100_range_names_its_ends_and_date() -> None:
    r = pricing.price_range("H100")  # family default: H100 SXM
    assert r.gpu == "H100 SXM"
    assert (r.min, r.typical, r.max) == (1.25, 3.29, 12.29)
    assert r.min_where.startswith("Nebius") and r.max_where.startswith("Azure")
    assert r.date == "2026-11-09"
    assert {"Lambda", "RunPod", "Vast.ai"} <= set(r.providers)
    assert not r.converted and not r.override


def test_s15_hourly_price_bands_of_the_seed_lie_inside_the_data() -> None:
    h100 = pricing.price_range("H100 SXM")
    assert h100.min <= 1.38 and h100.max >= 8.0  # "$1.38 to over $8"
    a100 = pricing.price_range("A100 80GB SXM")
    assert a100.min <= 1.19 and a100.max >= 1.49  # "$1.19–$1.49"


def test_tier_selects_one_kind_of_offer() -> None:
    spot = pricing.price_range("H100 SXM", tier="spot")
    on_demand = pricing.price_range("H100 SXM", tier="on_demand")
    rows = [o.price for o in pricing.offers() if o.gpu == "H100 SXM" and o.kind == "spot" and not o.weak]
    assert (spot.min, spot.max) == (min(rows), max(rows))
    assert spot.typical < on_demand.typical
    with pytest.raises(ValueError, match="price tier"):
        pricing.price_range("H100", tier="cheap")


def test_unverified_rows_are_kept_but_never_used_when_better_ones_exist() -> None:
    weak = [o for o in pricing.offers() if o.weak]
    assert any("UNVERIFIED" in o.tier for o in weak)
    od = pricing.price_range("H100 SXM", tier="on_demand")
    assert all(not o.weak for o in pricing.offers() if o.gpu == "H100 SXM" and o.price == od.min)


def test_a_gpu_without_prices_borrows_its_siblings_and_says_so() -> None:
    r = pricing.price_range("A100 40GB PCIe")
    assert r.proxy_of == "A100 40GB SXM"
    assert r.gpu == "A100 40GB PCIe"
    assert r.typical == pricing.price_range("A100 40GB SXM").typical


def test_no_price_anywhere_is_a_lookup_error_asking_for_a_price() -> None:
    with pytest.raises(LookupError, match="own price"):
        pricing.price_range("MI325X")
    with pytest.raises(ValueError, match="unknown GPU"):
        pricing.price_range("Voodoo 3")


# ---- overrides and validation -----------------------------------------------------------------------------


def test_a_per_request_price_wins_by_any_name_of_the_gpu() -> None:
    for key in ("H100", "h100 sxm", "H100 SXM"):
        r = pricing.price_range("H100 SXM", overrides={key: 2.0})
        assert (r.min, r.typical, r.max) == (2.0, 2.0, 2.0) and r.override
    other = pricing.price_range("H100 SXM", overrides={"A100": 0.5})
    assert other.typical == 3.29 and not other.override


@pytest.mark.parametrize(
    ("value", "message"),
    [(-1.0, "negative"), (math.nan, "finite"), (math.inf, "finite"), (5000.0, "not plausible"),
     ("2", "number"), (True, "number")],
)
def test_invalid_prices_are_rejected_with_a_clear_message(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pricing.price_range("H100", overrides={"H100": value})  # type: ignore[dict-item]


def test_rouble_override_limits_are_in_roubles() -> None:
    r = pricing.price_range("H100", overrides={"H100": 900.0}, currency="RUB")
    assert r.typical == 900.0 and r.currency == "RUB" and not r.converted
    with pytest.raises(ValueError, match="not plausible"):
        pricing.price_range("H100", overrides={"H100": 500_000.0}, currency="RUB")


# ---- cost -------------------------------------------------------------------------------------------------


def test_cost_is_hours_times_gpus_times_price() -> None:
    money = pricing.cost(10, "H100 SXM", 8)
    assert money.gpu_hours == 80
    assert (money.min, money.typical, money.max) == pytest.approx((80 * 1.25, 80 * 3.29, 80 * 12.29))
    assert money.price.gpu == "H100 SXM"


def test_cost_rejects_bad_hours_and_counts() -> None:
    for hours in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="hours"):
            pricing.cost(hours, "H100")
    with pytest.raises(ValueError, match="count"):
        pricing.cost(1, "H100", 0)


# ---- roubles ----------------------------------------------------------------------------------------------


def test_roubles_use_russian_cloud_prices_first() -> None:
    r = pricing.price_range("A100", currency="RUB")
    assert r.currency == "RUB" and not r.converted
    assert set(r.providers) == {"Yandex Cloud Compute", "Yandex Cloud DataSphere"}
    assert (r.min, r.max) == (408.12, 542.88)
    pcie = pricing.price_range("A100 80GB PCIe", currency="RUB")
    assert pcie.min == pytest.approx(317.14) and pcie.providers == ["Cloud.ru Evolution"]


def test_whole_configuration_prices_are_divided_by_their_gpus() -> None:
    rows = [o for o in pricing.rub_offers() if o.gpu == "H100 PCIe" and o.provider == "Cloud.ru Evolution"]
    assert rows and all(o.price == pytest.approx(549.0) for o in rows)  # 2,745 ₽ for 5, 3,294 ₽ for 6, …
    raw = {r["gpus_in_config"]: r["config_rub"] for r in pricing.catalog()["rub"]
           if r["gpu"] == "H100 PCIe" and r["provider"] == "Cloud.ru Evolution"}
    assert raw[5] == 2745 and raw[6] == 3294


def test_h200_class_platform_maps_to_h200() -> None:
    r = pricing.price_range("H200", currency="RUB")
    assert r.typical == pytest.approx(1016.9) and r.providers == ["Yandex Cloud Compute"]


def test_dollar_prices_are_converted_and_marked_where_no_rouble_price_exists() -> None:
    usd = pricing.price_range("L40S")
    rub = pricing.price_range("L40S", currency="RUB")
    assert rub.converted and rub.rate == pytest.approx(81.2977) and rub.rate_date == "2025-09-05"
    assert rub.typical == pytest.approx(usd.typical * 81.2977)
    given = pricing.price_range("L40S", currency="RUB", usd_rub=90.0)
    assert given.typical == pytest.approx(usd.typical * 90.0) and given.rate_date == "given"
    with pytest.raises(ValueError, match="rate"):
        pricing.price_range("L40S", currency="RUB", usd_rub=-5.0)


def test_only_weak_rouble_prices_are_flagged() -> None:
    r = pricing.price_range("RTX 4090", currency="RUB")
    assert r.weak and not r.converted and r.typical == 84.0
    assert not pricing.price_range("A100", currency="RUB").weak


def test_rouble_cost() -> None:
    money = pricing.cost(2, "H100 PCIe", 4, currency="RUB")
    assert money.currency == "RUB" and money.typical == pytest.approx(8 * 549.0)


# ---- monthly against hourly (S14) -------------------------------------------------------------------------


def test_s14_monthly_h100_at_full_use_and_at_100_hours() -> None:
    full = pricing.monthly_vs_hourly("H100", 730)
    assert full.monthly_price == 2190 and "seeds/001" in full.monthly_source
    assert full.effective_hourly == pytest.approx(3.00)
    assert full.full_use_hourly == pytest.approx(3.00)
    part = pricing.monthly_vs_hourly("H100", 100)
    assert part.effective_hourly == pytest.approx(21.90)
    assert part.cheaper == "hourly"


def test_s14_break_even_hours_and_a_few_hours_a_quarter() -> None:
    r = pricing.monthly_vs_hourly("H100", 2, monthly_price=2190, hourly_price=3.29)
    assert r.break_even_hours == pytest.approx(2190 / 3.29)
    assert r.cheaper == "hourly" and r.saving == pytest.approx(2190 - 2 * 3.29)
    busy = pricing.monthly_vs_hourly("H100", 700, monthly_price=2190, hourly_price=3.29)
    assert busy.cheaper == "monthly"


def test_monthly_defaults_to_the_typical_hourly_price() -> None:
    r = pricing.monthly_vs_hourly("A100 80GB SXM", 730)
    assert r.monthly_price == 1994 and r.hourly_price == 1.54


def test_monthly_inputs_are_validated() -> None:
    with pytest.raises(ValueError, match="hours per month"):
        pricing.monthly_vs_hourly("H100", 0)
    with pytest.raises(ValueError, match="hours per month"):
        pricing.monthly_vs_hourly("H100", 800)
    with pytest.raises(ValueError, match="monthly price"):
        pricing.monthly_vs_hourly("H100", 100, monthly_price=-10)
    with pytest.raises(ValueError, match="monthly price"):
        pricing.monthly_vs_hourly("H100", 100, monthly_price=math.nan)
    with pytest.raises(LookupError, match="monthly"):
        pricing.monthly_vs_hourly("L4", 100)

"""What to change for serving, with the load model's figures (4-bit weights + FP8 KV when the model does not load,
prefix caching, speculative decoding at low load, more replicas when the queue grows without bound): each change's
figures are what the engine answers when the question asks for that change; and the hosted-API comparison is the
catalog's sourced, dated prices at the workload's own prompt/output mix, in dollars and roubles."""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from bot.pipeline import ask_text
from engine.answer import answer
from engine.catalog import find_model
from engine.catalog.checkpoints import checkpoint
from engine.parse import parse
from engine.pricing import default_rate
from engine.schema import Answer
from engine.schema.serving import ServingResult

ROOT = Path(__file__).resolve().parents[3]


def serving(q: str) -> ServingResult:
    r = answer(parse(q)).serving
    assert r is not None
    return r


def change(r: ServingResult, key: str) -> Any:
    found = [c for c in r.changes if c.key == f"serving.change.{key}"]
    assert len(found) == 1, [c.key for c in r.changes]
    return found[0]


def keys(r: ServingResult) -> set[str]:
    return {c.key.removeprefix("serving.change.") for c in r.changes}


@pytest.mark.parametrize(("q", "model", "users"), [
    ("llama 3.1 70b на одной h100 на vLLM, 16 пользователей", "Llama-3.1-70B", 16),
    ("Qwen2.5-72B on one H100 with vLLM for 8 users", "Qwen2.5-72B", 8),
])
def test_four_bit_weights_and_fp8_kv_when_the_model_does_not_load(q: str, model: str, users: int) -> None:
    r = serving(q)
    assert not r.fits
    c = change(r, "int4_weights")
    ck = checkpoint(model, "awq")
    assert ck is not None and c.params == {"format": "awq", "checkpoint": ck.repo, "kv_cache_dtype": "fp8"}
    assert c.effect["loads"] and c.effect["users_served"] >= users
    # the figures are the engine's own answer to the same question with AWQ weights and an FP8 KV cache
    again = serving(q + (", AWQ, KV-кэш fp8" if "пользовател" in q else ", AWQ weights, fp8 kv cache"))
    assert again.memory is not None and again.kv is not None and again.settings is not None
    assert (again.settings.weight_format, again.settings.kv_cache_dtype) == ("awq", "fp8")
    assert c.effect["weights_gib"] == pytest.approx(again.memory.weights_gib, abs=0.01)
    assert c.effect["kv_tokens"] == again.kv.tokens


def test_the_four_bit_line_names_the_checkpoint_and_its_memory_in_russian() -> None:
    text = ask_text("llama 3.1 70b на одной h100 на vLLM, 16 пользователей")
    [line] = [x for x in text.splitlines() if "AWQ" in x and x.startswith("•")]
    assert "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4" in line and "KV-кэш в FP8" in line
    assert re.search(r"\d+\u00a0ГБ весов на GPU, хватает на \d+ таких запросов ✓$", line), line


def test_a_model_that_loads_and_serves_gets_no_four_bit_advice() -> None:
    assert "int4_weights" not in keys(serving("Llama 3.1 8B on vLLM on 1 H100 for 8 users"))


@pytest.mark.parametrize("q", [
    "Llama 3.1 8B on 1 H100 vLLM, 2 concurrent users, TTFT p95 under 500 ms, 4k prompt",
    "Llama 3.1 8B на vLLM на 1 H100, 2 пользователя, TTFT p95 до 500 мс, промпт 4k",
])
def test_prefix_caching_and_speculation_figures_are_the_engines_answers_with_them(q: str) -> None:
    r = serving(q)
    assert r.load is not None
    prefix, spec = change(r, "prefix_caching"), change(r, "speculative")
    assert prefix.params["hit_rate"] == 0.5 and spec.params["method"] == "eagle"
    assert prefix.effect["before"]["ttft_p95_ms"] == r.load.point.ttft_ms["p95"]
    cached = serving(q + ", prefix cache hit rate 50%")
    assert cached.load is not None and prefix.effect["ttft_p95_ms"] == cached.load.point.ttft_ms["p95"]
    assert prefix.effect["ttft_p95_ms"] < prefix.effect["before"]["ttft_p95_ms"]
    eagle = serving(q + ", EAGLE")
    assert eagle.load is not None and spec.effect["per_user_tokens_s"] == eagle.load.point.per_user_tokens_s
    assert spec.effect["speedup"] == eagle.load.speculative_speedup and spec.effect["speedup"] > 1.05
    # asked for, they are not advised again
    assert "prefix_caching" not in keys(cached) and "speculative" not in keys(eagle)


def test_speculation_is_not_advised_at_high_load() -> None:
    r = serving("Llama 3.1 8B on 1 H100 vLLM, 96 concurrent users, TTFT p95 under 5 s, 1k prompt")
    assert r.load is not None and (r.load.point.running or 0) > 8
    assert "speculative" not in keys(r)


@pytest.mark.parametrize("q", ["Qwen2.5 7B on 1 L40S on vLLM, 30 requests per second",
                               "Qwen2.5 7B на 1 L40S на vLLM, 30 запросов в секунду"])
def test_more_replicas_when_the_queue_grows_without_bound(q: str) -> None:
    r = serving(q)
    assert r.load is not None and not r.load.point.stable
    c = change(r, "more_replicas")
    n = c.params["count"]
    assert c.params["replicas"] == n and c.effect["capacity_rps"] >= 30 and c.effect["stable"]
    assert c.effect["before"]["capacity_rps"] == pytest.approx(r.load.capacity_rps, rel=1e-3)
    more = serving(q.replace("1 L40S", f"{n} L40S, TP 1"))
    assert more.load is not None and more.replicas == n
    assert c.effect["ttft_p95_ms"] == more.load.point.ttft_ms["p95"]
    line = next(x for x in ask_text(q).splitlines() if x.startswith(f"• {n}×L40S"))
    assert line.endswith("✓") and "TTFT p95 ≈" in line


# ---- hosted-API prices ----------------------------------------------------------------------------------


def offers() -> list[dict[str, Any]]:
    with (ROOT / "engine/catalog/hosted_prices.toml").open("rb") as f:
        return list(tomllib.load(f)["offer"])


def test_every_hosted_price_has_its_source_and_date_and_a_catalog_model() -> None:
    rows = offers()
    assert len(rows) >= 10
    for o in rows:
        assert find_model(o["model"]) is not None and find_model(o["model"]).name == o["model"]  # type: ignore[union-attr]
        assert o["source"].startswith("https://") and re.fullmatch(r"\d{4}-\d{2}-\d{2}", o["date"])
        assert o["dated"] in ("page", "read") and o["provider"]
        assert 0 < o["input"] < 20 and 0 < o["output"] < 20
    assert {o["model"] for o in rows} >= {"Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.1-405B", "DeepSeek-V3",
                                          "DeepSeek-R1", "gpt-oss-120b", "Qwen2.5-72B"}


def expected_range(model: str, prompt: int, output: int) -> tuple[float, float]:
    blended = [(o["input"] * prompt + o["output"] * output) / (prompt + output) for o in offers()
               if o["model"] == model]
    return min(blended), max(blended)


@pytest.mark.parametrize(("q", "lang"), [
    ("what's our cost per 1M tokens at 200 concurrent users with 2k prompts on Llama 3.1 70B on vLLM vs an API?",
     "en"),
    ("сколько стоит 1 млн токенов на Llama 3.1 70B на vLLM при 200 пользователях с промптом 2k по сравнению с API?",
     "ru"),
])
def test_our_cost_per_million_against_the_hosted_range_in_usd_and_rub(q: str, lang: str) -> None:
    a: Answer = answer(parse(q))
    r = a.serving
    assert r is not None and r.load is not None and r.load.hosted is not None
    h = r.load.hosted
    low, high = expected_range("Llama-3.1-70B", r.prompt_len, r.output_len)
    assert (h.low_usd, h.high_usd) == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))
    assert h.offers == len([o for o in offers() if o["model"] == "Llama-3.1-70B"])
    assert h.rub_per_usd == default_rate().rub_per_usd
    text = ask_text(q)
    [line] = [x for x in text.splitlines() if x.startswith("🏷️")]
    assert "$" in line and "₽" in line and h.low_provider in line and h.high_provider in line
    ours = r.load.per_million_tokens
    assert ours is not None and math.isfinite(ours)
    verdicts = (("cheaper than the cheapest", "within their range", "dearer than the dearest") if lang == "en" else
                ("дешевле самого дешёвого", "в пределах их диапазона", "дороже самого дорогого"))
    expect = verdicts[0] if ours <= h.low_usd else verdicts[2] if ours >= h.high_usd else verdicts[1]
    assert expect in line


def test_a_model_without_hosted_prices_says_nothing_of_them() -> None:
    r = serving("Mistral 7B on vLLM 1 H100 4 requests per second")
    assert r.load is not None and r.load.hosted is None
    assert "🏷️" not in ask_text("Mistral 7B on vLLM 1 H100 4 requests per second")

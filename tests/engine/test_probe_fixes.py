"""Defects found by probing `gpu-advisor ask` with questions as people write them, one regression test each."""

from __future__ import annotations

import re

from bot.cli import _plan_text
from bot.pipeline import ask_text, render_text
from bot.views.words import NO_ESTIMATE_TEXTS, NOTE_TEXTS
from engine import pricing
from engine.answer import answer, stale_prices, verdict
from engine.catalog import find_gpu, gpus, shape_reference
from engine.memory import breakdown
from engine.parse import parse
from engine.scenario import build_scenario, for_gpu
from engine.schema import (
    SHOWN_PLANS,
    Arrangement,
    Breakdown,
    Change,
    ErrorAnswer,
    MarketAnswer,
    PlanResult,
    PostTrainAnswer,
    ServingAnswer,
)

# ---- 1. the hardware's defaults replace the engine's, once; fp16 AMP where there is no bf16 -----------------------


def test_t4_lora_says_fp16_amp_and_one_flash_attention_line() -> None:
    a = answer(parse("Qwen2.5 0.5B LoRA на T4"))
    assert a.scenario is not None
    keys = [x.key for x in a.assumptions]
    assert keys.count("flash_attention") == 1 and keys.count("mixed_precision") == 1
    said = {str(x) for x in a.assumptions}
    assert "flash_attention=off" in said and "mixed_precision=fp16_amp" in said
    assert a.scenario.half_dtype == "fp16" and a.scenario.mixed_precision == "amp"
    text = ask_text("Qwen2.5 0.5B LoRA на T4")
    assert "FlashAttention включён" not in text and "FlashAttention выключен" in text
    assert "fp16" in text and "смешанная точность bf16" not in text


def test_fp16_amp_counts_the_same_bytes_as_bf16_amp() -> None:
    """fp16 and bf16 are both 2 bytes; the trainable weights are fp32 either way (GradScaler refuses fp16 grads)."""
    t4, a10 = find_gpu("T4"), find_gpu("A10")  # A10: bf16, no difference but the dtype once attention is the same
    assert t4 is not None and a10 is not None
    base = build_scenario(parse("full fine-tuning 1B, context 1024"))
    on_t4 = for_gpu(base, t4)
    same_kernel = base.model_copy(update={"flash_attention": False, "attention": "sdpa",
                                          "capacity_gib": on_t4.capacity_gib})
    assert breakdown(on_t4).total == breakdown(same_kernel).total


def test_v100_and_apple_get_one_flash_attention_line_too() -> None:
    for question in ("lora 7b на v100", "lora 7b на m2 ultra"):
        keys = [x.key for x in answer(parse(question)).assumptions]
        assert keys.count("flash_attention") == 1, question


def test_bitsandbytes_where_there_is_none_is_said_not_estimated() -> None:
    a = answer(parse("qlora 7b на m3 max"))
    assert a.verdict == "no_fit" and a.conflicts == ["qlora_needs_bitsandbytes"]


# ---- 2. price dates -------------------------------------------------------------------------------------------------


def test_a_gpu_with_only_an_old_price_is_named_with_its_date() -> None:
    a = answer(parse("7B QLoRA: T4 or A100?"))
    shown = {p.gpu for p in [*a.plans[:SHOWN_PLANS], *a.alternatives]}
    assert "T4" in shown and a.old_prices.get("T4") == "2021-12"
    assert a.price_date is not None and a.price_date > "2024"
    assert re.search(r"for T4 as of December 2021, no newer figure", ask_text("7B QLoRA: T4 or A100?"))
    # a GPU that is only a later plan, not listed, is not named in the date line
    for q in ("7B QLoRA", "13B LoRA", "LoRA 8B на 1B токенов", "70B QLoRA"):
        hidden = answer(parse(q))
        listed = {p.gpu for p in [*hidden.plans[:SHOWN_PLANS], *hidden.alternatives]}
        assert set(hidden.old_prices) <= listed, (q, hidden.old_prices, listed)
        if "T4" not in listed:
            assert "T4" not in ask_text(q)


def test_every_gpu_takes_its_newest_price_and_only_t4_and_a10g_are_older_than_the_window() -> None:
    """The market range's date is the newest of its rows; the rows older than the summary window are the two AWS
    spot prices of 2021-12, and shared/data/gpu-prices.csv has nothing newer for either."""
    old = set()
    for gpu in gpus():
        try:
            found = pricing.market_range(gpu.name)
        except LookupError:
            continue
        rows = [o for o in pricing.offers() if o.gpu == (found.proxy_of or gpu.name) and not o.weak]
        rows = rows or [o for o in pricing.offers() if o.gpu == (found.proxy_of or gpu.name)]
        newest = max((pricing._iso(o.date) for o in rows), default="")
        assert found.date >= newest or found.date == newest, gpu.name
        if found.date < "2024":
            old.add(gpu.name)
    assert old == {"T4", "A10G"}
    assert stale_prices([]) == {}


# ---- 3. bare sizes -------------------------------------------------------------------------------------------------


def test_bare_sizes_are_shaped_like_the_model_people_mean() -> None:
    expected = {7: "Mistral-7B-v0.3", 8: "Llama-3.1-8B", 13: "Llama-2-13B", 14: "Qwen2.5-14B", 32: "Qwen2.5-32B",
                70: "Llama-3.1-70B", 405: "Llama-3.1-405B"}
    assert {size: shape_reference(size * 1e9) for size in expected} == expected


def test_a_bare_13b_has_a_32k_vocabulary_not_qwens_152k() -> None:
    a = answer(parse("13B LoRA на H100"))
    assert a.scenario is not None and a.breakdown is not None
    assert a.scenario.arch.vocab == 32000
    assert a.breakdown.logits < 2.0  # 152k-vocabulary logits at 2k context were 5.8 GB


# ---- 4. Apple chips with their memory -----------------------------------------------------------------------------


def test_m2_max_32gb_is_the_apple_chip_with_its_own_memory() -> None:
    r = parse("M2 Max 32GB LoRA 7B")
    assert [(g.name, g.memory_gb) for g in r.gpus] == [("M2 Max", 32.0)] and r.unsupported == []
    a = answer(r)
    assert a.scenario is not None and a.scenario.platform == "mps"
    assert a.capacity_gib == 24.0  # 75 % of 32 GB unified memory
    assert "Apple silicon is not modelled" not in ask_text("M2 Max 32GB LoRA 7B")


def test_every_apple_chip_tier_parses() -> None:
    for chip in ("M1 Pro", "M1 Max", "M2 Pro", "M2 Max", "M3 Pro", "M3 Max", "M4 Pro", "M4 Max", "M2 Ultra"):
        r = parse(f"LoRA 7B на MacBook {chip} 32GB")
        assert [g.name for g in r.gpus] == [chip] and "apple" not in r.unsupported, chip


# ---- 5. a price question without a model ----------------------------------------------------------------------------


def test_a_price_question_without_a_model_gets_the_market_range() -> None:
    a = answer(parse("сколько стоит T4 в час"))
    assert not isinstance(a, ErrorAnswer) and isinstance(a, MarketAnswer) and a.market.gpu == "T4"
    text = ask_text("how much is an H100 per hour")
    assert "per GPU-hour (" in text and "on the market)" in text and "no model size" not in text.lower()
    assert "за GPU-час" in ask_text("сколько стоит T4 в час")
    rub = answer(parse("сколько стоит H100 в рублях"))
    assert isinstance(rub, MarketAnswer) and rub.market.currency == "RUB"


# ---- 6. plan goes the post-training way ------------------------------------------------------------------------------


def test_plan_of_dpo_and_grpo_uses_the_post_training_peak() -> None:
    for question in ("DPO 8B", "GRPO 8B"):
        out = _plan_text(question)
        a = answer(parse(question))
        assert isinstance(a, PostTrainAnswer)
        assert [(p["gpu"], p["count"], p["per_gpu_gb"]) for p in out["plans"]] == [
            (p.gpu, p.count, p.per_gpu_gb) for p in a.plans]


# ---- 7. a fix right at capacity ------------------------------------------------------------------------------------


def test_a_tight_fix_says_so_in_the_headline() -> None:
    a = answer(parse("8B LoRA 128k контекст на A100 40GB"))
    assert a.verdict == "fits_with_changes" and a.fix is not None and a.fix.tight
    first = render_text("8B LoRA 128k context on A100 40GB").html.splitlines()[0]
    assert "tight" in first


def _peak(total: float) -> Breakdown:
    return Breakdown(weights=total, adapters=0, gradients=0, optimizer=0, activations=0, logits=0, kv_cache=0,
                     overhead=0, total=total, cuda_context=0.5, cpu_ram=0, trainable_params=0)


def test_a_comfortable_fix_on_the_asked_card_comes_before_a_tight_one() -> None:
    tight_fix = Change(key="fused_loss", params={}, saves_gb=10, fits=True, total_gb=78, tight=True)
    roomy = Change(key="method", params={"to": "qlora"}, saves_gb=40, fits=True, total_gb=40)
    base = build_scenario(parse("13B LoRA на H100"))
    result = PlanResult(scenario=base, breakdown=_peak(90), plans=[], changes=[tight_fix, roomy], asked_fits=False,
                        tokens=None)
    said, fix = verdict(result, _peak(90), Arrangement(gpu="H100 SXM", memory_gb=80, count=1))
    assert said == "fits_with_changes" and fix == roomy
    result.changes = [tight_fix]
    assert verdict(result, _peak(90), Arrangement(gpu="H100 SXM", memory_gb=80, count=1))[1] == tight_fix


# ---- 8. the order of a plan list -----------------------------------------------------------------------------------


def test_grpo_plans_of_the_same_cost_are_listed_by_gpu_count() -> None:
    a = answer(parse("GRPO 8B на H100"))
    counts = [p.count for p in a.plans if p.gpu == "H100 SXM"]
    assert counts == sorted(counts) and counts[0] == 1


# ---- 9. the parser's defaults are assumptions -----------------------------------------------------------------------


def test_defaults_the_parser_picked_are_in_the_assumptions() -> None:
    served = answer(parse("llama 8b q4 ollama на 4090"))
    assert isinstance(served, ServingAnswer)
    assert "weight_format=gguf:q4_k_m" in {str(x) for x in served.serving.assumptions}
    assert "Q4_K_M" in ask_text("llama 8b q4 ollama на 4090")
    cp = answer(parse("8B lora 128k контекст с ulysses на 8 H100"))
    assert cp.asked is not None and cp.asked.count == 8 and not isinstance(cp, ErrorAnswer)
    assert "context_parallel=8" in {str(x) for x in cp.assumptions}
    budget = answer(parse("8B lora на H100 бюджет 50000 на 100M токенов"))
    assert "budget_currency=RUB" in {str(x) for x in budget.assumptions}


def test_a_ulysses_degree_is_never_a_gpu_count_or_a_length() -> None:
    for question in ("8B lora 128k контекст с ulysses на 8 H100", "8B lora на 8 H100 с ulysses 128k"):
        r = parse(question)
        assert r.context_parallel == 8 and [g.count for g in r.gpus] == [8] and r.seq_len == 131072, question


# ---- 10. each error its own message --------------------------------------------------------------------------------


def test_every_parser_error_key_has_words() -> None:
    keys = {"model size out of range", "negative number", "too many GPUs", "parallelism out of range",
            "concurrency out of range", "budget out of range", "deadline out of range", "prompt len out of range",
            "output len out of range", "num_generations out of range"}
    assert keys <= set(NOTE_TEXTS)
    assert "parallelism out of range" not in ask_text("LoRA 7B на 40 H100 tp 2000")


def test_an_estimate_error_says_its_own_reason() -> None:
    negative = ask_text("LoRA -7B на 4090", fmt="text")
    assert "negative number" in ask_text("LoRA -7B on a 4090")
    assert "отрицательное" in negative
    cp = ask_text("8B lora 128k context ulysses 8")
    assert "Context parallel ×8 needs at least 8\u00a0GPUs" in cp and "could not read a model size" not in cp
    assert {"unknown_model", "stage_is_training", "cp_needs_gpus", "ulysses_heads", "sequence_under_cp", "tp_heads",
            "cp_tp_needs_gpus"} <= set(NO_ESTIMATE_TEXTS)

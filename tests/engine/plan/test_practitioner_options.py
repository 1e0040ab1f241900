"""Options a practitioner would take: the fsdp-qlora recipe's CPU offload, MLX or 16-bit LoRA on a Mac, a model on a
GPU read as inference, MoE decode bytes, ROCm cards after CUDA ones in a catalog-wide list, weekday deadlines on the
calendar, serving comparisons with a winner."""

from __future__ import annotations

from datetime import date

import pytest

from bot.views.serving_load_view import _s
from engine.answer import answer, on_calendar
from engine.catalog import architecture, find_gpu
from engine.fit import capacity
from engine.memory import breakdown
from engine.parse import parse
from engine.plan import plan
from engine.scenario import build_scenario
from engine.schema import Architecture, ModelRef
from engine.serving.weights import decode_read_bytes, rank_weights
from engine.speed import weight_params_read

WEDNESDAY = date(2026, 12, 2)


def test_the_fsdp_qlora_recipe_offloads_its_frozen_shards_when_they_do_not_fit() -> None:
    result = plan(parse("fsdp qlora 70b на 2x4090"))
    assert result.asked_fits is False
    offload = [c for c in result.changes if c.key == "cpu_offload"]
    assert offload and offload[0].params == {"what": "weights"} and offload[0].fits
    assert result.changes[0].key == "cpu_offload"  # the first fix that fits is the recipe's own
    asked = [p for p in result.plans if (p.gpu, p.count) == ("RTX 4090", 2)]
    assert asked and "cpu_offload" in asked[0].techniques and asked[0].cpu_ram_gb and asked[0].cpu_ram_gb > 0


def test_other_stacks_named_are_not_offered_the_recipe_offload_for_adapters() -> None:
    for stack in ("axolotl", "trl", "llama-factory"):
        result = plan(parse(f"{stack} qlora 70b на 2x4090"))
        assert not any(c.key == "cpu_offload" for c in result.changes), stack
    # no stack named: the recipe that runs it on those cards is the first fix (switching to it, said so)
    named = plan(parse("qlora 70b на 2x4090")).changes[0]
    assert named.key == "cpu_offload" and named.params == {"what": "weights", "recipe": "fsdp_qlora"}


def test_qlora_on_a_mac_is_offered_mlx_and_16_bit_lora_with_their_memory() -> None:
    request = parse("qlora 7b на m1 max 64gb")
    result = plan(request)
    keys = [(c.key, c.params.get("to")) for c in result.changes]
    assert ("mlx", None) in keys and ("method", "lora") in keys
    mlx = next(c for c in result.changes if c.key == "mlx")
    lora = next(c for c in result.changes if c.key == "method")
    base = build_scenario(request)
    assert mlx.total_gb == pytest.approx(breakdown(base).total + breakdown(base).cuda_context - breakdown(base).upcast,
                                         abs=0.01)
    assert mlx.total_gb < lora.total_gb  # 4-bit weights against 16-bit ones
    room = capacity("M1 Max", 64)
    assert room == pytest.approx(48.0)  # the catalog's GPU share of 64 GB unified memory
    assert mlx.fits == (mlx.total_gb <= room)
    a = answer(request)
    assert a.verdict == "no_fit" and a.conflicts == ["qlora_needs_bitsandbytes"]
    assert a.fix is not None and a.fix.key == "mlx"


def test_a_cuda_card_without_the_conflict_gets_no_mac_routes() -> None:
    assert not any(c.key == "mlx" for c in plan(parse("qlora 70b на 4090")).changes)


@pytest.mark.parametrize(("text", "method", "guessed"), [
    ("gpt-oss-120b на одной h100", "inference", True),
    ("mistral 7b on a 3090", "inference", True),
    ("can I run deepseek v3 on 8xh200", "inference", False),  # "run" says it
    ("70b на h100", None, False),  # a bare size keeps the training default
    ("70б на одной h100 можно?", "inference", True),  # ... unless it only asks whether it can: a run question
    ("is 70b possible on one h100", "inference", True),
    ("лора 70б на h100 можно?", "lora", False),
    ("llama 3.1 8b на 4090 с gradient checkpointing", None, False),
    ("сколько времени займёт llama 3.1 8b на 4090", None, False),
    ("дообучить llama 3.1 8b на 4090", None, False),
])
def test_a_model_named_on_a_gpu_without_training_is_inference(text: str, method: str | None, guessed: bool) -> None:
    r = parse(text)
    assert r.method == method, text
    assert ("method" in r.assumed) == guessed, text


@pytest.mark.parametrize("text", ["70б на одной h100 можно?", "mistral 7b on a 3090"])
def test_a_guessed_run_question_names_the_training_reading_too(text: str) -> None:
    """The memory answer of a guessed inference says the guess and how to ask for training, as the serving one does."""
    a = answer(parse(text))
    assert a.scenario is not None and a.scenario.method == "inference"
    assert any(n.key == "assumed_inference" for n in a.notes), a.notes


def test_an_inference_question_gets_a_serving_answer_that_names_the_guess() -> None:
    a = answer(parse("gpt-oss-120b на одной h100"))
    assert a.serving is not None and a.serving.fits
    assert any(n.key == "assumed_inference" for n in a.notes)


def _moe(name: str) -> Architecture:
    return architecture(ModelRef(name=name))


def test_one_moe_stream_reads_its_active_parameters_dense_part_whole() -> None:
    arch = _moe("gpt-oss-120b")
    w = rank_weights(arch, "mxfp4", 1, 1, "vllm")
    read = w.first - w.embedding
    dense, routed = decode_read_bytes(arch, "mxfp4", read, 1, 1, 1)
    # the dense part (attention, router, lm_head) is 16-bit beside the 4-bit experts: more bytes than the active
    # parameters' share of the whole file
    assert dense + routed > read * weight_params_read(arch, 1) / arch.params
    assert routed < dense  # 4 of 128 experts a token
    dense64, routed64 = decode_read_bytes(arch, "mxfp4", read, 1, 1, 64)
    assert dense64 == dense and routed < routed64 < read - dense
    assert decode_read_bytes(_moe("Llama-3.1-8B"), "bf16", 1e9, 1, 1, 1) == (1e9, 0.0)  # dense: all of it


def test_moe_single_stream_is_slower_than_the_parameter_share_said() -> None:
    a = answer(parse("gpt-oss-120b на одной h100"))
    assert a.serving is not None and a.serving.speed is not None
    assert a.serving.speed.per_user_tokens_s < 400


def test_a_catalog_wide_list_leads_with_cuda_cards() -> None:
    plans = plan(parse("лора 7b")).plans
    rocm = [find_gpu(p.gpu, p.memory_gb).rocm_arch is not None for p in plans]  # type: ignore[union-attr]
    assert not rocm[0]
    assert rocm == sorted(rocm)  # every ROCm card after every CUDA one


@pytest.mark.parametrize(("text", "hours"), [
    ("лора 8б на 1B токенов к понедельнику", 5 * 24),
    ("лора 8б на 1B токенов до пятницы", 2 * 24),
    ("lora 8b on 1B tokens by friday", 2 * 24),
    ("lora 8b on 1B tokens by wednesday", 7 * 24),  # today's weekday: the next one
])
def test_a_weekday_deadline_is_counted_from_the_date_given(text: str, hours: float) -> None:
    r = on_calendar(parse(text), WEDNESDAY)
    assert r.deadline_hours == hours
    assert "deadline_calendar" in r.assumed and "deadline_hours" not in r.assumed


def test_without_a_date_a_weekday_deadline_stays_said_as_not_counted() -> None:
    r = parse("лора 8б на 1B токенов к понедельнику")
    assert on_calendar(r, None) == r and "deadline_hours" in r.assumed


def test_a_serving_comparison_names_the_cheaper_gpu_that_holds_the_users() -> None:
    a = answer(parse("h100 or h200 for serving llama 3.1 70b 32 users"))
    r = a.serving
    assert a.verdict == "compare" and r is not None
    sides = r.compared
    assert {x.gpu for x in sides} == {"H100 SXM", "H200 SXM"}
    assert sides[0].winner and sum(x.winner for x in sides) == 1
    assert all(x.holds_count is not None for x in sides)
    assert all(sides[0].per_million_output_tokens <= x.per_million_output_tokens for x in sides)  # type: ignore[operator]
    assert r.gpu is not None and r.gpu.name == sides[0].gpu and r.gpu.count == sides[0].holds_count and r.fits


def test_a_first_token_of_a_few_milliseconds_is_never_zero_seconds() -> None:
    assert _s("en", 3.0) == "≤\u00a00.01" and _s("ru", 120.0) == "0,12"


def test_a_follow_up_that_names_a_method_drops_the_inference_guess() -> None:
    from engine.edits import merge_follow_up
    from engine.parse.followup import read_follow_up

    base = parse("llama 3.1 8b на 4090")
    lora = merge_follow_up(base, read_follow_up("а с лорой?"))
    assert lora.method == "lora" and "method" not in lora.assumed
    longer = merge_follow_up(base, read_follow_up("а на 8k контексте?"))
    assert longer.method == "inference" and "method" in longer.assumed

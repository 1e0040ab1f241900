"""The parser's CONTRACT.md v2 fields, slang, typos, model families, follow-ups, small talk and /price.

Questions live in data files (same shape as shared/examples/questions.jsonl) and are checked with the
shared scorer's own comparison rules, so `eval_parse.py tests/parse_v2_questions.jsonl` agrees with this test.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from parse_checks import check

from engine.catalog import models
from engine.edits import merge_follow_up
from engine.parse import _parse as parse_strict
from engine.parse import parse
from engine.parse.families import families
from engine.parse.followup import FollowUp, read_follow_up
from engine.parse.fuzzy import correct, osa
from engine.parse.price import read_price_args

HERE = Path(__file__).parents[2]
QUESTIONS = [json.loads(line) for line in (HERE / "parse_v2_questions.jsonl").read_text("utf-8").splitlines()
             if line.strip()]
FOLLOWUPS = [json.loads(line) for line in (HERE / "parse_followups.jsonl").read_text("utf-8").splitlines()
             if line.strip()]


@pytest.mark.parametrize("case", QUESTIONS, ids=[c["q"][:40] for c in QUESTIONS])
def test_question(case: dict[str, Any]) -> None:
    r = parse_strict(case["q"])
    check(r, case["expect"], case["q"])
    for key, want in (case.get("extra") or {}).items():
        assert getattr(r, key) == want, (case["q"], key)


def test_the_questions_cover_every_v2_field_in_both_languages() -> None:
    v2 = ("stage", "framework", "serving_engine", "quantization", "kv_cache_dtype", "concurrency", "prompt_len",
          "output_len", "num_generations", "tensor_parallel", "pipeline_parallel", "context_parallel", "currency",
          "budget", "deadline_hours", "unsupported")
    assert len(QUESTIONS) >= 150
    for field in v2:
        langs = {("ru" if re.search("[а-яё]", c["q"], re.I) else "en") for c in QUESTIONS
                 if c["expect"].get(field) not in (None, [])}
        assert langs == {"ru", "en"}, (field, langs)


@pytest.mark.parametrize("case", FOLLOWUPS, ids=[f"{c['previous'][:16]} → {c['q'][:24]}" for c in FOLLOWUPS])
def test_follow_up(case: dict[str, Any]) -> None:
    previous = parse_strict(case["previous"])
    fu = read_follow_up(case["q"])
    assert fu.is_follow_up is case["is_follow_up"], (case["q"], fu.said)
    if "said" in case:
        assert sorted(fu.said) == sorted(case["said"]), (case["q"], fu.said)
    if case["is_follow_up"]:
        check(merge_follow_up(previous, fu), case["expect"], case["q"])


def test_a_method_change_resets_what_the_method_brings() -> None:
    previous = parse_strict("LoRA 8B in 16 bit with adamw on H100")
    assert previous.bits == 16 and previous.optimizer == "adamw"
    merged = merge_follow_up(previous, read_follow_up("а с QLoRA?"))
    assert merged.method == "qlora" and merged.bits is None and merged.optimizer is None
    assert merged.gpus[0].name == "H100 SXM" and merged.model is not None and merged.model.params_b == 8


def test_merge_keeps_the_previous_language_when_the_follow_up_has_no_words() -> None:
    merged = merge_follow_up(parse_strict("LoRA 8B на H100"), read_follow_up("H200?"))
    assert merged.language == "ru" and merged.gpus[0].name == "H200 SXM"


def test_a_follow_up_never_raises_on_odd_text() -> None:
    for text in ("", "\x00\x01", "а если " + "9" * 4000, "а на -2?", "а если 10^100B?"):
        fu = read_follow_up(text)
        assert isinstance(fu, FollowUp)
    fu = read_follow_up("а на -2?")
    assert "negative number" in (fu.changes.error or "")


# ── model families ──────────────────────────────────────────────────────────────────────
def test_every_family_entry_names_a_catalog_model() -> None:
    names = {m.name for m in models()}
    for fam in families().values():
        for m in [fam.default, *(m for _, m in fam.sizes), *fam.versions.values()]:
            if m is not None:
                assert m.name in names


@pytest.mark.parametrize(("q", "name"), [
    ("llama 70b", "Llama-3.3-70B"), ("ллама 70б", "Llama-3.3-70B"), ("дообучить мистраль на 3090", "Mistral-7B-v0.3"),
    ("qwen3 lora", "Qwen3-8B"), ("llama3.1:70b on 2 H100", "Llama-3.1-70B"), ("70b llama qlora", "Llama-3.3-70B"),
    ("гемма 27б", "Gemma-3-27B"), ("deepseek 7b lora", "DeepSeek-R1-Distill-Qwen-7B"),
])
def test_a_family_without_a_full_name_is_its_default_and_said_as_assumed(q: str, name: str) -> None:
    r = parse_strict(q)
    assert r.model is not None and r.model.name == name, (q, r.model)
    if ":" not in q:
        assert "model" in r.assumed
    else:  # "llama3.1:70b" is the exact model: nothing assumed
        assert "model" not in r.assumed


def test_a_family_with_a_size_it_lacks_stays_a_bare_size() -> None:
    r = parse_strict("qwen 110b lora")
    assert r.model is not None and r.model.params_b == 110 and "model" not in r.assumed


def test_colab_is_a_t4_said_as_assumed_and_a_named_gpu_wins() -> None:
    r = parse_strict("LoRA 7B в колабе")
    assert [(g.name, g.count) for g in r.gpus] == [("T4", 1)] and "gpus" in r.assumed
    r = parse_strict("LoRA 7B в колабе на A100")
    assert [g.name for g in r.gpus] == ["A100 80GB SXM"] and "gpus" not in r.assumed


# ── typos ───────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(("word", "fixed"), [
    ("qlroa", "qlora"), ("infernce", "inference"), ("unslot", "unsloth"), ("axolotel", "axolotl"),
    ("finetunning", "finetuning"), ("mistarl", "mistral"), ("lroa", "lora"), ("checkpointng", "checkpointing"),
    ("инференсу", "инференс"),
])
def test_typos_are_one_or_two_edits_from_the_lexicon(word: str, fixed: str) -> None:
    assert correct(word) == fixed


@pytest.mark.parametrize("word", ["reference", "compute", "production", "content", "version", "simple",
                                  "fully", "llama", "h100", "qwerty", "servers", "lord", "doubles"])
def test_real_words_are_not_typos(word: str) -> None:
    assert correct(word) is None


def test_osa_distance() -> None:
    assert osa("qlroa", "qlora") == 1 and osa("lora", "lora") == 0 and osa("abc", "xyz") == 3
    assert osa("abcdef", "zzzzzz", 1) == 2  # stopped early above the limit


# ── small talk and cost/time asks ───────────────────────────────────────────────────────
@pytest.mark.parametrize(("q", "kind"), [
    ("привет", "greeting"), ("Привет!", "greeting"), ("hi", "greeting"), ("добрый день", "greeting"),
    ("good morning", "greeting"), ("спасибо!", "thanks"), ("thanks a lot", "thanks"), ("спс", "thanks"),
    ("thank you", "thanks"), ("что ты умеешь?", "capabilities"), ("what can you do?", "capabilities"),
    ("help", "capabilities"), ("привет, что ты умеешь?", "capabilities"), ("asdf qwerty", None),
])
def test_small_talk(q: str, kind: str | None) -> None:
    r = parse_strict(q)
    assert r.intent == "help" and r.error is None and r.smalltalk == kind


def test_a_greeting_with_a_question_is_the_question() -> None:
    r = parse_strict("привет! 70B QLoRA на H100?")
    assert r.intent == "estimate" and r.smalltalk is None


@pytest.mark.parametrize(("q", "asks"), [
    ("сколько стоит H100", ["money"]), ("how long and how much for LoRA 8B on H100", ["time", "money"]),
    ("сколько часов займёт LoRA 8B", ["time"]), ("how much VRAM for 70B", ["memory"]),
    ("LoRA 8B бюджет $500", ["money"]),
    ("time to first token for 8B on L4", ["latency"]), ("70B tokens per second on 2 H100", ["throughput"]),
    ("LoRA 8B за сутки", ["time"]),
])
def test_what_the_question_asks_for(q: str, asks: list[str]) -> None:
    r = parse_strict(q)
    assert r.asks == asks
    if "money" in asks or "time" in asks:
        assert r.intent == "cost"


def test_time_to_first_token_is_a_serving_question() -> None:
    assert parse_strict("time to first token llama 8b на L4").method == "inference"


# ── /price ──────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(("text", "gpu", "price", "currency", "error"), [
    ("H100", "H100 SXM", None, None, None),
    ("/price H100 200 руб", "H100 SXM", 200, "RUB", None),
    ("H100 2.5$", "H100 SXM", 2.5, "USD", None),
    ("H100 = 200₽", "H100 SXM", 200, "RUB", None),
    ("$2.5 H200", "H200 SXM", 2.5, "USD", None),
    ("4090 0.4 $/час", "RTX 4090", 0.4, "USD", None),
    ("A100 40GB 1,2", "A100 40GB SXM", 1.2, None, None),
    ("/price@gpu_bot h100 1.9 usd per hour", "H100 SXM", 1.9, "USD", None),
    ("аш сотка 150р", "H100 SXM", 150, "RUB", None),
    ("H100 -2$", "H100 SXM", None, "USD", "negative number"),
    ("H100 1e9 $", "H100 SXM", None, "USD", "price out of range"),
    ("Foo 9000 2$", None, 2, "USD", "unknown gpu"),
    ("H100 A100 2$", None, 2, "USD", "several gpus"),
    ("", None, None, None, None),
    ("/price", None, None, None, None),
])
def test_price_arguments(text: str, gpu: str | None, price: float | None, currency: str | None,
                         error: str | None) -> None:
    a = read_price_args(text)
    assert (a.gpu.name if a.gpu else None) == gpu
    assert a.price == price and a.currency == currency and a.error == error


def test_price_keeps_what_was_typed_for_an_unknown_gpu() -> None:
    assert read_price_args("Foo 9000 2$").gpu_text == "foo 9000"


# ── past parser bugs, in the contract's exact terms ─────────────────────────────────────────
def test_a_model_id_never_decides_method_or_stage() -> None:
    r = parse_strict("Qwen2.5-7B-DPO lora на 4090")
    assert r.stage is None and r.method == "lora"
    r = parse_strict("yandex/YandexGPT-5-Lite-8B-pretrain на 4090")
    # "pretrain" in the id is no training word: a model on a GPU with none is read as running it, said as a guess
    assert r.stage is None and r.method == "inference" and "method" in r.assumed


def test_negative_numbers_are_reported_not_made_positive() -> None:
    for q in ("-7B lora", "lora 7b on -2 h100", "контекст -8k lora 7b", "бюджет -500$ lora 8b"):
        r = parse_strict(q)
        assert "negative number" in (r.error or ""), q
        assert r.budget is None and r.seq_len is None
    assert parse_strict("lora 7b on -2 h100").gpus[0].count == 1


def test_fused_loss_can_be_said_off() -> None:
    assert parse("lora 8b без liger").fused_loss is False
    assert parse("lora 8b с liger").fused_loss is True
    assert parse("lora 8b").fused_loss is None


@pytest.mark.parametrize(("q", "name", "assumed"), [
    # a family and a size said with a space: the family's current model of that size, said as assumed
    ("qwen 7b lora", "Qwen2.5-7B", True), ("квен 7б лора", "Qwen2.5-7B", True), ("qwen 72b lora", "Qwen2.5-72B", True),
    ("qwen 14b lora", "Qwen3-14B", True), ("qwen 32b lora", "Qwen3-32B", True), ("llama 8b lora", "Llama-3.1-8B", True),
    ("mistral 7b lora", "Mistral-7B-v0.3", True), ("mistral-7b lora", "Mistral-7B-v0.3", True),
    # an explicit version or an id stays that model
    ("Qwen-7B lora", "Qwen-7B", False), ("qwen1 7b lora", "Qwen-7B", False),
    ("Qwen/Qwen-7B lora", "Qwen/Qwen-7B", False),
    ("mistral 7b v0.1 lora", "Mistral-7B-v0.1", False), ("qwen2.5 7b lora", "Qwen2.5-7B", False),
    ("Qwen2.5-32B-Instruct lora", "Qwen2.5-32B", False),
    # a variant with its own checkpoint keeps its size; the same-shape catalog model stands in, said as assumed
    ("Qwen2.5-Coder-32B vLLM на 1×H100, 32k, 16 пользователей", "Qwen2.5-Coder-32B", False),  # in the catalog
    ("Qwen2.5-Coder-7B-Instruct lora", "Qwen2.5-7B", True), ("qwen2.5 coder 14b lora", "Qwen2.5-14B", True),
    ("Qwen2.5-Math-7B lora", "Qwen2.5-7B", True), ("Qwen2.5-VL-72B lora", "Qwen2.5-VL-72B", False),  # in the catalog
])
def test_a_family_size_is_the_current_generation_and_variants_keep_their_size(q: str, name: str,
                                                                              assumed: bool) -> None:
    r = parse_strict(q)
    assert r.model is not None and r.model.name == name, (q, r.model)
    assert ("model" in r.assumed) == assumed, (q, r.assumed)


@pytest.mark.parametrize(("q", "name"), [
    ("yandex/YandexGPT-5-Lite-8B-pretrain lora на 4090", "yandex/YandexGPT-5-Lite-8B-pretrain"),
    ("LoRA My-Finetune-13B на 4090", "My-Finetune-13B"),
    ("Ёлка-13B lora", "Ёлка-13B"),
])
def test_an_unknown_model_id_keeps_its_case(q: str, name: str) -> None:
    r = parse_strict(q)
    assert r.model is not None and r.model.name == name, (q, r.model)


def test_noise_after_a_question_adds_no_bare_memory_gpus() -> None:
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789абвгдежзиклмнопрстуфхцчшщыэюя .,-:;!?()/ гб gb ГБ GB гиг  "
    for _ in range(20):
        noise = "".join(rng.choice(alphabet) for _ in range(4096))
        r = parse_strict("лора 8b на 4090 " + noise)
        assert r.gpus[0].name == "RTX 4090", r.gpus
        assert all(g.name is not None for g in r.gpus), r.gpus  # a stray "16 гб" is no second GPU
        assert all(g.memory_gb is None or 4 <= g.memory_gb <= 2048 for g in r.gpus), r.gpus
        assert len(r.gpus) <= 8


@pytest.mark.parametrize(("q", "on"), [
    ("lora 8b without flash attention on 4090", False), ("lora 8b flash-attn off", False), ("лора 8b без FA2", False),
    ("lora 8b with flash attention 2", True), ("flash sale: lora 8b", None),
])
def test_flash_attention_can_be_said(q: str, on: bool | None) -> None:
    assert parse_strict(q).flash_attention is on, q


@pytest.mark.parametrize(("q", "name", "params_b"), [
    ("serve Qwen/Qwen2.5-72B-Instruct-AWQ on 2xA100 with vllm", "Qwen/Qwen2.5-72B-Instruct-AWQ", 72.7),
    ("unsloth/Llama-3.2-3B-Instruct-bnb-4bit lora on T4", "unsloth/Llama-3.2-3B-Instruct-bnb-4bit", 3.2),
    # the catalog's own id: kept as typed too (the command loads what was named), its shape the catalog's
    ("Qwen/Qwen2.5-Coder-32B-Instruct on H100", "Qwen/Qwen2.5-Coder-32B-Instruct", 32.8),
])
def test_a_quantized_or_derivative_hub_id_is_kept_as_written(q: str, name: str, params_b: float) -> None:
    r = parse_strict(q)
    assert r.model is not None and r.model.name == name, (q, r.model)
    assert r.model.params_b is not None and abs(r.model.params_b - params_b) < 0.1


def test_the_launch_command_serves_the_quantized_checkpoint_the_user_named() -> None:
    from engine.serving import serve
    r = serve(parse_strict("serve Qwen/Qwen2.5-72B-Instruct-AWQ on 2xA100 with vllm, 50 concurrent users"))
    assert r.command[:3] == ["vllm", "serve", "Qwen/Qwen2.5-72B-Instruct-AWQ"]
    assert r.settings is not None and r.settings.weight_format == "awq"


@pytest.mark.parametrize("text", ["sdxl дообучение на 3090", "flux lora на 4090", "whisper на 3060"])
def test_a_model_we_do_not_size_is_a_new_question_not_a_follow_up(text: str) -> None:
    """SDXL or Whisper named is a model named: the bot answers "not supported", never «which question to change?»."""
    assert not read_follow_up(text).is_follow_up, text
    assert read_follow_up("а на 3090?").is_follow_up

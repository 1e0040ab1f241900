"""Multi-LoRA serving: vLLM's adapter slots counted from its tensor shapes, allocated with the weights (so the KV
pool and the users it holds shrink), and "how many LoRA adapters can it serve" answered with the slot count that
fits beside the requests asked, in the headline and the launch command alike."""

from __future__ import annotations

import pytest

from bot.pipeline import AnswerOptions, render_request
from bot.views.render import plain
from engine.catalog import architecture
from engine.parse import parse
from engine.schema import ModelRef
from engine.serving import serve
from engine.serving.lora import slot_bytes, slots_beside


def test_a_slot_is_a_and_b_of_every_projection_split_as_vllm_splits_them() -> None:
    arch = architecture(ModelRef(name="Llama-3.1-8B"))
    h, kv, ffn = arch.hidden, arch.kv_heads * arch.head_dim, arch.ffn
    whole = 16 * (9 * h + 2 * kv + 3 * ffn) * arch.layers * 2  # q,k,v,o,gate,up,down: A (r x in) + B (out x r)
    assert slot_bytes(arch, 16) == whole
    assert round(whole / 2**20) == 80
    split = slot_bytes(arch, 16, tp=2)
    assert whole / 2 < split < whole  # A of column-parallel and B of row-parallel layers stay whole on each rank
    assert slot_bytes(arch, 64) == 4 * whole
    assert slots_beside(10 * whole, 2 * whole, whole) == 8 and slots_beside(whole, 2 * whole, whole) == 0


def test_slots_are_taken_from_the_kv_pool_with_the_weights() -> None:
    plain_ = serve(parse("vllm llama 3.1 8b on an h100"))
    with_slots = serve(parse("vllm llama 3.1 8b on an h100 with 64 lora adapters"))
    assert plain_.memory is not None and with_slots.memory is not None
    taken = with_slots.memory.weights_gib - plain_.memory.weights_gib
    assert taken == pytest.approx(64 * slot_bytes(architecture(ModelRef(name="Llama-3.1-8B")), 16) / 2**30, rel=1e-6)
    assert with_slots.memory.kv_pool_gib == pytest.approx(plain_.memory.kv_pool_gib - taken, abs=0.05)
    argv = with_slots.command
    assert "--max-loras" in argv and argv[argv.index("--max-loras") + 1] == "64"


@pytest.mark.parametrize("text", [
    "how many LoRA adapters can one H100 serve for llama 3.1 8b?",
    "сколько лора-адаптеров потянет одна h100 на инференсе llama 8b",
    "сколько лор влезет на h100 в vllm для llama 3.1 8b",
    "multi-lora serving llama 3.1 8b на h100, сколько адаптеров влезет?",
    "сервинг лора адаптеров llama 3.1 8b на h100, сколько влезет",
])
def test_how_many_adapters_is_a_serving_question_about_slots(text: str) -> None:
    r = parse(text)
    assert r.method == "inference" and "adapters" in r.asks and r.lora_rank is None, (text, r)
    result = serve(r)
    assert result.adapter_slots is not None and result.adapter_slots > 100
    assert result.command[result.command.index("--max-loras") + 1] == str(result.adapter_slots)
    assert result.kv is not None and result.kv.concurrency_at_context >= 1  # the one request assumed still fits


def test_the_slot_count_keeps_the_requests_asked_and_one_more_slot_would_not() -> None:
    r = serve(parse("how many lora adapters can vllm hold on a 4090 for qwen2.5 7b with 8 users"))
    assert r.adapter_slots is not None and r.kv is not None and r.adapter_slot_mib is not None
    assert r.kv.concurrency_at_context >= 8
    spare = (r.kv.concurrency_at_context - 8) * r.context * r.kv.bytes_per_token / 2**20
    assert spare < r.adapter_slot_mib  # no room left for another slot beside the 8 requests


@pytest.mark.parametrize(("lang", "text", "words"), [
    ("en", "how many LoRA adapters can one H100 serve for llama 3.1 8b?", ("Room for", "LoRA adapters of rank 16",
                                                                           "beside 1 request")),
    ("ru", "сколько лор влезет на 4090 в vllm для qwen 7b, 21 пользователь", ("Места хватит на", "LoRA-адаптера",
                                                                              "рядом с 21 запросом")),
])
def test_the_first_line_answers_how_many_adapters(lang: str, text: str, words: tuple[str, ...]) -> None:
    first = plain(render_request(parse(text), AnswerOptions(lang=lang)).html).strip().splitlines()[0]
    for w in words:
        assert w in first, first


@pytest.mark.parametrize("text", ["LoRA 8B на 4090", "lora llama 8b на h100, 16 адаптеров обучить", "qlora 70b h100",
                                  "train a LoRA adapter for llama 3.1 8b on a 4090 and serve it with vLLM",
                                  "дообучить лора-адаптер qwen 7b на h100 и потом раздавать через vllm"])
def test_a_lora_fine_tune_stays_a_fine_tune(text: str) -> None:
    r = parse(text)
    assert r.method in (None, "lora", "qlora") and "adapters" not in r.asks


def test_idle_adapter_slots_take_memory_but_a_step_reads_only_the_batch_s_adapters() -> None:
    plain_ = serve(parse("vllm llama 3.1 8b on an h100, 1 user"))
    many = serve(parse("vllm llama 3.1 8b on an h100, 1 user, 256 lora adapters"))
    assert plain_.speed is not None and many.speed is not None and plain_.memory and many.memory
    assert many.memory.weights_gib - plain_.memory.weights_gib > 15  # 256 slots of 80 MiB are allocated
    # one request uses one adapter: the decode step reads one slot, not 20 GB of them (lora_shrink_op.py)
    assert many.speed.per_user_tokens_s > 0.95 * plain_.speed.per_user_tokens_s
    assert many.load is not None and plain_.load is not None
    assert many.load.point.tpot_ms["p50"] < 1.3 * plain_.load.point.tpot_ms["p50"]  # the kernels' slowdown only


@pytest.mark.parametrize("q", ["сколько лор адаптеров влезет на h100 для qwen 7b при 32 юзерах",
                               "how many lora adapters fit on an a100 for llama 3.1 8b",
                               "сколько адаптеров поместится на 4090 mistral 7b"])
def test_how_many_adapters_fit_is_a_multi_lora_serving_question_with_no_serving_word(q: str) -> None:
    r = parse(q)
    assert r.method == "inference" and "adapters" in r.asks, q
    result = serve(r)
    assert result.adapter_slots and result.adapter_slots > 0, q

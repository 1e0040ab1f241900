"""The question parser: what comes out of real questions, in both languages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.parse import PARSE_FIELDS, parse
from engine.parse import _parse as parse_strict  # the same without the last-resort guard
from engine.parse.numbers import number_value

Gpu = tuple[str | None, float | None, int]


def check(q: str, expect: dict[str, Any]) -> None:
    r = parse_strict(q)
    got = r.model_dump()
    for key, want in expect.items():
        if key == "params_b":
            val = r.model.params_b if r.model else None
            assert (val is None) == (want is None), (q, key, val)
            if want is not None:
                assert val == pytest.approx(want, rel=0.02), (q, key, val)
        elif key == "name":
            assert (r.model.name if r.model else None) == want, (q, key, r.model)
        elif key == "active":
            assert r.model is not None and r.model.active_params_b == pytest.approx(want), (q, key)
        elif key == "gpus":
            assert [(g.name, g.memory_gb, g.count) for g in r.gpus] == want, (q, r.gpus)
        else:
            assert got[key] == want, (q, key, got[key])


H100: Gpu = ("H100 SXM", 80, 1)

# The examples file (shared/examples/questions.jsonl), in the exact terms of the contract.
EXAMPLES: list[tuple[str, dict[str, Any]]] = [
    ("70B QLoRA на H100?", {"method": "qlora", "params_b": 70, "gpus": [H100], "language": "ru",
                            "intent": "estimate"}),
    ("Will Llama 3.1 8B LoRA fit on an RTX 3090?", {"method": "lora", "params_b": 8.03, "name": "Llama-3.1-8B",
                                                    "gpus": [("RTX 3090", 24, 1)], "language": "en"}),
    ("полное дообучение 13B на H100 80 ГБ", {"method": "full", "params_b": 13, "gpus": [H100]}),
    ("какой GPU нужен для QLoRA 34B?", {"method": "qlora", "params_b": 34, "gpus": [], "intent": "estimate"}),
    ("LoRA 7B на двух RTX 4090", {"gpus": [("RTX 4090", 24, 2)], "language": "ru"}),
    ("сколько стоит LoRA 13B на 50 млн токенов", {"tokens": 50e6, "intent": "cost", "params_b": 13}),
    ("how long and how much to full fine-tune a 3B model on 1B tokens on H100",
     {"method": "full", "params_b": 3, "tokens": 1e9, "gpus": [H100], "intent": "cost", "language": "en"}),
    ("A100 или H100 для полного файнтюна 7B?",
     {"gpus": [("A100 80GB SXM", 80, 1), H100], "intent": "compare", "method": "full"}),
    ("QLoRA 70B seq 4096 micro-batch 1 r=16", {"seq_len": 4096, "batch_size": 1, "lora_rank": 16}),
    ("полный файнтюн 8B с 8-битным оптимизатором на H200",
     {"optimizer": "adamw_8bit", "bits": None, "gpus": [("H200 SXM", 141, 1)]}),
    ("инференс Llama 3 70B в 4 битах на 2×4090",
     {"method": "inference", "params_b": 70.55, "bits": 4, "gpus": [("RTX 4090", 24, 2)]}),
    ("serve mistral 7b fp16 with 32k context on L4",
     {"method": "inference", "params_b": 7.24, "bits": 16, "seq_len": 32768, "gpus": [("L4", 24, 1)]}),
    ("дообучить 7B на 3 эпохи по 20 млн токенов на A100 — сколько денег?",
     {"method": None, "epochs": 3, "tokens": 20e6, "intent": "cost"}),
    ("помесячная аренда H100 или почасовая?", {"gpus": [H100], "intent": "cost"}),
    ("help", {"intent": "help", "language": "en", "error": None}),
    ("что ты умеешь?", {"intent": "help", "language": "ru"}),
    ("LoRA 8B на 100 тыс. примеров по 1k токенов, 2 эпохи, H100 — сколько часов?",
     {"tokens": 102_400_000, "seq_len": 1024, "epochs": 2, "intent": "cost"}),
    ("QLoRA 4-bit 65B with paged optimizer on a 48GB A6000",
     {"bits": 4, "optimizer": "paged_adamw", "gpus": [("RTX A6000", 48, 1)]}),
    ("сколько VRAM на инференс 8B fp16 с 8k контекстом и 16 параллельными запросами",
     {"method": "inference", "bits": 16, "seq_len": 8192, "batch_size": 16, "intent": "estimate"}),
    ("asdf qwerty", {"params_b": None, "method": None, "intent": "help", "error": None}),
]

# Hard cases beyond the examples file.
HARD: list[tuple[str, dict[str, Any]]] = [
    # sizes in every form
    ("70 B lora", {"params_b": 70, "name": None}),
    ("7.5B", {"params_b": 7.5}),
    ("модель 1,5B, лора", {"params_b": 1.5, "method": "lora"}),
    ("500M full", {"params_b": 0.5, "method": "full"}),
    ("350 млн параметров, полный файнтюн", {"params_b": 0.35, "method": "full"}),
    ("7 миллиардов параметров", {"params_b": 7}),
    ("1 трлн параметров на B300", {"params_b": 1000, "gpus": [("B300", 288, 1)]}),
    ("лора 70б", {"params_b": 70, "language": "ru"}),
    ("a 7 billion parameter model", {"params_b": 7}),
    # catalog names, Latin and Cyrillic
    ("llama3-8b", {"name": "Llama-3-8B", "params_b": 8.03}),
    ("ллама 3 8б лорой", {"name": "Llama-3-8B", "method": "lora"}),
    ("Qwen2.5-32B", {"name": "Qwen2.5-32B", "params_b": 32.76}),
    ("qwen3 30b a3b", {"name": "Qwen3-30B-A3B", "params_b": 30.53, "active": 3.353}),
    ("mixtral 8x7b", {"name": "Mixtral-8x7B", "params_b": 46.7}),
    ("мистраль 7б на т4", {"name": "Mistral-7B-v0.3", "gpus": [("T4", 16, 1)]}),
    ("phi-3-mini lora", {"name": "Phi-3-mini-4k"}),
    ("DeepSeek V3 inference on 8x H200", {"name": "DeepSeek-V3", "params_b": 671, "active": 37}),
    ("дипсик в3 инференс", {"name": "DeepSeek-V3", "method": "inference"}),
    ("Llama-3-70B-Instruct", {"name": "Llama-3-70B", "params_b": 70.55}),
    ("квен 3 8б лорой на 4070 ti super", {"name": "Qwen3-8B", "gpus": [("RTX 4070 Ti Super", 16, 1)]}),
    ("my-finetune-13b lora", {"name": "my-finetune-13b", "params_b": 13}),
    ("qlora70b h100", {"name": None, "params_b": 70, "method": "qlora", "gpus": [H100]}),
    ("70b-instruct qlora", {"name": None, "params_b": 70}),
    # methods and slang
    ("кулора 13б", {"method": "qlora"}),
    ("Q-LoRA 13B", {"method": "qlora"}),
    ("лору на 7б", {"method": "lora"}),
    ("full fine-tune all weights 7b", {"method": "full"}),
    ("train a 1B model from scratch", {"method": "full"}),
    ("запустить 70B на 4090", {"method": "inference"}),
    ("can I run llama 3.1 70b on two 3090s?", {"method": "inference", "gpus": [("RTX 3090", 24, 2)]}),
    ("fine-tuning 7B with LoRA in full precision", {"method": "lora", "bits": 32}),
    # GPUs: variants, counts, look-alikes, bare memory
    ("A100 40 vs A100 80", {"gpus": [("A100 40GB SXM", 40, 1), ("A100 80GB SXM", 80, 1)], "intent": "compare"}),
    ("H100 PCIe, H100 NVL", {"gpus": [("H100 PCIe", 80, 1), ("H100 NVL", 94, 1)]}),
    ("x8 h100", {"gpus": [("H100 SXM", 80, 8)]}),
    ("H100 x 4 full 8B", {"gpus": [("H100 SXM", 80, 4)]}),
    ("на четырёх H100", {"gpus": [("H100 SXM", 80, 4)]}),
    ("a pair of 3090s", {"gpus": [("RTX 3090", 24, 2)]}),
    ("Н100, А100, а6000", {"gpus": [H100, ("A100 80GB SXM", 80, 1), ("RTX A6000", 48, 1)], "language": "ru"}),
    ("A6000 Ada qlora 34b", {"gpus": [("RTX 6000 Ada", 48, 1)]}),
    ("RTX 3060 12GB qlora 7b", {"gpus": [("RTX 3060", 12, 1)]}),
    ("rtx 9090 lora 7b", {"gpus": [("RTX 9090", None, 1)]}),
    ("24GB card", {"gpus": [(None, 24, 1)], "intent": "estimate"}),
    ("2x 24GB cards LoRA 13B", {"gpus": [(None, 24, 2)]}),
    ("4 карты по 24 ГБ, лора 30B", {"gpus": [(None, 24, 4)]}),
    ("H100, 8 штук, full 70B", {"gpus": [("H100 SXM", 80, 8)]}),
    ("LoRA 70B on 8 GPUs", {"gpus": [(None, None, 8)]}),
    ("у меня 64 ГБ ОЗУ и 4090, влезет 70B qlora?", {"gpus": [("RTX 4090", 24, 1)]}),
    ("LoRA 7B на V100 32GB", {"gpus": [("V100 32GB", 32, 1)]}),
    ("LoRA 13B rank 8, seq 1024, batch 16, A6000", {"gpus": [("RTX A6000", 48, 1)], "batch_size": 16}),
    # settings
    ("128к контекст", {"seq_len": 131072}),
    ("LoRA 8B 8k", {"seq_len": 8192}),
    ("ctx=1024 bs=16 r=64", {"seq_len": 1024, "batch_size": 16, "lora_rank": 64}),
    ("max_seq_length=2048 per_device_train_batch_size=4 lora_r=16",
     {"seq_len": 2048, "batch_size": 4, "lora_rank": 16}),
    ("лора 7б с рангом 64 и контекстом 8к", {"lora_rank": 64, "seq_len": 8192}),
    ("батч 32, контекст 4096", {"batch_size": 32, "seq_len": 4096}),
    ("paged adamw 8bit", {"optimizer": "paged_adamw_8bit"}),
    ("адам 8 бит, QLoRA 8-бит", {"optimizer": "adamw_8bit", "bits": 8}),
    ("paged_adamw_32bit qlora 7b", {"optimizer": "paged_adamw", "bits": None}),
    ("without 8-bit optimizer, full 7B", {"optimizer": "adamw"}),
    ("adafactor, full 3B", {"optimizer": "adafactor"}),
    ("sgd 1B", {"optimizer": "sgd"}),
    ("full 7B with lion", {"optimizer": "lion"}),
    ("grad ckpt off", {"gradient_checkpointing": False}),
    ("gradient_checkpointing=False lora 7b", {"gradient_checkpointing": False}),
    ("with gradient checkpointing", {"gradient_checkpointing": True}),
    ("не используя чекпоинтинг, полный файнтюн 3B", {"gradient_checkpointing": False}),
    ("выгрузка в ОЗУ, full 13B", {"offload": True}),
    ("без оффлоада full 7b", {"offload": False}),
    ("gguf q8_0 8b ollama", {"bits": 8, "method": "inference"}),
    ("awq 70b vllm 2x4090", {"bits": 4, "gpus": [("RTX 4090", 24, 2)]}),
    # data and epochs
    ("100k примеров по 512 токенов", {"tokens": 51_200_000, "seq_len": 512}),
    ("LoRA 7B, 10k examples of 2k tokens each, 3 epochs", {"tokens": 20_480_000, "epochs": 3}),
    ("LoRA 13B, 50 000 примеров по 1 тыс. токенов", {"tokens": 51_200_000}),
    ("train 350M model with 1e10 tokens on 4x4090", {"tokens": 1e10, "params_b": 0.35}),
    ("одна эпоха лоры 8B", {"epochs": 1}),
    ("1.5 epochs over 2B tokens", {"epochs": 1.5, "tokens": 2e9}),
    ("budget 1 млн рублей on LoRA 8B", {"params_b": 8, "intent": "cost"}),
    # intent and language
    ("QLoRA vs LoRA for 13B on 3090", {"intent": "compare", "method": "qlora"}),
    ("4090 or 3090 for qlora 13b?", {"intent": "compare"}),
    ("how much VRAM for 70B inference?", {"intent": "estimate"}),
    ("сколько VRAM нужно для Llama 3.1 70B?", {"intent": "estimate"}),
    ("сколько будет стоить неделя аренды 8×H100?", {"intent": "cost"}),
    ("/start", {"intent": "help", "language": "en"}),
    ("привет", {"intent": "help", "language": "ru"}),
    ("what can you do", {"intent": "help"}),
    ("привет! 70B QLoRA на H100?", {"intent": "estimate"}),
    ("full 13B on H100 — сколько стоит?", {"language": "ru", "intent": "cost"}),
]


@pytest.mark.parametrize(("q", "expect"), EXAMPLES + HARD, ids=[q[:40] for q, _ in EXAMPLES + HARD])
def test_question(q: str, expect: dict[str, Any]) -> None:
    check(q, expect)


def test_hard_cases_are_many() -> None:
    assert len(HARD) >= 40


@pytest.mark.parametrize(("text", "error"), [
    ("", "empty"), ("   \n\t ", "empty"), ("\x00\x01\x02binary", "not text"),
])
def test_unusable_text_is_an_error(text: str, error: str) -> None:
    r = parse(text)
    assert r.error == error
    assert r.model is None and r.gpus == []


def test_too_long_text_is_read_up_to_the_limit() -> None:
    r = parse("QLoRA 70B на H100 " + "и ещё " * 2000)
    assert r.error == "too long"
    assert r.method == "qlora" and r.model and r.model.params_b == 70


@pytest.mark.parametrize(("q", "error"), [
    ("10^100B on H100", "model size out of range"),
    ("1e300 B lora", "model size out of range"),
    ("seq 1000000000000 llama 3 8b", "context length out of range"),
    ("bs=10^12", "batch size out of range"),
    ("9" * 4000 + "B", "model size out of range"),
])
def test_absurd_values_are_dropped_and_named(q: str, error: str) -> None:
    r = parse_strict(q)
    assert r.error == error
    if "H100" in q:  # the rest of the request stays
        assert r.gpus[0].name == "H100 SXM"


def test_output_is_the_contract_shape() -> None:
    d = parse("LoRA 8B").model_dump(include=set(PARSE_FIELDS))
    assert set(d) == set(PARSE_FIELDS)
    contract = PARSE_FIELDS[:PARSE_FIELDS.index("unsupported") + 1]  # CONTRACT.md v1 + v2, in its order
    assert [k for k in d if k in contract] == list(contract)
    assert json.loads(json.dumps(d))["method"] == "lora"


@pytest.mark.parametrize(("s", "v"), [
    ("70", 70), ("1,5", 1.5), ("2,7", 2.7), ("1,500", 1500), ("1.000.000", 1e6), ("1,234.5", 1234.5),
    ("3.1", 3.1), ("9" * 40, float("inf")),
])
def test_number_grammar(s: str, v: float) -> None:
    assert number_value(s) == v


def test_unknown_model_keeps_the_users_name_and_no_catalog_figures() -> None:
    r = parse("finetune acme-chat-13b with qlora")
    assert r.model is not None
    assert r.model.name == "acme-chat-13b" and r.model.params_b == 13 and r.model.active_params_b is None


def test_a_gpu_name_is_not_glued_to_the_amount_of_data_after_it() -> None:
    for text, tokens in (("7B lora on H100 500M tokens", 5e8), ("LoRA 8B на H200 200M токенов", 2e8),
                         ("8xH100 100 000 examples of 512 tokens", 100_000 * 512)):
        r = parse(text)
        assert r.tokens == tokens and r.gpus and r.gpus[0].name and r.gpus[0].name.startswith("H"), text


def test_a_count_that_is_not_read_is_said() -> None:
    assert parse("70B qlora on 2000 H100").error == "GPU count not read"
    assert parse("70B qlora on 2000x H100").gpus[0].count == 2000
    assert parse("70B qlora on 0 H100").error == "GPU count out of range"


def test_a_context_of_zero_is_reported_not_ignored() -> None:
    for text in ("7b lora context 0", "7b lora контекст 0"):
        r = parse(text)
        assert r.seq_len is None and r.error == "context length out of range", text

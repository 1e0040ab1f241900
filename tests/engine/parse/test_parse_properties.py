"""Property tests: any text up to 4096 characters gives a valid Request without raising, and the v2
extractors, the follow-up reader, the /price reader and the typo corrector stay within their bounds.
(Speed is measured by bench/parse_bench.py, not asserted here.)"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.edits import merge_follow_up
from engine.parse import _parse as parse_strict  # no last-resort guard: a bug here must show
from engine.parse import warm
from engine.parse.followup import CHANGEABLE, read_follow_up
from engine.parse.fuzzy import correct, osa
from engine.parse.price import PriceArgs, read_price_args
from engine.schema import MAX_BATCH, MAX_PARAMS_B, MAX_SEQ_LEN, Request

warm()

# Pieces a hostile or confused user might combine: lexicon words, names, numbers of every shape.
PIECES = st.sampled_from([
    "70B", "qlora", "лора", "H100", "x8", "8×", "2х", "Н100", "а6000", "128к", "8k", "bs=16", "r=64",
    "10^100B", "1e308", "1e-9", "9" * 4000, "0B", "0.0000001B", "1,5", "1,000,000", "без", "не", "vs", "или",
    "сколько стоит", "по", "примеров", "токенов", "эпохи", "gb", "ГБ", "fp8", "8-bit", "adam", "paged",
    "offload", "checkpointing", "llama 3.1 8b", "mixtral 8x22b", "-", "_", ".", ",", "/", "(", ")", "=",
    "\u202e", "\u200b", "\x00", "\ufffd", "😀", "שלום", "مرحبا", "ZeRO-3", "seq", "context", "batch",
    "epochs", "tokens", "trillion", "млрд", "млн", "тыс.", " ", "\n", "\t",
    # v2: stages, stacks, serving, money, time, slang, typos
    "grpo", "dpo", "reward model", "unsloth", "llama.cpp", "vllm", "tp=4", "pp 2", "cp", "ulysses", "kv", "fp8 kv",
    "awq", "q4_k_m", "gguf", "32 users", "пользователей", "prompt 2k", "output 512", "вход", "выход", "G=8",
    "8 генераций", "$500", "50 тыс рублей", "₽", "€", "в рублях", "бюджет", "за сутки", "by tomorrow", "in 3 days",
    "часов", "tpu v5e", "на cpu", "колаб", "картинки", "место на диске", "liger", "фулл", "инфер", "аш сотка",
    "4О90", "qlroa", "мистраль", "llama", "а если", "and on two of them", "привет", "спасибо", "−", "-8", "-",
])
TEXT = st.one_of(
    st.text(max_size=4096),
    st.lists(PIECES, max_size=300).map(" ".join),
    st.lists(PIECES, max_size=600).map("".join),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=4096),
)


def _valid(r: Request) -> None:
    Request.model_validate(r.model_dump())  # every bound of the schema holds
    if r.model and r.model.params_b is not None:
        assert 0 < r.model.params_b <= MAX_PARAMS_B
    if r.seq_len is not None:
        assert 1 <= r.seq_len <= MAX_SEQ_LEN
    assert r.error is not None or r.intent is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT)
def test_any_text_parses_without_raising(text: str) -> None:
    _valid(parse_strict(text[:4096]))


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=10**400), st.sampled_from(["B", "b", " млрд", "k", "к", " GB", "x"]),
       st.sampled_from(["", "seq ", "bs=", "r=", "epochs ", "на ", "QLoRA "]))
def test_absurd_numbers_stay_in_bounds(n: int, unit: str, prefix: str) -> None:
    r = parse_strict(f"{prefix}{n}{unit} H100")
    _valid(r)
    assert r.gpus and r.gpus[0].name == "H100 SXM"


def test_worst_shapes_give_valid_requests() -> None:
    shapes = ["a " * 2048, "1 " * 2048, "8x" * 2048, "a1" * 2048, "1e1 " * 1024, "h100 " * 819, "-" * 4096,
              "9" * 4096, "10^" * 1365, "8k " * 1365, "😀" * 4096, "adam 8 bit " * 372, "llama 3.1 " * 409]
    for text in shapes:
        _valid(parse_strict(text[:4096]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT)
def test_v2_fields_stay_in_bounds(text: str) -> None:
    r = parse_strict(text[:4096])
    for degree in (r.tensor_parallel, r.pipeline_parallel, r.context_parallel):
        assert degree is None or 1 <= degree <= 1024
    assert r.concurrency is None or 1 <= r.concurrency <= MAX_BATCH
    assert r.num_generations is None or 1 <= r.num_generations <= 4096
    assert r.budget is None or 0 < r.budget.amount <= 1e12
    assert r.deadline_hours is None or 0 < r.deadline_hours <= 1e6
    assert len(r.unsupported) == len(set(r.unsupported)) <= 32
    assert r.smalltalk is None or r.intent == "help"
    assert r.quantization is None or len(r.quantization) <= 40


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT, st.sampled_from(["LoRA 8B на 8×H100", "vllm 70B fp8 на 4 H100 32 users", "привет", "", "TPU v5e"]))
def test_follow_up_reader_and_merge_never_raise(text: str, previous: str) -> None:
    fu = read_follow_up(text[:4096])
    assert set(fu.said) <= set(CHANGEABLE) | {"gpu_count"}
    assert not fu.is_follow_up or fu.said
    try:
        merged = merge_follow_up(parse_strict(previous), fu)
    except ValueError:
        return  # said and impossible: the caller answers with the reason
    _valid(merged)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT)
def test_price_reader_never_raises(text: str) -> None:
    a = read_price_args("/price " + text[:4096])
    PriceArgs.model_validate(a.model_dump())
    assert a.price is None or 0 < a.price <= 1e6


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_a_correction_is_a_lexicon_word_near_the_typo(word: str) -> None:
    fixed = correct(word)
    if fixed is not None:
        assert fixed != word and osa(word, fixed) <= 2 and fixed[0] in word[:2]


def test_a_size_that_spells_a_card_number_is_a_size() -> None:
    # hypothesis found "1080B H100" read as a GTX 1080 next to the H100 (the alias "1080" took the number)
    for text in ("1080B H100", "4090b на H100", "3090 млрд H100"):
        r = parse_strict(text)
        assert r.model is not None and r.model.params_b is not None and r.model.params_b > 1000, text
        assert [g.name for g in r.gpus or []] == ["H100 SXM"], text
    assert [g.name for g in parse_strict("LoRA 8B на 2080").gpus or []] == ["RTX 2080"]


def test_a_gpu_alias_number_with_a_unit_is_that_amount_not_the_card() -> None:
    for text in ("1080k H100", "1080 GB H100", "4090B на H100"):
        assert [g.name for g in parse_strict(text).gpus] == ["H100 SXM"], text
    assert [g.name for g in parse_strict("на 1080 8гб").gpus] == ["GTX 1080"]
    assert [g.name for g in parse_strict("лора 8б на 4090 к 8к контексту").gpus] == ["RTX 4090"]  # «к» the preposition

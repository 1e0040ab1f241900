"""Cards the catalog has figures for but no provider rents (an RTX 3060, a 4080, an A40): hours and decode speed
from their specifications the same way as every catalog card, the utilisation assumed said, "no price" said where
the money would be, and never ranked above a priced card."""

from __future__ import annotations

import re

import pytest

from bot.pipeline import AnswerOptions
from bot.pipeline import ask_text as text_of
from engine import speed
from engine.answer import answer
from engine.catalog import find_gpu
from engine.parse import parse
from engine.plan import plan
from engine.schema import PlannedAnswer, ServingAnswer


def planned(question: str) -> PlannedAnswer:
    a = answer(parse(question))
    assert isinstance(a, PlannedAnswer)
    return a


def test_qlora_8b_on_a_3060_gets_hours_in_russian() -> None:
    q = "qlora 8b на 3060 сколько времени"
    a = planned(q)
    assert a.plans and a.plans[0].gpu == "RTX 3060" and a.plans[0].hours_per_100m_tokens
    text = text_of(q)
    first = text.splitlines()[0]
    assert first.startswith("⏱ ") and "на 1×RTX 3060" in first and "не посчитать" not in text
    lines = [x for x in text.splitlines() if x.startswith("• 1×RTX 3060")]
    assert lines and "на 100\u00a0млн токенов" in lines[0] and lines[0].endswith("цены аренды в каталоге нет")
    # the time rests on the class's utilisation and the card's own peak: said
    assert "матричные умножения на 47\u00a0% от пиковых 25,5\u00a0TFLOPS" in text


def test_ten_epochs_of_5m_tokens_are_timed_as_50m() -> None:
    q = "10 эпох по 5М токенов qlora 8b на 3060 — сколько времени"
    a = planned(q)
    assert a.tokens == pytest.approx(5e7)
    p = a.plans[0]
    assert p.hours == pytest.approx(p.hours_per_100m_tokens * 0.5, rel=0.02)  # type: ignore[operator]
    assert "для ваших 50\u00a0млн токенов" in text_of(q).splitlines()[0]


def test_lora_7b_on_a_4080_gets_hours_in_english() -> None:
    q = "lora 7b on a 4080 how long for 100M tokens"
    a = planned(q)
    assert all(p.gpu == "RTX 4080" and p.hours_per_100m_tokens for p in a.plans)
    first = text_of(q).splitlines()[0]
    assert re.match(r"⏱ [\d.]+\xa0h on \d×RTX 4080 for your 100M tokens", first), first
    assert "cannot be counted" not in text_of(q)


def test_the_hours_come_from_the_cards_own_figures() -> None:
    """Same step model, same class utilisation: an RTX 3080 and an RTX 3090 differ by their peak and bandwidth."""
    a = planned("lora 1b on a 3080 how long for 100M tokens")
    s = a.scenario
    assert s is not None
    hours = {n: speed.training_time(s, find_gpu(n)).hours for n in ("RTX 3080", "RTX 3090", "RTX 4090")}
    assert hours["RTX 4090"] < hours["RTX 3090"] < hours["RTX 3080"]
    assert speed.gpu_class(find_gpu("RTX 3080")) == speed.gpu_class(find_gpu("RTX 3090")) == "workstation"


def test_a_card_without_bf16_or_tensor_cores_trains_in_fp16_at_its_own_rate() -> None:
    a = planned("qlora 8b на P40 сколько времени на 100М токенов")
    assert any(x.key == "mixed_precision" and x.value == "fp16_amp" for x in a.assumptions)
    assert any(x.key == "training_utilisation" and x.value == "0.4/11.76" for x in a.assumptions)
    assert a.plans and a.plans[0].hours_per_100m_tokens


@pytest.mark.parametrize(("q", "said"), [
    ("how many users can llama 3 8b serve on an A40", r"tokens/s per user"),
    ("сколько пользователей выдержит llama 3 8b на A40", r"токенов/с на пользователя"),
])
def test_serving_on_an_a40_gives_a_decode_speed(q: str, said: str) -> None:
    a = answer(parse(q))
    assert isinstance(a, ServingAnswer) and a.serving.gpu is not None and a.serving.gpu.name == "A40"
    assert a.verdict in ("fits", "tight")
    assert re.search(said, text_of(q))


def test_a_cost_question_on_an_unpriced_card_gives_hours_and_says_there_is_no_price() -> None:
    for q, said in (("сколько стоит qlora 8b на 3060 на 100M токенов", "цены аренды RTX 3060 в каталоге нет"),
                    ("how much will lora 1b on a 4080 cost for 100M tokens", "no rental price for RTX 4080")):
        first = text_of(q).splitlines()[0]
        assert first.startswith("⏱ ") and said in first, first
    # the chat's own price makes it a priced card like any other
    own = text_of("сколько стоит qlora 8b на 3060 на 100M токенов",
                  AnswerOptions(prices={"RTX 3060": 0.15}))
    assert own.startswith("💰 ") and "на 1×RTX 3060" in own.splitlines()[0]


def test_an_unpriced_card_never_ranks_above_a_priced_one() -> None:
    r = plan(parse("compare RTX 3060 vs RTX 4090 for qlora 8b, what is cheaper for 100M tokens"))
    asked = [p for p in r.plans if p.count == 1]  # the arrangements named lead, then the other counts of them
    assert [p.gpu for p in asked] == ["RTX 4090", "RTX 3060"] and r.plans[:2] == asked
    others = [p.per_hour is not None for p in r.plans[2:]]
    assert others == sorted(others, reverse=True)
    text = text_of("compare RTX 3060 vs RTX 4090 for qlora 8b, what is cheaper for 100M tokens")
    assert text.startswith("💰 ") and "on 1×RTX 4090" in text.splitlines()[0]
    assert any(x.startswith("✅ 1×RTX 3060") and x.endswith("no rental price in the catalog")
               for x in text.splitlines())
    # among unpriced plans, the fewest GPU-hours first (not the most GPUs)
    counts = [p.count for p in plan(parse("qlora 8b на 3060 сколько времени")).plans]
    assert counts[:3] == [1, 2, 4]


def test_a_bare_memory_size_keeps_its_stand_in_hours() -> None:
    q = "LoRA 8B on 24 GB, how long for 1 epoch of 50k samples x 2k tokens?"
    first = text_of(q).splitlines()[0]
    assert first.startswith("⏱ ") and "hours as on RTX 4090" in first and "no rental price" not in text_of(q)


@pytest.mark.parametrize(("q", "card"), [
    ("у меня 12 гб видяха, сколько часов qlora 8b на 5к примеров по 512 токенов", "RTX 3060"),
    ("qlora 3b on an 8 GB card, how long for 20M tokens?", "RTX 4060"),
    ("qlora 8b на карте 10 гб, сколько часов на 10м токенов", "RTX 3080"),
])
def test_a_memory_size_no_provider_rents_is_timed_as_the_card_people_own(q: str, card: str) -> None:
    first = text_of(q).splitlines()[0]
    assert first.startswith("⏱ ") and card in first, first

"""Training from scratch: plans that finish the tokens within a month (several nodes where needed), the fewest of
each GPU, the asked arrangement kept; no CPU offload or 4-bit weights offered; the MFU said as the pretraining
runs'; the time or price leads."""

from __future__ import annotations

from bot.pipeline import ask_text
from engine.answer import answer
from engine.parse import parse
from engine.plan.search import PRETRAIN_HOURS
from engine.schema import TrainingAnswer


def test_a_long_pretraining_run_is_planned_on_nodes_that_finish_it_within_a_month() -> None:
    a = answer(parse("сколько стоит претрейн 13б на 2T токенов"))
    assert isinstance(a, TrainingAnswer) and a.plans
    assert all(p.hours is not None and p.hours <= PRETRAIN_HOURS for p in a.plans)  # was 8×RTX 4090, 86 228 h
    assert all("cpu_offload" not in p.techniques for p in a.plans)
    assert len({p.gpu for p in a.plans}) == len(a.plans)  # the fewest of each GPU, not every count of one


def test_the_asked_gpus_stay_and_a_small_run_is_not_spread_over_nodes() -> None:
    first = ask_text("обучение с нуля 350m на 10B токенов на 4090").split("\n")[0]
    assert first.startswith("⏱ ") and "1×RTX 4090" in first  # was 256×RTX 4090 at the same price
    assert "на 8×H100 SXM" in ask_text("pretrain 1b с нуля на 8xh100 на 100B токенов").split("\n")[0]


def test_pretraining_is_offered_no_offload_or_quantization_and_says_whose_mfu() -> None:
    text = ask_text("цена pretrain 7b 1T токенов на h100")
    assert text.startswith("💰 ") and "CPU offload" not in text and "4-бит" not in text
    english = ask_text("pretrain a 3b model from scratch on 300B tokens with 32 h100")
    assert "40% MFU bf16 (Llama 3 and Megatron-LM pretraining runs)" in english and "PEFT" not in english

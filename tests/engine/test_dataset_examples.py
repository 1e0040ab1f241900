"""The data as a count of examples with no length each («на 100к примеров», "on 50k samples", «5000 промптов»):
heard (Request.examples), timed with each example at the whole context (engine.scenario.training_tokens, the one rule
for plans, post-training plans and RL steps), said as the assumption example_tokens, and named in the first line."""

from __future__ import annotations

import pytest

from bot.pipeline import ask_text
from engine.answer import answer
from engine.parse import parse
from engine.schema import PlannedAnswer, PostTrainAnswer


@pytest.mark.parametrize(("text", "examples"), [
    ("сколько стоит зафайнтюнить llama 8b лорой на 100к примеров", 100_000),
    ("lora llama 8b on 50k samples, how long on an a100", 50_000),
    ("qlora mistral 7b датасет 12 000 диалогов на 4090", 12_000),
    ("grpo qwen 7b на 5000 промптов на h100", 5_000),
])
def test_a_count_of_examples_without_a_length_is_heard(text: str, examples: int) -> None:
    r = parse(text)
    assert r.examples == examples and r.tokens is None, r


def test_a_length_each_makes_it_tokens_not_examples() -> None:
    r = parse("lora llama 8b на 100k примеров по 512 токенов")
    assert r.tokens == pytest.approx(51_200_000) and r.examples is None


def planned(text: str) -> PlannedAnswer:
    a = answer(parse(text))
    assert isinstance(a, PlannedAnswer), a
    return a


def test_examples_are_timed_at_the_context_and_said_as_the_assumption() -> None:
    by_examples = planned("lora llama 8b на 100к примеров на a100 сколько по времени")
    by_tokens = planned("lora llama 8b на 204.8M токенов на a100 сколько по времени")
    assert by_examples.tokens == pytest.approx(100_000 * 2048)
    assert by_examples.plans[0].hours == pytest.approx(by_tokens.plans[0].hours, rel=0.01)
    assert by_examples.scenario is not None
    said = {x.key: x.value for x in by_examples.scenario.assumptions}
    assert said["example_tokens"] == 2048
    longer = planned("lora llama 8b на 100к примеров контекст 4k на a100 сколько по времени")
    assert longer.tokens == pytest.approx(2 * by_examples.tokens)  # each example at the context said
    assert "example_tokens" not in {x.key for x in by_tokens.scenario.assumptions}  # type: ignore[union-attr]


def test_a_preference_pair_is_two_sequences_and_a_grpo_prompt_its_generations() -> None:
    dpo = planned("DPO qwen 7b на 20 тысяч пар на h100 сколько по времени")
    assert isinstance(dpo, PostTrainAnswer) and dpo.scenario is not None
    assert dpo.tokens == pytest.approx(20_000 * 2 * dpo.posttrain.settings.max_length)  # chosen + rejected
    grpo = planned("grpo qwen 7b на 5000 промптов на h100 сколько по времени")
    yardstick = planned("grpo qwen 7b на h100 сколько по времени")
    assert isinstance(grpo, PostTrainAnswer) and isinstance(yardstick, PostTrainAnswer)
    assert grpo.posttrain.time and yardstick.posttrain.time and yardstick.posttrain.time.prompts == 1000
    assert grpo.posttrain.time.steps == 5 * yardstick.posttrain.time.steps


@pytest.mark.parametrize(("text", "first"), [
    ("сколько стоит зафайнтюнить llama 8b лорой на 100к примеров",
     r"^💰 ≈.+ за 100\u00a0000\u00a0примеров \(до 204,8\u00a0млн токенов\) на 1×"),
    ("how much to fine-tune mistral 7b with qlora on 30k examples",
     r"^💰 ≈\$.+ for 30,000 examples \(up to 61\.4M tokens\) on 1×"),
    ("grpo qwen 7b на 5000 промптов сколько по времени на 8 h100",
     r"^⏱ .+ на 8×H100 SXM на 5\u00a0000\u00a0промптов \(до 41\u00a0млн токенов\)"),
    ("grpo qwen 7b сколько по времени на h100",
     r"^⏱ .+ на 1×H100 SXM на 1\u00a0000\u00a0промптов, .+назовите свой объём"),
    ("GRPO llama 8b how long on 4 a100", r"^⏱ .+ on 4×A100 80GB SXM for 1,000 prompts, .+say your amount of data"),
])
def test_the_first_line_names_the_data_it_timed(text: str, first: str) -> None:
    import re
    line = ask_text(text).splitlines()[0]
    assert re.search(first, line), line

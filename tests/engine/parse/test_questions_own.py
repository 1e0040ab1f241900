"""Our own phrasings of the classes the reply must get right (tests/data/questions_own.jsonl): what the parser reads
(the shared scorer's comparison rules, tests/parse_checks.py) and the first line of `gpu-advisor ask`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from parse_checks import check

from bot.pipeline import ask_text
from engine.configs.readers.cmdline import looks_like_command
from engine.parse import _parse as parse_strict

CASES = [json.loads(line) for line in (Path(__file__).parents[2] / "data" / "questions_own.jsonl")
         .read_text("utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("case", CASES, ids=[c["q"][:40] for c in CASES])
def test_what_is_read(case: dict[str, Any]) -> None:
    check(parse_strict(case["q"]), case["expect"], case["q"])


@pytest.mark.parametrize("case", [c for c in CASES if "first" in c], ids=[c["q"][:40] for c in CASES if "first" in c])
def test_the_first_line_answers_it(case: dict[str, Any]) -> None:
    first = ask_text(case["q"]).split("\n", 1)[0].replace("\xa0", " ")  # NBSP between a number and its unit
    assert re.search(case["first"], first), (case["q"], first)


def test_the_cases_cover_every_class_in_both_languages() -> None:
    fields = ("seq_len", "budget", "deadline_hours", "rent_hours", "unsupported", "asks")
    for field in fields:
        langs = {"ru" if re.search("[а-яё]", c["q"], re.I) else "en" for c in CASES if field in c["expect"]}
        assert langs == {"ru", "en"}, field


@pytest.mark.parametrize(("text", "command"), [
    ("vllm qwen2.5-32b на l40s 16 пользователей контекст 8к", False),
    ("vllm llama 3.1 8b 128k контекст на 4090", False),
    ("sglang qwen 7b на h100", False),
    ("vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ -tp 2 --max-model-len 32768", True),
    ("vllm serve meta-llama/Llama-3.1-8B", True),
    ("tune run lora_finetune_single_device --config llama3_1/8B_lora", True),
    ("accelerate launch train.py", True),
    ("llama-server -m model.gguf", True),
])
def test_a_launch_line_is_a_command_only_when_it_is_one(text: str, command: bool) -> None:
    assert looks_like_command(text) is command


def test_a_price_said_per_hour_stays_a_price_and_a_day_is_a_deadline() -> None:
    r = parse_strict("уложусь в 500$ за сутки? лора 8б")
    assert r.budget is not None and r.budget.amount == 500 and r.deadline_hours == 24
    r = parse_strict("H100 за 2$ за час")
    assert r.budget is None


def test_a_weekday_deadline_is_said_as_assumed() -> None:
    r = parse_strict("лора 8б на 1B токенов к понедельнику")
    assert "deadline_hours" in r.assumed
    # the door passes today's date: the weekday is counted on the calendar, and the reply says so
    assert "срок к дню недели посчитан от сегодняшнего дня" in ask_text("лора 8б на 1B токенов к понедельнику")


def test_pretraining_never_gets_an_adapter_and_full_fine_tuning_never_qlora_as_a_fix() -> None:
    for q in ("цена pretrain 7b 1T токенов на h100", "pretrain 1b from scratch on one 4090 on 20B tokens"):
        assert "LoRA" not in ask_text(q), q
    for q in ("фулл 405б на h100", "full fine-tune 70b on one h100", "фулл 8б на 4090"):
        assert "QLoRA" not in ask_text(q), q


def test_a_comparison_with_enough_providers_ranks_by_speed_and_names_the_way_forward() -> None:
    text = ask_text("3090 или 4090 для лоры 13b")
    assert text.count("(QLoRA)") == 2  # both listed with the fix, the winner named in the first line


def test_a_cluster_total_is_not_labelled_per_gpu() -> None:
    first = ask_text("full fine-tune 70b").split("\n")
    assert not any(line.startswith("🧮") and "per GPU" in line for line in first)


def test_a_price_from_too_few_providers_is_said_and_does_not_rank_in_either_comparison() -> None:
    from engine.pricing import MIN_PROVIDERS, market_range, thin_price
    assert len(market_range("RTX A5000").providers) < MIN_PROVIDERS <= len(market_range("RTX A6000").providers)
    assert thin_price("RTX A5000") and not thin_price("RTX A6000") and not thin_price("M2 Ultra")  # unpriced: not thin
    for q in ("a6000 или a5000 для лоры 7б", "dpo 7b: a6000 или a5000?"):  # the SFT and the post-training planner
        first = ask_text(q).split("\n")[0]
        assert "RTX A5000 известна по слишком малому числу провайдеров" in first, (q, first)
        assert "берите 1×RTX A6000" in first, (q, first)

"""The post-training reply worded from fixed Answers (tests/data/posttrain_answers/*.json, engine output saved once):
headline for the stage, the post-training breakdown lines, changes with their totals and ✓, the TRL settings,
notes and assumptions in both languages, within Telegram's limits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.views.render import plain, render
from engine.posttrain import Change
from engine.schema import PostTrainAnswer

DATA = Path(__file__).parents[2] / "data" / "posttrain_answers"
NAMES = sorted(p.stem for p in DATA.glob("*.json"))
PRE = re.compile(r"<pre>(.*?)</pre>", re.S)


def load(name: str) -> PostTrainAnswer:
    return PostTrainAnswer.model_validate_json((DATA / f"{name}.json").read_text())


def test_fixtures_are_there() -> None:
    assert {"grpo_colocate", "s19_128k_8xh100", "dpo_lora_4090", "ppo_full_8xa100"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("lang", ["en", "ru"])
def test_reply_fits_telegram_and_the_phone(name: str, lang: str) -> None:
    html = render(load(name), lang).html
    assert len(html) < 4096
    for block in PRE.findall(html):
        for row in block.replace("<code>", "").replace("</code>", "").splitlines():
            assert len(row) <= 34, row
    text = plain(html)
    assert "posttrain." not in text  # every key worded
    assert "%(" not in text


def test_grpo_headline_and_vllm_share_in_english() -> None:
    r = render(load("grpo_colocate"), "en")
    assert r.title.startswith("GRPO, 8 generations × 1.5k: fits on 1×H100 SXM with vLLM colocated at 0.3, ")
    text = plain(r.html)
    assert "vLLM share" in text
    assert "RL step ≈" in text and "1,000 steps" in text


def test_grpo_reads_native_in_russian() -> None:
    r = render(load("grpo_colocate"), "ru")
    assert r.title.startswith("GRPO, 8 генераций × 1,5k: помещается на 1×H100 SXM с vLLM на тех же картах "
                              "(gpu_memory_utilization 0,3), ")
    assert "\u00a0ГБ из 80\u00a0ГБ" in r.title  # no break between a number and its unit
    text = plain(r.html)
    assert "доля vLLM" in text and "меньше генераций (num_generations 4)" in text
    assert "контекст 1,5k · 8 последовательностей" in text  # 1536 tokens, as people write a context
    assert "\u00a0с (генерация" in text


@pytest.mark.parametrize(("n", "word"), [(1, "1 генерация"), (2, "2 генерации"), (5, "5 генераций"),
                                         (21, "21 генерация")])
def test_generations_are_plural_forms_in_russian(n: int, word: str) -> None:
    a = load("grpo_colocate")
    assert isinstance(a, PostTrainAnswer)
    pt = a.posttrain.model_copy(update={"settings": a.posttrain.settings.model_copy(update={"num_generations": n})})
    assert render(a.model_copy(update={"posttrain": pt}), "ru").title.startswith(f"GRPO, {word} × ")


def test_settings_are_trl_names_in_a_code_block() -> None:
    html = render(load("grpo_colocate"), "en").html
    block = html.split("<pre><code>", 1)[1].split("</code></pre>", 1)[0]
    lines = block.splitlines()
    assert "num_generations=8" in lines and "use_vllm=True" in lines
    assert any(x.startswith("vllm_gpu_memory_utilization=0.") for x in lines)


def test_changes_show_the_total_they_give_and_a_check_when_it_fits() -> None:
    a = load("grpo_colocate")
    assert isinstance(a, PostTrainAnswer)
    ctx = a.posttrain.cuda_context
    changes = [Change(key="posttrain.change.sleep_mode", params={"vllm_enable_sleep_mode": True}, per_gpu_total=40.0,
                      fits=True),
               Change(key="posttrain.change.use_qlora", params={"bits": 4}, per_gpu_total=90.0, fits=False)]
    a = a.model_copy(update={"posttrain": a.posttrain.model_copy(update={"changes": changes})})
    text = plain(render(a, "en").html)
    assert f"vLLM sleep mode during the step: {40 + ctx:.1f}\u00a0GB ✓" in text
    assert f"QLoRA (4-bit base): {90 + ctx:.1f}\u00a0GB\n" in text
    ru = plain(render(a, "ru").html)
    assert f"vLLM в sleep mode на время шага обучения: {40 + ctx:.1f}".replace(".", ",") + "\u00a0ГБ ✓" in ru


def test_ppo_breakdown_has_the_post_training_lines_in_both_languages() -> None:
    a = load("ppo_full_8xa100")
    en, ru = plain(render(a, "en").html), plain(render(a, "ru").html)
    for label in ("reference model", "reward model", "value model", "rollouts: KV cache"):
        assert label in en
    for label in ("референсная модель", "reward-модель", "value-модель (критик)", "роллауты: KV-кэш"):
        assert label in ru
    assert "роллауты через generate из transformers" in ru  # the posttrain note, worded


def test_the_table_total_is_the_answers_need() -> None:
    for name in NAMES:
        a = load(name)
        html = render(a, "en").html
        table = PRE.findall(html)[0]
        assert table.splitlines()[-1].endswith(f"{a.need_gb:,.1f}".rstrip("0").rstrip("."))


def test_s19_headline_says_context_parallelism_fits() -> None:
    r = render(load("s19_128k_8xh100"), "en")
    assert "fits on 8×H100 SXM with context parallel ×8 (Ulysses)" in r.title
    text = plain(r.html)
    assert "context parallel ×8 (Ulysses)" in text
    assert "No number of" not in text
    ru = render(load("s19_128k_8xh100"), "ru").title
    assert ru.startswith("контекст 128k, LoRA: поместится на 8×H100 SXM, если изменить: context parallel ×8 "
                         "(Ulysses) — ")


def test_dpo_pairs_and_reference_in_the_summary_and_assumptions() -> None:
    r = render(load("dpo_lora_4090"), "ru")
    assert "2 последовательности" in r.description
    assert "пары до 1\u00a0024" not in r.html  # a length as people write it: 1k
    assert "пары до 1k\u00a0токенов" in plain(r.html)


def test_chart_stacks_the_post_training_lines() -> None:
    from bot.views.chart import _bars, chart_png

    a = load("ppo_full_8xa100")
    labels = [label for _colour, label, _gb in _bars("en", a)]
    assert "value model" in labels and "reference model" in labels
    assert chart_png(a, "ru").startswith(b"\x89PNG")

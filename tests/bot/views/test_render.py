"""The view of an Answer as a person reads it: wording in both languages, plural forms, the phone-width
table, the verdict's headline. Every test renders a fixed Answer (tests/answer_fixtures.py)."""

from __future__ import annotations

import answer_fixtures as fx
import pytest

from bot.views.formats import (
    context_text,
    decimal,
    gb,
    gpus_text,
    hours_text,
    money,
    money_range,
    pct,
    tokens_amount,
)
from bot.views.render import plain, render
from bot.views.words import assumption_text
from engine.schema import Arrangement, Assumption, Change, ErrorAnswer, Note, Plan


def text_of(answer: object, lang: str = "en") -> str:
    return plain(render(answer, lang).html)  # type: ignore[arg-type]


def test_a_fit_in_russian_has_a_narrow_table_and_the_verdict_as_title() -> None:
    rendered = render(fx.answer(), "ru")
    # the capacity shown is what the driver reports (79.19 GiB of an "80 GB" H100), with no-break spaces
    assert rendered.html.startswith("✅ <b>Помещается на 1×H100 SXM: 58,9\u00a0ГБ, доступно 79,2 из 80\u00a0ГБ</b>")
    assert rendered.title == "Помещается на 1×H100 SXM: 58,9\u00a0ГБ, доступно 79,2 из 80\u00a0ГБ"
    # the inline description is the one-line answer (the best arrangement, its time and money)
    assert rendered.description.startswith("1×H100 SXM: 83")
    table = rendered.html.split("<pre>")[1].split("</pre>")[0]
    assert all(len(line) <= 34 for line in table.splitlines())
    assert "итого, ГБ" in table and len(rendered.html) < 4096


@pytest.mark.parametrize(("verdict", "emoji", "headline"), [
    ("fits", "✅", "Fits on 1×H100 SXM: 58.9\u00a0GB, 79.2 of 80\u00a0GB available"),
    ("tight", "⚠️", "Fits on 1×H100 SXM, but tightly: 58.9\u00a0GB, 79.2 of 80\u00a0GB available"),
    ("no_fit", "❌", "Does not fit on 1×H100 SXM: needs 58.9\u00a0GB, 79.2 of 80\u00a0GB available"),
    (None, "🧮", "Needs 58.9\u00a0GB of GPU memory in all"),  # no GPU named: the whole job, never "per GPU"
])
def test_each_verdict_has_its_headline(verdict: str | None, emoji: str, headline: str) -> None:
    rendered = render(fx.answer(verdict=verdict, asked=None if verdict is None else fx.answer().asked), "en")
    assert rendered.html.startswith(f"{emoji} <b>{headline}</b>") and rendered.title == headline


def test_what_to_change_lists_each_change_with_its_total_and_marks_the_ones_that_fit() -> None:
    text = text_of(fx.no_fit())
    assert text.startswith("❌ Does not fit on 1×RTX 4090: needs 51.2\u00a0GB, 23.7 of 24\u00a0GB available")
    assert ("What to change\n• context 8k → 4k: 34\u00a0GB\n"
            "• fused cross-entropy (Liger / Unsloth): 24.1\u00a0GB ✓") in text
    # techniques by the names people use, joined with "+", their time cost after them
    assert ("• 4×RTX 4090 + fused cross-entropy (Liger / Unsloth) + ZeRO-3, 30% slower: 83\u00a0h per 100M tokens "
            "($13.16/h)") in text
    ru = text_of(fx.no_fit(), "ru")
    assert "• 4×RTX 4090 + fused cross-entropy (Liger / Unsloth) + ZeRO-3, медленнее на 30\u00a0%: 83\u00a0ч на " \
           "100\u00a0млн токенов" in ru


def test_fits_with_changes_names_the_fix_and_the_total_it_gives() -> None:
    fix = Change(key="combined", params={}, saves_gb=30.0, fits=True, total_gb=21.2,
                 parts=[Change(key="fused_loss", params={}, saves_gb=27.1, fits=False, total_gb=24.1),
                        Change(key="shorter_context", params={"from": 8192, "to": 4096}, saves_gb=17.2, fits=False,
                               total_gb=34.0)])
    a = fx.no_fit(verdict="fits_with_changes", fix=fix, changes=[fix])
    assert text_of(a).startswith("🔧 Fits on 1×RTX 4090 after changes: fused cross-entropy (Liger / Unsloth) + "
                                 "context 8k → 4k — 21.2\u00a0GB; as asked 51.2\u00a0GB, with 23.7 of 24\u00a0GB "
                                 "available")
    assert "• fused cross-entropy (Liger / Unsloth) + context 8k → 4k: 21.2\u00a0GB ✓" in text_of(a)
    ru = text_of(a, "ru")
    assert ru.startswith("🔧 Поместится на 1×RTX 4090, если изменить: fused cross-entropy (Liger / Unsloth) + "
                         "контекст 8k → 4k — 21,2\u00a0ГБ; как задано — 51,2\u00a0ГБ, а доступно 23,7 из 24\u00a0ГБ")


def test_a_tight_fit_at_the_allocators_limit_says_it_takes_the_whole_card() -> None:
    a = fx.answer(verdict="tight", breakdown=fx.breakdown(78.79, pressure=True))
    assert text_of(a).startswith("⚠️ Fits on 1×H100 SXM, but tightly: it takes all 79.2 of 80\u00a0GB available")
    assert "впритык" in text_of(a, "ru")


def test_several_gpus_are_said_per_card_and_in_total() -> None:
    a = fx.answer(scenario=fx.scenario(gpu_count=2, sharding="ddp"), cluster_gb=117.8)
    assert "on each of 2 cards 58.9\u00a0GB, 117.8\u00a0GB in total" in text_of(a)
    assert "на каждой из 2\u00a0карт 58,9\u00a0ГБ, всего 117,8\u00a0ГБ" in text_of(a, "ru")


def test_a_comparison_is_shown_side_by_side_with_cost_per_million_tokens() -> None:
    text = text_of(fx.comparison())
    assert text.startswith("⚖️ 1×A100 80GB SXM, 1×H100 SXM hold it; take 1×H100 SXM: "
                           "2.4× faster (17\u00a0h against 40\u00a0h)")
    block = text.split("Side by side\n")[1].split("\n\n")[0].splitlines()
    assert block[0] == "✅ 1×A100 80GB SXM: 40.1\u00a0GB free · 40\u00a0h · $0.51 per 1M tokens"
    assert block[2] == "❌ 1×RTX 3060: needs 38\u00a0GB of 12\u00a0GB"
    ru = plain(render(fx.comparison(), "ru").html)
    assert ru.startswith("⚖️ Помещается на 1×A100 80GB SXM, 1×H100 SXM, берите 1×H100 SXM: быстрее в 2,4 раза")
    assert "медленнее в 1,8 раза" in ru and "за 1\u00a0млн токенов" in ru  # the offload's time cost


def test_notes_say_what_was_used_instead_in_both_languages() -> None:
    a = fx.with_notes(Note(key="GPU count out of range"), Note(key="price", params={"gpu": "H100", "value": -1}),
                      Note(key="unknown_gpu", params={"name": "RTX 9090", "others": False}),
                      Note(key="context length out of range"))
    text = text_of(a)
    assert "GPU count out of range (1–100 000): one GPU is used" in text
    assert "your price -1 for H100 is not usable: market prices are used" in text
    assert "context length out of range: the default 2k is used" in text
    assert "RTX 9090 нет в каталоге: сравниваю со всеми GPU" in text_of(a, "ru")


def test_a_named_gpu_that_never_fits_says_so_and_offers_others() -> None:
    a = fx.answer(verdict="no_fit", asked=Arrangement(gpu="RTX 3060", memory_gb=12.0, count=1), plans=[],
                  alternatives=[fx.plan("H100 SXM", 8)])
    text = text_of(a)
    assert "No number of RTX 3060 up to 64 fits this as asked." in text
    assert "Other GPUs that fit\n• 8×H100 SXM" in text


def test_a_cheaper_gpu_that_fits_too_is_one_line() -> None:
    text = text_of(fx.answer(cheaper=fx.plan("L40S", per_hour=0.86)))
    assert "💡 A cheaper GPU fits too: 1×L40S, 83\u00a0h per 100M tokens ($0.86/h)" in text
    assert "Other GPUs that fit" not in text


def test_money_in_roubles_and_an_own_price_reach_the_plans() -> None:
    rub = fx.plan(currency="RUB", per_hour=520.0, hours=12.0, cost={"min": 4000.0, "typical": 6240.0, "max": 9000.0},
                  cost_per_100m={"min": 33000.0, "typical": 52000.0, "max": 75000.0})
    text = text_of(fx.answer(plans=[rub], currency="RUB", tokens=1.2e7), "ru")
    # per 100M tokens and for the user's job: the typical price first, the range at two significant figures after it
    assert "83\u00a0ч, ≈52\u00a0000\u00a0₽ (33\u00a0000–75\u00a0000\u00a0₽) на 100\u00a0млн токенов; на ваши " \
           "12\u00a0млн токенов: 12\u00a0ч, ≈6\u00a0200\u00a0₽ (4\u00a0000–9\u00a0000\u00a0₽) (520\u00a0₽/ч)" in text


def test_a_job_of_100m_tokens_is_said_once() -> None:
    """The user's 100M tokens are the reference amount: "…per 100M tokens; your 100M tokens: …" said it twice."""
    p = fx.plan(hours=83.0, cost={"min": 49.0, "typical": 90.0, "max": 480.0},
                cost_per_100m={"min": 49.0, "typical": 90.0, "max": 480.0})
    text = text_of(fx.answer(plans=[p], tokens=1e8))
    assert "• 1×H100 SXM: 83\u00a0h, ≈$90 ($49–480) per 100M tokens ($3.29/h)" in text and "your 100M" not in text
    assert "your 500M tokens" in text_of(fx.answer(plans=[p], tokens=5e8))
    own = text_of(fx.answer(plans=[fx.plan(per_hour=1.5, own_price=True, price_date="given")], price_date=None))
    assert "$1.50/h" in own and "Prices as of" not in own


def test_a_gpu_known_only_by_its_memory_is_named_in_the_readers_language() -> None:
    a = fx.answer(verdict="no_fit", asked=Arrangement(gpu="24 GB GPU", memory_gb=24.0, count=1))
    assert text_of(a, "ru").startswith("❌ Не помещается на 1×GPU на 24\u00a0ГБ")
    assert text_of(a).startswith("❌ Does not fit on 1×24\u00a0GB GPU")


def test_a_break_even_above_a_month_says_hourly_is_cheaper_at_any_use() -> None:
    m = fx.monthly().model_copy(update={"break_even_hours": 1294.8, "hourly_always": True})
    text = text_of(fx.answer(monthly=m))
    assert "hourly is cheaper at any use" in text and "1,295" not in text
    assert "почасовая выгоднее при любой загрузке" in text_of(fx.answer(monthly=m), "ru")


def test_the_offloads_host_memory_and_the_monthly_rental_are_stated() -> None:
    text = text_of(fx.answer(cpu_ram_gb=1173.47, monthly=fx.monthly()))
    assert "CPU RAM for the CPU offload: 1,173.5\u00a0GB" in text
    assert "📅 By the month: H100 SXM for $1,500 a month pays off from 456\u00a0h of use a month; this run takes " \
           "12\u00a0h on 1×H100 SXM." in text
    assert "ОЗУ для CPU offload: 1\u00a0173,5\u00a0ГБ" in text_of(fx.answer(cpu_ram_gb=1173.47), "ru")


def test_the_reserve_and_the_cuda_context_are_explained_under_the_table() -> None:
    ru, en = text_of(fx.answer(), "ru"), text_of(fx.answer())
    assert "итого, ГБ" in ru.split("Резерв PyTorch — память, которую кэширующий аллокатор держит")[0]
    assert "PyTorch reserve: what the caching allocator holds beyond live tensors; CUDA context:" in en


def test_an_unknown_model_says_whose_shape_it_borrows() -> None:
    # a bare size is a typical model of that size, not "model not recognised"
    assert "No model named: a typical 70B (Llama-3.1-70B architecture)" in text_of(fx.answer())
    assert "Модель не названа: типичная 70B (архитектура Llama-3.1-70B)" in text_of(fx.answer(), "ru")
    known = fx.answer(scenario=fx.scenario(arch=fx.arch("Llama-3.1-70B", known=True)), shape_reference=None)
    assert "No model named" not in text_of(known) and "Llama-3.1-70B (70B)" in text_of(known)


def test_an_answer_without_a_model_offers_an_example_and_no_markup_of_the_user() -> None:
    rendered = render(ErrorAnswer(request=fx.Request(), errors=[Note(key="no_model")]), "en")
    assert "70B QLoRA" in rendered.html and rendered.title == "Not understood" and not rendered.understood


def test_assumptions_are_worded_with_plural_forms_and_no_raw_keys() -> None:
    quote = render(fx.answer(), "ru").html.split("<blockquote expandable>")[1]
    assert "архитектура как у Llama-3.1-70B" in quote and "ранг LoRA 16" in quote and "=" not in quote
    # contexts as people write them ("128k", not "131 072 токена")
    assert assumption_text("ru", Assumption(key="seq_len", value=8192)) == "контекст 8k"
    assert assumption_text("ru", Assumption(key="seq_len", value=131072)) == "контекст 128k"
    assert assumption_text("en", Assumption(key="seq_len", value=2000)) == "context 2k"
    assert assumption_text("en", Assumption(key="seq_len", value=3000 + 7)) == "context 3,007"
    assert assumption_text("ru", Assumption(key="fused_loss", value="off")) == "fused cross-entropy выключена"


def test_every_default_is_worded_in_russian() -> None:
    items = [("gradient_checkpointing", "on"), ("gradient_checkpointing", "off"), ("flash_attention", "on"),
             ("fused_loss", "off"), ("method", "full"), ("mixed_precision", "amp"), ("lora_targets", "all_linear"),
             ("batch_size", 1), ("sharding", "zero3"), ("optimizer", "adamw"), ("bits", 4), ("lora_rank", 16),
             ("seq_len", 4096), ("architecture", "Llama-3.1-8B")]
    for key, value in items:
        item = Assumption(key=key, value=value)
        ru, en = assumption_text("ru", item), assumption_text("en", item)
        assert ru != en and "=" not in ru and not ru.endswith((" on", " off")), item


def test_inference_plans_give_decode_speed() -> None:
    p = Plan.model_validate(fx.plan().model_dump() | {"hours_per_100m_tokens": None, "tokens_per_second": 41.3})
    a = fx.answer(scenario=fx.scenario("inference"), plans=[p])
    assert "1×H100 SXM: 41\u00a0tokens/s, $3.29/h" in text_of(a)
    assert "41\u00a0токен/с" in text_of(a, "ru")


# ---- numbers, money, durations -------------------------------------------------------------------------------


def test_durations_are_abbreviated_after_a_no_break_space() -> None:
    # "83 ч на 100 млн токенов", as people write it; the abbreviation needs no plural forms
    assert hours_text("ru", 83) == "83\u00a0ч" and hours_text("ru", 21) == "21\u00a0ч"
    assert hours_text("ru", 1.5) == "1,5\u00a0ч" and hours_text("ru", 9.84) == "9,8\u00a0ч"
    assert hours_text("ru", 0.42) == "25\u00a0мин" and hours_text("en", 0.001) == "1\u00a0min"
    assert hours_text("en", 1) == "1\u00a0h" and hours_text("en", 12.4) == "12\u00a0h"


def test_units_contexts_and_amounts_as_people_write_them() -> None:
    assert gb("ru", 60.56) == "60,6\u00a0ГБ" and gb("en", 1234.5) == "1,234.5\u00a0GB"
    assert pct("ru", 18) == "18\u00a0%" and pct("en", 18) == "18%"
    assert gpus_text("ru", 8) == "8\u00a0GPU" and gpus_text("en", 1) == "1\u00a0GPU"
    assert gpus_text("en", 8) == "8\u00a0GPUs"
    assert [context_text("en", n) for n in (2048, 8192, 65536, 131072, 1536, 32000, 4160, 512, 2**20)] == [
        "2k", "8k", "64k", "128k", "1.5k", "32k", "4,160", "512", "1M"]
    assert context_text("ru", 1536) == "1,5k" and context_text("ru", 4160) == "4\u00a0160"
    assert context_text("en", 10**6) == "1M" and context_text("ru", 2_500_000) == "2,5M"
    assert tokens_amount("ru", 1e8) == "100\u00a0млн" and tokens_amount("ru", 1.2e9) == "1,2\u00a0млрд"
    assert tokens_amount("en", 5e8) == "500M" and tokens_amount("en", 1.2e9) == "1.2B"


def test_a_money_range_has_two_significant_figures_one_symbol_and_one_value_when_its_ends_meet() -> None:
    assert money_range("ru", 57.36, 142.2, "USD") == "57–140\u00a0$"  # an estimate's range, not cents
    assert money_range("en", 157.36, 1142.2, "USD") == "$160–1,100"
    assert money_range("ru", 0.031, 0.0312, "RUB") == "0,031\u00a0₽"
    assert money_range("en", 0.4, 0.55, "USD") == "$0.40–0.55" and money_range("en", 5.23, 7.9, "USD") == "$5.2–7.9"


def test_money_follows_each_languages_convention() -> None:
    assert money("en", 1234.5, "USD") == "$1,234"
    assert money("ru", 1234.5, "USD") == "1\u00a0234\u00a0$"  # no-break spaces: a price never wraps
    assert money("ru", 12.5, "RUB") == "12,50\u00a0₽"  # cents stay: "0,40 $", not "0,4 $"
    assert money("en", 0.256, "USD") == "$0.26" and money("en", 0.0312, "USD") == "$0.031"
    # a sum the user wrote keeps its own precision: a budget of "20 $", not "20,00 $"
    assert money("ru", 20.0, "USD", whole=True) == "20\u00a0$" and money("en", 20.5, "USD", whole=True) == "$20.50"


def test_fast_number_format_matches_babel() -> None:
    from babel.numbers import format_decimal

    values = [0, 0.04, 0.05, 0.256, 1, 1.25, 9.95, 12.345, 99.99, 100, 999.5, 1234.5, 12_345.67, 1_234_567.8, -3,
              -1234.5]
    for lang in ("en", "ru"):
        for v in values:
            for places in (0, 1, 2, 3):
                pattern = "#,##0" + ("." + "#" * places if places else "")
                assert decimal(lang, v, places) == format_decimal(round(v, places), format=pattern, locale=lang), (
                    lang, v, places)


def test_a_bare_sizes_architecture_margin_is_a_line_with_its_reason() -> None:
    from engine.answer import answer
    from engine.parse import parse

    html = render(answer(parse("13B LoRA на H100 контекст 8k")), "ru").html
    table = html.split("<pre>")[1].split("</pre>")[0]
    assert "запас на архитектуру" in table and "веса                          24,2" in table
    assert "Запас на архитектуру: модель не названа" in html
    named = render(answer(parse("Llama-2-13B LoRA на H100 контекст 8k")), "ru").html
    assert "запас на архитектуру" not in named


def test_every_memory_table_label_fits_its_column_in_both_languages() -> None:
    from bot.views.catalogs import _
    from bot.views.posttrain import LINE_LABELS, line_label
    from bot.views.view import LABEL_WIDTH
    from bot.views.words import COMPONENTS
    serving = ("weights", "activation peak", "non-torch + CUDA graphs", "KV pool", "host RAM (layers on CPU)",
               "total, GB", "total, GB (of %(card)s)")
    for lang in ("en", "ru"):
        labels = [line_label(lang, k) for k in (*COMPONENTS, *LINE_LABELS)]
        labels += [_(lang, t) % {"card": "141,2"} if "%(card)s" in t else _(lang, t) for t in serving]
        long = [x for x in labels if len(x) > LABEL_WIDTH]
        assert not long, (lang, long)  # a longer one would be cut mid-word or push its figure out of line

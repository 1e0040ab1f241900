"""The answer as a person reads it: language, plural forms, phone-width table, HTML safety."""

from __future__ import annotations

from bot.answers import AnswerOptions, render_text
from bot.answers import ask_text as render_answer_text
from bot.views.formats import hours_text, money
from bot.views.words import assumption_text
from engine.schema import Assumption


def render_answer(text: str) -> tuple[str, str]:
    rendered = render_text(text)
    return rendered.lang, rendered.html


def assumption(item: str) -> Assumption:
    key, _sep, value = item.partition("=")
    return Assumption(key=key, value=int(value) if value.isdigit() else value.removeprefix("like "))


def test_russian_question_gets_a_russian_answer_with_a_narrow_table() -> None:
    lang, body = render_answer("70B QLoRA на H100?")
    assert lang == "ru"
    assert "Помещается на 1×H100 SXM" in body
    table = body.split("<pre>")[1].split("</pre>")[0]
    assert all(len(line) <= 34 for line in table.splitlines())
    assert "итого, ГБ" in table and len(body) < 4096


def test_english_question_that_does_not_fit_gets_changes() -> None:
    text = render_answer_text("can I LoRA llama 3.1 8b on a 4090 with 8k context?")
    assert text.startswith("❌ Does not fit on 1×RTX 4090")
    assert "What to change" in text and "context 8192 → 4096" in text


def test_russian_plural_forms_of_hours() -> None:
    assert hours_text("ru", 1) == "1 час"
    assert hours_text("ru", 2) == "2 часа"
    assert hours_text("ru", 5) == "5 часов"
    assert hours_text("ru", 21) == "21 час"
    assert hours_text("ru", 1.5) == "1,5 часа"
    assert hours_text("en", 1) == "1 hour" and hours_text("en", 3) == "3 hours"


def test_garbage_and_html_get_a_friendly_answer_not_markup() -> None:
    for text in ["", "<b>hi</b><script>alert(1)</script>", "🤖" * 500, "x" * 4096]:
        _lang, body = render_answer(text)
        assert "<script>" not in body
        assert "70B QLoRA" in body  # the example the reply offers


def test_assumptions_read_in_the_readers_language_with_plural_forms() -> None:
    _lang, body = render_answer("LoRA 8B на 4090, контекст 8192")
    quote = body.split("<blockquote expandable>")[1]
    assert "8-битные" not in quote and "ранг LoRA 16" in quote and "оптимизатор AdamW" in quote
    assert "=" not in quote.split("Цены")[0]  # no raw key=value left
    assert assumption_text("ru", assumption("seq_len=8192")) == "контекст 8192 токена"
    assert assumption_text("ru", assumption("seq_len=2048")) == "контекст 2048 токенов"
    assert assumption_text("en", assumption("seq_len=2048")) == "context 2048 tokens"


def test_a_money_range_has_one_precision_one_symbol_and_one_value_when_its_ends_meet() -> None:
    from bot.views.formats import money_range

    assert money_range("ru", 57.36, 142.2, "USD") == "57,36–142,20\u00a0$"
    assert money_range("en", 157.36, 1142.2, "USD") == "$157–1,142"
    assert money_range("ru", 0.031, 0.0312, "RUB") == "0,031\u00a0₽"


def test_money_follows_each_languages_convention() -> None:
    assert money("en", 1234.5, "USD") == "$1,234"
    assert money("ru", 1234.5, "USD") == "1\u00a0234\u00a0$"  # no-break spaces: a price never wraps
    assert money("ru", 12.5, "RUB") == "12,50\u00a0₽"  # cents stay: "0,40 $", not "0,4 $"
    assert money("en", 0.256, "USD") == "$0.26" and money("en", 0.0312, "USD") == "$0.031"


def test_roubles_and_own_prices_reach_the_answer() -> None:
    body = render_text("8B LoRA на H100 на 100M токенов", AnswerOptions(currency="RUB")).html
    assert "₽" in body and "$" not in body.split("<blockquote")[0]
    own = render_answer_text("8B LoRA on H100", AnswerOptions(prices={"H100": 1.5}))
    assert "$1.50/h" in own


def test_comparison_is_shown_side_by_side() -> None:
    text = render_answer_text("compare A100 vs H100 vs RTX 3060 for 8b lora on 100M tokens")
    block = text.split("Side by side\n")[1].split("\n\n")[0].splitlines()
    assert len(block) == 3 and block[2].startswith("❌ 1×RTX 3060: needs")
    assert all("per 1M tokens" in line for line in block[:2])


def test_bad_input_is_named_with_what_was_used_instead() -> None:
    text = render_answer_text("70B QLoRA on 1000000 H100", AnswerOptions(prices={"H100": -1}))
    assert "GPU count out of range (1–100 000): one GPU is used" in text
    assert "your price -1 for H100 is not usable: market prices are used" in text
    ru = render_answer_text("70B QLoRA на RTX 9090 <b>")
    assert "RTX 9090 нет в каталоге: сравниваю со всеми GPU" in ru


def test_a_named_gpu_that_never_fits_says_so_and_offers_others() -> None:
    text = render_answer_text("405B full fine-tuning on RTX 3060")
    assert "No number of RTX 3060 up to 64 fits this as asked." in text
    assert "Other GPUs that fit\n• 8×" in text


def test_a_cheaper_gpu_is_suggested_when_the_asked_one_is_mostly_idle() -> None:
    text = render_answer_text("7b qlora on H200")
    assert "💡 A cheaper GPU fits too: 1×" in text


def test_fast_number_format_matches_babel() -> None:
    from babel.numbers import format_decimal

    from bot.views.formats import decimal

    values = [0, 0.04, 0.05, 0.256, 1, 1.25, 9.95, 12.345, 99.99, 100, 999.5, 1234.5, 12_345.67, 1_234_567.8, -3,
              -1234.5]
    for lang in ("en", "ru"):
        for v in values:
            for places in (0, 1, 2, 3):
                pattern = "#,##0" + ("." + "#" * places if places else "")
                assert decimal(lang, v, places) == format_decimal(round(v, places), format=pattern, locale=lang), (
                    lang, v, places)


def test_a_slow_technique_shows_its_time_cost_in_both_languages() -> None:
    assert "% slower" in render_answer_text("compare A100 vs H100 for full 8B, 50M tokens")
    assert "медленнее на" in render_answer_text("сравни A100 и H100 для полного дообучения 8B на 50M токенов")


def test_a_gpu_known_only_by_its_memory_is_named_in_the_readers_language() -> None:
    ru = render_answer_text("QLoRA 70B на 24 гигах")
    assert ru.startswith("❌ Не помещается на 1×GPU на 24 ГБ") and "GB GPU" not in ru
    assert render_answer_text("QLoRA 70B on 24GB").startswith("❌ Does not fit on 1×24 GB GPU")


def test_every_default_is_worded_in_russian() -> None:
    items = ["gradient_checkpointing=on", "gradient_checkpointing=off", "flash_attention=on", "fused_loss=off",
             "method=full", "mixed_precision=amp", "lora_targets=all_linear", "batch_size=1", "sharding=zero3",
             "optimizer=adamw", "bits=4", "lora_rank=16", "seq_len=4096", "architecture=like Llama-3.1-8B"]
    for item in items:
        ru, en = assumption_text("ru", assumption(item)), assumption_text("en", assumption(item))
        assert ru != en and "=" not in ru and not ru.endswith((" on", " off")), item


def test_comparisons_and_tight_fits_have_their_own_headline() -> None:
    assert render_answer_text("70B qlora RTX 4090 vs H100").startswith("⚖️ 1×RTX 4090 vs 1×H100 SXM")
    assert render_answer_text("70B qlora на 4090 или H100?").startswith("⚖️ 1×RTX 4090 или 1×H100 SXM")
    tight = render_text("34B inference on H100")
    assert tight.html.startswith("⚠️") and tight.title.startswith("Fits on 1×H100 SXM, but tightly")

"""The answer as a person reads it: language, plural forms, phone-width table, HTML safety."""

from __future__ import annotations

from bot.views.render import hours_text, render_answer, render_answer_text


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

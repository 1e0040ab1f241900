"""The reply pipeline: what a keyboard button does to the stored question, and text → answer → reply."""

from __future__ import annotations

from bot.answers import AnswerOptions, apply_state, ask_text, render_text
from engine.parse import parse


def test_a_count_button_sets_every_compared_gpu_and_settles_the_count_note() -> None:
    pressed = apply_state(parse("70B qlora H100 vs A100 on 0 GPUs"), "q", 2048, 2)
    assert [(g.name, g.count) for g in pressed.gpus] == [("H100 SXM", 2), ("A100 80GB SXM", 2)]
    settled = apply_state(parse("70B qlora on 0 H100"), "q", 2048, 4)
    assert settled.error is None and settled.gpus[0].count == 4


def test_a_context_button_settles_an_impossible_context_but_keeps_other_notes() -> None:
    asked = parse("70B qlora, context 99999999999, 10^30 epochs")
    assert asked.error and "context length out of range" in asked.error
    pressed = apply_state(asked, "q", 8192, 1)
    assert pressed.seq_len == 8192 and "context length out of range" not in (pressed.error or "")
    assert pressed.error == "epochs out of range"


# ---- the pipeline: text → parse → engine.answer → render ---------------------------------------------------


def test_the_question_language_decides_the_answer_language() -> None:
    ru = render_text("70B QLoRA на H100?")
    assert ru.lang == "ru" and ru.html.startswith("✅ <b>Помещается на 1×H100 SXM")
    assert render_text("70B QLoRA on H100?", AnswerOptions(lang="ru")).lang == "ru"  # a forced language wins


def test_garbage_and_html_get_a_friendly_answer_not_markup() -> None:
    for text in ["", "<b>hi</b><script>alert(1)</script>", "🤖" * 500, "x" * 4096]:
        rendered = render_text(text)
        assert "<script>" not in rendered.html and "70B QLoRA" in rendered.html and not rendered.understood


def test_chat_options_reach_the_answer_roubles_own_prices_and_their_notes() -> None:
    body = render_text("8B LoRA на H100 на 100M токенов", AnswerOptions(currency="RUB")).html
    assert "₽" in body and "$" not in body.split("<blockquote")[0]
    assert "$1.50/h" in ask_text("8B LoRA on H100", AnswerOptions(prices={"H100": 1.5}))
    noted = ask_text("70B QLoRA on 1000000 H100", AnswerOptions(prices={"H100": -1}))
    assert "GPU count out of range (1–100 000): one GPU is used" in noted
    assert "your price -1 for H100 is not usable: market prices are used" in noted


def test_a_tight_fit_and_a_comparison_get_their_headlines_from_the_engines_verdict() -> None:
    tight = render_text("34B inference on H100")
    assert tight.answer.verdict == "tight" and tight.title.startswith("Fits on 1×H100 SXM, but tightly")
    assert ask_text("70B qlora на 4090 или H100?").startswith("⚖️ Помещается только на 1×H100 SXM")


def test_ask_text_is_the_html_without_tags() -> None:
    html = ask_text("can I LoRA llama 3.1 8b on a 4090 with 8k context?", fmt="html")
    text = ask_text("can I LoRA llama 3.1 8b on a 4090 with 8k context?")
    assert html.startswith("🔧 <b>Fits on 1×RTX 4090 after changes") and text.startswith("🔧 Fits on 1×RTX 4090")
    assert "<" not in text.replace("<=", "") and "What to change" in text


def test_a_monthly_rental_dearer_than_a_month_by_the_hour_never_pays_off() -> None:
    import contextlib
    import io

    from bot.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["ask", "скока стоит a100 на месяц"])
    text = out.getvalue()
    assert "не окупается" in text and "окупается от 1" not in text  # a month has 730 hours, not 1,295

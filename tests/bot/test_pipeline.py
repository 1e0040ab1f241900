"""The reply pipeline: what a keyboard button does to the stored question, text → answer → reply, and the work each
door does: a bot message, an inline query and a button press parse their text at most once and compute each
answer once, with no more conflict checks and breakdowns than the engine's one answer to the same request."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from bot_harness import Harness
from fake_botapi import FakeBotAPI, button, callback, inline_query, last_message, message, texts

import bot.pipeline
import engine.answer
import engine.contract
import engine.parse
import engine.plan
import engine.work
from bot.pipeline import AnswerOptions, apply_state, ask_text, render_request, render_text
from engine.parse import parse
from engine.schema import Request


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


def test_a_follow_ups_previous_answer_is_the_one_counted_from_the_same_day() -> None:
    from datetime import date

    from bot.pipeline import previous_answer

    asked = parse("лора 8б на 1B токенов к пятнице")
    wednesday, friday = date(2026, 12, 2), date(2026, 12, 4)
    render_request(asked, AnswerOptions(lang="ru"), today=wednesday)
    same_day = previous_answer(asked, AnswerOptions(lang="ru"), today=wednesday)
    two_days_on = previous_answer(asked, AnswerOptions(lang="ru"), today=friday)
    assert same_day.request.deadline_hours == 48  # Wednesday → Friday
    assert two_days_on.request.deadline_hours == 168  # on Friday: the next one, not the cached


# ---- the work of one door: parse once, answer once --------------------------------------------------------


class Spy:
    """Counts the parser's runs (`parse_scan`, behind `parse` and `read_question`), the pipeline's answers, the
    hardware conflict checks and the memory breakdowns (training: `engine.work.count`, one per breakdown; serving:
    `serving_breakdown`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: Counter[str] = Counter()
        self._wrap(monkeypatch, engine.parse, "parse_scan", "parse")
        self._wrap(monkeypatch, bot.pipeline, "answer", "answer")  # the bot and `ask`
        self._wrap(monkeypatch, engine.answer, "answer", "answer")  # `plan`
        self._wrap(monkeypatch, engine.contract, "answer", "answer")  # `estimate`
        for module in (engine.answer, engine.plan, importlib.import_module("engine.plan.search")):
            self._wrap(monkeypatch, module, "hardware_conflicts", "conflicts")
        self._wrap(monkeypatch, engine.work, "count", "breakdown")
        self._wrap(monkeypatch, importlib.import_module("engine.answer.serving"), "serving_breakdown",
                   "serving_breakdown")

    def _wrap(self, monkeypatch: pytest.MonkeyPatch, module: Any, name: str, key: str) -> None:
        real: Callable[..., Any] = getattr(module, name)

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.calls[key] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)

    def take(self) -> Counter[str]:
        """The counts since the last take."""
        out = Counter(self.calls)
        self.calls.clear()
        return out

    def engine_work(self, *requests: Request) -> Counter[str]:
        """What answering `requests` directly costs (each once, the chat's default options): the bar a door meets."""
        self.take()
        for request in requests:
            render_request(request, AnswerOptions())
        return self.take()


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    return Spy(monkeypatch)


@pytest.mark.parametrize("text", ["LoRA Llama 3.1 8B on a 4090", "vLLM 70B on 2 H100 for 32 users"])
async def test_a_message_is_parsed_once_and_answered_once(h: Harness, api: FakeBotAPI, spy: Spy, text: str) -> None:
    alone = spy.engine_work(parse(text))
    assert alone["answer"] == 1 and alone["conflicts"] + alone["breakdown"] + alone["serving_breakdown"] > 0
    spy.take()
    await h.feed(message(text, user_id=7001))
    assert texts(api, 7001)[-1].startswith(("✅", "🔧", "❌", "⚠️"))
    assert spy.take() == alone + Counter(parse=1)


async def test_a_follow_up_is_parsed_once_and_the_previous_answer_not_computed_again(h: Harness, api: FakeBotAPI,
                                                                                     spy: Spy) -> None:
    await h.feed(message("LoRA Llama 3.1 8B on a 4090", user_id=7002))
    spy.take()
    await h.feed(message("а на H200?", user_id=7002))
    assert texts(api, 7002)[-1].startswith("↪️ <i>Изменено: 1×H200 SXM вместо 1×RTX 4090</i>")
    followed = spy.take()
    merged = await h.store.get_request(await h.store.get_link("chat:7002") or "")
    assert merged is not None and merged.gpus[0].name == "H200 SXM"
    assert followed == spy.engine_work(merged) + Counter(parse=1)


async def test_an_inline_query_is_parsed_once_and_each_result_answered_once(h: Harness, api: FakeBotAPI,
                                                                            spy: Spy) -> None:
    asked = parse("70B QLoRA on H100")
    variants = [asked.model_copy(update={"method": m, "bits": None}) for m in ("lora", "full")]
    alone = spy.engine_work(asked, *(Request.model_validate(v.model_dump()) for v in variants))
    spy.take()
    await h.feed(inline_query("70B QLoRA on H100", user_id=7003))
    assert len(api.of("answerInlineQuery")[-1].params["results"]) == 3
    assert spy.take() == alone + Counter(parse=1)


async def test_a_button_press_parses_nothing_and_answers_once(h: Harness, api: FakeBotAPI, spy: Spy) -> None:
    await h.feed(message("LoRA Llama 3.1 8B on a 4090", user_id=7004))
    answer = last_message(api, 7004)
    stored = await h.store.get_request(await h.store.get_link("chat:7004") or "")
    assert stored is not None
    alone = spy.engine_work(apply_state(stored, "l", 8192, 1))
    spy.take()
    await h.feed(callback(button(answer, "8k"), message_obj=answer, user_id=7004))
    assert "context 8k" in last_message(api, 7004)["text"]
    assert spy.take() == alone


@pytest.mark.parametrize("argv", [["ask"], ["plan", "--json"], ["estimate", "--json"]])
@pytest.mark.parametrize("text", ["LoRA Llama 3.1 8B on a 4090", "vLLM 70B on 2 H100 for 32 users"])
def test_a_command_line_question_is_parsed_once_and_answered_once(spy: Spy, argv: list[str], text: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli import main

    spy.take()
    main([*argv, text])
    assert capsys.readouterr().out.strip()
    counts = spy.take()
    assert counts["parse"] == 1 and counts["answer"] == 1

"""The bot's handlers one update at a time (dispatcher.feed_update), against the fake Bot API server."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from bot_harness import Clock, Harness, harness
from fake_botapi import (
    BOT_ID,
    BOT_USERNAME,
    TOKEN,
    FakeBotAPI,
    button,
    callback,
    inline_query,
    last_message,
    message,
    texts,
    toasts,
)

from bot import hub
from bot.middlewares import RedactingFormatter, TokenBucket
from bot.pipeline import apply_state, question_language, resolve_language
from bot.storage import SQLiteStorage
from bot.views.keyboards import AnswerCb
from engine.parse import parse

GROUP = -100777

LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "tie_word_embeddings": False, "model_type": "llama",
}



@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def h(tmp_path: Path, api: FakeBotAPI, clock: Clock) -> AsyncIterator[Harness]:
    async with harness(tmp_path, api, bucket=TokenBucket(rate=1.0, burst=5, clock=clock)) as running:
        yield running










# ---- throttling ------------------------------------------------------------------------------------------


async def test_throttle_allows_a_burst_of_five_then_one_a_second(h: Harness, api: FakeBotAPI, clock: Clock) -> None:
    for _ in range(7):
        await h.feed(message("70B QLoRA on H100?", user_id=2001))
    sent = texts(api, 2001)
    assert len(sent) == 6  # five answers and one notice; the seventh is dropped silently
    assert all(s.startswith("✅") for s in sent[:5])
    assert sent[5] == ("Too many questions at once: I will take the next one in 1 second; until then I skip them, "
                       "so send it again.")
    clock.now += 1.0
    await h.feed(message("70B QLoRA on H100?", user_id=2001))
    assert texts(api, 2001)[-1].startswith("✅")
    await h.feed(message("70B QLoRA on H100?", user_id=2002))  # another user is not affected
    assert texts(api, 2002)[0].startswith("✅")
    assert h.metrics.throttled == 2


async def test_throttle_notice_is_russian_with_plural_forms(tmp_path: Path, api: FakeBotAPI, clock: Clock) -> None:
    async with harness(tmp_path, api, bucket=TokenBucket(rate=0.2, burst=1, clock=clock)) as slow:  # 5 s apart
        await slow.feed(message("70B на H100?", user_id=2003, language_code="ru"))
        await slow.feed(message("70B на H100?", user_id=2003, language_code="ru"))
        assert texts(api, 2003)[-1] == ("Слишком много вопросов сразу: следующий приму через 5\u00a0секунд, "
                                        "а до тех пор пропускаю — отправьте его ещё раз.")
        clock.now += 3.0
        answer = await slow.feed(callback("a:0123456789ab:l:2048:1:ru:r", user_id=2003, language_code="ru"))
        assert answer is None and toasts(api)[-1] == "Слишком быстро: подождите 2\u00a0секунды."


# ---- callbacks: stale, forged, in place ---------------------------------------------------------------------


async def test_forged_and_stale_buttons_get_a_polite_toast_and_nothing_else(h: Harness, api: FakeBotAPI,
                                                                            clock: Clock) -> None:
    await h.feed(message("70B QLoRA on H100?", user_id=2010))
    answer = last_message(api, 2010)
    good = AnswerCb.unpack(button(answer, "LoRA"))
    forged = [
        "garbage",
        "a:zzzzzzzzzzzz:l:2048:1:en:r",  # not a question id
        "a:0123456789ab:l:2048:1:en:r",  # well formed, never stored: stale
        good.model_copy(update={"m": "x"}).pack(),  # no such method
        good.model_copy(update={"n": 0}).pack(),  # zero GPUs
        good.model_copy(update={"lg": "de"}).pack(),
        f"a:{good.q}:l:notanumber:1:en:r",
        good.model_copy(update={"c": 10**12}).pack(),
        good.model_copy(update={"x": "rp"}).pack(),  # two actions in one: neither
        good.model_copy(update={"x": "l"}).pack(),  # a load chart from a training answer
    ]
    for data in forged:
        clock.now += 1.0  # well within the throttle
        await h.feed(callback(data, message_obj=answer, user_id=2010))
    assert len(api.of("answerCallbackQuery")) == len(forged)
    assert set(toasts(api)) == {"This button no longer works.",
                                "This answer is too old to change: ask the question again, please."}
    assert "This answer is too old to change: ask the question again, please." in toasts(api)
    assert not api.of("editMessageText") and not api.of("sendPhoto")
    assert len(texts(api, 2010)) == 1


async def test_buttons_change_context_count_and_language_in_place(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("LoRA Llama 3.1 8B on a 4090", user_id=2011))
    answer = last_message(api, 2011)
    await h.feed(callback(button(answer, "8k"), message_obj=answer, user_id=2011))
    edited = last_message(api, 2011)
    assert "context 8k" in edited["text"] and "✓ 8k" in json.dumps(edited["reply_markup"], ensure_ascii=False)
    await h.feed(callback(button(edited, "4×"), message_obj=edited, user_id=2011))
    assert "4×RTX 4090" in last_message(api, 2011)["text"]
    await h.feed(callback(button(edited, "RU"), message_obj=edited, user_id=2011))
    russian = last_message(api, 2011)["text"]
    assert "контекст 8k" in russian and "веса" in russian
    # the same button twice: Telegram says "not modified", the user sees nothing odd
    await h.feed(callback(button(edited, "RU"), message_obj=last_message(api, 2011), user_id=2011))
    assert len(api.of("editMessageText")) == 3
    assert toasts(api)[-1] is None
    assert len(texts(api, 2011)) == 1


async def test_the_chat_settings_are_read_once_per_update(h: Harness, api: FakeBotAPI,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real = h.store.get_settings

    async def counted(chat_id: int) -> Any:
        reads.append(chat_id)
        return await real(chat_id)

    monkeypatch.setattr(h.store, "get_settings", counted)
    await h.feed(message("LoRA Llama 3.1 8B on a 4090", user_id=2031))
    answer = last_message(api, 2031)
    await h.feed(callback(button(answer, "8k"), message_obj=answer, user_id=2031))
    await h.feed(message("/settings", user_id=2031))
    await h.feed(inline_query("70b qlora h100", user_id=2031))
    assert reads == [2031, 2031, 2031, 2031]  # one read for each of the four updates, by the middleware


def test_handlers_are_module_functions_registered_by_get_routers() -> None:
    from bot.handlers import callbacks, commands, get_routers, inline, questions

    routers = {r.name: r for r in get_routers()}
    registered = {h.callback for r in routers.values() for observer in r.observers.values() for h in observer.handlers}
    for handler in (commands.start, commands.vram, questions.private_question, callbacks.answer_button,
                    inline.inline_answer):
        assert handler in registered, handler.__name__
    assert [r.name for r in get_routers()][-1] == "questions"  # the catch-all last


async def test_inline_message_buttons_edit_through_inline_message_id(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(inline_query("70B qlora h100", user_id=2012))
    [answered] = api.of("answerInlineQuery")
    result = answered.params["results"][0]
    data = button({"reply_markup": result["reply_markup"]}, "Full")
    await h.feed(callback(data, inline_message_id="inl-1", user_id=2012))
    [edit] = api.of("editMessageText")
    assert edit.params["inline_message_id"] == "inl-1" and "full fine-tuning" in edit.params["text"]


async def test_inline_answers_are_cached_by_normalised_query(h: Harness, api: FakeBotAPI) -> None:
    cache = h.dp["answer_cache"]
    await h.feed(inline_query("70B  QLoRA H100 ", user_id=2013))
    await h.feed(inline_query("70b qlora h100", user_id=2013))
    first, second = api.of("answerInlineQuery")
    assert first.params["results"] == second.params["results"]
    assert cache.hits == 1 and cache.misses == 1
    await h.feed(inline_query("что-то непонятное", user_id=2013))
    third = api.of("answerInlineQuery")[-1]
    assert third.params["results"] == [] and third.params["button"]["start_parameter"] == "help"


# ---- groups and admins --------------------------------------------------------------------------------------


async def test_group_settings_are_for_admins_only(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("/settings", chat_id=GROUP, kind="supergroup", user_id=2020))
    panel = last_message(api, GROUP)
    assert "Only chat admins can change these." in panel["text"]
    await h.feed(callback(button(panel, "RUB ₽"), message_obj=panel, user_id=2020))
    assert toasts(api)[-1] == "Only chat admins can change the settings."
    assert (await h.store.get_settings(GROUP)).currency == "USD"
    await h.feed(message("/price H100 2.5", chat_id=GROUP, kind="supergroup", user_id=2020))
    assert texts(api, GROUP)[-1] == "Only chat admins can change the settings."
    api.members[(GROUP, 2021)] = "administrator"
    await h.feed(callback(button(panel, "RUB ₽"), message_obj=panel, user_id=2021))
    assert toasts(api)[-1] == "Saved."
    assert (await h.store.get_settings(GROUP)).currency == "RUB"
    assert "✓ RUB ₽" in json.dumps(api.messages[(GROUP, panel["message_id"])]["reply_markup"], ensure_ascii=False)
    checked = [(int(c.params["chat_id"]), int(c.params["user_id"])) for c in api.of("getChatMember")]
    assert (GROUP, 2020) in checked and (GROUP, 2021) in checked


async def test_group_answers_replies_and_mentions_only(h: Harness, api: FakeBotAPI) -> None:
    bot_said = {"message_id": 5, "date": 0, "chat": {"id": GROUP, "type": "supergroup", "title": "t"},
                "from": {"id": BOT_ID, "is_bot": True, "first_name": "GPU Advisor"}, "text": "earlier answer"}
    await h.feed(message("а на 2×H100 с 8k?", chat_id=GROUP, kind="supergroup", user_id=2022))  # not for the bot
    assert texts(api, GROUP) == []
    await h.feed(message("70B qlora на H100?", chat_id=GROUP, kind="supergroup", user_id=2022, reply_to=bot_said))
    await h.feed(message(f"@{BOT_USERNAME} 13B lora A100", chat_id=GROUP, kind="supergroup", user_id=2022))
    await h.feed(message("/vram", chat_id=GROUP, kind="supergroup", user_id=2022, language_code="ru"))
    said = texts(api, GROUP)
    assert said[0].startswith("✅ <b>Помещается") and "13B" in said[1]
    assert said[2].startswith("Напишите вопрос после команды")


# ---- settings, prices, persistence -------------------------------------------------------------------------


async def test_settings_and_own_prices_survive_a_restart(tmp_path: Path, api: FakeBotAPI) -> None:
    wide = TokenBucket(rate=100, burst=100)  # settings are throttled too: six in a row here is the subject
    async with harness(tmp_path, api, bucket=wide) as first:
        await first.feed(message("/settings", user_id=2030))
        panel = last_message(api, 2030)
        await first.feed(callback(button(panel, "RUB ₽"), message_obj=panel, user_id=2030))
        await first.feed(callback(button(panel, "Русский"), message_obj=panel, user_id=2030))
        await first.feed(message("/price H100 150", user_id=2030))
        await first.feed(message("/price Z9000 1", user_id=2030))
        await first.feed(message("/price H100 -3", user_id=2030))
    said = texts(api, 2030)
    assert said[-3].startswith("Сохранено: в ответах этого чата H100 SXM по 150")
    assert "Не знаю GPU «Z9000»" in said[-2]
    assert said[-1].startswith("Такую цену я принять не могу")
    async with harness(tmp_path, api) as second:  # a new process on the same file
        settings = await second.store.get_settings(2030)
        assert settings.currency == "RUB" and settings.language == "ru"
        assert settings.prices["H100 SXM"].value == 150
        await second.feed(message("70B qlora h100", user_id=2030, language_code="en"))
        answer = texts(api, 2030)[-1]
        assert "веса" in answer and "150" in answer and "₽" in answer
        await second.feed(message("/price H100 off", user_id=2030))
        assert not (await second.store.get_settings(2030)).prices


# ---- language ---------------------------------------------------------------------------------------------


def test_language_resolution_order() -> None:
    assert question_language("70B QLoRA на H100?") == "ru"
    assert question_language("can I fit 70B on an H100?") == "en"
    assert question_language("70B qlora h100") is None
    assert resolve_language("en", "ru", "ru", "ru") == "en"
    assert resolve_language(None, "ru", "en", "en") == "ru"
    assert resolve_language(None, None, "ru-RU", "en") == "ru"
    assert resolve_language(None, None, "de", "ru") == "ru"
    assert resolve_language(None, None, None, None) == "en"


async def test_bare_question_follows_the_client_language_then_the_chat(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("70B qlora h100", user_id=2040, language_code="ru"))
    assert "веса" in texts(api, 2040)[-1]
    await h.feed(message("70B qlora h100", user_id=2041, language_code="de"))  # → BOT_DEFAULT_LANGUAGE (en)
    assert "weights" in texts(api, 2041)[-1]
    settings = await h.store.get_settings(2040)
    settings.language = "en"
    await h.store.set_settings(2040, settings)
    await h.feed(message("70B qlora h100", user_id=2040, language_code="ru"))
    assert "weights" in texts(api, 2040)[-1]
    await h.feed(message("70B QLoRA на H100", user_id=2040, language_code="en"))  # the question's own wins
    assert "веса" in texts(api, 2040)[-1]


# ---- media, long texts, config.json, the Hub ---------------------------------------------------------------


async def test_non_text_messages_get_a_short_friendly_answer(h: Harness, api: FakeBotAPI) -> None:
    sticker = {"file_id": "s1", "file_unique_id": "us1", "type": "regular", "width": 512, "height": 512,
               "is_animated": False, "is_video": False}
    await h.feed(message(None, user_id=2050, sticker=sticker))
    await h.feed(message(None, user_id=2050, photo=[{"file_id": "p", "file_unique_id": "up", "width": 1,
                                                     "height": 1}]))
    await h.feed(message(None, user_id=2050, voice={"file_id": "v", "file_unique_id": "uv", "duration": 1}))
    await h.feed(message(None, user_id=2050, document={"file_id": "d", "file_unique_id": "ud",
                                                       "file_name": "paper.pdf", "mime_type": "application/pdf"}))
    await h.feed(message("x" * 10_000, user_id=2050))
    said = texts(api, 2050)
    assert len(said) == 5
    assert all(s.startswith("I read text questions") for s in said[:4])
    assert said[4].startswith("That is too long for a question")


async def test_config_json_file_is_estimated(h: Harness, api: FakeBotAPI) -> None:
    api.add_file("cfg1", json.dumps(LLAMA_CONFIG).encode(), path="documents/config.json")
    doc = {"file_id": "cfg1", "file_unique_id": "ucfg1", "file_name": "config.json", "mime_type": "application/json",
           "file_size": len(json.dumps(LLAMA_CONFIG))}
    await h.feed(message(None, user_id=2051, document=doc, caption="QLoRA on H100"))
    answer = texts(api, 2051)[-1]
    assert answer.startswith("✅ <b>Fits on 1×H100") and "QLoRA" in answer and "<pre>" in answer
    api.add_file("bad", b'{"hello": "world"}', path="documents/bad.json")
    await h.feed(message(None, user_id=2051, document={"file_id": "bad", "file_unique_id": "ub",
                                                       "file_name": "other.json", "file_size": 18}))
    assert texts(api, 2051)[-1].startswith("I do not recognise that framework")  # neither a model nor a training config
    await h.feed(message(None, user_id=2051, document={"file_id": "big", "file_unique_id": "ubig",
                                                       "file_name": "config.json", "file_size": 50_000_000}))
    assert texts(api, 2051)[-1].startswith("That file is over 256 KB")
    assert [c.params["file_id"] for c in api.of("getFile")] == ["cfg1", "bad"]  # the big one was not fetched


async def test_pasted_config_json_text_is_estimated(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message(json.dumps(LLAMA_CONFIG, indent=1), user_id=2052))
    answer = texts(api, 2052)[-1]
    assert "<pre>" in answer and "config.json" in answer


async def test_hub_id_fetches_the_config_and_falls_back_politely(h: Harness, api: FakeBotAPI,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, str, float]] = []

    async def fake_fetch(model_id: str, *, endpoint: str, token: str | None, timeout: float,
                         cache: Any = None) -> hub.HubResult:
        seen.append((model_id, endpoint, timeout))
        if model_id == "acme/private-70b":
            return hub.HubResult(model_id=model_id, reason="gated")
        return hub.HubResult(model_id=model_id, config=hub.config_from_json(LLAMA_CONFIG), reason="ok")

    monkeypatch.setattr(hub, "fetch_config", fake_fetch)
    await h.feed(message("acme/custom-llama-8b lora on a 4090", user_id=2053))
    answer = texts(api, 2053)[-1]
    assert "acme/custom-llama-8b" in answer and "Architecture from config.json of acme/custom-llama-8b" in answer
    assert api.of("sendChatAction")
    await h.feed(message("acme/private-70b qlora на H100", user_id=2053))
    answer = texts(api, 2053)[-1]
    assert answer.startswith("✅") and "нужно запросить доступ" in answer and "по размеру из названия" in answer
    await h.feed(message("meta-llama/Llama-3.1-8B lora", user_id=2053))  # in the catalog: no fetch
    assert [s[0] for s in seen] == ["acme/custom-llama-8b", "acme/private-70b"]
    assert seen[0][1] == "https://huggingface.co" and seen[0][2] <= 3.0


# ---- errors and logs ------------------------------------------------------------------------------------------


async def test_an_unexpected_error_is_an_apology_and_a_log_line(h: Harness, api: FakeBotAPI,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    import bot.handlers.questions

    def broken(text: str) -> Any:
        raise RuntimeError(f"boom with the user's text {text}")

    monkeypatch.setattr(bot.handlers.questions, "read_question", broken)
    with caplog.at_level(logging.INFO):
        await h.feed(message("секретный вопрос про 70B", user_id=2060, language_code="ru"))
    assert texts(api, 2060) == ["Извините, у меня что-то сломалось. Попробуйте ещё раз через минуту."]
    failed = [r for r in caplog.records if "failed: RuntimeError" in r.getMessage()]
    assert failed and "update " in failed[0].getMessage()
    assert all("секретный" not in r.getMessage() for r in caplog.records)
    assert h.metrics.errors == 1


def test_the_token_never_reaches_a_log_line() -> None:
    formatter = RedactingFormatter(TOKEN, "%(message)s")
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "calling https://api/bot%s/getMe", (TOKEN,), None)
    assert formatter.format(record) == "calling https://api/bot***/getMe"


# ---- keyboard state -----------------------------------------------------------------------------------------


def test_apply_state_switches_method_and_resets_its_precision() -> None:
    stored = parse("full fine-tune 7B in 8-bit on 2×A100")
    changed = apply_state(stored, "q", 8192, 4)
    assert changed.method == "qlora" and changed.bits is None and changed.seq_len == 8192
    assert changed.gpus[0].count == 4 and changed.gpus[0].name == stored.gpus[0].name
    back = apply_state(stored, "f", 2048, 1)
    assert back.bits == stored.bits
    no_gpu = apply_state(parse("70B qlora"), "q", 2048, 8)
    assert no_gpu.gpus[0].count == 8 and no_gpu.gpus[0].name is None
    with pytest.raises(ValueError):
        apply_state(stored, "z", 2048, 1)
    with pytest.raises(ValueError):
        apply_state(stored, "q", 0, 1)


async def test_sqlite_storage_keeps_questions_for_old_keyboards(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "q.db")
    await store.open()
    request = parse("70B QLoRA на H100?")
    qid = await store.put_request(request)
    assert len(qid) == 12 and await store.put_request(request) == qid
    await store.close()
    again = SQLiteStorage(tmp_path / "q.db")
    await again.open()
    assert await again.get_request(qid) == request
    assert await again.get_request("0" * 12) is None
    await again.close()


async def test_a_chart_the_bot_api_refuses_gets_a_toast_that_fits_the_chat(h: Harness, api: FakeBotAPI,
                                                                          clock: Clock) -> None:
    await h.feed(message(f"@{BOT_USERNAME} 13B lora A100", chat_id=GROUP, kind="supergroup", user_id=2023))
    in_group = last_message(api, GROUP)
    await h.feed(message("13B lora A100", user_id=2023))
    in_private = last_message(api, 2023)
    for answer in (in_group, in_private):
        clock.now += 5.0
        api.fail("sendPhoto", status=403)
        await h.feed(callback(button(answer, "📊 Chart"), message_obj=answer, user_id=2023))
    refused = [c.params for c in api.of("answerCallbackQuery")]
    assert [(p.get("text"), p.get("show_alert")) for p in refused] == [
        ("Open a chat with me to get the chart.", True),
        ("I could not send the chart: try again in a minute, please.", True)]

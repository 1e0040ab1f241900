"""End to end: the real aiogram Bot and Dispatcher, long-polling the fake Bot API server on loopback."""

from __future__ import annotations

import asyncio
import re

from bot_harness import Harness
from fake_botapi import BOT_ID, BOT_USERNAME, FakeBotAPI, buttons, callback, inline_query, message

PRE = re.compile(r"<pre>(.*?)</pre>", re.S)


def table_lines(text: str) -> list[str]:
    found = PRE.search(text)
    assert found, text
    return [line for line in found.group(1).split("\n") if line]




async def test_russian_question_gets_a_russian_table(h: Harness, api: FakeBotAPI) -> None:
    async with h.polling():
        api.push(message("70B QLoRA на H100?", language_code="en"))
        [sent] = await api.wait_for("sendMessage", chat_id=1001)
    text = sent.params["text"]
    assert text.startswith("✅ <b>Помещается на 1×H100")
    lines = table_lines(text)
    assert lines[0].startswith("веса") and "итого" in lines[-1]
    assert all(len(line) <= 34 for line in lines)
    assert len(text) <= 4096
    assert "<blockquote expandable>" in text
    assert sent.params["parse_mode"] == "HTML"
    keys = buttons(sent.params["reply_markup"])
    assert {"LoRA", "QLoRA", "2k", "8k", "32k", "RU", "EN"} <= set(keys)
    assert all(len(data.encode()) <= 64 for data in keys.values())
    assert sent.params["reply_markup"]["inline_keyboard"][0][2]["text"] == "✓ QLoRA"


async def test_english_question_gets_an_english_table(h: Harness, api: FakeBotAPI) -> None:
    async with h.polling():
        api.push(message("can I LoRA llama 3.1 8b on a 4090 with 8k context?", user_id=1002, language_code="ru"))
        [sent] = await api.wait_for("sendMessage", chat_id=1002)
    text = sent.params["text"]
    assert text.startswith("🔧 <b>Fits on 1×RTX 4090 after changes: fused cross-entropy (Liger / Unsloth)")
    assert table_lines(text)[0].startswith("weights")
    assert "✓ 8k" in [b["text"] for row in sent.params["reply_markup"]["inline_keyboard"] for b in row]


async def test_start_shows_three_examples_in_the_users_language(h: Harness, api: FakeBotAPI) -> None:
    async with h.polling():
        api.push(message("/start", user_id=1003, language_code="ru"))
        [sent] = await api.wait_for("sendMessage", chat_id=1003)
    assert "Подскажу" in sent.params["text"]
    rows = sent.params["reply_markup"]["inline_keyboard"]
    assert len(rows) == 3 and rows[0][0]["text"] == "70B QLoRA на H100?"
    # pressing an example answers it
    async with h.polling():
        bot_msg = next(m for (c, _), m in api.messages.items() if c == 1003)
        api.push(callback(rows[0][0]["callback_data"], message_obj=bot_msg, user_id=1003, language_code="ru"))
        sends = await api.wait_for("sendMessage", count=2, chat_id=1003)
    assert sends[1].params["text"].startswith("✅ <b>Помещается")


async def test_group_answers_vram_command_and_ignores_the_rest(h: Harness, api: FakeBotAPI) -> None:
    group = -100500
    async with h.polling():
        api.push(message("обсуждаем 70B на H100", chat_id=group, kind="supergroup", user_id=1004))
        api.push(message(f"/vram@{BOT_USERNAME} 70B qlora h100", chat_id=group, kind="supergroup", user_id=1004))
        [sent] = await api.wait_for("sendMessage", chat_id=group)
        await asyncio.sleep(0.2)
    assert len(api.of("sendMessage")) == 1  # the chatter got nothing
    assert "H100" in sent.params["text"] and "<pre>" in sent.params["text"]
    assert sent.params["reply_parameters"]["message_id"]  # threaded to the question


async def test_button_press_edits_the_answer_in_place(h: Harness, api: FakeBotAPI) -> None:
    async with h.polling():
        api.push(message("70B QLoRA on H100?", user_id=1005))
        [sent] = await api.wait_for("sendMessage", chat_id=1005)
        answer = next(m for (c, _), m in api.messages.items() if c == 1005)
        api.push(callback(buttons(sent.params["reply_markup"])["LoRA"], message_obj=answer, user_id=1005))
        [edit] = await api.wait_for("editMessageText", chat_id=1005)
        await api.wait_for("answerCallbackQuery")
    assert int(edit.params["message_id"]) == answer["message_id"]
    assert "LoRA r16" in edit.params["text"] and "QLoRA" not in edit.params["text"].split("\n")[1]
    labels = [b["text"] for row in edit.params["reply_markup"]["inline_keyboard"] for b in row]
    assert "✓ LoRA" in labels and "QLoRA" in labels
    assert len(api.of("sendMessage")) == 1  # edited, not a new message


async def test_inline_query_gives_verdict_titles_and_full_tables(h: Harness, api: FakeBotAPI) -> None:
    async with h.polling():
        api.push(inline_query("70B qlora h100", user_id=1006))
        [answered] = await api.wait_for("answerInlineQuery")
        api.push(inline_query("", user_id=1006, language_code="ru"))
        examples = (await api.wait_for("answerInlineQuery", count=2))[1]
    results = answered.params["results"]
    assert 1 <= len(results) <= 3
    first = results[0]
    assert first["type"] == "article" and first["title"].startswith("Fits on 1×H100")
    assert "<pre>" in first["input_message_content"]["message_text"]
    assert len({r["id"] for r in results}) == len(results)
    assert first["reply_markup"]["inline_keyboard"]
    assert next(r["title"] for r in examples.params["results"]) == "70B QLoRA на H100?"


async def test_chart_button_sends_a_png_photo(h: Harness, api: FakeBotAPI) -> None:
    async with h.polling():
        api.push(message("LoRA Llama 3.1 8B on a 4090", user_id=1007))
        [sent] = await api.wait_for("sendMessage", chat_id=1007)
        answer = next(m for (c, _), m in api.messages.items() if c == 1007)
        chart = next(v for k, v in buttons(sent.params["reply_markup"]).items() if k.startswith("📊"))
        api.push(callback(chart, message_obj=answer, user_id=1007))
        [photo] = await api.wait_for("sendPhoto", chat_id=1007, timeout=20)
    assert photo.files["photo"].startswith(b"\x89PNG")
    assert photo.params["caption"] == sent.params["text"].split("\n")[0].split("<b>")[1].split("</b>")[0]


async def test_garbage_gets_a_polite_answer_with_examples(h: Harness, api: FakeBotAPI) -> None:
    async with h.polling():
        api.push(message("asdf qwerty ;;;", user_id=1008))
        [sent] = await api.wait_for("sendMessage", chat_id=1008)
    assert "70B QLoRA" in sent.params["text"]
    assert len(sent.params["reply_markup"]["inline_keyboard"]) == 3


async def test_flood_control_and_server_errors_do_not_stop_answers(h: Harness, api: FakeBotAPI) -> None:
    api.webhook_url = "https://old.example/hook"  # polling must drop a leftover webhook
    api.fail("setMyCommands", status=500, times=100)  # keeps failing: logged and ignored
    api.fail("setMyDescription", status=502, times=2)  # recovers after retries
    api.fail("sendMessage", retry_after=1, times=1)  # flood control on the answer itself
    async with h.polling():
        api.push(message("70B QLoRA on H100?", user_id=1009))
        [sent] = await api.wait_for("sendMessage", chat_id=1009, timeout=10)
        await api.wait_for("setMyShortDescription", count=3, timeout=10)
    assert sent.params["text"].startswith("✅")
    tries = [c for c in api.calls if c.method == "sendMessage"]
    assert [c.status for c in tries] == [429, 200]
    assert tries[1].at - tries[0].at >= 0.95  # waited the retry_after Telegram asked for
    assert len([c for c in api.calls if c.method == "setMyCommands"]) == 3 * 4  # 3 languages × 4 attempts
    assert len(api.of("setMyDescription")) == 3
    assert {c.params.get("language_code") for c in api.of("setMyDescription")} == {"en", "ru", None}
    assert api.of("deleteWebhook") and api.webhook_url == ""
    assert BOT_ID  # the fake's bot is who answered

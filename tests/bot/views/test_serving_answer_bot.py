"""A serving question in Telegram: the serving headline and keyboard, a press edits the answer in place, forged and
stale serving buttons get a toast."""

from __future__ import annotations

import json

from bot_harness import Harness
from fake_botapi import FakeBotAPI, button, callback, inline_query, labels, last_message, message

from bot.views.keyboards import ServingCb


async def test_serving_question_gets_the_serving_headline_and_keyboard(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("Llama 3.1 70B на vLLM для 32 пользователей, 8k, 4×H100", user_id=3001))
    sent = last_message(api, 3001)
    assert sent["text"].startswith("✅ <b>32 пользователя с контекстом 8k на 4×H100 SXM (TP\u00a04): хватает на ")
    assert "Команда запуска" in sent["text"] and "vllm serve" in sent["text"]
    assert labels(sent) == ["✓ BF16", "FP8", "AWQ", "👥 8", "✓ 👥 32", "👥 128", "4k", "✓ 8k", "32k", "✓ RU", "EN",
                            "📊 График", "⚙️ Конфиг"]
    assert all(len(b["callback_data"].encode()) <= 64 for row in sent["reply_markup"]["inline_keyboard"] for b in row)


async def test_serving_buttons_edit_the_answer_in_place(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("Llama 3.1 70B on vLLM for 32 users at 8k on 4 H100?", user_id=3002))
    answer = last_message(api, 3002)
    await h.feed(callback(button(answer, "FP8"), message_obj=answer, user_id=3002))
    edited = last_message(api, 3002)
    assert edited["message_id"] == answer["message_id"]
    assert "weights fp8" in edited["text"] and "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8" in edited["text"]
    assert "✓ FP8" in labels(edited)
    await h.feed(callback(button(edited, "👥 128"), message_obj=edited, user_id=3002))
    edited = last_message(api, 3002)
    assert edited["text"].startswith(("✅ <b>128 users at 8k", "❌ <b>128 users at 8k", "⚠️ <b>128 users at 8k",
                                        "🔧 <b>128 users at 8k"))
    await h.feed(callback(button(edited, "32k"), message_obj=edited, user_id=3002))
    edited = last_message(api, 3002)
    assert "128 users at 32k" in edited["text"] and "✓ 32k" in labels(edited)
    await h.feed(callback(button(edited, "RU"), message_obj=edited, user_id=3002))
    assert "128 пользователей с контекстом 32k" in last_message(api, 3002)["text"]
    assert len(api.of("editMessageText")) == 4
    assert len([c for c in api.of("sendMessage") if int(c.params["chat_id"]) == 3002]) == 1


async def test_the_chart_button_sends_the_serving_chart_with_the_verdict_as_caption(h: Harness, api: FakeBotAPI
                                                                                  ) -> None:
    await h.feed(message("Llama 3.1 70B on vLLM for 32 users at 8k on 4 H100?", user_id=3005))
    answer = last_message(api, 3005)
    await h.feed(callback(button(answer, "📊 Chart"), message_obj=answer, user_id=3005))
    [photo] = api.of("sendPhoto")
    assert photo.files["photo"].startswith(b"\x89PNG") and int(photo.params["chat_id"]) == 3005
    headline = answer["text"].split("\n")[0].split("<b>")[1].split("</b>")[0]
    assert photo.params["caption"] == headline.replace("&#39;", "'")
    assert not api.of("editMessageText")  # the answer stays as it was
    kept = api.messages[(3005, answer["message_id"])]
    assert kept["text"] == answer["text"] and json.dumps(kept["reply_markup"]) == json.dumps(answer["reply_markup"])


async def test_forged_and_stale_serving_buttons_get_a_toast(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("Llama 3.1 70B on vLLM for 32 users at 8k on 4 H100?", user_id=3003))
    answer = last_message(api, 3003)
    good = ServingCb.unpack(button(answer, "FP8"))
    forged = [
        good.model_copy(update={"f": "z"}).pack(),
        good.model_copy(update={"u": -1}).pack(),
        good.model_copy(update={"u": 10**9}).pack(),
        good.model_copy(update={"c": 10**12}).pack(),
        good.model_copy(update={"lg": "de"}).pack(),
        "v:0123456789ab:8:32:8192:en:r",  # well formed, never stored
        "v:0123456789ab:8:32:8192:en",  # a button from before the chart (one field less)
        f"v:{good.q}:8:many:8192:en",
        f"a:{good.q}:i:8192:4:en:p",  # a training button's chart on a serving answer
    ]
    for data in forged:
        await h.feed(callback(data, message_obj=answer, user_id=3003))
    toasts = {c.params.get("text") for c in api.of("answerCallbackQuery")}
    assert toasts == {"This button no longer works.",
                      "This answer is too old to change: ask the question again, please."}
    assert not api.of("editMessageText") and not api.of("sendPhoto")
    assert json.dumps(last_message(api, 3003)["reply_markup"]) == json.dumps(answer["reply_markup"])


async def test_inline_serving_question_gets_the_serving_answer(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(inline_query("Llama 3.1 70B on vLLM for 32 users at 8k on 4 H100", user_id=3004))
    [answered] = api.of("answerInlineQuery")
    [result] = answered.params["results"]
    assert result["title"].startswith("32 users at 8k on 4×H100 SXM (TP\u00a04): room for ")
    # the one-line answer: the GPUs, the speed a user sees, what it costs an hour and per 1M output tokens
    assert result["description"].startswith("4×H100 SXM (TP\u00a04): ") and "\u00a0tokens/s per user, $" in \
        result["description"] and result["description"].endswith(" per 1M output tokens")
    assert "vllm serve" in result["input_message_content"]["message_text"]
    assert "✓ 👥 32" in [b["text"] for row in result["reply_markup"]["inline_keyboard"] for b in row]

"""Each Bot API method the bot uses, answering each kind of bad reply in turn (non-JSON, `{}`, odd codes, an
error without a description, garbage, a 404, an HTML 502, bytes that are not text, a hang), in polling and
webhook modes: the bot stays up and every question gets exactly one answer (the answer, or where the
method itself is gone for good, the one notice that stands for it)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from bot_harness import harness
from fake_botapi import KINDS, FakeBotAPI, callback, inline_query, message

from bot.app import webhook_app

VERDICT_MARKS = ("✅", "⚠️", "🔧", "❌")  # fits, tight, fits with changes, no fit: an answer, not an apology
SECRET = "s3cret_token"
LLAMA = {"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "vocab_size": 128256, "model_type": "llama"}
_users = itertools.count(5000)
_updates = itertools.count(1)

Deliver = Callable[[dict[str, Any]], Awaitable[None]]


@pytest.fixture(params=["polling", "webhook"])
async def deliver(request: pytest.FixtureRequest, tmp_path: Path, api: FakeBotAPI) -> AsyncIterator[Deliver]:
    """Hands one update to the bot and returns once it was handled; in webhook mode as Telegram does: again
    while the bot answers 500 (not acknowledged)."""
    api.hang_s = 1.0
    overrides: dict[str, Any] = {"hf_endpoint": "http://127.0.0.1:9"}
    if request.param == "webhook":
        overrides.update(mode="webhook", webhook_url="https://bot.example/hook", webhook_secret=SECRET)
    async with harness(tmp_path, api, **overrides) as h:
        h.bot.session.timeout = 0.3
        if request.param == "polling":
            async def feed(update: dict[str, Any]) -> None:
                await h.feed(update)

            yield feed
            return
        async with TestClient(TestServer(webhook_app(h.bot, h.dp, h.config))) as client:
            async def post(update: dict[str, Any]) -> None:
                update = {"update_id": next(_updates), **update}
                for _ in range(5):
                    response = await client.post("/hook", json=update,
                                                 headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
                    if response.status == 200:
                        return
                    assert response.status == 500
                raise AssertionError("never acknowledged")

            yield post


def sent(api: FakeBotAPI, method: str, **match: Any) -> list[dict[str, Any]]:
    return [c.params for c in api.of(method) if all(str(c.params.get(k)) == str(v) for k, v in match.items())]


async def ask(api: FakeBotAPI, deliver: Deliver, text: str) -> tuple[int, dict[str, Any]]:
    user = next(_users)
    await deliver(message(text, user_id=user))
    [answer] = sent(api, "sendMessage", chat_id=user)
    return user, answer


@pytest.mark.parametrize("method", ["sendMessage", "sendChatAction"])
async def test_questions(api: FakeBotAPI, deliver: Deliver, method: str) -> None:
    for kind in KINDS:
        api.misbehave(method, kind)
        # a Hub id the catalog lacks (and a Hub that cannot be reached) shows "typing…" first
        _user, answer = await ask(api, deliver, "acme/custom-llama-8b lora on a 4090")
        if method == "sendMessage" and kind == "not_found":
            assert answer["text"].startswith("Sorry"), kind  # Telegram's own 404: the apology is the one answer
        else:
            assert answer["text"].startswith(VERDICT_MARKS) and "acme/custom-llama-8b" in answer["text"], kind


async def _answer_and_press(api: FakeBotAPI, deliver: Deliver, label: str) -> tuple[int, str]:
    user, answer = await ask(api, deliver, "LoRA Llama 3.1 8B on a 4090")
    bot_msg = [m for (c, _), m in api.messages.items() if c == user][-1]
    data = next(b["callback_data"] for row in answer["reply_markup"]["inline_keyboard"] for b in row
                if b["text"].removeprefix("✓ ").startswith(label))
    query = callback(data, message_obj=bot_msg, user_id=user)
    await deliver(query)
    return user, query["callback_query"]["id"]


@pytest.mark.parametrize("method", ["editMessageText", "answerCallbackQuery"])
async def test_answer_buttons(api: FakeBotAPI, deliver: Deliver, method: str) -> None:
    for kind in KINDS:
        api.misbehave(method, kind)
        user, query_id = await _answer_and_press(api, deliver, "QLoRA")
        edits = sent(api, "editMessageText", chat_id=user)
        notices = [p for p in sent(api, "answerCallbackQuery", callback_query_id=query_id) if p.get("text")]
        if method == "editMessageText" and kind == "not_found":
            assert not edits and len(notices) == 1, kind  # the edit is gone for good: one toast says so
        else:
            assert len(edits) == 1 and "QLoRA" in edits[0]["text"] and not notices, kind


async def test_chart(api: FakeBotAPI, deliver: Deliver) -> None:
    for kind in KINDS:
        api.misbehave("sendPhoto", kind)
        user, query_id = await _answer_and_press(api, deliver, "📊")
        photos = sent(api, "sendPhoto", chat_id=user)
        alerts = [p for p in sent(api, "answerCallbackQuery", callback_query_id=query_id) if p.get("text")]
        assert len(photos) + len(alerts) == 1, kind
        assert kind == "not_found" or photos, kind  # only Telegram's own 404 is not retried


async def test_config_files(api: FakeBotAPI, deliver: Deliver) -> None:
    api.add_file("cfg", json.dumps(LLAMA).encode(), path="documents/config.json")
    doc = {"file_id": "cfg", "file_unique_id": "ucfg", "file_name": "config.json", "file_size": len(json.dumps(LLAMA))}
    for kind in KINDS:
        api.misbehave("getFile", kind)
        user = next(_users)
        await deliver(message(None, user_id=user, document=doc, caption="QLoRA on H100"))
        [answer] = sent(api, "sendMessage", chat_id=user)
        if kind == "not_found":
            assert answer["text"].startswith("I could not download that file"), kind
        else:
            assert answer["text"].startswith("✅") and "config.json" in answer["text"], kind


async def test_inline_queries(api: FakeBotAPI, deliver: Deliver) -> None:
    for n, kind in enumerate(KINDS):
        api.misbehave("answerInlineQuery", kind)
        update = inline_query(f"{8 + n}B qlora h100", user_id=next(_users))
        await deliver(update)
        answered = sent(api, "answerInlineQuery", inline_query_id=update["inline_query"]["id"])
        assert len(answered) == 1, kind
        assert kind == "not_found" or answered[0]["results"], kind


async def test_group_settings(api: FakeBotAPI, deliver: Deliver) -> None:
    group = -100900
    for kind in KINDS:
        api.misbehave("getChatMember", kind)
        before = len(sent(api, "sendMessage", chat_id=group))
        await deliver(message("/settings", chat_id=group, kind="supergroup", user_id=next(_users)))
        assert len(sent(api, "sendMessage", chat_id=group)) == before + 1, kind

"""A call that took effect but whose answer was lost ("accepted, then connection reset") is not multiplied: a
send is retried once at most, then neither apologised for nor left for redelivery; a retried edit told "message
is not modified" took effect the first time."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from bot_harness import harness, make_config
from fake_botapi import FakeBotAPI, callback, message

from bot import middlewares
from bot.app import build_bot, build_dispatcher, webhook_app
from bot.middlewares import RetryRequests
from bot.storage import storage_from_url

SECRET = "s3cret_token"
HEADERS = {"X-Telegram-Bot-Api-Secret-Token": SECRET}


def sent(api: FakeBotAPI, chat_id: int) -> list[str]:
    """The messages in the chat: those whose answer was lost too (the fake server made them, then hung up)."""
    return [m["text"] for (c, _), m in api.messages.items() if c == chat_id]


async def test_one_lost_answer_gives_at_most_two_copies_and_no_apology(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        api.accept_then_drop("sendMessage", times=1)
        await h.feed(message("70B QLoRA on H100?", user_id=9401))
        assert len(sent(api, 9401)) == 2 and all(s.startswith("✅") for s in sent(api, 9401))
        api.accept_then_drop("sendMessage", times=10)  # every answer lost: one retry, then nothing more
        await h.feed(message("8B LoRA on a 4090", user_id=9402))
        said = sent(api, 9402)
        assert len(said) == 2 and not any(s.startswith("Sorry") for s in said)


async def test_webhook_redelivery_after_a_lost_answer_is_not_asked_for(tmp_path: Path, api: FakeBotAPI) -> None:
    config = make_config(api.url, tmp_path / "d.db", mode="webhook", webhook_url="https://bot.example/hook",
                         webhook_secret=SECRET)
    store = storage_from_url(f"sqlite:///{tmp_path / 'd.db'}")
    await store.open()
    bot = build_bot(config, retry=RetryRequests(attempts=4, backoff_s=0.01))
    try:
        async with TestClient(TestServer(webhook_app(bot, build_dispatcher(config, store), config))) as client:
            api.accept_then_drop("sendMessage", times=10)
            update = {"update_id": 701, **message("70B QLoRA on H100?", user_id=9403)}
            for _ in range(3):  # Telegram would deliver it again only after a non-200
                assert (await client.post("/hook", json=update, headers=HEADERS)).status == 200
        assert len(sent(api, 9403)) == 2
    finally:
        await bot.session.close()
        await store.close()


async def test_a_retried_edit_that_took_effect_is_not_an_error(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        await h.feed(message("70B QLoRA on H100?", user_id=9404))
        answer = [m for (c, _), m in api.messages.items() if c == 9404][-1]
        data = next(b["callback_data"] for row in answer["reply_markup"]["inline_keyboard"] for b in row
                    if "8k" in b["text"])
        api.accept_then_drop("editMessageText", times=1)
        await h.feed(callback(data, message_obj=answer, user_id=9404))
        toasts = [c.params.get("text") for c in api.of("answerCallbackQuery")]
        assert toasts[-1] is None  # a plain acknowledgement, not "I could not change that message"
        edited = [m for (c, _), m in api.messages.items() if c == 9404][-1]
        assert "8k" in edited["text"]


async def test_an_answer_to_a_group_that_became_a_supergroup_goes_to_the_supergroup(tmp_path: Path,
                                                                                    api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        api.migrated[-4101] = -1004101
        await h.feed(message("/vram 70B QLoRA on H100?", chat_id=-4101, kind="group", user_id=9405))
        assert sent(api, -4101) == [] and len(sent(api, -1004101)) == 1


async def test_polling_waits_out_a_flood_control_longer_than_a_minute(tmp_path: Path, api: FakeBotAPI,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:  # the wait is recorded, not spent
        waited.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(middlewares.asyncio, "sleep", sleep)
    async with harness(tmp_path, api) as h:
        api.fail("sendMessage", times=1, retry_after=90)
        bot = build_bot(h.config)  # the app's own retry policy for polling, not the harness's
        own, h.bot = h.bot, bot
        try:
            await h.feed(message("70B QLoRA on H100?", user_id=9406))
        finally:
            h.bot = own
            await bot.session.close()
        assert 90 in waited and len(sent(api, 9406)) == 1

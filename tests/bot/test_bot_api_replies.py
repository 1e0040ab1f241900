"""Bot API replies that are not the Bot API's (an HTML 502, `{}`, garbage, odd codes, a hang), at run time:
each method the bot uses, each kind in turn; the bot stays up and every question gets exactly one answer."""

from __future__ import annotations

import asyncio

import pytest
from bot_harness import Harness
from fake_botapi import KINDS, FakeBotAPI, message

RETRIED = [k for k in KINDS if k != "not_found"]  # a well-formed 404 is Telegram's "no such method": not retried


def answers(api: FakeBotAPI, chat_id: int) -> list[str]:
    return [c.params["text"] for c in api.of("sendMessage") if int(c.params["chat_id"]) == chat_id]


@pytest.mark.parametrize("kind", RETRIED)
async def test_send_message_reply_that_does_not_decode_is_retried(h: Harness, api: FakeBotAPI, kind: str) -> None:
    h.bot.session.timeout = 0.5
    api.hang_s = 2.0
    api.misbehave("sendMessage", kind)
    async with h.polling():
        api.push(message("70B QLoRA on H100?", user_id=2001))
        await api.wait_for("sendMessage", chat_id=2001, timeout=10)
    [text] = answers(api, 2001)
    assert text.startswith("✅")
    assert [c.status for c in api.calls if c.method == "sendMessage"][-1] == 200
    assert h.metrics.retries == 1 and h.metrics.errors == 0


@pytest.mark.parametrize("kind", ["non_json", "html_502", "garbage", "hang", "ok_no_result"])
async def test_long_polling_through_bad_replies_to_getupdates(h: Harness, api: FakeBotAPI, kind: str,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    h.bot.session.timeout = 0.3
    api.hang_s = 3.0
    async with h.polling():
        api.misbehave("getUpdates", kind, times=2)
        while api.misbehaving["getUpdates"].times:  # both bad replies reached the poller
            await asyncio.sleep(0.05)
        api.push(message("70B QLoRA on H100?", user_id=2101))
        await api.wait_for("sendMessage", chat_id=2101, timeout=15)
    assert len(answers(api, 2101)) == 1
    failed = [r.getMessage() for r in caplog.records if "Failed to fetch updates" in r.getMessage()]
    assert failed and all(len(line) < 300 for line in failed)  # a short reason, never the whole HTML page

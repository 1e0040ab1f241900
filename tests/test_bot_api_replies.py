"""Bot API replies that are not the Bot API's (an HTML 502, `{}`, garbage, odd codes, a hang), at run time:
each method the bot uses, each kind in turn; the bot stays up and every question gets exactly one answer."""

from __future__ import annotations

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

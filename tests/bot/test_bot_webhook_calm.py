"""The webhook under odd input and expected failures: a body that is no update is acknowledged (200) with one
log line, never a 500 Telegram would deliver again forever; a re-raised update (the Bot API failing), a request
aiohttp cannot parse (a header with NUL) and a chat that refuses the bot (403) are one line each, never an ERROR
with a stack, and a 403 never becomes an apology."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from bot_harness import Harness, harness
from fake_botapi import FakeBotAPI, callback, message
from redis_server import free_port

from bot import webhook
from bot.app import webhook_app

SECRET = "s3cret_token"
HEADERS = {"X-Telegram-Bot-Api-Secret-Token": SECRET, "Content-Type": "application/json"}
POISON = {
    "malformed JSON": b'{"update_id": 1, "message": ',
    "empty object": b"{}",
    "a list": b"[1, 2]",
    "5000-level nesting": b'{"update_id": 1, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    "5000-digit update_id": b'{"update_id": ' + b"9" * 5000 + b"}",
    "invalid UTF-8": b'{"update_id": 1, "message": "\xff\xfe"}',
    "update_id a string": b'{"update_id": "x"}',
}


@pytest.fixture
async def hook(tmp_path: Path, api: FakeBotAPI) -> AsyncIterator[tuple[Harness, TestClient]]:
    async with harness(tmp_path, api, mode="webhook", webhook_url="https://bot.example/hook",
                       webhook_secret=SECRET) as h:
        h.bot.session.timeout = 0.5
        async with TestClient(TestServer(webhook_app(h.bot, h.dp, h.config))) as client:
            yield h, client


def loud(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Records at ERROR or above, or with a stack: what a person reading the log at night must look at."""
    return [f"{r.name}: {r.getMessage()[:100]}" for r in caplog.records
            if r.levelno >= logging.ERROR or r.exc_info or "Traceback" in r.getMessage()]


@pytest.mark.parametrize("name", list(POISON))
async def test_a_body_that_is_no_update_is_acknowledged_and_logged_once(
        hook: tuple[Harness, TestClient], api: FakeBotAPI, caplog: pytest.LogCaptureFixture, name: str) -> None:
    _, client = hook
    caplog.set_level(logging.INFO)
    reply = await client.post("/hook", data=POISON[name], headers=HEADERS)
    assert reply.status == 200, name
    lines = [r for r in caplog.records if "no update" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert len(lines[0].getMessage()) < 200  # the reason, never the body
    assert loud(caplog) == []
    # the bot goes on answering
    ok = await client.post("/hook", json={"update_id": 2, **message("70B QLoRA on H100?", user_id=6101)},
                           headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
    assert ok.status == 200 and api.of("sendMessage")


async def test_an_update_left_for_redelivery_is_one_warning_line(
        hook: tuple[Harness, TestClient], api: FakeBotAPI, caplog: pytest.LogCaptureFixture) -> None:
    _, client = hook
    caplog.set_level(logging.INFO)
    api.fail("sendMessage", 502, times=1000)  # the Bot API keeps failing: not acknowledged, delivered again
    reply = await client.post("/hook", json={"update_id": 3, **message("70B QLoRA on H100?", user_id=6201)},
                              headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
    assert reply.status == 500
    assert loud(caplog) == []
    said = [r for r in caplog.records if r.levelno >= logging.WARNING and "update 3" in r.getMessage()]
    assert len(said) == 1 and "deliver it again" in said[0].getMessage()


async def test_a_403_on_an_edit_is_one_info_line_and_no_apology(
        hook: tuple[Harness, TestClient], api: FakeBotAPI, caplog: pytest.LogCaptureFixture) -> None:
    _, client = hook
    user = 6301
    ok = await client.post("/hook", json={"update_id": 4, **message("LoRA Llama 3.1 8B on a 4090", user_id=user)},
                           headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
    assert ok.status == 200
    [answer] = [c.params for c in api.of("sendMessage") if int(c.params["chat_id"]) == user]
    bot_msg = [m for (c, _), m in api.messages.items() if c == user][-1]
    data = next(b["callback_data"] for row in answer["reply_markup"]["inline_keyboard"] for b in row
                if b["text"].removeprefix("✓ ").startswith("QLoRA"))
    caplog.clear()
    caplog.set_level(logging.INFO)
    api.fail("editMessageText", 403, times=10)  # the user blocked the bot meanwhile
    press = await client.post("/hook", json={"update_id": 5, **callback(data, message_obj=bot_msg, user_id=user)},
                              headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
    assert press.status == 200
    apologies = [c for c in api.calls if c.method in ("sendMessage", "answerCallbackQuery")
                 and "went wrong" in str(c.params.get("text", ""))]
    assert apologies == []
    assert loud(caplog) == []
    assert [r.levelno for r in caplog.records if "refused the bot" in r.getMessage()] == [logging.INFO]


async def _raw(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


async def test_a_header_with_nul_is_a_400_and_one_info_line(tmp_path: Path, api: FakeBotAPI,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with harness(tmp_path, api, mode="webhook", webhook_url="https://bot.example/hook",
                       webhook_secret=SECRET) as h:
        runner = webhook.runner_for(webhook_app(h.bot, h.dp, h.config))  # the server `gpu-advisor run` uses
        await runner.setup()
        port = free_port()
        try:
            await web.TCPSite(runner, "127.0.0.1", port).start()
            request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Odd: a\x00b\r\nConnection: close\r\n\r\n"
            reply = await _raw(port, request)
        finally:
            await runner.cleanup()
    assert reply.split(b"\r\n")[0].endswith(b" 400 Bad Request")
    assert loud(caplog) == []
    assert [r.levelno for r in caplog.records if "malformed HTTP request" in r.getMessage()] == [logging.INFO]

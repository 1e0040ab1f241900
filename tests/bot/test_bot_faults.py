"""Faults of the Bot API in webhook mode (slow, timing out, dropped, 429, 5xx): retried with backoff,
no answer lost; and a full run's logs: JSON lines, update and chat ids, never the token or user text."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer
from bot_harness import bot_process, make_config
from fake_botapi import TOKEN, FakeBotAPI, message, sent

from bot.app import build_bot, build_dispatcher, webhook_app
from bot.metrics import Metrics
from bot.middlewares import RetryRequests
from bot.storage import SQLiteStorage

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cret_token"
HEADERS = {"X-Telegram-Bot-Api-Secret-Token": SECRET}




async def test_bot_api_faults_are_retried_and_no_answer_is_lost(tmp_path: Path, api: FakeBotAPI) -> None:
    config = make_config(api.url, tmp_path / "f.db", mode="webhook", webhook_url="https://bot.example/hook",
                         webhook_secret=SECRET)
    store = SQLiteStorage(tmp_path / "f.db")
    await store.open()
    metrics = Metrics()
    bot = build_bot(config, retry=RetryRequests(attempts=4, backoff_s=0.02, metrics=metrics))
    bot.session.timeout = 0.5  # seconds a Bot API call may take before it counts as a network error
    dp = build_dispatcher(config, store, metrics=metrics)
    update_ids = iter(range(1, 100))

    async def deliver(client: TestClient, chat_id: int) -> int:
        update = {"update_id": next(update_ids), **message("70B QLoRA on H100?", user_id=chat_id)}
        response = await client.post("/hook", json=update, headers=HEADERS)
        return response.status

    try:
        async with TestClient(TestServer(webhook_app(bot, dp, config))) as client:
            api.slow("sendMessage", 0.2)  # slow but in time: one call, no retry
            assert await deliver(client, 8001) == 200
            assert [c.status for c in sent(api, 8001)] == [200]

            api.slow("sendMessage", 1.0)  # past the timeout: the call is given up and made again
            assert await deliver(client, 8002) == 200
            # given up, not waited for: the first call still hangs (102) while the retry was answered
            assert [c.status for c in sent(api, 8002)] == [102, 200]

            api.drop("sendMessage")  # the connection dies without an answer
            assert await deliver(client, 8003) == 200
            assert [c.status for c in sent(api, 8003)] == [0, 200]

            api.fail("sendMessage", status=502, times=2)  # 5xx twice: exponential backoff, then through
            assert await deliver(client, 8004) == 200
            tries = sent(api, 8004)
            assert [c.status for c in tries] == [502, 502, 200]
            assert tries[2].at - tries[1].at >= tries[1].at - tries[0].at >= 0.015

            api.fail("sendMessage", retry_after=1, times=1)  # flood control: the wait Telegram asks for
            assert await deliver(client, 8005) == 200
            tries = sent(api, 8005)
            assert [c.status for c in tries] == [429, 200] and tries[1].at - tries[0].at >= 0.95

            # the Bot API down for longer than the retries: the update is NOT acknowledged, so Telegram
            # delivers it again later, and then it is answered
            api.fail("sendMessage", status=500, times=100)
            update = {"update_id": 500, **message("70B QLoRA on H100?", user_id=8006)}
            refused = await client.post("/hook", json=update, headers=HEADERS)
            assert refused.status == 500
            assert not [c for c in sent(api, 8006) if c.status == 200]
            api.failures.clear()
            again = await client.post("/hook", json=update, headers=HEADERS)
            assert again.status == 200
            assert [c.status for c in sent(api, 8006)][-1] == 200

            text = metrics.prometheus()
            while sent(api, 8002)[0].status == 102:
                await asyncio.sleep(0.05)
        assert [c.status for c in sent(api, 8002)] == [499, 200]  # nothing reached the gone client
        assert metrics.retries == 1 + 1 + 2 + 1 + 3
        assert f"gpu_advisor_api_retries_total {metrics.retries}" in text
        assert 'gpu_advisor_updates_total{type="message"} 7' in text
    finally:
        await bot.session.close()
        await store.close()


# ---- a full run's logs ------------------------------------------------------------------------------------


async def test_a_full_run_logs_json_lines_without_the_token_or_user_text(tmp_path: Path, api: FakeBotAPI) -> None:
    """Polling subprocess at DEBUG: an error path (sendMessage refused, the apology too), a retried 502,
    a network error (a dropped long poll), a clean stop; the token is in no line, user text in no INFO line."""
    secret_text = "70B QLoRA on H100 private-marker-4711?"
    api.fail("sendMessage", status=400, times=2)  # the first question's answer and its apology both fail
    api.drop("getUpdates", times=1)
    async with bot_process(api, tmp_path, BOT_LOG_LEVEL="DEBUG", BOT_LOG_FORMAT="json") as proc, asyncio.timeout(30):
        api.push(message(secret_text, user_id=8101))
        while len([c for c in api.calls if c.method == "sendMessage"]) < 2:
            await asyncio.sleep(0.05)
        api.fail("sendMessage", status=502, times=1)
        api.push(message(secret_text, user_id=8102))
        await api.wait_for("sendMessage", chat_id=8102, timeout=10)
    assert proc.returncode == 0
    raw = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert TOKEN not in raw and TOKEN.split(":")[1] not in raw
    lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert not [line for line in lines if line["level"] != "DEBUG" and "private-marker-4711" in json.dumps(line)]
    failed = [line for line in lines if "failed: TelegramBadRequest" in line["message"]]
    assert failed and failed[0]["level"] == "ERROR" and failed[0]["chat_id"] == 8101 and "update_id" in failed[0]
    assert any("apology failed too" in line["message"] for line in lines)
    assert any("retrying" in line["message"] and line.get("chat_id") == 8102 for line in lines)
    assert any(line["level"] in ("ERROR", "WARNING") and "NetworkError" in line["message"] for line in lines)

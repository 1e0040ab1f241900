"""Start-up against a Bot API that answers badly: getMe, getWebhookInfo, deleteWebhook and setWebhook are
retried with backoff (polling and webhook, with and without Redis), then stop the start with one line;
the webhook server itself (secret header, slow and idle connections, /metrics only where configured)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from bot_harness import bot_env, harness, make_config
from fake_botapi import KINDS, TOKEN, FakeBotAPI, message
from redis_server import RedisServer, free_port

from bot import startup, webhook
from bot.app import build_bot, build_dispatcher, register_once, webhook_app
from bot.config import BotConfig
from bot.middlewares import RetryRequests
from bot.startup import StartupError
from bot.storage import SQLiteStorage, storage_from_url

RETRIED = [k for k in KINDS if k != "not_found"]
SECRET = "s3cret_token"


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(startup, "FIRST_DELAY_S", 0.02)
    monkeypatch.setattr(startup, "MAX_DELAY_S", 0.05)
    yield


@pytest.mark.parametrize("kind", RETRIED)
async def test_polling_starts_through_bad_replies_to_getme_and_getwebhookinfo(tmp_path: Path, api: FakeBotAPI,
                                                                             kind: str) -> None:
    api.hang_s = 1.0
    api.webhook_url = "https://old.example/hook"
    api.misbehave("getMe", kind, times=6)  # more than the session's 4 attempts: the start-up retry takes over
    api.misbehave("getWebhookInfo", kind, times=6)  # given up after the session's attempts: deleteWebhook anyway
    api.misbehave("deleteWebhook", kind, times=5)
    async with harness(tmp_path, api, startup_retry_s=30) as h:
        h.bot.session.timeout = 0.1  # a hang costs this much per attempt
        async with h.polling():
            api.push(message("70B QLoRA on H100?", user_id=4001))
            [sent] = await api.wait_for("sendMessage", chat_id=4001, timeout=10)
    assert sent.params["text"].startswith("✅")
    assert api.of("getMe") and api.of("deleteWebhook") and api.webhook_url == ""


async def test_a_getme_that_keeps_failing_stops_the_start_with_one_line(tmp_path: Path, api: FakeBotAPI) -> None:
    api.misbehave("getMe", "html_502", times=1000)
    async with harness(tmp_path, api, startup_retry_s=0.3) as h:
        with pytest.raises(StartupError) as err:
            async with h.polling():
                pass
    text = str(err.value)
    assert text.startswith("getMe failed") and "BadReply: HTTP 502" in text and "\n" not in text
    assert len(text) < 300


async def test_a_method_the_server_lacks_is_not_retried_for_minutes(tmp_path: Path, api: FakeBotAPI) -> None:
    api.lacking = {"getMe"}
    async with harness(tmp_path, api, startup_retry_s=60) as h:
        with pytest.raises(StartupError) as err:
            async with h.polling():
                pass
    assert str(err.value).startswith("getMe failed: MethodMissing: HTTP 404")
    assert TOKEN not in str(err.value) and TOKEN.split(":")[1][:8] not in str(err.value)  # the 404 page quotes the URL
    assert len([c for c in api.calls if c.method == "getMe"]) == 1


async def test_a_rejected_token_is_not_retried(tmp_path: Path, api: FakeBotAPI) -> None:
    api.token = "1:other"
    async with harness(tmp_path, api, startup_retry_s=60) as h:
        with pytest.raises(Exception, match="Unauthorized"):
            async with h.polling():
                pass
    assert len(api.calls) == 1


# ---- webhook mode ---------------------------------------------------------------------------------------------


def _webhook_config(api: FakeBotAPI, tmp_path: Path, **overrides: object) -> BotConfig:
    return make_config(api.url, tmp_path / "w.db", **{"mode": "webhook", "webhook_url": "https://bot.example/tg/hook",
                                                      "webhook_secret": SECRET, "startup_retry_s": 30, **overrides})


@pytest.mark.parametrize("kind", ["html_502", "garbage", "no_ok", "odd_code", "hang"])
async def test_webhook_registration_is_retried_without_redis(tmp_path: Path, api: FakeBotAPI, kind: str) -> None:
    api.hang_s = 1.0
    api.misbehave("setWebhook", kind, times=6)
    config = _webhook_config(api, tmp_path)
    store = SQLiteStorage(tmp_path / "w.db")
    await store.open()
    bot = build_bot(config, retry=RetryRequests(attempts=2, backoff_s=0.01))
    bot.session.timeout = 0.3
    dp = build_dispatcher(config, store)
    try:
        async with TestClient(TestServer(webhook_app(bot, dp, config))) as client:
            assert (await client.get("/healthz")).status == 200
            update = {"update_id": 1, **message("70B QLoRA on H100?", user_id=4101)}
            ok = await client.post("/tg/hook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
            assert ok.status == 200
            assert await _ready(client) == "webhook registered"  # registered in the background, retries and all
        assert api.webhook_url == "https://bot.example/tg/hook"
        assert [c.params["text"][:1] for c in api.of("sendMessage")] == ["✅"]
    finally:
        await bot.session.close()
        await store.close()


@pytest.mark.parametrize("lacks_info", [False, True])
async def test_webhook_registration_is_retried_with_redis(tmp_path: Path, api: FakeBotAPI,
                                                          redis_server: RedisServer, lacks_info: bool) -> None:
    if lacks_info:
        api.lacking = {"getWebhookInfo"}
    else:
        api.misbehave("getWebhookInfo", "html_502", times=2)  # the session's 2 attempts: then set it anyway
    api.misbehave("setWebhook", "non_json", times=6)
    config = _webhook_config(api, tmp_path, storage_url=redis_server.url)
    store = storage_from_url(redis_server.url)
    await store.open()
    bot = build_bot(config, retry=RetryRequests(attempts=2, backoff_s=0.01))
    dp = build_dispatcher(config, store)
    try:
        await register_once(bot, config, dp, store.redis)  # type: ignore[attr-defined]
        assert api.webhook_url == "https://bot.example/tg/hook"
        if not lacks_info:  # the next start finds it registered (getWebhookInfo and the fingerprint): no call
            calls = len(api.calls)
            await register_once(bot, config, dp, store.redis)  # type: ignore[attr-defined]
            assert [c.method for c in api.calls[calls:]] == ["getWebhookInfo"]
    finally:
        await bot.session.close()
        await store.close()


async def test_webhook_registration_that_keeps_failing_is_one_line(tmp_path: Path, api: FakeBotAPI) -> None:
    api.misbehave("setWebhook", "html_502", times=1000)
    config = _webhook_config(api, tmp_path, startup_retry_s=0.2)
    store = SQLiteStorage(tmp_path / "w.db")
    await store.open()
    bot = build_bot(config, retry=RetryRequests(attempts=1))
    dp = build_dispatcher(config, store)
    try:
        with pytest.raises(StartupError, match=r"^setWebhook failed \d+ times in \d+ s: BadReply: HTTP 502"):
            await register_once(bot, config, dp, None)
    finally:
        await bot.session.close()
        await store.close()


async def _raw(port: int, data: bytes, read_timeout: float = 5.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), read_timeout)
    finally:
        writer.close()


async def test_webhook_server_secret_metrics_and_slow_connections(tmp_path: Path, api: FakeBotAPI,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhook, "READ_TIMEOUT_S", 0.3)
    monkeypatch.setattr(webhook, "IDLE_TIMEOUT_S", 0.3)
    config = _webhook_config(api, tmp_path)
    store = SQLiteStorage(tmp_path / "w.db")
    await store.open()
    bot = build_bot(config, retry=RetryRequests(attempts=1))
    dp = build_dispatcher(config, store)
    runner = webhook.runner_for(webhook_app(bot, dp, config))  # the server `gpu-advisor run` uses
    await runner.setup()
    port = free_port()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        body = b'{"update_id": 1}'
        # a secret header that is not ASCII: 401 like any wrong secret (was a 500 and a traceback)
        head = ("POST /tg/hook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n").encode()
        reply = await _raw(port, head + "X-Telegram-Bot-Api-Secret-Token: секрет\r\n\r\n".encode() + body)
        assert reply.startswith(b"HTTP/1.1 401")
        # /metrics is not on the public server, also not by a path that normalises to it
        for path in ("/metrics", "/healthz/../metrics", "/healthz/%2e%2e/metrics"):
            reply = await _raw(port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            assert reply.startswith(b"HTTP/1.1 404"), (path, reply[:80])
            assert b"gpu_advisor" not in reply
        # a body that does not arrive: 408 after the read deadline, nothing handled
        reply = await _raw(port, head + f"X-Telegram-Bot-Api-Secret-Token: {SECRET}\r\n\r\n".encode() + body[:5])
        assert reply.startswith(b"HTTP/1.1 408")
        # a connection that sends nothing (or only half its headers) is closed by the server
        assert await _raw(port, b"") == b""
        assert await _raw(port, b"POST /tg/hook HTTP/1.1\r\nHost:") == b""
        reply = await _raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 200")
    finally:
        await runner.cleanup()
        await bot.session.close()
        await store.close()
    assert not api.of("sendMessage")


@pytest.mark.parametrize("failure", ["html_502", "lacking"])
async def test_gpu_advisor_run_that_cannot_start_says_why_in_one_line(tmp_path: Path, api: FakeBotAPI,
                                                                     failure: str) -> None:
    if failure == "lacking":
        api.lacking = {"getMe"}  # its HTML 404 page quotes the URL, token and all
    else:
        api.misbehave("getMe", "html_502", times=10_000)
    env = bot_env(api.url, tmp_path, BOT_STARTUP_RETRY_S="1.5")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "run", cwd=tmp_path, env=env,
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    log = err.decode()
    assert proc.returncode == 1
    assert "Traceback" not in log and TOKEN not in log and TOKEN.split(":")[1][:6] not in log
    last = log.strip().splitlines()[-1]
    assert last.startswith("gpu-advisor run: getMe failed")
    assert ("MethodMissing: HTTP 404" if failure == "lacking" else "BadReply: HTTP 502") in last


async def _ready(client: TestClient) -> str:
    """Poll /readyz until it answers 200 (registration done) or the server says it failed."""
    for _ in range(500):
        reply = await client.get("/readyz")
        text = await reply.text()
        if reply.status == 200 or "failed" in text:
            return text.strip()
        await asyncio.sleep(0.02)
    raise AssertionError("never ready")


async def test_webhook_server_answers_healthz_while_registration_and_profile_calls_are_pending(
        tmp_path: Path, api: FakeBotAPI) -> None:
    api.lacking = {"setMyCommands", "setMyDescription", "setMyShortDescription"}  # a third-party emulator
    release = asyncio.Event()
    real_set_webhook = api.api_setWebhook

    async def held_set_webhook(params: dict[str, object], files: dict[str, bytes]) -> object:
        await release.wait()  # registration cannot finish until the test says so
        return await real_set_webhook(params, files)  # type: ignore[arg-type]

    api.api_setWebhook = held_set_webhook  # type: ignore[method-assign]
    config = _webhook_config(api, tmp_path)
    store = SQLiteStorage(tmp_path / "w.db")
    await store.open()
    bot = build_bot(config, retry=RetryRequests(attempts=2, backoff_s=0.01))
    dp = build_dispatcher(config, store)
    try:
        async with TestClient(TestServer(webhook_app(bot, dp, config))) as client:
            health = await client.get("/healthz")
            assert health.status == 200 and "registering" in await health.text()
            ready = await client.get("/readyz")
            assert ready.status == 503 and api.webhook_url == ""
            update = {"update_id": 7, **message("70B QLoRA on H100?", user_id=4201)}  # served before registration
            ok = await client.post("/tg/hook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
            assert ok.status == 200 and api.of("sendMessage")
            release.set()
            assert await _ready(client) == "webhook registered"
            assert "registered" in await (await client.get("/healthz")).text()
        assert api.webhook_url == "https://bot.example/tg/hook"
    finally:
        await bot.session.close()
        await store.close()


async def test_a_registration_that_fails_for_good_stops_the_server_with_one_line(
        tmp_path: Path, api: FakeBotAPI) -> None:
    api.lacking = {"setWebhook"}
    config = _webhook_config(api, tmp_path)
    store = SQLiteStorage(tmp_path / "w.db")
    await store.open()
    bot = build_bot(config, retry=RetryRequests(attempts=1))
    dp = build_dispatcher(config, store)
    try:
        with pytest.raises(StartupError, match=r"^setWebhook failed: MethodMissing"):
            await webhook.serve_app(webhook_app(bot, dp, config), "127.0.0.1", free_port())
    finally:
        await bot.session.close()
        await store.close()

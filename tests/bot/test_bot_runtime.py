"""Configuration, storage backends, start-up errors and webhook mode of the bot."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import fakeredis
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from bot_harness import make_config
from fake_botapi import TOKEN, FakeBotAPI, message
from redis_server import free_port

from bot.app import build_bot, build_dispatcher, run_polling_with_probes, webhook_app
from bot.app import main as app_main
from bot.config import ConfigError, load_config
from bot.health import check
from bot.logs import JsonFormatter, RedactingFormatter, update_context
from bot.middlewares import RetryRequests
from bot.storage import (
    QUESTION_TTL_S,
    ChatSettings,
    MemoryStorage,
    OwnPrice,
    RedisStorage,
    SQLiteStorage,
    StorageError,
    storage_from_url,
)
from engine.parse import parse

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith(("BOT_", "HF_")):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)  # no .env here


# ---- configuration ------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("clean_env")
def test_config_defaults_and_one_line_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"^BOT_TOKEN is required$"):
        load_config()
    monkeypatch.setenv("BOT_TOKEN", TOKEN)
    config = load_config()
    assert (config.mode, config.api_base_url, config.storage_url) == ("polling", "https://api.telegram.org",
                                                                      "sqlite:///gpu-advisor.db")
    assert (config.webhook_host, config.webhook_port, config.default_language, config.log_level) == \
        ("0.0.0.0", 8080, "en", "INFO")
    assert TOKEN not in repr(config)
    cases = {
        ("BOT_TOKEN", "not-a-token"): "BOT_TOKEN does not look like a BotFather token",
        ("BOT_MODE", "carrier-pigeon"): "BOT_MODE must be 'polling' or 'webhook'",
        ("BOT_STORAGE_URL", "mysql://x"): "BOT_STORAGE_URL must be sqlite:///path/to/file.db or redis://",
        ("BOT_API_BASE_URL", "ftp://x"): "BOT_API_BASE_URL must be an http(s) URL",
        ("BOT_WEBHOOK_PORT", "99999"): "BOT_WEBHOOK_PORT",
        ("BOT_DEFAULT_LANGUAGE", "de"): "BOT_DEFAULT_LANGUAGE must be 'ru' or 'en'",
        ("BOT_LOG_LEVEL", "chatty"): "BOT_LOG_LEVEL must be one of",
        ("BOT_LOG_FORMAT", "xml"): "BOT_LOG_FORMAT must be 'json' or 'text'",
        ("BOT_METRICS_PORT", "0"): "BOT_METRICS_PORT",
        ("BOT_MODE", "webhook"): "BOT_WEBHOOK_URL is required when BOT_MODE=webhook",
    }
    for (key, value), reason in cases.items():
        with monkeypatch.context() as m:
            m.setenv(key, value)
            with pytest.raises(ConfigError) as err:
                load_config()
            assert str(err.value).startswith(reason), (key, str(err.value))
            assert "\n" not in str(err.value)
    monkeypatch.setenv("BOT_MODE", "webhook")
    monkeypatch.setenv("BOT_WEBHOOK_URL", "https://bot.example/tg")
    with pytest.raises(ConfigError, match="BOT_WEBHOOK_SECRET is required"):
        load_config()
    monkeypatch.setenv("BOT_WEBHOOK_SECRET", "not a valid secret!")
    with pytest.raises(ConfigError) as err:
        load_config()
    assert "not a valid secret" not in str(err.value) and str(err.value).startswith("BOT_WEBHOOK_SECRET")
    monkeypatch.setenv("BOT_WEBHOOK_SECRET", "s3cret_token")
    assert load_config().webhook_path == "/tg"
    assert (load_config().effective_log_format, config.effective_log_format) == ("json", "text")
    monkeypatch.setenv("BOT_LOG_FORMAT", "Text")
    assert load_config().effective_log_format == "text"


@pytest.mark.usefixtures("clean_env")
def test_dot_env_file_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"BOT_TOKEN={TOKEN}\nBOT_DEFAULT_LANGUAGE=ru\n", encoding="utf-8")
    assert load_config().default_language == "ru"


def _run(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "HF_"))}
    return subprocess.run([sys.executable, "-m", "bot", "run"], env={**base, **env}, cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def test_run_exits_non_zero_with_one_line_when_config_is_missing(tmp_path: Path) -> None:
    missing = _run({"PYTHONPATH": str(ROOT)}, tmp_path)
    assert missing.returncode != 0
    assert missing.stderr.strip() == "gpu-advisor run: BOT_TOKEN is required"


@pytest.mark.usefixtures("clean_env")
def test_run_exits_non_zero_with_one_line_when_storage_is_broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    corrupt = tmp_path / "broken.db"  # a damaged file is moved aside (test_storage_faults); a path that cannot
    corrupt.mkdir()                   # be a file at all cannot be opened
    monkeypatch.setenv("BOT_TOKEN", TOKEN)
    monkeypatch.setenv("BOT_STORAGE_URL", f"sqlite:///{corrupt}")
    monkeypatch.setenv("BOT_API_BASE_URL", "http://127.0.0.1:9")  # never reached: storage fails first
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        assert app_main() == 1
    finally:
        root.handlers[:], root.level = handlers, level
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("gpu-advisor run: cannot open the settings database") and "broken.db" in err[-1]
    assert TOKEN not in "\n".join(err)


# ---- storage ---------------------------------------------------------------------------------------------


async def test_sqlite_is_wal_and_round_trips_settings(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "s.db")
    await store.open()
    assert await store.get_settings(1) == ChatSettings()
    settings = ChatSettings(language="ru", currency="RUB", tier="premium", prices={"H100 SXM": OwnPrice(value=150,
                                                                                                         currency="RUB")})
    await store.set_settings(1, settings)
    await store.set_settings(-100, ChatSettings(tier="cheapest"))
    assert await store.get_settings(1) == settings
    assert (await store.get_settings(-100)).tier == "cheapest"
    await store.close()
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_sqlite_corrupt_file_is_moved_aside_and_a_locked_one_is_a_clear_error(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"\x00garbage" * 1000)
    store = SQLiteStorage(corrupt)  # a damaged file is moved aside and a new one opened (settings are lost anyway)
    await store.open()
    try:
        assert store.moved_aside is not None and store.moved_aside.read_bytes() == b"\x00garbage" * 1000
    finally:
        await store.close()
    locked = tmp_path / "locked.db"
    holder = sqlite3.connect(locked, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StorageError, match="locked"):
            await SQLiteStorage(locked, timeout=0.2).open()
    finally:
        holder.close()


async def test_redis_backend_round_trips_with_a_ttl_on_questions() -> None:
    client = fakeredis.FakeAsyncRedis()
    store = RedisStorage("redis://localhost:6379/0", client=client)
    await store.open()
    settings = ChatSettings(currency="RUB", prices={"RTX 4090": OwnPrice(value=0.4)})
    await store.set_settings(42, settings)
    assert await store.get_settings(42) == settings
    assert await store.get_settings(43) == ChatSettings()
    request = parse("70B QLoRA на H100?")
    qid = await store.put_request(request)
    assert await store.get_request(qid) == request
    assert 0 < await client.ttl(f"gpu-advisor:q:{qid}") <= QUESTION_TTL_S
    await client.set("gpu-advisor:chat:44", b"{not json")
    assert await store.get_settings(44) == ChatSettings()  # a bad row is a fresh start, not a crash
    await store.close()


async def test_unreachable_redis_is_a_clear_error() -> None:
    store = storage_from_url("redis://:hunter2@127.0.0.1:1/0")
    with pytest.raises(StorageError) as err:
        await store.open()
    assert "cannot reach Redis at 127.0.0.1:1/0" in str(err.value) and "hunter2" not in str(err.value)


async def test_memory_storage_matches_the_interface() -> None:
    store = MemoryStorage()
    await store.open()
    await store.set_settings(1, ChatSettings(language="en"))
    assert (await store.get_settings(1)).language == "en"
    qid = await store.put_request(parse("7B lora"))
    assert (await store.get_request(qid)) == parse("7B lora")


# ---- webhook mode ---------------------------------------------------------------------------------------------


async def test_webhook_checks_the_secret_handles_before_acknowledging_and_registers_at_each_start(
        tmp_path: Path, api: FakeBotAPI) -> None:
    config = make_config(api.url, tmp_path / "w.db", mode="webhook", webhook_url="https://bot.example/tg/hook",
                         webhook_secret="s3cret_token")
    store = SQLiteStorage(tmp_path / "w.db")
    await store.open()
    for run in range(2):
        bot = build_bot(config, retry=RetryRequests(backoff_s=0.01))
        dp = build_dispatcher(config, store)
        async with TestClient(TestServer(webhook_app(bot, dp, config))) as client:
            assert (await client.get("/healthz")).status == 200
            update = {"update_id": 1 + run, **message("70B QLoRA on H100?", user_id=3001 + run)}
            refused = await client.post("/tg/hook", json=update)
            assert refused.status == 401
            wrong = await client.post("/tg/hook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "nope"})
            assert wrong.status == 401
            assert not [c for c in api.of("sendMessage") if int(c.params["chat_id"]) == 3001 + run]
            ok = await client.post("/tg/hook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "s3cret_token"})
            assert ok.status == 200
            # acknowledged only after the answer went out
            assert [c for c in api.of("sendMessage") if int(c.params["chat_id"]) == 3001 + run]
            assert (await client.get("/metrics")).status == 404  # only on BOT_METRICS_PORT (loopback)
            metrics = dp["metrics"].prometheus()
            assert 'gpu_advisor_updates_total{type="message"} 1' in metrics
            assert 'gpu_advisor_update_seconds_bucket{le="+Inf"} 1' in metrics
    # one process, no Redis to keep the secret's fingerprint: each start sets it (a rotated secret included)
    first, second = api.of("setWebhook")
    for registered in (first, second):
        assert registered.params["url"] == "https://bot.example/tg/hook"
        assert registered.params["secret_token"] == "s3cret_token"
    registered = second
    assert "message" in registered.params["allowed_updates"] and "inline_query" in registered.params["allowed_updates"]
    assert not api.of("deleteWebhook")
    await store.close()


async def test_polling_mode_serves_metrics_on_the_optional_port(tmp_path: Path, api: FakeBotAPI) -> None:
    port = free_port()
    config = make_config(api.url, tmp_path / "p.db", metrics_port=port, webhook_host="127.0.0.1")
    store = SQLiteStorage(tmp_path / "p.db")
    await store.open()
    bot = build_bot(config, retry=RetryRequests(backoff_s=0.01))
    dp = build_dispatcher(config, store)
    task = asyncio.create_task(run_polling_with_probes(bot, dp, config, handle_signals=False, polling_timeout=1,
                                                       close_bot_session=False))
    try:
        await api.wait_for("getUpdates", timeout=5)
        api.push(message("70B QLoRA on H100?", user_id=3101))
        await api.wait_for("sendMessage", chat_id=3101)
        async with TestClient(TestServer(web.Application())) as client:  # any aiohttp client session
            response = await client.session.get(f"http://127.0.0.1:{port}/metrics")
            text = await response.text()
            health = await client.session.get(f"http://127.0.0.1:{port}/healthz")
        assert response.status == 200 and health.status == 200
        assert 'gpu_advisor_updates_total{type="message"} 1' in text
        assert "# TYPE gpu_advisor_update_seconds histogram" in text and "gpu_advisor_inline_cache_total" in text
    finally:
        await dp.stop_polling()
        api.new_update.set()
        await asyncio.wait_for(task, timeout=5)
        await bot.session.close()
        await store.close()


def test_log_lines_carry_the_update_and_never_a_secret() -> None:
    secret = "s3cret_webhook_token"
    record = logging.LogRecord("aiogram", logging.WARNING, __file__, 1, "POST %s/bot%s/sendMessage (%s) failed",
                               ("http://api", TOKEN.replace(":", "%3A"), secret), None)
    token = update_context.set({"update_id": 77, "chat_id": -100})
    try:
        line = json.loads(JsonFormatter(TOKEN, None, secrets=[secret]).format(record))
        text = RedactingFormatter(TOKEN, secrets=[secret]).format(record)
    finally:
        update_context.reset(token)
    assert line["message"] == "POST http://api/bot***/sendMessage (***) failed"
    assert (line["level"], line["logger"], line["update_id"], line["chat_id"]) == ("WARNING", "aiogram", 77, -100)
    assert line["time"].endswith("+00:00")
    assert text.endswith("POST http://api/bot***/sendMessage (***) failed [update_id=77 chat_id=-100]")
    plain = logging.LogRecord("bot", logging.INFO, __file__, 1, "no update here", (), None)
    assert "update_id" not in json.loads(JsonFormatter(TOKEN, None).format(plain))


# ---- the container's health check ------------------------------------------------------------------------


async def test_health_check_follows_the_heartbeat_and_healthz(tmp_path: Path, api: FakeBotAPI) -> None:
    beat = tmp_path / "beat"
    assert not check({"BOT_HEARTBEAT_FILE": str(beat)})[0]
    config = make_config(api.url, tmp_path / "h.db")
    bot = build_bot(config, retry=RetryRequests(heartbeat=beat))
    await bot.get_me()  # a successful Bot API call touches the heartbeat
    await bot.session.close()
    assert check({"BOT_HEARTBEAT_FILE": str(beat)})[0]
    os.utime(beat, (time.time() - 600, time.time() - 600))
    assert not check({"BOT_HEARTBEAT_FILE": str(beat)})[0]

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    async with TestServer(app, host="127.0.0.1") as server:
        env = {"BOT_MODE": "webhook", "BOT_WEBHOOK_PORT": str(server.port)}
        assert (await asyncio.to_thread(check, env))[0]
    assert not (await asyncio.to_thread(check, env))[0]  # nobody listens any more


def test_compose_and_nginx_use_the_contract_names() -> None:
    """compose.yaml, its env file template and nginx.conf agree with the configuration and each other."""
    import re

    from bot.config import BotConfig

    known = {"BOT_" + name.upper() for name in BotConfig.model_fields} | {"BOT_HEARTBEAT_FILE"}
    compose = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    env = (ROOT / "deploy" / "bot.env.example").read_text(encoding="utf-8")
    nginx = (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    used = set(re.findall(r"\bBOT_[A-Z_]+\b", compose + env))
    assert used and used <= known, used - known
    assert "replicas: 3" in compose and "BOT_MODE: webhook" in compose and "redis://redis:6379/0" in compose
    assert "deploy/bot.env" in compose and "./deploy/nginx.conf" in compose
    for required in ("BOT_TOKEN=", "BOT_WEBHOOK_URL=", "BOT_WEBHOOK_SECRET="):
        assert required in env
    assert "$http_x_telegram_bot_api_secret_token" in nginx and "location = /healthz" in nginx
    assert "server bot:8080" in nginx and 'BOT_WEBHOOK_PORT: "8080"' in compose

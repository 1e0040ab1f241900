"""The real aiogram Bot and Dispatcher wired to the fake Bot API server, for the bot's tests."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fake_botapi import TOKEN, FakeBotAPI

from bot.app import build_bot, build_dispatcher, run_polling
from bot.config import BotConfig, load_config
from bot.middlewares import Metrics, RetryRequests, TokenBucket
from bot.storage import SQLiteStorage, Storage

_update_ids = itertools.count(10_000)
ROOT = Path(__file__).resolve().parents[1]


class Harness:
    def __init__(self, api: FakeBotAPI, config: BotConfig, store: Storage, bucket: TokenBucket | None = None,
                 inline_bucket: TokenBucket | None = None) -> None:
        self.api = api
        self.config = config
        self.store = store
        self.metrics = Metrics()
        self.bot = build_bot(config, retry=RetryRequests(attempts=4, backoff_s=0.02, metrics=self.metrics))
        self.dp = build_dispatcher(config, store, bucket=bucket, metrics=self.metrics, inline_bucket=inline_bucket)

    async def feed(self, update: dict[str, Any]) -> Any:
        """One update straight into the dispatcher (no polling); returns when it was handled."""
        return await asyncio.wait_for(
            self.dp.feed_raw_update(self.bot, {"update_id": next(_update_ids), **update}), timeout=10)

    @contextlib.asynccontextmanager
    async def polling(self) -> AsyncIterator[None]:
        task = asyncio.create_task(run_polling(self.bot, self.dp, handle_signals=False, polling_timeout=1,
                                               close_bot_session=False))
        try:
            await self.api.wait_for("getUpdates", timeout=5)
            yield
        finally:
            with contextlib.suppress(RuntimeError):
                await self.dp.stop_polling()
            self.api.new_update.set()  # release the long poll now rather than at its timeout
            await asyncio.wait_for(task, timeout=5)

    async def close(self) -> None:
        from bot import safe_calls

        await safe_calls.cancel_all()  # as bot.app does at shutdown: a courtesy call retrying reopens no session
        await self.bot.session.close()
        await self.store.close()


def make_config(api_url: str, db: Path, **overrides: Any) -> BotConfig:
    return load_config(**{"_env_file": None, "token": TOKEN, "api_base_url": api_url, "storage_url": f"sqlite:///{db}",
                          **overrides})


@contextlib.asynccontextmanager
async def harness(tmp_path: Path, api: FakeBotAPI, bucket: TokenBucket | None = None,
                  inline_bucket: TokenBucket | None = None, **overrides: Any) -> AsyncIterator[Harness]:
    config = make_config(api.url, tmp_path / "settings.db", **overrides)
    store = SQLiteStorage(tmp_path / "settings.db")
    await store.open()
    h = Harness(api, config, store, bucket, inline_bucket)
    try:
        yield h
    finally:
        await h.close()


def bot_env(api_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of `gpu-advisor run` against the fake API: no BOT_/HF_ variable of this machine, the Hub
    unreachable, the settings and the heartbeat under `tmp_path`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "HF_"))}
    return {**base, "PYTHONPATH": str(ROOT), "BOT_TOKEN": TOKEN, "BOT_API_BASE_URL": api_url,
            "BOT_STORAGE_URL": f"sqlite:///{tmp_path / 'run.db'}", "BOT_HEARTBEAT_FILE": str(tmp_path / "beat"),
            "HF_ENDPOINT": "http://127.0.0.1:9", **extra}


@contextlib.asynccontextmanager
async def bot_process(api: FakeBotAPI, tmp_path: Path, **env: str) -> AsyncIterator[subprocess.Popen[bytes]]:
    """`python -m bot run` against the fake API, its stderr in tmp_path/stderr.log. At the end of the block it is
    stopped with SIGTERM (its long poll released) and waited for; killed only if it does not stop. The caller
    checks `returncode` after the block."""
    with (tmp_path / "stderr.log").open("wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "bot", "run"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=stderr, env=bot_env(api.url, tmp_path, **env))
        try:
            yield proc
            proc.send_signal(signal.SIGTERM)
            api.new_update.set()
            async with asyncio.timeout(30):
                while proc.poll() is None:
                    await asyncio.sleep(0.05)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)


class Clock:
    """A clock a test moves by hand (token buckets, caches with a time to live)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

"""Shared fixtures: the fake Bot API, the bot wired to it, and a real redis-server per test (the README's
test command installs it)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from bot_harness import Harness, harness
from fake_botapi import FakeBotAPI
from redis_server import RedisServer

# Tests never reach the internet: the CLI's Hub look-up (bot/hub/cli.py) stays offline unless a test points
# HF_ENDPOINT at the fake Hub and clears this.
os.environ.setdefault("GPU_ADVISOR_OFFLINE", "1")


@pytest.fixture
async def api() -> AsyncIterator[FakeBotAPI]:
    server = FakeBotAPI()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def h(tmp_path: Path, api: FakeBotAPI) -> AsyncIterator[Harness]:
    """The real Bot and Dispatcher against the fake API (a module may override it, e.g. with a clock)."""
    async with harness(tmp_path, api) as running:
        yield running


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed: the README's test command installs it "
                    "(apt-get install redis-server)", pytrace=False)
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.stop()

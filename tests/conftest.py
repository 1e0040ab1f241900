"""Shared fixtures: a real redis-server per test (the README's test command installs it)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis_server import RedisServer


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

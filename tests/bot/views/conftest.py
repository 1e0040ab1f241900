"""The views' bot tests press many buttons in a row: the harness with a rate limit they do not reach."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from bot_harness import Harness, harness
from fake_botapi import FakeBotAPI

from bot.middlewares import TokenBucket


@pytest.fixture
async def h(tmp_path: Path, api: FakeBotAPI) -> AsyncIterator[Harness]:
    async with harness(tmp_path, api, bucket=TokenBucket(rate=100.0, burst=100)) as running:
        yield running

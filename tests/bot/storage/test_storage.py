"""SQLite storage: questions written behind the answer are readable at once and survive a restart."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from bot.storage import SQLiteStorage
from engine.parse import parse


async def test_a_question_is_readable_before_and_after_it_reaches_the_disk(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "s.db")
    await store.open()
    requests = [parse(f"{n}B QLoRA на H100") for n in (7, 13, 70)]
    ids = [await store.put_request(r) for r in requests]
    assert [await store.get_request(q) for q in ids] == requests  # from memory, whatever the writer did
    await store.close()  # flushes the writer

    again = SQLiteStorage(tmp_path / "s.db")
    await again.open()
    try:
        assert [await again.get_request(q) for q in ids] == requests  # from the file
        assert await again.get_request("000000000000") is None
    finally:
        await again.close()


async def test_hub_configs_are_kept_in_the_file_for_a_day(tmp_path: Path) -> None:
    from bot.storage import StoredConfigCache

    config = {"num_hidden_layers": 64, "hidden_size": 5120, "vocab_size": 152064}
    store = SQLiteStorage(tmp_path / "s.db")
    await store.open()
    await StoredConfigCache(store).set("Qwen/Qwen2.5-Coder-32B-Instruct", config)
    await store.close()

    again = SQLiteStorage(tmp_path / "s.db")
    await again.open()
    try:
        assert await StoredConfigCache(again).get("Qwen/Qwen2.5-Coder-32B-Instruct") == config
        assert await StoredConfigCache(again, ttl_s=0).get("Qwen/Qwen2.5-Coder-32B-Instruct") is None  # expired
        assert await StoredConfigCache(again).get("acme/unknown") is None
    finally:
        await again.close()


async def test_a_settle_queued_behind_a_slow_write_is_seen_by_the_next_read(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "s.db")
    await store.open()
    try:
        await store.accept("1:7", '{"update_id": 7}')
        execute = store._execute
        started = threading.Event()

        def slow(sql: str, params: tuple[Any, ...]) -> Any:
            started.set()
            time.sleep(0.3)  # a loaded machine: the writer thread is behind the event loop
            return execute(sql, params)

        store._execute = slow  # type: ignore[method-assign]
        await store.settle("1:7")
        assert await store.unsettled() == []
        assert started.is_set()
    finally:
        await store.close()

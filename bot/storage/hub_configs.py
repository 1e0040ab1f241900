"""Hugging Face configs kept in the SQLite settings file (the `hub_configs` table of `bot.storage.sqlite`)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from bot.hub import OK_TTL, ConfigCache, MemoryConfigCache
from bot.storage.base import StorageError
from bot.storage.sqlite import SQLiteStorage


class StoredConfigCache(ConfigCache):
    """Hugging Face configs kept in the SQLite file: a model looked up once is known after a restart too."""

    def __init__(self, storage: SQLiteStorage, ttl_s: float = OK_TTL) -> None:
        self.storage = storage
        self.ttl_s = ttl_s
        self.memory = MemoryConfigCache(ttl_s)  # while the file cannot be written

    async def get(self, model_id: str) -> dict[str, Any] | None:
        if self.storage.read_only and (found := await self.memory.get(model_id)) is not None:
            return found
        try:
            rows = self.storage._read("SELECT data, created FROM hub_configs WHERE id = ?", (model_id,))
        except StorageError as exc:
            self.storage._warn("a Hub config could not be read", exc)
            return None
        if not rows or rows[0][1] < time.time() - self.ttl_s:
            return None
        try:
            data = json.loads(rows[0][0])
        except json.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None

    async def set(self, model_id: str, data: dict[str, Any]) -> None:
        if self.storage.read_only:
            await self.memory.set(model_id, data)
            return
        try:
            await asyncio.to_thread(
                self.storage._execute,
                "INSERT INTO hub_configs (id, data, created) VALUES (?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET data = excluded.data, created = excluded.created",
                (model_id, json.dumps(data), time.time()))
        except StorageError as exc:
            self.storage._warn("a Hub config could not be stored", exc)


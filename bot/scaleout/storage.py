"""Redis-backed chat storage that keeps answering while Redis is away.

- reads of chat settings fall back to the defaults (`ChatSettings()`);
- a question behind an answer keyboard is also kept in a small in-process LRU, so the buttons of an
  answer given during an outage still work on this replica;
- writing settings during an outage raises `StorageUnavailable`: the user is told to try again
  (a setting silently kept on one replica only would be worse).

Opening is strict: an unreachable Redis at start-up is a clear start-up error (`StorageError`).
"""

from __future__ import annotations

from typing import Any

from bot.lru import LRU
from bot.scaleout.breaker import Breaker
from bot.storage import ChatSettings, RedisStorage, StorageUnavailable, question_id
from engine.schema import Request

__all__ = ["FallbackStorage", "StorageUnavailable"]

LOCAL_QUESTIONS = 4096


class FallbackStorage:
    def __init__(self, inner: RedisStorage, breaker: Breaker | None = None) -> None:
        self.inner = inner
        self.breaker = breaker or Breaker()
        self._questions: LRU[str, Request] = LRU(LOCAL_QUESTIONS)
        self._links: LRU[str, str] = LRU(LOCAL_QUESTIONS)

    @property
    def redis(self) -> Any:
        """The Redis client (after `open`), shared with the throttle, the caches and the webhook lock."""
        return self.inner.client

    async def open(self) -> None:
        await self.inner.open()

    async def close(self) -> None:
        await self.inner.close()

    async def get_settings(self, chat_id: int) -> ChatSettings:
        return await self.breaker.call(lambda: self.inner.get_settings(chat_id), ChatSettings)

    async def set_settings(self, chat_id: int, settings: ChatSettings) -> None:
        def refuse() -> bool:
            return False

        async def write() -> bool:
            await self.inner.set_settings(chat_id, settings)
            return True

        if not await self.breaker.call(write, refuse):
            raise StorageUnavailable("the settings storage is unavailable")

    def _remember(self, qid: str, request: Request) -> None:
        self._questions.put(qid, request)

    async def put_request(self, request: Request) -> str:
        qid = question_id(request)
        self._remember(qid, request)
        return await self.breaker.call(lambda: self.inner.put_request(request), lambda: qid)

    async def get_request(self, qid: str) -> Request | None:
        found = await self.breaker.call(lambda: self.inner.get_request(qid), lambda: None)
        return found if found is not None else self._questions.get(qid)

    async def set_link(self, key: str, qid: str) -> None:
        self._links.put(key, qid)
        await self.breaker.call(lambda: self.inner.set_link(key, qid), lambda: None)

    async def get_link(self, key: str) -> str | None:
        found = await self.breaker.call(lambda: self.inner.get_link(key), lambda: None)
        return found if found is not None else self._links.get(key)

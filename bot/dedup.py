"""Redelivered updates are answered once: each update id is claimed before it is handled.

Telegram delivers an update again when it was not acknowledged: a webhook reply that came too late, a
replica that sent the answer and died before its 200, a poller that stopped before confirming the offset.
`Dedup` (the outermost update middleware, outside the error guard) claims the update id first:

- not seen: claimed as "in progress", handled, then marked "done" (`DONE_TTL_S`: Telegram keeps an update a
  day at most); an error that leaves it unacknowledged (webhook mode: the Bot API kept failing) releases the
  claim, so the redelivery is handled. With Redis the claim lives `CLAIM_TTL_S` and is renewed while the
  handler works: a replica killed mid-update frees its claims within seconds;
- done: skipped (acknowledged, nothing sent);
- in progress elsewhere (another replica, or this one still working on it): waited for up to `WAIT_S` (done:
  skipped; the claim gone: handled here); still in progress then: in webhook mode refused
  (`AlreadyInProgress`: HTTP 500, Telegram delivers it again later), in polling mode skipped.

With Redis the ids are shared by every replica (`SET NX EX`), through the storage's breaker: while Redis is
away the in-process record decides (an outage degrades sharing, never answers). Without Redis the answered ids
are kept in the SQLite file too (`SQLiteSeen`): a process restarted after a crash between answering and
acknowledging skips what it already answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from aiogram import BaseMiddleware
from aiogram.types import TelegramObject, Update

from bot.metrics import Metrics
from bot.storage import KEY_PREFIX

log = logging.getLogger(__name__)

CLAIM_TTL_S = 6  # a replica that dies mid-update blocks its redelivery this long at most
RENEW_S = 2.0  # a live replica renews its claims this often
WAIT_S = 3.0
DONE_TTL_S = 24 * 3600
MAX_LOCAL = 100_000

Claim = Literal["claimed", "done", "in_progress"]


class AlreadyInProgress(Exception):
    """Webhook mode: this update is being handled elsewhere; not acknowledged now."""


class SeenUpdates(Protocol):
    async def claim(self, key: str) -> Claim: ...

    async def done(self, key: str) -> None: ...

    async def release(self, key: str) -> None: ...

    async def keep(self, key: str) -> None: ...


class LocalSeen:
    """In process: one replica's own memory (bounded, oldest out first)."""

    def __init__(self, max_items: int = MAX_LOCAL) -> None:
        self.max_items = max_items
        self._state: OrderedDict[str, str] = OrderedDict()

    async def claim(self, key: str) -> Claim:
        state = self._state.get(key)
        if state is not None:
            return "done" if state == "d" else "in_progress"
        self._state[key] = "p"
        while len(self._state) > self.max_items:
            self._state.popitem(last=False)
        return "claimed"

    async def done(self, key: str) -> None:
        self._state[key] = "d"
        self._state.move_to_end(key)

    async def release(self, key: str) -> None:
        self._state.pop(key, None)

    async def keep(self, key: str) -> None:
        return None  # nothing outlives this process


class SQLiteSeen(LocalSeen):
    """One process and its SQLite file: the ids it answered outlive a restart (`SQLiteStorage.handled`)."""

    def __init__(self, store: Any, max_items: int = MAX_LOCAL) -> None:
        super().__init__(max_items)
        self.store = store  # a SQLiteStorage

    async def claim(self, key: str) -> Claim:
        found = await super().claim(key)
        if found == "claimed" and await self.store.was_handled(key):
            await super().done(key)
            return "done"
        return found

    async def done(self, key: str) -> None:
        await super().done(key)
        await self.store.handled(key)


class RedisSeen:
    """Shared by the replicas through Redis; `LocalSeen` while Redis is away (the breaker decides)."""

    def __init__(self, store: Any, breaker: Any) -> None:
        self.store = store  # a FallbackStorage: `.redis` read at call time
        self.breaker = breaker
        self.local = LocalSeen()

    async def claim(self, key: str) -> Claim:
        redis_key = f"{KEY_PREFIX}:upd:{key}"

        async def shared() -> Claim | None:
            if await self.store.redis.set(redis_key, b"p", nx=True, ex=CLAIM_TTL_S):
                return "claimed"
            state = await self.store.redis.get(redis_key)
            if state is None:  # expired between the two calls: try once more
                ok = await self.store.redis.set(redis_key, b"p", nx=True, ex=CLAIM_TTL_S)
                return "claimed" if ok else "in_progress"
            return "done" if state == b"d" else "in_progress"

        found = await self.breaker.call(shared, lambda: None)
        local = await self.local.claim(key)  # this replica's own record too, for an outage later on
        if found == "claimed" and local == "done":
            # Redis lost its data (restarted empty, flushed, evicted): this replica answered the update, so
            # it is done, and the shared record says so again for the others
            await self.done(key)
            return "done"
        return found if found is not None else local

    async def done(self, key: str) -> None:
        async def shared() -> None:
            await self.store.redis.set(f"{KEY_PREFIX}:upd:{key}", b"d", ex=DONE_TTL_S)

        await self.local.done(key)
        await self.breaker.call(shared, lambda: None)

    async def release(self, key: str) -> None:
        async def shared() -> None:
            await self.store.redis.delete(f"{KEY_PREFIX}:upd:{key}")

        await self.local.release(key)
        await self.breaker.call(shared, lambda: None)

    async def keep(self, key: str) -> None:
        async def shared() -> None:
            await self.store.redis.expire(f"{KEY_PREFIX}:upd:{key}", CLAIM_TTL_S)

        while True:
            await asyncio.sleep(RENEW_S)
            await self.breaker.call(shared, lambda: None)


class Dedup(BaseMiddleware):
    def __init__(self, seen: SeenUpdates, metrics: Metrics, *, redeliver: bool) -> None:
        self.seen = seen
        self.metrics = metrics
        self.redeliver = redeliver  # webhook mode: an update in progress elsewhere is refused, not skipped

    async def __call__(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                       event: TelegramObject, data: dict[str, Any]) -> Any:
        if not isinstance(event, Update):
            return await handler(event, data)
        bot = data.get("bot")
        key = f"{getattr(bot, 'id', 0)}:{event.update_id}"
        claim = await self.seen.claim(key)
        deadline = time.monotonic() + WAIT_S
        while claim == "in_progress" and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            claim = await self.seen.claim(key)  # one SET NX: tells done, gone and still in progress apart
        if claim != "claimed":
            self.metrics.duplicates += 1
            if claim == "in_progress" and self.redeliver:
                log.info("update %s is being handled elsewhere; not acknowledged now", event.update_id)
                raise AlreadyInProgress(event.update_id)
            log.info("update %s was delivered again (%s); skipped", event.update_id, claim.replace("_", " "))
            return None
        keeper = asyncio.create_task(self.seen.keep(key))
        try:
            result = await handler(event, data)
        except BaseException:
            await self._stop(keeper)
            await self.seen.release(key)  # not acknowledged: the redelivery must be handled
            raise
        await self._stop(keeper)
        await self.seen.done(key)
        return result

    @staticmethod
    async def _stop(task: asyncio.Task[None]) -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

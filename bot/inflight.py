"""Polling mode loses no answer on a deploy: updates in flight are drained on SIGTERM, and updates accepted but
not answered (a SIGKILL, an out-of-memory kill) are answered after the restart.

aiogram confirms an update's offset with the next `getUpdates`, before the update is handled (each one runs as
a task), so Telegram will not deliver it again. So:

- `Inflight` (an outer update middleware, polling mode with the SQLite storage) writes each update it accepts
  to the file (`SQLiteStorage.accept`) before handling it, and settles it when the handler is done (answered,
  or failed with the apology sent);
- `drain` (a shutdown hook, before the Bot API session closes) waits up to `DRAIN_S` for the updates in
  flight, so a SIGTERM during a slow Bot API call (a 429 can ask for up to a minute) still sends the answer;
- `replay` (at start, before polling) feeds the updates a previous process accepted and never settled; the
  de-duplication (`bot.dedup`) skips those it had answered before it died.

What remains: an update killed in the few milliseconds between aiogram taking it and this middleware writing
it is lost (aiogram's polling loop gives no earlier hook).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import BaseMiddleware, Bot, Dispatcher
from aiogram.types import TelegramObject, Update

log = logging.getLogger(__name__)

DRAIN_S = 25.0  # below the usual 30 s between SIGTERM and SIGKILL (Docker, Kubernetes, systemd)


class Inflight(BaseMiddleware):
    def __init__(self, store: Any) -> None:
        self.store = store  # a SQLiteStorage: accept / settle / unsettled

    async def __call__(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                       event: TelegramObject, data: dict[str, Any]) -> Any:
        if not isinstance(event, Update):
            return await handler(event, data)
        key = f"{getattr(data.get('bot'), 'id', 0)}:{event.update_id}"
        await self.store.accept(key, event.model_dump_json(exclude_none=True))
        try:
            return await handler(event, data)
        finally:
            # a cancelled handler (the process stopping past the drain) stays unsettled: answered after restart
            if not _cancelling():
                await self.store.settle(key)


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def drain(dispatcher: Dispatcher) -> None:
    """Wait for the updates in flight (aiogram keeps their tasks) before the session closes."""
    tasks = [t for t in getattr(dispatcher, "_handle_update_tasks", ()) if not t.done()]
    if not tasks:
        return
    log.info("stopping: waiting up to %.0f s for %d update(s) in flight", DRAIN_S, len(tasks))
    _, pending = await asyncio.wait(tasks, timeout=DRAIN_S)
    if pending:
        log.warning("stopping: %d update(s) still in flight after %.0f s; they are answered after the restart",
                    len(pending), DRAIN_S)


async def replay(bot: Bot, dp: Dispatcher, store: Any) -> int:
    """Answer what a previous process accepted and never settled; the number of updates fed."""
    fed = 0
    for key, raw in await store.unsettled():
        try:
            update = json.loads(raw)
        except json.JSONDecodeError:
            await store.settle(key)
            continue
        log.info("answering update %s accepted before the last stop", update.get("update_id"))
        try:
            await dp.feed_raw_update(bot, update)
        finally:
            await store.settle(key)  # answered now, or skipped as answered before
        fed += 1
    return fed

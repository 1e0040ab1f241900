"""Inline queries are throttled too: one user typing (or a script) must not slow everyone else down.

Telegram sends an inline query per pause in typing, so the bucket is wider than the one for questions
(`INLINE_RATE` a second, bursts of `INLINE_BURST`); a refused query gets no answer at all (the client
shows nothing and asks again with the next keystroke), which costs the bot nothing. With Redis the bucket
is shared by the replicas, like the questions' one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import BaseMiddleware
from aiogram.types import InlineQuery, TelegramObject

from bot import compute
from bot.metrics import Metrics

INLINE_RATE, INLINE_BURST = 3.0, 12


class InlineThrottle(BaseMiddleware):
    def __init__(self, bucket: Any, metrics: Metrics) -> None:
        self.bucket = bucket  # `Bucket`: acquire(user_id) -> (allowed, notify, wait)
        self.metrics = metrics

    async def __call__(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                       event: TelegramObject, data: dict[str, Any]) -> Any:
        if not isinstance(event, InlineQuery):
            return await handler(event, data)
        allowed, _, _ = await self.bucket.acquire(event.from_user.id)
        if allowed:
            token = compute.ACCOUNT.set((self.bucket, event.from_user.id))  # answers charged by their cost
            try:
                return await handler(event, data)
            finally:
                compute.ACCOUNT.reset(token)
        self.metrics.throttled += 1
        return None

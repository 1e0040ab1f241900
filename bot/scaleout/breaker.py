"""A circuit breaker for Redis calls: a short timeout each, a fallback while Redis is away.

After a failed call (refused, reset, timed out) the breaker opens: for `cooldown_s` every call gets
its fallback at once without touching the network; then a single call probes Redis again (the
others keep their fallback meanwhile). One warning when an outage starts, one line when it ends:
the log is not flooded with one error per update.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.exceptions import RedisError

log = logging.getLogger(__name__)
T = TypeVar("T")

FAILURES = (RedisError, OSError, TimeoutError)  # redis' ConnectionError and TimeoutError are RedisErrors


class Breaker:
    def __init__(self, name: str = "Redis", timeout_s: float = 0.5, cooldown_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.timeout_s = timeout_s
        self.cooldown_s = cooldown_s
        self.clock = clock
        self.down = False
        self.fallbacks = 0  # calls answered by their fallback (for /metrics)
        self._retry_at = 0.0
        self._down_since = 0.0

    def _fallback(self, fallback: Callable[[], T]) -> T:
        self.fallbacks += 1
        return fallback()

    async def call(self, op: Callable[[], Awaitable[T]], fallback: Callable[[], T]) -> T:
        """`await op()` within the timeout, or `fallback()` when Redis fails or the breaker is open."""
        if self.down:
            if self.clock() < self._retry_at:
                return self._fallback(fallback)
            self._retry_at = self.clock() + self.cooldown_s  # this call probes; concurrent ones fall back
        try:
            result = await asyncio.wait_for(op(), self.timeout_s)
        except FAILURES as exc:
            self._failed(exc)
            return self._fallback(fallback)
        if self.down:
            self.down = False
            log.warning("%s is back after %.1f s: shared state again", self.name, self.clock() - self._down_since)
        return result

    def _failed(self, exc: BaseException) -> None:
        self._retry_at = self.clock() + self.cooldown_s
        if self.down:
            return
        self.down = True
        self._down_since = self.clock()
        # the exception's type only: its text may hold the URL (and so a password)
        log.warning("%s unavailable (%s): default chat settings, in-process throttling and caches until it is "
                    "back", self.name, type(exc).__name__)

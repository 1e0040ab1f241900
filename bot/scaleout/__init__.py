"""Several replicas behind a load balancer: state shared through Redis, with in-process fallbacks.

`shared_state(store)` gives the Redis-backed throttle bucket and caches when the chat storage is a
Redis one (`BOT_STORAGE_URL=redis://…`), None otherwise (one process: everything in process).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.scaleout.breaker import Breaker
from bot.scaleout.state import RedisAnswerCache, RedisConfigCache, RedisTokenBucket
from bot.scaleout.storage import FallbackStorage, StorageUnavailable

__all__ = ["Breaker", "FallbackStorage", "Shared", "StorageUnavailable", "shared_state"]


@dataclass
class Shared:
    breaker: Breaker
    bucket: RedisTokenBucket
    answer_cache: RedisAnswerCache
    hub_cache: RedisConfigCache
    inline_bucket: RedisTokenBucket


def shared_state(store: object, rate: float = 1.0, burst: int = 5, inline_rate: float = 3.0,
                 inline_burst: int = 12) -> Shared | None:
    if not isinstance(store, FallbackStorage):
        return None
    breaker = store.breaker
    return Shared(breaker, RedisTokenBucket(store, breaker, rate, burst), RedisAnswerCache(store, breaker),
                  RedisConfigCache(store, breaker), RedisTokenBucket(store, breaker, inline_rate, inline_burst, "tbi"))

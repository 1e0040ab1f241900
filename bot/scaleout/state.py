"""State that several replicas share through Redis: throttling buckets, inline answers, Hub configs.

Each falls back to its in-process twin while Redis is away (through the storage's `Breaker`), so an
outage degrades sharing, never answers.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bot import hub
from bot.handlers.inline import LRUCache
from bot.middlewares import TokenBucket
from bot.scaleout.breaker import Breaker
from bot.storage import KEY_PREFIX

# A token bucket per key in one atomic step on the Redis server, with the server's clock (replicas'
# clocks may disagree). State: a hash {tokens, ts, noticed}; it expires once it would be full again.
# Returns {allowed, first refusal of this burst, seconds until the next token (as a string)}. With ARGV[3] > 0
# it takes that many tokens unconditionally (an answer's CPU cost, `bot.compute`), down to a debt of one burst.
TOKEN_BUCKET_LUA = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) + tonumber(now_parts[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts', 'noticed')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
local noticed = tonumber(state[3]) or 0
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local allowed = 0
local notify = 0
local debit = tonumber(ARGV[3]) or 0
if debit > 0 then
  tokens = math.max(-burst, tokens - debit)
  allowed = 1
elseif tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
  noticed = 0
else
  if noticed == 0 then notify = 1 end
  noticed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now), 'noticed', noticed)
redis.call('EXPIRE', KEYS[1], math.ceil(2 * burst / rate) + 1)
local wait = 0
if tokens < 1 then wait = (1 - tokens) / rate end
return {allowed, notify, tostring(wait)}
"""


class RedisTokenBucket:
    """`TokenBucket` semantics (rate, burst, one notice per burst) shared by every replica."""

    def __init__(self, store: Any, breaker: Breaker, rate: float = 1.0, burst: int = 5, name: str = "tb") -> None:
        self.store = store  # anything with a `.redis` client (FallbackStorage), read at call time
        self.name = name  # the key space: one per bucket kind (questions, inline queries)
        self.breaker = breaker
        self.rate = rate
        self.burst = burst
        self.local = TokenBucket(rate=rate, burst=burst)
        self._script: Any = None

    async def acquire(self, key: int) -> tuple[bool, bool, float]:
        async def shared() -> tuple[bool, bool, float]:
            if self._script is None:
                self._script = self.store.redis.register_script(TOKEN_BUCKET_LUA)
            allowed, notify, wait = await self._script(keys=[f"{KEY_PREFIX}:{self.name}:{key}"],
                                                       args=[repr(self.rate), str(self.burst)])
            return bool(allowed), bool(notify), float(wait)

        def local() -> tuple[bool, bool, float]:
            allowed, notify = self.local.take(key)
            return allowed, notify, self.local.wait_s(key)

        return await self.breaker.call(shared, local)

    async def charge(self, key: int, tokens: float) -> None:
        async def shared() -> None:
            if self._script is None:
                self._script = self.store.redis.register_script(TOKEN_BUCKET_LUA)
            await self._script(keys=[f"{KEY_PREFIX}:{self.name}:{key}"],
                               args=[repr(self.rate), str(self.burst), repr(float(tokens))])

        def local() -> None:
            self.local.debit(key, tokens)

        await self.breaker.call(shared, local)


def _json(raw: bytes | None, kind: type) -> Any:
    """A cached JSON value of the expected kind; anything else (absent, foreign, corrupt) is a miss."""
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, kind) else None


def _digest(key: str) -> str:
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


class RedisAnswerCache:
    """Inline answers in Redis with a time to live; the in-process LRU while Redis is away."""

    def __init__(self, store: Any, breaker: Breaker, ttl_s: int = 600) -> None:
        self.store = store
        self.breaker = breaker
        self.ttl_s = ttl_s
        self.local = LRUCache(ttl_s=ttl_s)
        self.hits = 0
        self.misses = 0

    async def get(self, key: str) -> list[dict[str, Any]] | None:
        async def shared() -> list[dict[str, Any]] | None:
            raw = await self.store.redis.get(f"{KEY_PREFIX}:inline:{_digest(key)}")
            return _json(raw, list)

        async def local() -> list[dict[str, Any]] | None:
            return await self.local.get(key)

        found = await self.breaker.call(shared, lambda: None)
        if found is None and self.breaker.down:
            found = await local()
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    async def put(self, key: str, value: list[dict[str, Any]]) -> None:
        async def shared() -> None:
            await self.store.redis.set(f"{KEY_PREFIX}:inline:{_digest(key)}", json.dumps(value), ex=self.ttl_s)

        await self.breaker.call(shared, lambda: None)
        if self.breaker.down:
            await self.local.put(key, value)


class RedisConfigCache(hub.ConfigCache):
    """Hub config.json dicts in Redis (a day), so one replica's fetch serves all of them."""

    def __init__(self, store: Any, breaker: Breaker, ttl_s: int = int(hub.OK_TTL)) -> None:
        self.store = store
        self.breaker = breaker
        self.ttl_s = ttl_s
        self.local = hub.MemoryConfigCache(ttl=ttl_s)

    async def get(self, model_id: str) -> dict[str, Any] | None:
        async def shared() -> dict[str, Any] | None:
            return _json(await self.store.redis.get(f"{KEY_PREFIX}:hub:{model_id}"), dict)

        found = await self.breaker.call(shared, lambda: None)
        if found is None and self.breaker.down:
            return await self.local.get(model_id)
        return found

    async def set(self, model_id: str, data: dict[str, Any]) -> None:
        async def shared() -> None:
            await self.store.redis.set(f"{KEY_PREFIX}:hub:{model_id}", json.dumps(data), ex=self.ttl_s)

        await self.breaker.call(shared, lambda: None)
        if self.breaker.down:
            await self.local.set(model_id, data)

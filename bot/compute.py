"""CPU-heavy answers off the event loop, one at a time per user, charged to the user's throttle by their cost.

The engine is pure and synchronous; most answers take milliseconds, but a post-training plan can search
hundreds of arrangements (a second or more). Run on the event loop, one such question stalls every other chat,
the webhook's acknowledgements and `/healthz`. So:

- every engine call of a reply goes through `off_loop`: it runs in a small thread pool, and the loop keeps
  serving others (the interpreter switches threads every few milliseconds, `sys.getswitchinterval`);
- one user has at most one computation in flight (`PER_USER`): a flood of heavy questions from one person waits
  behind itself, never in front of everyone else's (the pool has more workers than one user can hold);
- the work a computation took (in the engine's own units, `engine.work`: one memory breakdown each) is charged
  to the user's bucket beyond `FREE_UNITS`, one token per `UNITS_PER_TOKEN`, so the throttle counts work, not
  messages. Units, not seconds, so the charge is the same on an idle machine and a loaded one. Measured
  (bench/fairness_bench.py prints them): «70B QLoRA на H100?» 46 units, full 13B plan 463, GRPO 405B 1,514,
  «GRPO 405B qlora r 4096 on H100 fp8 vllm within a day» ~23,000 (≈3 s of CPU): the last costs 22 questions.

The throttle middlewares put the user's bucket in `ACCOUNT` (a context variable) before the handler runs; a
computation outside any throttled update (the CLI, tests) is simply run.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from bot.lru import LRU
from engine.work import counted

R = TypeVar("R")

WORKERS = 4  # more than one user can hold (one each): a heavy user leaves the others workers to run on
FREE_UNITS = 1000  # what an ordinary answer takes at most (a full-fine-tuning plan search: ~500)
UNITS_PER_TOKEN = 1000  # one question token per thousand breakdowns beyond that (~0.2 s of CPU)
MAX_CHARGE = 30.0  # tokens: a single answer never puts a user more than half a minute in debt


class Chargeable(Protocol):
    async def charge(self, key: int, tokens: float) -> None: ...


ACCOUNT: contextvars.ContextVar[tuple[Chargeable, int] | None] = contextvars.ContextVar("compute_account",
                                                                                        default=None)
_pool: ThreadPoolExecutor | None = None
_locks: LRU[int, asyncio.Lock] = LRU(50_000)


def pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="answer")
    return _pool


def user_lock(user_id: int) -> asyncio.Lock:
    lock = _locks.get(user_id)
    if lock is None:
        lock = asyncio.Lock()
        _locks.put(user_id, lock)
    return lock


def charge_for(units: int) -> float:
    """Tokens charged beyond the message's own one for `units` of the engine's work."""
    return min(MAX_CHARGE, max(0.0, (units - FREE_UNITS) / UNITS_PER_TOKEN))


async def off_loop(fn: Callable[..., R], *args: Any) -> R:
    """`fn(*args)` in the answer pool, one at a time per user, its work charged to the user's bucket."""
    account = ACCOUNT.get()
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, counted, fn, *args)
    if account is None:
        result, _ = await loop.run_in_executor(pool(), call)
        return result
    bucket, user_id = account
    async with user_lock(user_id):
        result, units = await loop.run_in_executor(pool(), call)
    tokens = charge_for(units)
    if tokens > 0:
        await bucket.charge(user_id, tokens)
    return result

"""bot.lru: the one bounded, expiring mapping behind the bot's caches."""

from __future__ import annotations

from bot.lru import LRU


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_least_recently_used_item_leaves_first() -> None:
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3) and len(cache) == 2


def test_items_expire_after_the_caches_or_their_own_time_to_live() -> None:
    clock = Clock()
    cache: LRU[str, str] = LRU(10, ttl_s=5.0, clock=clock)
    cache.put("short", "x", ttl_s=1.0)
    cache.put("default", "y")
    clock.now = 2.0
    assert cache.get("short") is None and cache.get("default") == "y"
    clock.now = 6.0
    assert cache.get("default") is None and len(cache) == 0


def test_pop_takes_an_item_out() -> None:
    cache: LRU[int, str] = LRU(3)
    cache.put(1, "one")
    assert cache.pop(1) == "one" and cache.pop(1) is None and cache.get(1) is None

"""One small LRU mapping for every in-process cache of the bot: bounded, least recently used out first,
optionally expiring (a time to live for the whole cache or per item)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    def __init__(self, maxsize: int, ttl_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.maxsize = maxsize
        self.ttl_s = ttl_s
        self.clock = clock
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()  # expiry (inf: never), value

    def get(self, key: K) -> V | None:
        """The value (now the most recently used), or None when absent or expired."""
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] < self.clock():
            del self._items[key]
            return None
        self._items.move_to_end(key)
        return item[1]

    def put(self, key: K, value: V, ttl_s: float | None = None) -> None:
        ttl = ttl_s if ttl_s is not None else self.ttl_s
        self._items[key] = (self.clock() + ttl if ttl is not None else float("inf"), value)
        self._items.move_to_end(key)
        while len(self._items) > self.maxsize:
            self._items.popitem(last=False)

    def pop(self, key: K) -> V | None:
        item = self._items.pop(key, None)
        return item[1] if item is not None else None

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

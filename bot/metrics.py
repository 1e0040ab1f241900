"""Counters and a handling-time histogram, exposed in the Prometheus text format at `/metrics`.

Hand-written exposition (format 0.0.4): a handful of series, no dependency. Every replica keeps its
own figures; Prometheus scrapes each replica and sums them (`sum by (type) (...)`).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)  # seconds
PREFIX = "gpu_advisor"


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


@dataclass
class Metrics:
    """Counters for /metrics and the tests (one object shared by the dispatcher and the Bot API session)."""

    updates: Counter[str] = field(default_factory=Counter)  # by update type: message, callback_query, …
    errors: int = 0
    throttled: int = 0
    retries: int = 0
    duplicates: int = 0  # updates delivered again after they were handled (or while they were)
    inline_hits: int = 0
    inline_misses: int = 0
    started: float = field(default_factory=time.time)
    breaker: Any = None  # bot.scaleout.breaker.Breaker when a Redis backs the state: fallbacks, up/down
    _bucket_counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    _sum: float = 0.0

    def count_update(self, kind: str) -> None:
        self.updates[kind] += 1

    def observe(self, seconds: float) -> None:
        """One update's handling time."""
        self._sum += seconds
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                self._bucket_counts[i] += 1
                return
        self._bucket_counts[-1] += 1

    def inline_cache(self, hit: bool) -> None:
        if hit:
            self.inline_hits += 1
        else:
            self.inline_misses += 1

    def prometheus(self) -> str:
        out: list[str] = []

        def series(name: str, kind: str, help_: str, values: list[tuple[str, float | int]]) -> None:
            out.append(f"# HELP {PREFIX}_{name} {help_}")
            out.append(f"# TYPE {PREFIX}_{name} {kind}")
            out.extend(f"{PREFIX}_{name}{labels} {value}" for labels, value in values)

        kinds = sorted(self.updates.items()) or [("message", 0)]
        series("updates_total", "counter", "Updates received, by type.",
               [(f'{{type="{k}"}}', v) for k, v in kinds])
        cumulative, rows = 0, []
        for bound, count in zip((*BUCKETS, float("inf")), self._bucket_counts, strict=True):
            cumulative += count
            rows.append((f'_bucket{{le="{_le(bound)}"}}', cumulative))
        out.append(f"# HELP {PREFIX}_update_seconds Time to handle one update.")
        out.append(f"# TYPE {PREFIX}_update_seconds histogram")
        out.extend(f"{PREFIX}_update_seconds{labels} {value}" for labels, value in rows)
        out.append(f"{PREFIX}_update_seconds_sum {self._sum:.6f}")
        out.append(f"{PREFIX}_update_seconds_count {cumulative}")
        series("errors_total", "counter", "Updates whose handler failed.", [("", self.errors)])
        series("throttled_total", "counter", "Messages and button presses refused by throttling.",
               [("", self.throttled)])
        series("updates_duplicate_total", "counter", "Updates delivered again and not handled twice.",
               [("", self.duplicates)])
        series("inline_cache_total", "counter", "Inline answer cache lookups.",
               [('{result="hit"}', self.inline_hits), ('{result="miss"}', self.inline_misses)])
        series("api_retries_total", "counter", "Bot API calls retried (flood control, 5xx, network).",
               [("", self.retries)])
        if self.breaker is not None:
            series("redis_up", "gauge", "1 while Redis answers, 0 during an outage.",
                   [("", 0 if self.breaker.down else 1)])
            series("redis_fallbacks_total", "counter", "Redis calls answered by the in-process fallback.",
                   [("", self.breaker.fallbacks)])
        series("uptime_seconds", "gauge", "Seconds since the process started.",
               [("", round(time.time() - self.started))])
        return "\n".join(out) + "\n"

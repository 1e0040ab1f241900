"""Estimates memoised by value hand every caller its own copy: extending one result never changes the next."""

from __future__ import annotations

from engine.memo import by_value
from engine.schema import Assumption, Request


def test_a_kept_result_is_a_copy_per_caller() -> None:
    calls: list[str] = []

    @by_value(maxsize=2)
    def estimate(request: Request) -> Request:
        calls.append(request.model_dump_json())
        return request.model_copy(update={"assumed": []})

    first = estimate(Request())
    first.assumed.append(Assumption(key="sharding", value="zero3"))
    second = estimate(Request())
    assert len(calls) == 1 and second.assumed == []  # computed once, handed out clean
    estimate(Request(seq_len=4096))
    estimate(Request(seq_len=8192))
    estimate(Request())  # evicted (two kept at most): computed again
    assert len(calls) == 4

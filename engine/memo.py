"""Memoisation of the engine's pure estimates by the value of their arguments.

The planner asks for the same estimate many times over (a post-training search ranks, then costs, each option
with the same request; a bot's buttons redraw the same question): an estimate is a pure function of its request,
so it is kept by the request's JSON. Each caller gets its own deep copy of a kept pydantic result, so a caller
that extends a result's lists (assumptions, notes) never changes what the next caller gets. The cache is
bounded (least recently used out) and per process.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel

P = ParamSpec("P")
R = TypeVar("R")


def _key_part(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return (type(value).__name__, value.model_dump_json())
    if isinstance(value, list | tuple):
        return tuple(_key_part(v) for v in value)
    return value


def _copy(value: R) -> R:
    return value.model_copy(deep=True) if isinstance(value, BaseModel) else value


def by_value(maxsize: int = 2048) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A function memoised by the value of its arguments (pydantic models by their JSON); exceptions are not kept."""
    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        kept: OrderedDict[Any, R] = OrderedDict()

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            key = (tuple(_key_part(a) for a in args), tuple(sorted((k, _key_part(v)) for k, v in kwargs.items())))
            try:
                found = kept[key]
            except (KeyError, TypeError):  # TypeError: an unhashable argument, computed every time
                pass
            else:
                kept.move_to_end(key)
                return _copy(found)
            result = fn(*args, **kwargs)
            try:
                kept[key] = result
            except TypeError:
                return result
            if len(kept) > maxsize:
                kept.popitem(last=False)
            return _copy(result)

        return wrapper

    return decorate

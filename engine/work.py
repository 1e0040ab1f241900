"""How much work an answer took, in units the engine counts itself (one unit: one memory breakdown).

A caller that wants to know (the bot charges a user's throttle by it, `bot.compute`) runs the engine inside
`counted`; everyone else pays nothing but a context-variable lookup per breakdown. Units, not seconds: the
same question costs the same on a fast machine and a loaded one.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")

_units: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("engine_work_units", default=None)


def count(n: int = 1) -> None:
    box = _units.get()
    if box is not None:
        box[0] += n


def counted(fn: Callable[..., R], *args: Any) -> tuple[R, int]:
    """`fn(*args)` and the units of work it took."""
    box = [0]
    token = _units.set(box)
    try:
        return fn(*args), box[0]
    finally:
        _units.reset(token)

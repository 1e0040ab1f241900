"""Filters checked in the event loop.

aiogram runs every filter that is not a coroutine — a bare magic filter (`F.text`) included — through
`asyncio.to_thread`: a thread hop for each filter of each update. Under load those hops were a quarter
of an answer's time, so the routers wrap their magic filters in `InLoop`.
"""

from __future__ import annotations

from typing import Any

from aiogram.filters import Filter
from magic_filter import MagicFilter


class InLoop(Filter):
    def __init__(self, magic: MagicFilter) -> None:
        self.magic = magic

    async def __call__(self, event: Any) -> Any:
        return self.magic.resolve(event)

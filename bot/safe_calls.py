"""Bot API calls that must never cost the user the answer, and background tasks that never fail unseen.

- `Auxiliary` (a session middleware): the typing indicator (`sendChatAction`) and button acknowledgements
  (`answerCallbackQuery`) are courtesies. When one fails for good it is logged in one line and reported
  as done, so the handler goes on to the answer itself. Registered twice: outside the retry policy for
  callback answers (they carry a toast worth a retry), inside it for the typing indicator (one try,
  a short timeout: a stale "typing…" is worth no wait).
- `spawn(coro)`: a task kept alive until it ends, whose failure is one log line (never "Task exception
  was never retrieved" with a stack); `cancel_all()` at shutdown.
- `loop_exception_handler`: asyncio's last resort, one line through the (redacting) log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from aiogram.client.session.middlewares.base import BaseRequestMiddleware, NextRequestMiddlewareType
from aiogram.exceptions import AiogramError
from aiogram.methods import TelegramMethod
from aiogram.methods.base import Response, TelegramType

if TYPE_CHECKING:
    from aiogram import Bot

log = logging.getLogger(__name__)

TYPING_TIMEOUT_S = 2.0


class Auxiliary(BaseRequestMiddleware):
    """Calls of `methods` never raise: a failure (after whatever retries are inside) is logged and the
    call reported as done (`True`, what both methods return)."""

    def __init__(self, methods: tuple[type[TelegramMethod[Any]], ...], timeout_s: float | None = None) -> None:
        self.methods = methods
        self.timeout_s = timeout_s

    async def __call__(self, make_request: NextRequestMiddlewareType[TelegramType], bot: Bot,
                       method: TelegramMethod[TelegramType]) -> Response[TelegramType]:
        if not isinstance(method, self.methods):
            return await make_request(bot, method)
        try:
            if self.timeout_s is None:
                return await make_request(bot, method)
            return await asyncio.wait_for(make_request(bot, method), self.timeout_s)
        except (AiogramError, TimeoutError, OSError) as exc:
            log.warning("%s failed, going on without it: %s", type(method).__name__, type(exc).__name__)
            return True  # type: ignore[return-value]  # the chain returns the result, as aiogram's session does


_tasks: set[asyncio.Task[Any]] = set()


def _done(task: asyncio.Task[Any]) -> None:
    _tasks.discard(task)
    if task.cancelled():
        return
    exc = task.exception()  # retrieved: asyncio never reports it as unretrieved
    if exc is not None:
        log.warning("background task %s failed: %s", task.get_name(), type(exc).__name__)


def spawn(coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
    task = asyncio.create_task(coro, name=name)
    _tasks.add(task)
    task.add_done_callback(_done)
    return task


async def cancel_named(name: str) -> None:
    """Cancel the running background tasks called `name` and wait for them."""
    tasks = [task for task in _tasks if task.get_name() == name]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def cancel_all() -> None:
    tasks = list(_tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def loop_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    exc = context.get("exception")
    what = type(exc).__name__ if exc is not None else "no exception"
    log.error("unhandled in the event loop: %s (%s)", context.get("message", "?"), what,
              exc_info=exc if log.isEnabledFor(logging.DEBUG) else None)

"""Start-up calls to the Bot API (getMe, deleteWebhook, setWebhook): retried with backoff, then one line.

A Bot API that is down, behind a proxy that answers HTML, or restarting must not kill the bot at start
with a traceback; one that keeps failing (past `BOT_STARTUP_RETRY_S`) or refuses for good (a 400, a
method the server lacks) stops the start with a one-line `StartupError`. A rejected token is
`TelegramUnauthorizedError`, reported at once (no retry can fix it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiogram.exceptions import (
    AiogramError,
    TelegramAPIError,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRYABLE = (TelegramNetworkError, TelegramServerError, TelegramRetryAfter)  # BadReply is a server error
FIRST_DELAY_S, MAX_DELAY_S = 1.0, 10.0


class StartupError(Exception):
    """The bot cannot start; str() is one line for stderr."""


def reason(exc: BaseException) -> str:
    """One short line: the error's type and the first line of its message."""
    message = getattr(exc, "message", None) or str(exc)
    first = str(message).strip().splitlines()[0] if str(message).strip() else ""
    first = first[:160] + ("…" if len(first) > 160 else "")
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


async def essential(call: Callable[[], Awaitable[T]], what: str, deadline_s: float) -> T:
    """`await call()`, again after 1, 2, 4 … s while it fails in a way that may pass, up to `deadline_s`."""
    started = time.monotonic()
    delay, max_delay_s = FIRST_DELAY_S, MAX_DELAY_S
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except TelegramUnauthorizedError:
            raise
        except RETRYABLE as exc:
            if isinstance(exc, TelegramRetryAfter):
                delay = max(delay, float(exc.retry_after))
            elapsed = time.monotonic() - started
            if elapsed + delay > deadline_s:
                raise StartupError(f"{what} failed {attempt} time{'s' if attempt > 1 else ''} in {elapsed:.0f} s: "
                                   f"{reason(exc)}") from None
            log.warning("%s failed (%s), retrying in %.1f s", what, reason(exc), delay)
            await asyncio.sleep(delay)
            delay = min(max_delay_s, delay * 2)
        except (TelegramAPIError, AiogramError) as exc:
            raise StartupError(f"{what} failed: {reason(exc)}") from None

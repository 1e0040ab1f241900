"""Middlewares: the error guard, the chat context, per-user throttling, and the Bot API request retry policy.

- `ErrorGuard` (outer, on every update): counts and times the update, puts its id and chat id into
  the log context; an unexpected error becomes an apology to the user and one log line with the update
  id, and the update counts as handled (no redelivery loop). In webhook mode an update whose reply the
  Bot API kept refusing (network, 5xx, flood control after the retries) is NOT acknowledged (HTTP 500),
  so Telegram delivers it again; a Redis outage while saving settings gets a "try again" notice.
- `ChatContext` (outer, on messages, button presses and inline queries): the chat's settings and the
  language of the bot's own words (the chat's setting → the Telegram client's → the default) go into
  handler data once, as `settings` and `lang`; no handler reads the storage for them again.
- `Throttle` (inner, on messages and button presses): a token bucket per user, 1 question a second
  with bursts of 5 (in process, or in Redis shared by the replicas); the first refused message of a
  burst gets a short notice, the rest are dropped.
- `RetryRequests` (session): a 429 waits the `retry_after` Telegram asks for; network errors and
  5xx are retried with exponential backoff; both with a bounded number of attempts.

`Metrics` lives in `bot.metrics`, the log formatters in `bot.logs` (re-exported here).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from aiogram import BaseMiddleware
from aiogram.client.session.middlewares.base import BaseRequestMiddleware, NextRequestMiddlewareType
from aiogram.exceptions import (
    TelegramAPIError,
    TelegramBadRequest,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.methods import (
    EditMessageReplyMarkup,
    EditMessageText,
    GetUpdates,
    Response,
    SendDocument,
    SendMessage,
    SendPhoto,
    TelegramMethod,
)
from aiogram.methods.base import TelegramType
from aiogram.types import CallbackQuery, Message, TelegramObject, Update, User

from bot import compute
from bot.logs import JsonFormatter, RedactingFormatter, update_context
from bot.lru import LRU
from bot.metrics import Metrics
from bot.pipeline import client_language, resolve_language
from bot.storage import ChatSettings, StorageUnavailable
from bot.views.messages import t

if TYPE_CHECKING:
    from aiogram import Bot

__all__ = ["ChatContext", "ErrorGuard", "JsonFormatter", "Metrics", "RedactingFormatter", "RetryRequests", "Throttle",
           "TokenBucket"]

log = logging.getLogger(__name__)

Handler = Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]]
API_FAILURES = (TelegramNetworkError, TelegramServerError, TelegramRetryAfter)
# A send whose connection broke may have been delivered: retried once at most, and never answered again (no
# apology, no redelivery) once it might have been (`MAYBE_SENT`, per update). Edits are idempotent: a retried
# edit told "message is not modified" took effect the first time.
NOT_IDEMPOTENT = (SendMessage, SendPhoto, SendDocument)
EDITS = (EditMessageText, EditMessageReplyMarkup)
MAYBE_SENT: contextvars.ContextVar[bool] = contextvars.ContextVar("maybe_sent", default=False)


def _user_of(event: Update) -> User | None:
    for item in (event.message, event.callback_query, event.inline_query, event.edited_message):
        if item is not None and getattr(item, "from_user", None) is not None:
            return item.from_user
    return None


def _kind(event: Update) -> str:
    try:
        return event.event_type
    except Exception:  # an update type this aiogram does not know
        return "unknown"


def _chat_id(event: Update) -> int | None:
    for item in (event.message, event.edited_message, event.channel_post):
        if item is not None:
            return int(item.chat.id)
    query = event.callback_query
    if query is not None and query.message is not None:
        return int(query.message.chat.id)
    return None


class ErrorGuard(BaseMiddleware):
    def __init__(self, metrics: Metrics | None = None, *, redeliver: bool = False) -> None:
        self.metrics = metrics or Metrics()
        self.redeliver = redeliver  # webhook mode: an undeliverable reply leaves the update unacknowledged

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        context = None
        if isinstance(event, Update):
            self.metrics.count_update(_kind(event))
            ids = {"update_id": event.update_id}
            chat_id = _chat_id(event)
            if chat_id is not None:
                ids["chat_id"] = chat_id
            context = update_context.set(ids)
        started = time.perf_counter()
        maybe_sent = MAYBE_SENT.set(False)
        try:
            return await handler(event, data)
        except StorageUnavailable as exc:  # Redis away while saving settings (the breaker logged the outage)
            log.info("update %s: storage unavailable (%s)", getattr(event, "update_id", "?"), type(exc).__name__)
            if isinstance(event, Update):
                await self._apologize(event, data, lambda lang: t(lang, "I cannot save settings right now: please "
                                                                        "try again in a minute."))
            return None
        except TelegramForbiddenError as exc:  # blocked by the user, or out of the chat: nobody to apologise to
            log.info("update %s: the chat refused the bot (%s); nothing sent", getattr(event, "update_id", "?"),
                     type(exc).__name__)
            return None
        except Exception as exc:
            if isinstance(exc, TelegramNetworkError) and MAYBE_SENT.get():
                # acknowledged, no apology: an answer sent again (or an apology for one that arrived) is a copy
                log.warning("update %s: a reply may have been delivered before the connection broke (%s); not "
                            "sent again", getattr(event, "update_id", "?"), type(exc).__name__)
                return None
            self.metrics.errors += 1
            if self.redeliver and isinstance(exc, API_FAILURES):
                log.warning("update %s: the Bot API failed (%s); not acknowledged, Telegram will deliver it again",
                            getattr(event, "update_id", "?"), type(exc).__name__)
                raise
            # the type and the stack, never str(exc): an exception message may quote the user's text
            stack = "".join(traceback.format_tb(exc.__traceback__)).rstrip()
            log.error("update %s failed: %s\n%s", getattr(event, "update_id", "?"), type(exc).__name__, stack)
            if isinstance(event, Update):
                await self._apologize(event, data)
            return None
        finally:
            MAYBE_SENT.reset(maybe_sent)
            self.metrics.observe(time.perf_counter() - started)
            if context is not None:
                update_context.reset(context)

    @staticmethod
    async def _apologize(event: Update, data: dict[str, Any], words: Callable[[str], str] | None = None) -> None:
        bot: Bot | None = data.get("bot")
        if bot is None:
            return
        user = _user_of(event)
        default = getattr(data.get("config"), "default_language", "en")
        lang = client_language(user.language_code if user else None) or default
        text = words(lang) if words else t(lang, "Sorry, something went wrong on my side. Please try again in a "
                                                  "minute.")
        try:
            if event.message is not None:
                await bot.send_message(event.message.chat.id, text,
                                       reply_to_message_id=event.message.message_id
                                       if event.message.chat.type != "private" else None)
            elif event.callback_query is not None:
                await bot.answer_callback_query(event.callback_query.id, text=text)
            elif event.inline_query is not None:
                await bot.answer_inline_query(event.inline_query.id, results=[], cache_time=1)
        except (TelegramAPIError, TelegramNetworkError) as exc:
            log.warning("update %s: the apology failed too: %s", event.update_id, type(exc).__name__)


def chat_of(event: TelegramObject) -> tuple[int | None, User | None]:
    """The chat whose settings apply to an event, and its sender: a message's chat; a button's message's chat
    (its sender's private chat when the message is an inline one); an inline query's sender's private chat."""
    user: User | None = getattr(event, "from_user", None)
    if isinstance(event, Message):
        return event.chat.id, user
    if isinstance(event, CallbackQuery):
        if event.message is not None:
            return event.message.chat.id, user
        return (user.id if user else None), user
    return (user.id if user else None), user


class ChatContext(BaseMiddleware):
    """`settings` (the chat's ChatSettings) and `lang` (for the bot's own words) into handler data, once."""

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        chat_id, user = chat_of(event)
        store = data.get("store")
        settings = await store.get_settings(chat_id) if store is not None and chat_id is not None else ChatSettings()
        data["settings"] = settings
        default = getattr(data.get("config"), "default_language", None)
        data["lang"] = resolve_language(None, settings.language, user.language_code if user else None, default)
        return await handler(event, data)


class TokenBucket:
    """Per-key token buckets (rate tokens a second, up to `burst`), least recently used evicted."""

    def __init__(self, rate: float = 1.0, burst: int = 5, max_keys: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._buckets: LRU[int, tuple[float, float, bool]] = LRU(max_keys)  # tokens, time, noticed

    def take(self, key: int) -> tuple[bool, bool]:
        """(allowed, first refusal of this burst)."""
        now = self.clock()
        tokens, then, noticed = self._buckets.pop(key) or (float(self.burst), now, False)
        tokens = min(float(self.burst), tokens + (now - then) * self.rate)
        if tokens >= 1.0:
            result, noticed = (True, False), False
            tokens -= 1.0
        else:
            result, noticed = (False, not noticed), True
        self._buckets.put(key, (tokens, now, noticed))
        return result

    def wait_s(self, key: int) -> float:
        found = self._buckets.get(key)
        tokens = found[0] if found is not None else 1.0
        return max(0.0, (1.0 - tokens) / self.rate)

    async def acquire(self, key: int) -> tuple[bool, bool, float]:
        """(allowed, first refusal of this burst, seconds until the next token): the `Bucket` interface."""
        allowed, notify = self.take(key)
        return allowed, notify, self.wait_s(key)

    def debit(self, key: int, tokens: float) -> None:
        """Take `tokens` more (an answer's cost beyond its message), down to a debt of one burst."""
        now = self.clock()
        have, then, noticed = self._buckets.pop(key) or (float(self.burst), now, False)
        have = min(float(self.burst), have + (now - then) * self.rate)
        self._buckets.put(key, (max(-float(self.burst), have - tokens), now, noticed))

    async def charge(self, key: int, tokens: float) -> None:
        self.debit(key, tokens)


class Bucket(Protocol):
    """What the throttle needs: `TokenBucket` in process, `RedisTokenBucket` shared by replicas."""

    async def acquire(self, key: int) -> tuple[bool, bool, float]: ...

    async def charge(self, key: int, tokens: float) -> None: ...


class Throttle(BaseMiddleware):
    def __init__(self, bucket: Bucket | None = None, metrics: Metrics | None = None) -> None:
        self.bucket = bucket or TokenBucket()
        self.metrics = metrics or Metrics()

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        user = getattr(event, "from_user", None)
        if not isinstance(event, Message | CallbackQuery) or user is None:
            return await handler(event, data)
        allowed, notify, wait = await self.bucket.acquire(user.id)
        if allowed:
            token = compute.ACCOUNT.set((self.bucket, user.id))  # the answer's CPU time is charged here
            try:
                return await handler(event, data)
            finally:
                compute.ACCOUNT.reset(token)
        self.metrics.throttled += 1
        lang = data.get("lang") or client_language(user.language_code) or "en"
        seconds = max(1, round(wait))
        if isinstance(event, CallbackQuery):
            from bot.views.messages import tn

            await event.answer(tn(lang, "Too fast: wait %(n)s second, please.", "Too fast: wait %(n)s seconds, please.",
                                  seconds))
        elif notify:
            from bot.views.messages import tn

            # one notice per burst: it says that what comes before the next token is skipped, not queued
            await event.answer(tn(lang, "Too many questions at once: I will take the next one in %(n)s second; "
                                        "until then I skip them, so send it again.",
                                  "Too many questions at once: I will take the next one in %(n)s seconds; "
                                  "until then I skip them, so send it again.", seconds))
        return None


class RetryRequests(BaseRequestMiddleware):
    """Retries one Bot API call: 429 after `retry_after`, network errors and 5xx with backoff."""

    def __init__(self, attempts: int = 4, backoff_s: float = 0.5, max_backoff_s: float = 8.0,
                 max_retry_after_s: float = 60.0, metrics: Metrics | None = None,
                 heartbeat: Path | None = None) -> None:
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_retry_after_s = max_retry_after_s
        self.metrics = metrics or Metrics()
        self.heartbeat = heartbeat
        self._beat = 0.0

    def _touch(self) -> None:
        if self.heartbeat is None or time.monotonic() - self._beat < 10.0:
            return
        self._beat = time.monotonic()
        try:
            self.heartbeat.touch()
            os.utime(self.heartbeat)
        except OSError:
            pass

    async def __call__(self, make_request: NextRequestMiddlewareType[TelegramType], bot: Bot,
                       method: TelegramMethod[TelegramType]) -> Response[TelegramType]:
        if isinstance(method, GetUpdates):  # the polling loop has its own backoff; a long poll is not retried here
            response = await make_request(bot, method)  # type: ignore[arg-type]
            self._touch()
            return response
        name = type(method).__name__
        for attempt in range(1, self.attempts + 1):
            try:
                response = await make_request(bot, method)
                self._touch()
                return response
            except TelegramRetryAfter as exc:
                if attempt >= self.attempts or exc.retry_after > self.max_retry_after_s:
                    raise
                wait = float(exc.retry_after)
                log.warning("%s: flood control, retrying in %.0f s (attempt %d)", name, wait, attempt)
            except TelegramMigrateToChat as exc:  # the group became a supergroup: the answer goes there
                if attempt >= self.attempts or not hasattr(method, "chat_id"):
                    raise
                log.info("%s: the chat moved to a supergroup; sending there", name)
                method = method.model_copy(update={"chat_id": exc.migrate_to_chat_id})
                continue
            except TelegramBadRequest as exc:
                if attempt > 1 and isinstance(method, EDITS) and "not modified" in exc.message:
                    return Response[TelegramType](ok=True, result=True)  # the first one took effect
                raise
            except (TelegramNetworkError, TelegramServerError) as exc:
                ambiguous = isinstance(exc, TelegramNetworkError) and isinstance(method, NOT_IDEMPOTENT)
                if ambiguous:
                    MAYBE_SENT.set(True)
                if attempt >= (min(2, self.attempts) if ambiguous else self.attempts):
                    raise
                wait = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
                log.warning("%s: %s, retrying in %.1f s (attempt %d)", name, type(exc).__name__, wait, attempt)
            self.metrics.retries += 1
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

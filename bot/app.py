"""aiogram wiring: the Bot, the Dispatcher with its routers and middlewares, polling or webhook.

`main()` is `gpu-advisor run`: it returns 0 on a clean stop and 1 with a one-line reason on stderr
when the configuration or the storage is wrong.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
from pathlib import Path
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.client.default import DefaultBotProperties
from aiogram.client.telegram import TelegramAPIServer
from aiogram.enums import ParseMode
from aiogram.exceptions import AiogramError, TelegramAPIError, TelegramNetworkError, TelegramUnauthorizedError
from aiogram.methods import (
    AnswerCallbackQuery,
    AnswerInlineQuery,
    DeleteWebhook,
    EditMessageReplyMarkup,
    EditMessageText,
    GetChatMember,
    GetFile,
    GetMe,
    GetUpdates,
    GetWebhookInfo,
    SendChatAction,
    SendMessage,
    SendPhoto,
    SetMyCommands,
    SetMyDescription,
    SetMyShortDescription,
    SetWebhook,
)
from aiogram.methods.base import Response
from aiogram.types import BotCommand
from aiohttp import web

from bot import hub, logs, safe_calls
from bot.config import BotConfig, ConfigError, load_config
from bot.dedup import Dedup, LocalSeen, RedisSeen, SeenUpdates, SQLiteSeen
from bot.handlers import get_routers
from bot.handlers.inline import AnswerCache, LRUCache
from bot.inflight import Inflight, drain, replay
from bot.metrics import Metrics
from bot.middlewares import Bucket, ChatContext, ErrorGuard, RetryRequests, Throttle, TokenBucket
from bot.scaleout import shared_state
from bot.session import JsonSession
from bot.startup import StartupError, essential, reason
from bot.storage import SQLiteStorage, Storage, StorageError, StoredConfigCache, storage_from_url
from bot.throttling import INLINE_BURST, INLINE_RATE, InlineThrottle
from bot.views.messages import t
from bot.webhook import ensure_webhook, probes_app, register_once, run_webhook, runner_for, webhook_app

__all__ = ["build_bot", "build_dispatcher", "ensure_webhook", "main", "register_once", "run_polling", "serve",
           "webhook_app"]

log = logging.getLogger("bot")

# aiogram parses every Bot API reply as `Response[<result type>]`; pydantic keeps those generic classes
# only weakly, so after a garbage collection each is rebuilt (~3 ms). Holding them keeps them built.
RESPONSE_TYPES = tuple(Response[m.__returning__] for m in (  # type: ignore[name-defined]
    SendMessage, EditMessageText, EditMessageReplyMarkup, AnswerCallbackQuery, AnswerInlineQuery, SendPhoto,
    SendChatAction, GetMe, GetChatMember, GetFile, GetUpdates, GetWebhookInfo, SetWebhook, DeleteWebhook,
    SetMyCommands, SetMyDescription, SetMyShortDescription))

HEARTBEAT = Path(os.environ.get("BOT_HEARTBEAT_FILE", "/tmp/gpu-advisor.heartbeat"))  # a liveness file
COMMANDS = ("start", "help", "settings", "price", "vram")
RATE, BURST = 1.0, 5  # questions a second per user, and the burst allowed
POLLING_MAX_RETRY_AFTER_S, WEBHOOK_MAX_RETRY_AFTER_S = 600.0, 60.0  # the longest flood control waited out
THROTTLED = {"commands", "settings", "questions", "callbacks", "media", "configs"}


def command_descriptions(lang: str) -> list[BotCommand]:
    texts = {
        "start": t(lang, "Start and examples"),
        "help": t(lang, "What I understand"),
        "settings": t(lang, "Language, currency, price tier"),
        "price": t(lang, "Your own price per GPU-hour"),
        "vram": t(lang, "Ask in a group: /vram 70B QLoRA H100"),
    }
    return [BotCommand(command=c, description=texts[c]) for c in COMMANDS]


def build_bot(config: BotConfig, retry: RetryRequests | None = None) -> Bot:
    session = JsonSession(api=TelegramAPIServer.from_base(config.api_base_url))
    # outermost first: a callback answer is retried, then given up quietly; the typing indicator is tried once
    session.middleware(safe_calls.Auxiliary((AnswerCallbackQuery,)))
    # polling: an update's task may wait out a long flood control (nothing else waits on it); a webhook reply
    # must come within the proxy's timeout, and Telegram delivers the update again after a refusal
    wait = POLLING_MAX_RETRY_AFTER_S if config.mode == "polling" else WEBHOOK_MAX_RETRY_AFTER_S
    session.middleware(retry or RetryRequests(heartbeat=HEARTBEAT, max_retry_after_s=wait))
    session.middleware(safe_calls.Auxiliary((SendChatAction,), timeout_s=safe_calls.TYPING_TIMEOUT_S))
    return Bot(token=config.token.get_secret_value(), session=session,
               default=DefaultBotProperties(parse_mode=ParseMode.HTML))


def build_dispatcher(config: BotConfig, store: Storage, *, answer_cache: AnswerCache | None = None,
                     hub_cache: hub.ConfigCache | None = None, bucket: Bucket | None = None,
                     metrics: Metrics | None = None, inline_bucket: Bucket | None = None) -> Dispatcher:
    """The dispatcher; with a Redis storage the throttle and the caches are shared through Redis too."""
    metrics = metrics or Metrics()
    shared = shared_state(store, rate=RATE, burst=BURST, inline_rate=INLINE_RATE, inline_burst=INLINE_BURST)
    if shared is not None:
        metrics.breaker = shared.breaker
        bucket = bucket or shared.bucket
        answer_cache = answer_cache or shared.answer_cache
        hub_cache = hub_cache or shared.hub_cache
    if hub_cache is None:
        hub_cache = StoredConfigCache(store) if isinstance(store, SQLiteStorage) else hub.MemoryConfigCache()
    # no FSM: the bot keeps no conversation state in aiogram (its own storage holds questions), and aiogram's
    # FSM middleware would keep a MemoryStorage record per chat and user for ever
    dp = Dispatcher(store=store, config=config, answer_cache=answer_cache or LRUCache(), hub_cache=hub_cache,
                    metrics=metrics, disable_fsm=True)
    seen: SeenUpdates = (RedisSeen(store, shared.breaker) if shared is not None
                         else SQLiteSeen(store) if isinstance(store, SQLiteStorage) else LocalSeen())
    dp.update.outer_middleware(Dedup(seen, metrics, redeliver=config.mode == "webhook"))  # outside the guard
    if config.mode == "polling" and isinstance(store, SQLiteStorage):  # accepted updates outlive a kill
        dp.update.outer_middleware(Inflight(store))
    dp.update.outer_middleware(ErrorGuard(metrics, redeliver=config.mode == "webhook"))
    # inline queries in a wider bucket of their own (one per pause in typing), checked before any work (the
    # chat's settings are not even read for a refused one)
    inline = InlineThrottle(inline_bucket or (shared.inline_bucket if shared is not None else
                                              TokenBucket(rate=INLINE_RATE, burst=INLINE_BURST)), metrics)
    dp.inline_query.outer_middleware(inline)
    context = ChatContext()  # the chat's settings and language, read once per update
    for observer in (dp.message, dp.callback_query, dp.inline_query):
        observer.outer_middleware(context)
    # every message, button and pasted or sent file costs work (settings ones a getChatMember in groups):
    # throttled per user, and charged by the CPU time of its answer (bot.compute)
    throttle = Throttle(bucket or TokenBucket(rate=RATE, burst=BURST), metrics)
    dp["question_bucket"] = throttle.bucket  # the Mini App (web/app.py) throttles its users with the same bucket
    for router in get_routers():
        if router.name in THROTTLED:
            router.message.middleware(throttle)
            router.callback_query.middleware(throttle)
        dp.include_router(router)
    dp.startup.register(on_startup)
    dp.shutdown.register(drain)  # updates in flight are answered before the session closes
    return dp


async def set_profile(bot: Bot, default_language: str) -> None:
    """Commands, description and short description per language; a failure is logged and ignored."""
    for code in ("en", "ru", None):
        lang = code or default_language
        description = t(lang, "I tell you what GPU you need to fine-tune or serve a language model, how long it "
                              "takes and what it costs. Ask in Russian or English, for example: “70B QLoRA on "
                              "H100?”")
        short = t(lang, "What GPU a fine-tune needs, how long it takes and what it costs.")
        for name in ("setMyCommands", "setMyDescription", "setMyShortDescription"):
            try:
                if name == "setMyCommands":
                    await bot.set_my_commands(command_descriptions(lang), language_code=code)
                elif name == "setMyDescription":
                    await bot.set_my_description(description=description, language_code=code)
                else:
                    await bot.set_my_short_description(short_description=short, language_code=code)
            except (TelegramAPIError, AiogramError) as exc:
                log.warning("%s (%s) failed, ignored: %s", name, code or "default", reason(exc))


async def on_startup(bot: Bot, config: BotConfig) -> None:
    # in the background: a slow or failing profile call must not delay the first answer
    safe_calls.spawn(set_profile(bot, config.default_language), "set_profile")


async def drop_webhook_for_polling(bot: Bot, deadline_s: float) -> None:
    """Polling gets nothing while a webhook is set: remove one (getWebhookInfo first, when the server has it)."""
    try:
        info = await bot.get_webhook_info()
    except TelegramUnauthorizedError:
        raise
    except (TelegramAPIError, AiogramError) as exc:  # e.g. a server that lacks the method, or answers oddly
        log.warning("getWebhookInfo failed (%s); removing any webhook for polling", reason(exc))
        try:
            await essential(lambda: bot.delete_webhook(drop_pending_updates=False), "deleteWebhook", deadline_s)
        except StartupError as again:  # maybe no webhook to remove, on a server that lacks both
            log.warning("%s; polling anyway", again)
        return
    if info.url:
        log.info("a webhook is set; removing it for polling")
        await essential(lambda: bot.delete_webhook(drop_pending_updates=False), "deleteWebhook", deadline_s)


async def run_polling(bot: Bot, dp: Dispatcher, *, handle_signals: bool = True, polling_timeout: int = 10,
                      close_bot_session: bool = True) -> None:
    deadline_s = dp["config"].startup_retry_s
    await essential(bot.me, "getMe", deadline_s)  # aiogram's polling asks again, and gets the kept answer
    await drop_webhook_for_polling(bot, deadline_s)
    if isinstance(dp["store"], SQLiteStorage):
        await replay(bot, dp, dp["store"])  # what a killed process accepted and never answered
    await dp.start_polling(bot, allowed_updates=dp.resolve_used_update_types(), handle_signals=handle_signals,
                           close_bot_session=close_bot_session, polling_timeout=polling_timeout)


def setup_logging(config: BotConfig) -> None:
    extra = [config.webhook_secret.get_secret_value()] if config.webhook_secret else []
    if config.hf_token:
        extra.append(config.hf_token.get_secret_value())
    logs.setup_logging(config.token.get_secret_value(), config.log_level_number, config.effective_log_format, extra)


async def run_polling_with_probes(bot: Bot, dp: Dispatcher, config: BotConfig, **polling: Any) -> None:
    """Polling; with BOT_METRICS_PORT also /metrics and /healthz on that port (BOT_METRICS_HOST)."""
    if config.metrics_port is None:
        await run_polling(bot, dp, **polling)
        return
    runner = runner_for(probes_app(dp["metrics"]))
    await runner.setup()
    try:
        await web.TCPSite(runner, config.metrics_host, config.metrics_port).start()
        log.info("metrics on %s:%s/metrics", config.metrics_host, config.metrics_port)
        await run_polling(bot, dp, **polling)
    finally:
        await runner.cleanup()


def warm_up() -> None:
    """Load the catalogs, name indexes, templates and translations before the first update, then move
    everything alive now out of the garbage collector's sight: it is never freed, and scanning it again
    and again would cost every answer."""
    from bot.pipeline import render_text

    for question in ("70B QLoRA на H100?", "LoRA Llama 3.1 8B on a 4090, 8k context"):
        render_text(question)
    gc.collect()
    gc.freeze()


async def serve(config: BotConfig, store: Storage) -> None:
    asyncio.get_running_loop().set_exception_handler(safe_calls.loop_exception_handler)
    await store.open()
    metrics = Metrics()  # one object: the dispatcher's counters and the session's retries
    bot = build_bot(config, RetryRequests(heartbeat=HEARTBEAT, metrics=metrics))
    dp = build_dispatcher(config, store, metrics=metrics)
    warm_up()
    try:
        if config.mode == "webhook":
            await run_webhook(bot, dp, config)
        else:
            await run_polling_with_probes(bot, dp, config)
    finally:
        await safe_calls.cancel_all()
        await store.close()
        await bot.session.close()


def main(config: BotConfig | None = None) -> int:
    if config is None:
        try:
            config = load_config()
        except ConfigError as exc:
            sys.stderr.write(f"gpu-advisor run: {exc}\n")
            return 1
    setup_logging(config)
    try:
        store = storage_from_url(config.storage_url)
        asyncio.run(serve(config, store))
    except (StorageError, StartupError) as exc:
        sys.stderr.write(logs.redact(f"gpu-advisor run: {exc}") + "\n")
        return 1
    except TelegramUnauthorizedError:
        sys.stderr.write("gpu-advisor run: Telegram rejected BOT_TOKEN (Unauthorized)\n")
        return 1
    except TelegramNetworkError as exc:
        sys.stderr.write(logs.redact(f"gpu-advisor run: cannot reach the Bot API at {config.api_base_url}: "
                                     f"{exc.message}") + "\n")
        return 1
    except OSError as exc:  # e.g. the webhook port is taken
        sys.stderr.write(logs.redact(f"gpu-advisor run: {exc.strerror or exc}") + "\n")
        return 1
    except KeyboardInterrupt:
        return 0
    except Exception as exc:  # a bug: one line, redacted (the stack at DEBUG, through the redacting log)
        log.debug("stopped by an unexpected error", exc_info=exc)
        sys.stderr.write(logs.redact(f"gpu-advisor run: stopped by an unexpected error: {reason(exc)}") + "\n")
        return 1
    return 0

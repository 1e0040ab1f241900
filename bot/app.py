"""aiogram wiring: the Bot, the Dispatcher with its routers and middlewares, polling or webhook.

`main()` is `gpu-advisor run`: it returns 0 on a clean stop and 1 with a one-line reason on stderr
when the configuration or the storage is wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.client.default import DefaultBotProperties
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.enums import ParseMode
from aiogram.exceptions import TelegramAPIError, TelegramNetworkError, TelegramUnauthorizedError
from aiogram.types import BotCommand
from aiohttp import web

from bot import hub
from bot.config import BotConfig, ConfigError, load_config
from bot.handlers import get_routers
from bot.handlers.inline import AnswerCache, LRUCache
from bot.middlewares import ErrorGuard, Metrics, RedactingFormatter, RetryRequests, Throttle, TokenBucket
from bot.storage import Storage, StorageError, storage_from_url
from bot.views.messages import t

log = logging.getLogger("bot")

HEARTBEAT = Path(os.environ.get("BOT_HEARTBEAT_FILE", "/tmp/gpu-advisor.heartbeat"))  # a liveness file
COMMANDS = ("start", "help", "settings", "price", "vram")
THROTTLED = {"commands", "questions", "callbacks", "media"}


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
    session = AiohttpSession(api=TelegramAPIServer.from_base(config.api_base_url))
    session.middleware(retry or RetryRequests(heartbeat=HEARTBEAT))
    return Bot(token=config.token.get_secret_value(), session=session,
               default=DefaultBotProperties(parse_mode=ParseMode.HTML))


def build_dispatcher(config: BotConfig, store: Storage, *, answer_cache: AnswerCache | None = None,
                     hub_cache: hub.ConfigCache | None = None, bucket: TokenBucket | None = None,
                     metrics: Metrics | None = None) -> Dispatcher:
    metrics = metrics or Metrics()
    if hub_cache is None:
        hub_cache = make_hub_cache()
    dp = Dispatcher(store=store, config=config, answer_cache=answer_cache or LRUCache(), hub_cache=hub_cache,
                    metrics=metrics)
    dp.update.outer_middleware(ErrorGuard(metrics))
    # questions, answer buttons and files cost work: throttled; settings and inline (cached) are not
    throttle = Throttle(bucket or TokenBucket(rate=1.0, burst=5), metrics)
    for router in get_routers():
        if router.name in THROTTLED:
            router.message.middleware(throttle)
            router.callback_query.middleware(throttle)
        dp.include_router(router)
    dp.startup.register(on_startup)
    return dp


def make_hub_cache() -> hub.ConfigCache:
    return hub.MemoryConfigCache()


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
            except (TelegramAPIError, TelegramNetworkError) as exc:
                log.warning("%s (%s) failed, ignored: %s", name, code or "default", type(exc).__name__)


_background: set[asyncio.Task[Any]] = set()


async def on_startup(bot: Bot, config: BotConfig) -> None:
    # in the background: a slow or failing profile call must not delay the first answer
    task = asyncio.create_task(set_profile(bot, config.default_language))
    _background.add(task)
    task.add_done_callback(_background.discard)


async def ensure_webhook(bot: Bot, config: BotConfig, dp: Dispatcher) -> None:
    """Register the webhook only when Telegram has another URL (replicas must not fight over it)."""
    url = config.webhook_url or ""
    try:
        info = await bot.get_webhook_info()
        current = info.url
    except (TelegramAPIError, TelegramNetworkError) as exc:
        log.warning("getWebhookInfo failed (%s); setting the webhook", type(exc).__name__)
        current = None
    if current == url:
        log.info("webhook already registered")
        return
    await bot.set_webhook(url, secret_token=config.webhook_secret.get_secret_value() if config.webhook_secret else None,
                          allowed_updates=dp.resolve_used_update_types(), drop_pending_updates=False)
    log.info("webhook registered")


async def run_polling(bot: Bot, dp: Dispatcher, *, handle_signals: bool = True, polling_timeout: int = 10,
                      close_bot_session: bool = True) -> None:
    try:
        info = await bot.get_webhook_info()
        if info.url:
            log.info("a webhook is set; removing it for polling")
            await bot.delete_webhook(drop_pending_updates=False)
    except (TelegramAPIError, TelegramNetworkError) as exc:
        if isinstance(exc, TelegramUnauthorizedError):
            raise
        log.warning("webhook check failed: %s", type(exc).__name__)
    await dp.start_polling(bot, allowed_updates=dp.resolve_used_update_types(), handle_signals=handle_signals,
                           close_bot_session=close_bot_session, polling_timeout=polling_timeout)


def webhook_app(bot: Bot, dp: Dispatcher, config: BotConfig) -> web.Application:
    from aiogram.webhook.aiohttp_server import SimpleRequestHandler, setup_application

    app = web.Application()
    ready = {"ok": False}
    metrics: Metrics = dp["metrics"]

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n" if ready["ok"] else "starting\n", status=200 if ready["ok"] else 503)

    async def metrics_view(_: web.Request) -> web.Response:
        return web.Response(text=metrics.prometheus(), content_type="text/plain")

    async def register(_: web.Application) -> None:
        await ensure_webhook(bot, config, dp)
        ready["ok"] = True

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_view)
    # handle_in_background=False: Telegram gets its 200 only after the update was handled
    secret = config.webhook_secret.get_secret_value() if config.webhook_secret else None
    SimpleRequestHandler(dp, bot, handle_in_background=False, secret_token=secret).register(
        app, path=config.webhook_path)
    setup_application(app, dp, bot=bot)
    app.on_startup.append(register)  # after the dispatcher's own start-up; the webhook is never deleted
    return app


async def run_webhook(bot: Bot, dp: Dispatcher, config: BotConfig) -> None:
    app = webhook_app(bot, dp, config)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, config.webhook_host, config.webhook_port)
    await site.start()
    log.info("webhook server on %s:%s%s", config.webhook_host, config.webhook_port, config.webhook_path)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def setup_logging(config: BotConfig) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter(config.token.get_secret_value(),
                                            "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(config.log_level_number)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


async def serve(config: BotConfig, store: Storage) -> None:
    await store.open()
    bot = build_bot(config)
    dp = build_dispatcher(config, store)
    try:
        if config.mode == "webhook":
            await run_webhook(bot, dp, config)
        else:
            await run_polling(bot, dp)
    finally:
        for task in list(_background):
            task.cancel()
        await asyncio.gather(*_background, return_exceptions=True)
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
    except StorageError as exc:
        sys.stderr.write(f"gpu-advisor run: {exc}\n")
        return 1
    except TelegramUnauthorizedError:
        sys.stderr.write("gpu-advisor run: Telegram rejected BOT_TOKEN (Unauthorized)\n")
        return 1
    except TelegramNetworkError as exc:
        sys.stderr.write(f"gpu-advisor run: cannot reach the Bot API at {config.api_base_url}: "
                         f"{exc.message.replace(config.token.get_secret_value(), '***')}\n")
        return 1
    except OSError as exc:  # e.g. the webhook port is taken
        sys.stderr.write(f"gpu-advisor run: {exc.strerror or exc}\n")
        return 1
    except KeyboardInterrupt:
        return 0
    return 0

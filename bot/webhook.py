"""Webhook mode: the aiohttp server (updates, /healthz, /metrics) and registering the webhook once.

Registration. Every replica starts the same way, so each may be the one to register, but only one
does at a time: with Redis, a lock (`SET NX EX`) lets one replica call `getWebhookInfo` and, only when
Telegram's webhook differs (another URL or update types, or a secret other than the one last
registered: its SHA-256 fingerprint is kept in Redis), `setWebhook`; the others wait for the lock or
for the fingerprint. Without Redis (one process) the `getWebhookInfo` check alone decides. The webhook
is never deleted on shutdown: a replica going away must not stop the others' traffic. setWebhook is
retried with backoff (`bot.startup.essential`); getWebhookInfo failing (a server that lacks it) only
means setting the webhook again.

Start-up. The server listens as soon as its routes are set up: registering the webhook (with its retries) runs
in the background, like the profile calls (setMyCommands …). `/healthz` is liveness: 200 while the process
serves, its body says whether the webhook is registered yet; `/readyz` is readiness: 200 once it is, 503 before.
A registration that fails for good (past `BOT_STARTUP_RETRY_S`, a method the server lacks, a rejected token)
stops the server, and `gpu-advisor run` exits 1 with the one-line reason, as before it listened.

The server: the webhook path, `/healthz` and `/readyz` only (`/metrics` is served on `BOT_METRICS_PORT`, on
loopback unless `BOT_METRICS_HOST` says otherwise); a secret header that is not ASCII is a 401 like any
wrong one; a request body must arrive within `READ_TIMEOUT_S` (else 408) and a connection that sends
nothing is closed after `IDLE_TIMEOUT_S`; a failure while handling is one log line and a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
import signal
import time
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.exceptions import AiogramError, TelegramAPIError, TelegramUnauthorizedError
from aiogram.methods import TelegramMethod
from aiogram.types import Update
from aiogram.webhook.aiohttp_server import SimpleRequestHandler
from aiohttp import web
from pydantic import ValidationError

from bot import safe_calls
from bot.config import BotConfig
from bot.dedup import AlreadyInProgress
from bot.logs import quiet_expected
from bot.metrics import Metrics
from bot.startup import StartupError, essential, reason
from bot.storage import KEY_PREFIX

log = logging.getLogger(__name__)

LOCK_KEY = f"{KEY_PREFIX}:webhook:lock"
FINGERPRINT_KEY = f"{KEY_PREFIX}:webhook:fingerprint"
LOCK_TTL_S = 30  # a replica that dies holding the lock blocks the others this long at most
WAIT_S = 40.0
READ_TIMEOUT_S = 10.0  # for a request's body once its headers arrived (an update is a few kilobytes)
IDLE_TIMEOUT_S = 75.0  # a connection with no request (also one whose headers trickle in) is closed
RELEASE_LUA = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"


def fingerprint(url: str, secret: str | None, allowed: list[str]) -> str:
    raw = json.dumps([url, secret or "", sorted(allowed)])
    return hashlib.sha256(raw.encode()).hexdigest()


async def ensure_webhook(bot: Bot, config: BotConfig, dp: Dispatcher, known: str | None = None) -> bool:
    """setWebhook unless Telegram already has this URL and these update types (and, when `known` is
    given, this fingerprint); True when it was called."""
    url = config.webhook_url or ""
    secret = config.webhook_secret.get_secret_value() if config.webhook_secret else None
    allowed = dp.resolve_used_update_types()
    try:
        info = await bot.get_webhook_info()
        same = info.url == url and (info.allowed_updates is None or set(info.allowed_updates) == set(allowed))
    except (TelegramAPIError, AiogramError) as exc:
        if isinstance(exc, TelegramUnauthorizedError):
            raise
        log.warning("getWebhookInfo failed (%s); setting the webhook", reason(exc))
        same = False
    if same and (known is None or known == fingerprint(url, secret, allowed)):
        log.info("webhook already registered")
        return False
    await _set_webhook(bot, config, allowed)
    return True


async def _set_webhook(bot: Bot, config: BotConfig, allowed: list[str]) -> None:
    secret = config.webhook_secret.get_secret_value() if config.webhook_secret else None
    await essential(lambda: bot.set_webhook(config.webhook_url or "", secret_token=secret, allowed_updates=allowed,
                                            drop_pending_updates=False), "setWebhook", config.startup_retry_s)
    log.info("webhook registered")


async def register_once(bot: Bot, config: BotConfig, dp: Dispatcher, redis: Any | None = None,
                        wait_s: float = WAIT_S) -> None:
    """`ensure_webhook`, by one replica at a time when they share a Redis."""
    if redis is None:
        # One process, nowhere to keep the secret's fingerprint, and getWebhookInfo does not show the secret:
        # set it at every start (idempotent), or a rotated secret would leave the bot deaf.
        await _set_webhook(bot, config, dp.resolve_used_update_types())
        return
    from redis.exceptions import RedisError

    secret = config.webhook_secret.get_secret_value() if config.webhook_secret else None
    wanted = fingerprint(config.webhook_url or "", secret, dp.resolve_used_update_types())
    me = secrets.token_hex(8)
    deadline = time.monotonic() + wait_s
    try:
        while True:
            if await redis.set(LOCK_KEY, me, nx=True, ex=LOCK_TTL_S):
                try:
                    known = await redis.get(FINGERPRINT_KEY)
                    await ensure_webhook(bot, config, dp, known.decode() if known else "")
                    await redis.set(FINGERPRINT_KEY, wanted)
                finally:
                    await redis.eval(RELEASE_LUA, 1, LOCK_KEY, me)
                return
            known = await redis.get(FINGERPRINT_KEY)
            if known is not None and known.decode() == wanted:
                log.info("webhook registered by another replica")
                return
            if time.monotonic() > deadline:
                log.warning("webhook lock still held after %.0f s; going on without registering", wait_s)
                return
            await asyncio.sleep(0.1)
    except RedisError as exc:  # checked at start-up, so rare: fall back to the getWebhookInfo check
        log.warning("webhook lock unavailable (%s); checking the webhook directly", type(exc).__name__)
        await ensure_webhook(bot, config, dp)


class Registration:
    """Where registering the webhook stands: `done` once Telegram has it; `failed` when it failed for good."""

    def __init__(self) -> None:
        self.done = False
        self.failed: BaseException | None = None
        self.stop = asyncio.Event()  # set when the server must stop (the registration failed for good)

    def state(self) -> str:
        return "registered" if self.done else "failed" if self.failed is not None else "registering"


REGISTRATION = web.AppKey("registration", Registration)


def _healthz(app: web.Application, registration: Registration | None) -> None:
    """/healthz (alive: 200 while serving) and, with a webhook to register, /readyz (200 once registered)."""
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n" if registration is None else f"ok, webhook {registration.state()}\n")

    async def readyz(_: web.Request) -> web.Response:
        assert registration is not None
        return web.Response(text=f"webhook {registration.state()}\n", status=200 if registration.done else 503)

    app.router.add_get("/healthz", healthz)
    if registration is not None:
        app.router.add_get("/readyz", readyz)


class SecretCheckedHandler(SimpleRequestHandler):
    """aiogram's handler, comparing the secret header as bytes (`secrets.compare_digest` raises TypeError for a
    non-ASCII str: a 500 and a traceback for every such request), and acknowledging a body that is no update
    (not UTF-8, not JSON, nested past the parser's depth, a number past Python's digit limit, `{}`, `[1, 2]`)
    with one log line: a 500 would make Telegram deliver it again forever."""

    async def _handle_request(self, bot: Bot, request: web.Request) -> web.Response:
        update = poison_or_update(await request.read(), bot)
        if isinstance(update, str):
            log.warning("webhook: a body that is no update (%s); acknowledged and dropped", update)
            return web.json_response({})
        result: TelegramMethod[Any] | None = await self.dispatcher.feed_webhook_update(bot, update, **self.data)
        return web.Response(body=self._build_response_writer(bot=bot, result=result))

    def verify_secret(self, telegram_secret_token: str, bot: Bot) -> bool:
        if not self.secret_token:
            return True
        given = telegram_secret_token.encode("utf-8", "surrogateescape")
        return secrets.compare_digest(given, self.secret_token.encode())


def poison_or_update(body: bytes, bot: Bot) -> Update | str:
    """The update a webhook body holds, or why it holds none (a short reason for the log, never the body)."""
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8"
    except RecursionError:
        return "JSON nested too deep"
    except ValueError as exc:  # JSONDecodeError, or an integer past sys.get_int_max_str_digits()
        return "not JSON" if isinstance(exc, json.JSONDecodeError) else "a number too long"
    if not isinstance(data, dict):
        return f"JSON {type(data).__name__}, not an object"
    try:
        return Update.model_validate(data, context={"bot": bot})
    except ValidationError as exc:
        fields = sorted({".".join(str(x) for x in e["loc"][:2]) or "update" for e in exc.errors()})[:3]
        return "not a Telegram update: " + ", ".join(fields)
    except (RecursionError, ValueError, TypeError) as exc:
        return f"not a Telegram update ({type(exc).__name__})"


# Raised through the webhook on purpose (Telegram delivers the update again); already logged where they arise.
EXPECTED = (AlreadyInProgress, TelegramAPIError, AiogramError)


@web.middleware
async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
    """A deadline for the body; a failure while handling is one line and a 500 (Telegram delivers again)."""
    if request.can_read_body:
        try:
            await asyncio.wait_for(request.read(), READ_TIMEOUT_S)  # kept: the handler reads it again for free
        except TimeoutError:
            response = web.Response(status=408, text="request body too slow\n")
            response.force_close()
            await response.prepare(request)
            await response.write_eof()
            if request.transport is not None:
                request.transport.close()  # after the 408 is out; no lingering for the rest of a body that trickles
            return response
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except Exception as exc:
        level = logging.DEBUG if isinstance(exc, EXPECTED) else logging.WARNING  # one line per problem
        log.log(level, "%s %s: %s; answered 500", request.method, request.path, reason(exc))
        return web.Response(status=500, text="not handled, deliver again\n")


def webhook_app(bot: Bot, dp: Dispatcher, config: BotConfig) -> web.Application:
    from aiogram.webhook.aiohttp_server import setup_application

    quiet_expected()
    app = web.Application(client_max_size=1024 * 1024, middlewares=[guard])
    registration = Registration()
    app[REGISTRATION] = registration
    _healthz(app, registration)

    async def register_in_background() -> None:
        try:
            await register_once(bot, config, dp, getattr(dp["store"], "redis", None))
        except (StartupError, TelegramUnauthorizedError) as exc:
            registration.failed = exc
            log.error("%s; stopping", exc if isinstance(exc, StartupError) else "Telegram rejected BOT_TOKEN")
            registration.stop.set()
            return
        registration.done = True

    async def register(_: web.Application) -> None:
        safe_calls.spawn(register_in_background(), "register_webhook")

    # handle_in_background=False: Telegram gets its 200 only after the update was handled
    secret = config.webhook_secret.get_secret_value() if config.webhook_secret else None
    SecretCheckedHandler(dp, bot, handle_in_background=False, secret_token=secret).register(
        app, path=config.webhook_path)
    setup_application(app, dp, bot=bot)
    if config.webapp_url:  # the Mini App under /app on the same server (web/app.py)
        from web.app import mount_for_bot

        mount_for_bot(app, bot, dp, config)
    app.on_startup.append(register)  # after the dispatcher's own start-up; the webhook is never deleted
    app.on_cleanup.append(lambda _: safe_calls.cancel_named("register_webhook"))
    return app


def probes_app(metrics: Metrics) -> web.Application:
    """The side server on BOT_METRICS_PORT (both modes): /metrics and /healthz."""
    async def metrics_view(_: web.Request) -> web.Response:
        return web.Response(text=metrics.prometheus(), content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})

    quiet_expected()
    app = web.Application(middlewares=[guard])
    _healthz(app, None)
    app.router.add_get("/metrics", metrics_view)
    return app


def runner_for(app: web.Application) -> web.AppRunner:
    return web.AppRunner(app, access_log=None, keepalive_timeout=IDLE_TIMEOUT_S)


async def serve_app(app: web.Application, host: str, port: int, stop: asyncio.Event | None = None,
                    metrics: Metrics | None = None, config: BotConfig | None = None) -> None:
    """Serve `app` until SIGINT/SIGTERM (or `stop`); with `config.metrics_port` also `probes_app`."""
    runner = runner_for(app)
    await runner.setup()
    side = runner_for(probes_app(metrics)) if metrics is not None and config and config.metrics_port else None
    try:
        await web.TCPSite(runner, host, port).start()
        if side is not None and config is not None:
            await side.setup()
            await web.TCPSite(side, config.metrics_host, config.metrics_port).start()
            log.info("metrics on %s:%s/metrics", config.metrics_host, config.metrics_port)
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        registration = app.get(REGISTRATION)
        waits = [asyncio.ensure_future(stop.wait())]
        if registration is not None:
            waits.append(asyncio.ensure_future(registration.stop.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        if registration is not None and registration.failed is not None:
            raise registration.failed
    finally:
        if side is not None:
            await side.cleanup()
        await runner.cleanup()


async def run_webhook(bot: Bot, dp: Dispatcher, config: BotConfig) -> None:
    log.info("webhook server on %s:%s%s (registering the webhook in the background)", config.webhook_host,
             config.webhook_port, config.webhook_path)
    await serve_app(webhook_app(bot, dp, config), config.webhook_host, config.webhook_port, metrics=dp["metrics"],
                    config=config)

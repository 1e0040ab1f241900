"""The Mini App's HTTP side: the page and its JSON routes, an aiohttp sub-application mounted under `/app` on the
webhook server (bot/webhook.py) or served alone by `gpu-advisor web`.

Every `/app/api/*` POST is refused before any engine work unless it carries a valid Telegram `initData`
(web/initdata.py) in the `X-Telegram-Init-Data` header: 401 with a JSON error. Then the chat's own per-user
throttle (bot/middlewares.TokenBucket at bot/app.py's RATE and BURST, or the Redis one the replicas share): 429
with `retry_after`. Bodies over MAX_BODY are 413, a body that is not a JSON object 400. The engine runs in a
worker thread so the event loop keeps serving the webhook and other users."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from bot.middlewares import Bucket, TokenBucket
from bot.storage import Storage
from web.initdata import InitDataError, WebAppUser, validate

log = logging.getLogger(__name__)

PREFIX = "/app"
MAX_BODY = 64 * 1024
MAX_TEXT = 4096  # a question longer than a Telegram message is not one
TELEGRAM_JS = "https://telegram.org/js/telegram-web-app.js"
STATIC = ("app.js", "app.css")
INIT_HEADER = "X-Telegram-Init-Data"


Sender = Callable[[str, str, str], Awaitable[None]]  # (query_id, title, Telegram HTML)


@dataclass
class Deps:
    token: str
    store: Storage
    bucket: Bucket
    telegram_js: str = TELEGRAM_JS
    bot_username: str | None = None  # for t.me/<bot>?startapp=<id> share links
    dev: bool = False  # `gpu-advisor web --dev-token`: /app/api/dev-init-data signs a test initData
    send: Sender | None = None  # answerWebAppQuery through the bot (the webhook server has one)


DEPS = web.AppKey("webapp_deps", Deps)


def error(status: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"error": message, **extra}, status=status, headers={"Cache-Control": "no-store"})


def static_text(name: str) -> str:
    return resources.files("web").joinpath("static", name).read_text("utf-8")


async def page(request: web.Request) -> web.Response:
    deps = request.app[DEPS]
    html = static_text("index.html").replace("{{TELEGRAM_JS}}", deps.telegram_js)
    return web.Response(text=html, content_type="text/html", charset="utf-8",
                        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"})


async def static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC:
        raise web.HTTPNotFound()
    kind = "application/javascript" if name.endswith(".js") else "text/css"
    return web.Response(text=static_text(name), content_type=kind, charset="utf-8",
                        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"})


async def catalog(_: web.Request) -> web.Response:
    from web.choices import catalog_json

    return web.json_response(catalog_json(), headers={"Cache-Control": "max-age=300"})


async def authorized(request: web.Request) -> WebAppUser | web.Response:
    """The user of a valid initData within the throttle, else the 401/429 response."""
    deps = request.app[DEPS]
    try:
        user = validate(request.headers.get(INIT_HEADER), deps.token)
    except InitDataError as exc:
        return error(401, str(exc))
    allowed, _notify, wait = await deps.bucket.acquire(user.id)
    if not allowed:
        return error(429, "too many requests: wait a moment", retry_after=round(max(wait, 0.1), 2))
    return user


async def body_json(request: web.Request) -> dict[str, Any] | web.Response:
    if request.content_length is not None and request.content_length > MAX_BODY:
        return error(413, f"body over {MAX_BODY // 1024} KB")
    try:
        raw = await request.read()  # the server's own limit (1 MB) refuses more first; already read under the guard
    except web.HTTPRequestEntityTooLarge:
        return error(413, f"body over {MAX_BODY // 1024} KB")
    if len(raw) > MAX_BODY:
        return error(413, f"body over {MAX_BODY // 1024} KB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return error(400, "body is not valid JSON")
    if not isinstance(data, dict):
        return error(400, "body must be a JSON object")
    return data


def language(data: dict[str, Any], user: WebAppUser) -> str:
    from bot.answers import client_language

    lang = data.get("lang")
    return lang if lang in ("ru", "en") else client_language(user.language_code) or "en"


async def the_request(data: dict[str, Any], store: Storage) -> Any:
    """The Request a body names: `request` (CONTRACT.md's JSON), `text` (a question) or `qid` (a stored one);
    a str is the reason it cannot."""
    from engine.parse import parse
    from engine.schema import Request

    if isinstance(data.get("request"), dict):
        try:
            return Request.model_validate(data["request"])
        except ValidationError as exc:
            from engine.contract import validation_reason

            return validation_reason(exc)
    if isinstance(data.get("text"), str):
        text = data["text"]
        return parse(text) if text.strip() and len(text) <= MAX_TEXT else "empty or too long question"
    if isinstance(data.get("qid"), str):
        stored = await store.get_request(data["qid"][:64])
        return stored if stored is not None else "this question is no longer stored: ask it again in the chat"
    return 'body needs "request", "text" or "qid"'


async def computed(request: web.Request, user: WebAppUser, fn: Callable[..., Any], *args: Any) -> Any:
    """An engine call the way the chat makes it (bot.compute.off_loop): off the event loop, one at a time per
    user, its work charged to the user's bucket."""
    from bot import compute

    token = compute.ACCOUNT.set((request.app[DEPS].bucket, user.id))
    try:
        return await compute.off_loop(fn, *args)
    finally:
        compute.ACCOUNT.reset(token)


@dataclass(frozen=True)
class Asked:
    """What every POST route starts from: the validated user, the JSON body and the Request it names."""

    user: WebAppUser
    data: dict[str, Any]
    request: Any  # engine.schema.Request


async def asked(request: web.Request, needs: Callable[[WebAppUser], web.Response | None] | None = None,
                ) -> Asked | web.Response:
    """The one prologue of the POST routes: initData and the throttle (401/429) before anything is read, then what
    the route itself needs of the user (`needs`: a refusal or None), then the body (413/400) and its Request (400)."""
    user = await authorized(request)
    if isinstance(user, web.Response):
        return user
    refusal = needs(user) if needs is not None else None
    if refusal is not None:
        return refusal
    data = await body_json(request)
    if isinstance(data, web.Response):
        return data
    req = await the_request(data, request.app[DEPS].store)
    if isinstance(req, str):
        return error(400, req)
    return Asked(user, data, req)


async def answer_route(request: web.Request) -> web.Response:
    from web.payload import answer_payload

    got = await asked(request)
    if isinstance(got, web.Response):
        return got
    try:
        out = await computed(request, got.user, answer_payload, got.request, language(got.data, got.user))
    except ValueError as exc:  # a request the engine refuses (ScenarioError is one)
        return error(422, str(exc))
    return web.json_response(out, headers={"Cache-Control": "no-store"})


async def config_route(request: web.Request) -> web.Response:
    from engine.configs import config_for
    from engine.configs.model import TARGETS

    got = await asked(request)
    if isinstance(got, web.Response):
        return got
    target = got.data.get("framework") or None
    if target is not None and target not in TARGETS:
        return error(400, f"framework must be one of {', '.join(TARGETS)}")
    try:
        out = await computed(request, got.user, config_for, got.request, target)
    except ValueError as exc:
        return error(422, str(exc))
    return web.json_response(out.model_dump(mode="json"), headers={"Cache-Control": "no-store"})


async def share_route(request: web.Request) -> web.Response:
    """The state as a stored question: its id, and the t.me link that opens the Mini App on it."""
    got = await asked(request)
    if isinstance(got, web.Response):
        return got
    deps = request.app[DEPS]
    qid = await deps.store.put_request(got.request)
    link = f"https://t.me/{deps.bot_username}?startapp={qid}" if deps.bot_username else None
    return web.json_response({"qid": qid, "link": link})


async def send_route(request: web.Request) -> web.Response:
    """The MainButton "send to chat" of an app opened from an inline button or a link: the answer as the chat words
    it, sent by the bot with answerWebAppQuery on the initData's query_id."""
    from bot.answers import AnswerOptions, render_request

    deps = request.app[DEPS]

    def can_send(user: WebAppUser) -> web.Response | None:
        if deps.send is None or not user.query_id:
            return error(501, "sending to the chat needs the bot's webhook server and an app opened from a button")
        return None

    got = await asked(request, can_send)
    if isinstance(got, web.Response):
        return got
    options = AnswerOptions(lang=language(got.data, got.user))
    rendered = await computed(request, got.user, render_request, got.request, options)
    assert deps.send is not None and got.user.query_id  # can_send
    try:
        await deps.send(got.user.query_id, rendered.title, rendered.html)
    except Exception as exc:  # the Bot API refused (an expired query): said, not raised
        log.info("answerWebAppQuery failed: %s", type(exc).__name__)
        return error(502, "Telegram did not take the message: reopen the app")
    return web.json_response({"sent": True})


async def dev_init_data(request: web.Request) -> web.Response:
    """Only under `--dev-token`: a signed initData for a browser outside Telegram (never with a real bot token)."""
    import json as _json
    import time

    from web.initdata import sign

    deps = request.app[DEPS]
    lang = request.query.get("lang", "en")
    user = {"id": 1, "first_name": "Dev", "language_code": lang if lang in ("ru", "en") else "en"}
    fields = {"auth_date": str(int(time.time())), "user": _json.dumps(user)}
    if request.query.get("q"):
        fields["start_param"] = request.query["q"][:64]
    return web.json_response({"initData": sign(fields, deps.token)})


@web.middleware
async def json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """aiohttp's own refusals (a body over the server's limit, a wrong method) as JSON for the API routes."""
    try:
        return await handler(request)
    except web.HTTPRequestEntityTooLarge:
        return error(413, f"body over {MAX_BODY // 1024} KB")
    except web.HTTPMethodNotAllowed:
        return error(405, "method not allowed")


def webapp(deps: Deps) -> web.Application:
    """The sub-application of the Mini App; `add_subapp(PREFIX, webapp(deps))` serves it under /app."""
    app = web.Application(middlewares=[json_errors])
    app[DEPS] = deps
    app.router.add_get("/", page)
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/api/catalog", catalog)
    app.router.add_post("/api/answer", answer_route)
    app.router.add_post("/api/config", config_route)
    app.router.add_post("/api/share", share_route)
    app.router.add_post("/api/send", send_route)
    if deps.dev:
        app.router.add_get("/api/dev-init-data", dev_init_data)
    return app


def mount(parent: web.Application, sub: web.Application) -> None:
    """The Mini App `sub` under /app on `parent`; /app itself redirects to /app/."""
    async def to_slash(_: web.Request) -> web.Response:
        raise web.HTTPPermanentRedirect(PREFIX + "/")

    parent.router.add_get(PREFIX, to_slash)
    parent.add_subapp(PREFIX, sub)


def standalone(deps: Deps) -> web.Application:
    """`gpu-advisor web`: the Mini App alone (development, tests, a polling bot's side server)."""
    app = web.Application(client_max_size=MAX_BODY * 16)
    mount(app, webapp(deps))
    return app


def default_bucket() -> Bucket:
    """The chat's per-user bucket for questions (bot/app.py RATE, BURST), in this process."""
    from bot.app import BURST, RATE

    return TokenBucket(rate=RATE, burst=BURST)


def mount_for_bot(parent: web.Application, bot: Any, dp: Any, config: Any) -> None:
    """The Mini App on the webhook server: the bot's token checks initData, the chat's storage and throttle bucket,
    answerWebAppQuery for "send to chat", the bot's username for t.me share links."""
    from aiogram.types import InlineQueryResultArticle, InputTextMessageContent

    async def send(query_id: str, title: str, html: str) -> None:
        await bot.answer_web_app_query(web_app_query_id=query_id, result=InlineQueryResultArticle(
            id="answer", title=title[:256] or "GPU Advisor",
            input_message_content=InputTextMessageContent(message_text=html, parse_mode="HTML")))

    deps = Deps(token=config.token.get_secret_value(), store=dp["store"],
                bucket=dp.workflow_data.get("question_bucket") or default_bucket(), send=send)
    sub = webapp(deps)

    async def username(_: web.Application) -> None:
        try:
            deps.bot_username = (await bot.me()).username
        except Exception as exc:  # share links fall back to the page's own URL
            log.info("getMe for the Mini App's links failed: %s", type(exc).__name__)

    sub.on_startup.append(username)
    mount(parent, sub)

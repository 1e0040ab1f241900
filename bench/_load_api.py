"""The load benchmark's fake Bot API: just what the bot calls, answered at once, each answer matched to the
question in flight in its chat."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from aiohttp import web

TOKEN = "123456:TEST-load-bench-token"
BOT_ID = 123456
BOT_USER = {"id": BOT_ID, "is_bot": True, "first_name": "GPU Advisor", "username": "gpu_advisor_bench_bot"}


@dataclass
class Question:
    phase: str
    text: str
    sent: float
    answered_at: float | None = None
    kind: str = ""  # estimate (answer keyboard), help (examples keyboard), other (no keyboard: throttle, apology)
    done: float | None = None
    status: int = 0


class FastBotAPI:
    """Just what the bot calls, answered at once; a sendMessage is matched to the chat's question in flight."""

    def __init__(self, inflight: dict[int, Question]) -> None:
        self.inflight = inflight
        self.stray = 0  # messages to a chat with no question in flight
        self.calls: dict[str, int] = {}
        self._ids = itertools.count(1)
        self.webhook_url = ""
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        assert site._server is not None
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @staticmethod
    def _ok(result: str) -> web.Response:
        return web.Response(body=b'{"ok":true,"result":' + result.encode() + b"}", content_type="application/json")

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        self.calls[method] = self.calls.get(method, 0) + 1
        if request.match_info["token"] != TOKEN:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        if method == "sendMessage":
            now = time.perf_counter()
            form = await _params(request)
            chat_id = int(str(form["chat_id"]))
            raw_markup = form.get("reply_markup", "")
            markup = raw_markup if isinstance(raw_markup, str) else json.dumps(raw_markup)
            question = self.inflight.get(chat_id)
            if question is None or question.answered_at is not None:
                self.stray += 1
            else:
                question.answered_at = now
                question.kind = ("estimate" if '"a:' in markup else "help") if markup else "other"
            text = json.dumps(str(form.get("text", "")))
            return self._ok(f'{{"message_id":{next(self._ids)},"date":{int(time.time())},'
                            f'"chat":{{"id":{chat_id},"type":"private","first_name":"U"}},'
                            f'"from":{json.dumps(BOT_USER)},"text":{text}'
                            + (f',"reply_markup":{markup}}}' if markup else "}"))
        if method == "getMe":
            return self._ok(json.dumps({**BOT_USER, "can_join_groups": True, "can_read_all_group_messages": False,
                                        "supports_inline_queries": True}))
        if method == "getWebhookInfo":
            return self._ok(json.dumps({"url": self.webhook_url, "has_custom_certificate": False,
                                        "pending_update_count": 0}))
        if method == "setWebhook":
            form = await _params(request)
            self.webhook_url = str(form.get("url", ""))
        return self._ok("true")  # setWebhook, setMy*, sendChatAction, answerCallbackQuery, ...


async def _params(request: web.Request) -> Mapping[str, Any]:
    """A call's parameters, sent as JSON (the bot's way) or as a form (aiogram's for uploads)."""
    if request.content_type == "application/json":
        return cast(dict[str, Any], await request.json())
    return await request.post()

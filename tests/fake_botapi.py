"""A Bot API server on loopback for end-to-end tests: the real aiogram Bot talks to it over HTTP.

It serves /bot<token>/<method> for the methods the bot uses and /file/bot<token>/<path> downloads,
records every call (method, decoded parameters, uploaded files), hands out updates that a test
pushes through a long-polling getUpdates, and can be told to fail a method N times with a 429
(retry_after) or a 5xx, to answer it slowly (a client that gave up meanwhile is recorded with status
499, as nothing reached it), or to drop the connection without an answer (a network error). Texts
sent with parse_mode HTML are checked as Telegram checks them: an unknown tag, a stray `<` or an
unbalanced tag is a 400 "can't parse entities". It can also answer what is not a Bot API reply
(`misbehave`: an HTML 502 from a proxy, `{}`, garbage, an odd error code, a hang) and, like third-party
emulators, lack methods altogether (`lacking`: an Express-style HTML 404) or answer getWebhookInfo with a
body aiogram cannot read (`odd_webhook_info`). Nothing here reaches the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

TOKEN = "123456789:TEST-token_abcdefghijklmnopqrstuv"
BOT_ID = 123456789
BOT_USERNAME = "gpu_advisor_test_bot"
JSON_FIELDS = {"reply_markup", "results", "commands", "allowed_updates", "button", "reply_parameters", "scope",
               "link_preview_options", "entities", "caption_entities"}


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    filenames: dict[str, str] = field(default_factory=dict)  # upload field -> the file name it was sent under
    at: float = field(default_factory=time.monotonic)
    status: int = 200
    misbehaved: str | None = None  # the kind of non-Bot-API reply it got (see `misbehave`)


@dataclass
class Failure:
    status: int
    retry_after: int | None
    times: int


# What a reply can be besides a Bot API one (see `FakeBotAPI.misbehave`).
KINDS = ("non_json", "no_ok", "odd_code", "no_description", "ok_false_200", "garbage", "not_found", "html_502",
         "binary", "hang", "ok_no_result")


@dataclass
class Misbehaviour:
    kind: str
    times: int


@dataclass
class Slow:
    delay_s: float
    times: int


# Telegram's HTML parse mode: these tags only, properly nested; <, > and & outside tags escaped.
HTML_TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler", "a", "code", "pre",
             "blockquote", "tg-emoji"}
_TOKEN = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[a-zA-Z-]+(?:=(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s<>\"']+))?)*)"
                    r"\s*>|&(?:lt|gt|amp|quot|#\d{1,7}|#x[0-9a-fA-F]{1,6});|[<>&]")


def html_error(text: str) -> str | None:
    """Why Telegram would refuse `text` in parse_mode HTML, or None when it parses."""
    stack: list[str] = []
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if token in ("<", ">", "&"):
            if token != "<":
                continue  # Telegram tolerates a bare > or &; a < always starts a tag
            return f"Unsupported start tag at byte offset {m.start()}"
        if token.startswith("&"):
            continue
        closing, name = m.group(1), m.group(2).lower()
        if name not in HTML_TAGS:
            return f"Unsupported start tag \"{name}\" at byte offset {m.start()}"
        if closing:
            if not stack or stack[-1] != name:
                return f"Unexpected end tag \"{name}\" at byte offset {m.start()}"
            stack.pop()
        else:
            stack.append(name)
    if stack:
        return f"Can't find end tag corresponding to start tag \"{stack[-1]}\""
    return None


class FakeBotAPI:
    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.calls: list[Call] = []
        self.failures: dict[str, Failure] = {}
        self.slow_methods: dict[str, Slow] = {}
        self.dropped: dict[str, int] = {}
        self.done_then_dropped: dict[str, int] = {}  # handled (the message exists), then the connection dies
        self.migrated: dict[int, int] = {}  # a group that became a supergroup: old chat id → new
        self.misbehaving: dict[str, Misbehaviour] = {}
        self.lacking: set[str] = set()  # methods this server does not implement (an HTML 404 each time)
        self.odd_webhook_info = False  # getWebhookInfo answers `{"ok": true, "result": {}}`
        self.hang_s = 30.0  # how long a "hang" lasts (the client gives up first)
        self.allowed_updates: list[str] | None = None
        self.updates: list[dict[str, Any]] = []
        self.new_update = asyncio.Event()
        self.new_call = asyncio.Event()
        self.chats: dict[int, dict[str, Any]] = {}
        self.members: dict[tuple[int, int], str] = {}
        self.files: dict[str, tuple[str, bytes]] = {}  # file_id -> (file_path, content)
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.webhook_url = ""
        self._ids = itertools.count(1000)
        self._update_ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.url = ""

    # ---- life cycle ----

    async def start(self) -> str:
        app = web.Application(client_max_size=20 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._file)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # ---- what a test does ----

    def fail(self, method: str, status: int = 500, times: int = 1, retry_after: int | None = None) -> None:
        """The next `times` calls of `method` answer `status` (429 with retry_after, or 5xx)."""
        self.failures[method] = Failure(status, retry_after, times)

    def slow(self, method: str, delay_s: float, times: int = 1) -> None:
        """The next `times` calls of `method` wait `delay_s` before answering (a client may give up)."""
        self.slow_methods[method] = Slow(delay_s, times)

    def drop(self, method: str, times: int = 1) -> None:
        """The next `times` calls of `method` get their connection closed without an answer."""
        self.dropped[method] = times

    def accept_then_drop(self, method: str, times: int = 1) -> None:
        """The next `times` calls of `method` take effect (a message is sent, an edit made), then their connection
        is closed before the answer: the client sees a network error for a call that succeeded."""
        self.done_then_dropped[method] = times

    def misbehave(self, method: str, kind: str, times: int = 1) -> None:
        """The next `times` calls of `method` get a reply of `kind` (one of `KINDS`) instead of the Bot API's."""
        assert kind in KINDS, kind
        self.misbehaving[method] = Misbehaviour(kind, times)

    def push(self, update: dict[str, Any]) -> int:
        update = {"update_id": next(self._update_ids), **update}
        for key in ("message", "edited_message"):
            if key in update:
                chat = update[key]["chat"]
                self.chats[chat["id"]] = chat
        self.updates.append(update)
        self.new_update.set()
        return int(update["update_id"])

    def of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and c.status == 200 and c.misbehaved is None]

    async def wait_for(self, method: str, count: int = 1, timeout: float = 5.0, **match: Any) -> list[Call]:
        """Wait until `count` successful calls of `method` (with parameters equal to `match`) were made."""
        deadline = time.monotonic() + timeout
        while True:
            found = [c for c in self.of(method) if all(str(c.params.get(k)) == str(v) for k, v in match.items())]
            if len(found) >= count:
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                seen = [(c.method, c.status) for c in self.calls]
                raise AssertionError(f"no {count}× {method} {match} within {timeout}s; calls: {seen}")
            self.new_call.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.new_call.wait(), timeout=min(left, 0.2))

    def add_file(self, file_id: str, content: bytes, path: str = "documents/file.json") -> None:
        self.files[file_id] = (path, content)

    # ---- the server ----

    async def _params(self, request: web.Request,
                      names: dict[str, str] | None = None) -> tuple[dict[str, Any], dict[str, bytes]]:
        params: dict[str, Any] = {}
        files: dict[str, bytes] = {}
        names = names if names is not None else {}
        if request.content_type == "application/json":
            params = await request.json()
        elif request.can_read_body:
            form = await request.post()
            for key, value in form.items():
                if isinstance(value, web.FileField):
                    files[key] = value.file.read()
                    names[key] = value.filename
                elif isinstance(value, bytes):
                    files[key] = value
                else:
                    params[key] = value
        params.update(request.query)
        for key, value in list(params.items()):  # aiogram uploads as attach://<name> with the file under <name>
            if isinstance(value, str) and value.startswith("attach://") and value[9:] in files:
                files[key] = files[value[9:]]
                if value[9:] in names:
                    names[key] = names[value[9:]]
        for key in list(params):
            if key in JSON_FIELDS and isinstance(params[key], str):
                with contextlib.suppress(json.JSONDecodeError):
                    params[key] = json.loads(params[key])
        return params, files

    def _error(self, call: Call, status: int, description: str, **parameters: Any) -> web.Response:
        call.status = status
        body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
        if parameters:
            body["parameters"] = parameters
        return web.json_response(body, status=status)

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        names: dict[str, str] = {}
        params, files = await self._params(request, names)
        call = Call(method, params, files, names)
        self.calls.append(call)
        try:
            if request.match_info["token"] != self.token:
                return self._error(call, 401, "Unauthorized")
            if self.dropped.get(method, 0) > 0:
                self.dropped[method] -= 1
                call.status = 0
                if request.transport is not None:
                    request.transport.abort()  # the client sees the connection die: a network error
                return web.Response(status=499)
            if method in self.lacking:
                call.status, call.misbehaved = 404, "lacking"
                return web.Response(status=404, content_type="text/html",
                                    text=f"<!DOCTYPE html><html><body><pre>Cannot POST /bot{self.token}/{method}"
                                         "</pre></body></html>")
            odd = self.misbehaving.get(method)
            if odd is not None and odd.times > 0:
                odd.times -= 1
                return await self._misbehave(call, request, odd.kind)
            slow = self.slow_methods.get(method)
            if slow is not None and slow.times > 0:
                slow.times -= 1
                call.status = 102  # in progress: not an answer yet
                await asyncio.sleep(slow.delay_s)
                call.status = 200
                if request.transport is None or request.transport.is_closing():
                    call.status = 499  # the client gave up: nothing it sent takes effect
                    return web.Response(status=499)
            failure = self.failures.get(method)
            if failure is not None and failure.times > 0:
                failure.times -= 1
                if failure.retry_after is not None:
                    return self._error(call, 429, f"Too Many Requests: retry after {failure.retry_after}",
                                       retry_after=failure.retry_after)
                return self._error(call, failure.status, "Internal Server Error")
            old_chat = params.get("chat_id")
            if old_chat is not None and str(old_chat).lstrip("-").isdigit() and int(old_chat) in self.migrated:
                return self._error(call, 400, "Bad Request: group chat was upgraded to a supergroup chat",
                                   migrate_to_chat_id=self.migrated[int(old_chat)])
            handler = getattr(self, "api_" + method, None)
            if handler is None:
                return self._error(call, 404, "Not Found")
            invalid = self._html_problem(params)
            if invalid is not None:
                return self._error(call, 400, f"Bad Request: can't parse entities: {invalid}")
            result = await handler(params, files)
            if self.done_then_dropped.get(method, 0) > 0:
                self.done_then_dropped[method] -= 1
                call.status = 0
                if request.transport is not None:
                    request.transport.abort()
                return web.Response(status=499)
            if isinstance(result, web.Response):
                call.status = result.status
                return result
            return web.json_response({"ok": True, "result": result})
        finally:
            self.new_call.set()

    async def _misbehave(self, call: Call, request: web.Request, kind: str) -> web.Response:
        statuses = {"non_json": 200, "no_ok": 200, "odd_code": 418, "no_description": 500, "ok_false_200": 200,
                    "garbage": 200, "not_found": 404, "html_502": 502, "binary": 200, "ok_no_result": 200}
        call.misbehaved = kind
        if kind == "hang":
            call.status = 102
            deadline = time.monotonic() + self.hang_s
            while time.monotonic() < deadline and request.transport is not None and not request.transport.is_closing():
                await asyncio.sleep(0.02)
            call.status = 499
            return web.Response(status=499)
        call.status = statuses[kind]
        if kind == "non_json":
            return web.Response(text="this is not JSON", content_type="text/plain")
        if kind == "no_ok":
            return web.json_response({})
        if kind == "odd_code":
            return web.json_response({"ok": False, "error_code": 418, "description": "I'm a teapot"}, status=418)
        if kind == "no_description":
            return web.json_response({"ok": False, "error_code": 500}, status=500)
        if kind == "ok_false_200":
            return web.json_response({"ok": False})
        if kind == "garbage":
            return web.json_response({"ok": True, "result": "garbage"})
        if kind == "ok_no_result":  # "success" without the result the method returns
            return web.json_response({"ok": True})
        if kind == "not_found":
            return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)
        if kind == "binary":
            return web.Response(body=b"\xff\xfe\x00garbage\xc3", content_type="application/json", charset="utf-8")
        return web.Response(status=502, content_type="text/html",
                            text="<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad "
                                 "Gateway</h1></center><hr><center>nginx</center></body></html>")

    @staticmethod
    def _html_problem(params: dict[str, Any]) -> str | None:
        texts: list[str] = []
        if params.get("parse_mode") == "HTML":
            texts += [str(params.get(k)) for k in ("text", "caption") if params.get(k) is not None]
        for result in params.get("results") or []:
            content = result.get("input_message_content") or {}
            if content.get("parse_mode") == "HTML":
                texts.append(str(content.get("message_text", "")))
        for text in texts:
            problem = html_error(text)
            if problem is not None:
                return problem
        return None

    async def _file(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        path = request.match_info["path"]
        for file_path, content in self.files.values():
            if file_path == path:
                return web.Response(body=content)
        return web.Response(status=404)

    # ---- objects ----

    @staticmethod
    def bot_user() -> dict[str, Any]:
        return {"id": BOT_ID, "is_bot": True, "first_name": "GPU Advisor", "username": BOT_USERNAME}

    def _chat(self, chat_id: Any) -> dict[str, Any]:
        cid = int(chat_id)
        return self.chats.get(cid, {"id": cid, "type": "private" if cid > 0 else "supergroup"})

    def _message(self, params: dict[str, Any], **content: Any) -> dict[str, Any]:
        chat = self._chat(params["chat_id"])
        msg: dict[str, Any] = {"message_id": next(self._ids), "date": int(time.time()), "chat": chat,
                               "from": self.bot_user(), **content}
        if params.get("reply_markup"):
            msg["reply_markup"] = params["reply_markup"]
        self.messages[(chat["id"], msg["message_id"])] = msg
        return msg

    # ---- methods ----

    async def api_getMe(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        return {**self.bot_user(), "can_join_groups": True, "can_read_all_group_messages": False,
                "supports_inline_queries": True}

    async def api_getUpdates(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        offset = int(params.get("offset", 0) or 0)
        if offset:
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
        if not self.updates:
            self.new_update.clear()
            wait = min(float(params.get("timeout", 0) or 0), 0.5)
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.new_update.wait(), timeout=wait)
        return list(self.updates)

    async def api_sendMessage(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        return self._message(params, text=params.get("text", ""))

    async def api_sendPhoto(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        if "photo" not in files and not params.get("photo"):
            return web.json_response({"ok": False, "error_code": 400, "description": "Bad Request: no photo"},
                                     status=400)
        photo = [{"file_id": "photo1", "file_unique_id": "u1", "width": 800, "height": 500}]
        return self._message(params, photo=photo, caption=params.get("caption", ""))

    async def api_sendDocument(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        if "document" not in files and not params.get("document"):
            return web.json_response({"ok": False, "error_code": 400, "description": "Bad Request: no document"},
                                     status=400)
        content = files.get("document", b"")
        file_id = f"doc{next(self._ids)}"
        name = next((c.filenames.get("document") for c in reversed(self.calls) if c.files is files), None) or "document"
        self.files[file_id] = (f"documents/{file_id}", content)
        document = {"file_id": file_id, "file_unique_id": "u" + file_id, "file_name": name,
                    "file_size": len(content)}
        return self._message(params, document=document, caption=params.get("caption", ""))

    async def api_editMessageText(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        if params.get("inline_message_id"):
            return True
        key = (int(params["chat_id"]), int(params["message_id"]))
        old = self.messages.get(key)
        if old is None:
            return web.json_response({"ok": False, "error_code": 400,
                                      "description": "Bad Request: message to edit not found"}, status=400)
        if old.get("text") == params.get("text") and old.get("reply_markup") == params.get("reply_markup"):
            return web.json_response({"ok": False, "error_code": 400, "description":
                                      "Bad Request: message is not modified: specified new message content and "
                                      "reply markup are exactly the same"}, status=400)
        old["text"] = params.get("text", "")
        if params.get("reply_markup"):
            old["reply_markup"] = params["reply_markup"]
        return old

    async def api_getChatMember(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        user_id = int(params["user_id"])
        status = self.members.get((int(params["chat_id"]), user_id), "member")
        user = {"id": user_id, "is_bot": False, "first_name": "U"}
        if status == "creator":
            return {"status": "creator", "user": user, "is_anonymous": False}
        if status == "administrator":
            rights = ("can_manage_chat", "can_delete_messages", "can_manage_video_chats", "can_restrict_members",
                      "can_promote_members", "can_change_info", "can_invite_users", "can_post_stories",
                      "can_edit_stories", "can_delete_stories", "can_send_welcome_messages")
            return {"status": "administrator", "user": user, "can_be_edited": False, "is_anonymous": False,
                    **dict.fromkeys(rights, True)}
        return {"status": "member", "user": user}

    async def api_getFile(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        file_id = params["file_id"]
        if file_id not in self.files:
            return web.json_response({"ok": False, "error_code": 400, "description": "Bad Request: invalid file_id"},
                                     status=400)
        path, content = self.files[file_id]
        return {"file_id": file_id, "file_unique_id": "u" + file_id, "file_size": len(content), "file_path": path}

    async def api_getWebhookInfo(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        if self.odd_webhook_info:
            return {}
        info: dict[str, Any] = {"url": self.webhook_url, "has_custom_certificate": False, "pending_update_count": 0}
        if self.webhook_url and self.allowed_updates is not None:
            info["allowed_updates"] = self.allowed_updates
        return info

    async def api_setWebhook(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        self.webhook_url = params.get("url", "")
        self.allowed_updates = params.get("allowed_updates")
        return True

    async def api_deleteWebhook(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        self.webhook_url = ""
        return True

    async def _true(self, params: dict[str, Any], files: dict[str, bytes]) -> Any:
        return True

    api_answerCallbackQuery = _true
    api_answerInlineQuery = _true
    api_sendChatAction = _true
    api_setMyCommands = _true
    api_setMyDescription = _true
    api_setMyShortDescription = _true


# ---- updates ------------------------------------------------------------------------------------------------

_msg_ids = itertools.count(1)


def user(user_id: int = 1001, language_code: str | None = "en") -> dict[str, Any]:
    u: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": "Ann"}
    if language_code:
        u["language_code"] = language_code
    return u


def chat(chat_id: int, kind: str = "private") -> dict[str, Any]:
    c: dict[str, Any] = {"id": chat_id, "type": kind}
    if kind != "private":
        c["title"] = "ML team"
    return c


def message(text: str | None = None, *, user_id: int = 1001, chat_id: int | None = None, kind: str = "private",
            language_code: str | None = "en", reply_to: dict[str, Any] | None = None, **content: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"message_id": next(_msg_ids), "date": int(time.time()),
                           "chat": chat(chat_id if chat_id is not None else user_id, kind),
                           "from": user(user_id, language_code), **content}
    if text is not None:
        msg["text"] = text
        if text.startswith("/"):
            msg["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
    if reply_to is not None:
        msg["reply_to_message"] = reply_to
    return {"message": msg}


def callback(data: str, *, message_obj: dict[str, Any] | None = None, inline_message_id: str | None = None,
             user_id: int = 1001, language_code: str | None = "en") -> dict[str, Any]:
    cq: dict[str, Any] = {"id": f"cq{next(_msg_ids)}", "from": user(user_id, language_code),
                          "chat_instance": "ci", "data": data}
    if message_obj is not None:
        cq["message"] = message_obj
    if inline_message_id is not None:
        cq["inline_message_id"] = inline_message_id
    return {"callback_query": cq}


def inline_query(query: str, *, user_id: int = 1001, language_code: str | None = "en") -> dict[str, Any]:
    return {"inline_query": {"id": f"iq{next(_msg_ids)}", "from": user(user_id, language_code), "query": query,
                             "offset": ""}}


# ---- reading what the bot sent ------------------------------------------------------------------------------


def sent(api: FakeBotAPI, chat_id: int) -> list[Call]:
    """Every sendMessage call to one chat, in order, the failed and the still hanging ones (status) included."""
    return [c for c in api.calls if c.method == "sendMessage" and int(c.params["chat_id"]) == chat_id]


def texts(api: FakeBotAPI, chat_id: int) -> list[str]:
    """The texts the bot sent to one chat (successful calls), in order."""
    return [c.params["text"] for c in api.of("sendMessage") if int(c.params["chat_id"]) == chat_id]


def document(file_id: str, name: str = "config.json", size: int | None = None,
             mime: str | None = None) -> dict[str, object]:
    """A Telegram Document a user sends (its content is what the fake API serves for `file_id`)."""
    doc: dict[str, object] = {"file_id": file_id, "file_unique_id": "u" + file_id, "file_name": name}
    if size is not None:
        doc["file_size"] = size
    if mime:
        doc["mime_type"] = mime
    return doc


def documents(api: FakeBotAPI, chat_id: int) -> list[tuple[str, bytes, str]]:
    """(file name, content, caption) of every document the bot sent to one chat, in order."""
    return [(c.filenames.get("document", ""), c.files.get("document", b""), str(c.params.get("caption") or ""))
            for c in api.of("sendDocument") if int(c.params["chat_id"]) == chat_id]


def toasts(api: FakeBotAPI) -> list[str | None]:
    """The texts of the bot's answers to button presses."""
    return [c.params.get("text") for c in api.of("answerCallbackQuery")]


def last_message(api: FakeBotAPI, chat_id: int) -> dict[str, Any]:
    """The newest message of the bot in a chat, as it stands now (after edits)."""
    return [m for (c, _), m in api.messages.items() if c == chat_id][-1]


def buttons(markup: dict[str, Any]) -> dict[str, str]:
    """Label (without the ✓ of the current state) → callback data of an inline keyboard."""
    return {b["text"].removeprefix("✓ "): b["callback_data"] for row in markup["inline_keyboard"] for b in row
            if "callback_data" in b}


def labels(msg: dict[str, Any]) -> list[str]:
    """The labels of the buttons under a message, as shown (with the ✓ of the current state)."""
    return [b["text"] for row in msg["reply_markup"]["inline_keyboard"] for b in row]


def button(msg: dict[str, Any], label: str) -> str:
    """The callback data of the button `label` under a message."""
    found = buttons(msg["reply_markup"]).get(label)
    if found is None:
        raise AssertionError(f"no button {label!r}")
    return str(found)

"""The Bot API session: aiogram's aiohttp session, sending JSON bodies, reading any reply safely.

The Bot API takes a call as JSON or as a form. aiogram always builds a form, and URL-encoding
percent-escapes every byte of a Cyrillic answer (three characters for each); under load that was a
twentieth of an answer's time. Uploads (the chart) still go as multipart, through aiogram's own code.

Replies that are not the Bot API's (an HTML 502 page from a proxy, `{}`, `{"ok": true, "result":
"garbage"}`, bytes that are not text) make aiogram raise `ClientDecodeError`, which is no
`TelegramAPIError`, so nothing that handles API failures caught it; `{"ok": true}` without a result aiogram
takes as a success (a message "sent" that was not; a `None` its polling loop died on). Here every such reply
becomes a `BadReply`, a `TelegramServerError`: retried like a 5xx and handled wherever API errors are. An HTML 404
(a server that lacks the method) becomes `MethodMissing`, a `TelegramNotFound`: not retried. A
well-formed error with a code Telegram does not use (418, `ok: false` with 200) is a `BadReply` too.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, cast

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramAPIError,
    TelegramNetworkError,
    TelegramNotFound,
    TelegramServerError,
)
from aiogram.methods import TelegramMethod
from aiogram.methods.base import Response, TelegramType
from aiohttp import ClientError, ClientTimeout


class BadReply(TelegramServerError):
    """The Bot API (or something in front of it) answered what is not a Bot API reply."""


class MethodMissing(TelegramNotFound):
    """A 404 that is not the Bot API's JSON: the server does not implement the method."""


def _what(content: str, token: str) -> str:
    """A few characters of a reply for the log: never the whole HTML page, never the token (a 404 page
    may quote the URL, and a cut token is past the log's redaction)."""
    text = " ".join(content.replace(token, "***").split())
    return text[:60] + ("…" if len(text) > 60 else "")


class JsonSession(AiohttpSession):
    def check_response(self, bot: Bot, method: TelegramMethod[TelegramType], status_code: int,
                       content: str) -> Response[TelegramType]:
        try:
            response = super().check_response(bot=bot, method=method, status_code=status_code, content=content)
        except ClientDecodeError:
            what = f"HTTP {status_code}, not a Bot API reply: {_what(content, bot.token)}"
            if status_code == HTTPStatus.NOT_FOUND:
                raise MethodMissing(method=method, message=what) from None
            raise BadReply(method=method, message=what) from None
        except TypeError:  # aiogram reads `"restart" in description`: an error without a description
            raise BadReply(method=method, message=f"HTTP {status_code}: an error without a description") from None
        except TelegramAPIError as exc:
            if type(exc) is TelegramAPIError:  # a code Telegram does not use, or ok:false with a 2xx status
                raise BadReply(method=method, message=f"HTTP {status_code}: {exc.message}") from None
            raise
        if response.result is None:  # `{"ok": true}`: every method returns something (True at least)
            raise BadReply(method=method, message=f"HTTP {status_code}: ok without a result")
        return response

    async def make_request(self, bot: Bot, method: TelegramMethod[TelegramType],
                           timeout: int | None = None) -> TelegramType:
        files: dict[str, Any] = {}
        payload = {}
        for key, value in method.model_dump(warnings=False).items():
            prepared = self.prepare_value(value, bot=bot, files=files, _dumps_json=False)
            if prepared is not None:
                payload[key] = prepared
        try:
            if files:
                return await super().make_request(bot, method, timeout)
            session = await self.create_session()
            url = self.api.api_url(token=bot.token, method=method.__api_method__)
            try:
                async with session.post(url, data=self.json_dumps(payload),
                                        headers={"Content-Type": "application/json"},
                                        timeout=ClientTimeout(total=self.timeout if timeout is None else timeout)
                                        ) as resp:
                    raw_result = await resp.text()
            except TimeoutError as e:
                raise TelegramNetworkError(method=method, message="Request timeout error") from e
            except ClientError as e:
                raise TelegramNetworkError(method=method, message=f"{type(e).__name__}: {e}") from e
        except (UnicodeDecodeError, LookupError) as e:  # bytes that are not text in the charset the reply names
            raise BadReply(method=method, message=f"a reply that is not text ({type(e).__name__})") from None
        response = self.check_response(bot=bot, method=method, status_code=resp.status, content=raw_result)
        return cast(TelegramType, response.result)

"""Telegram WebApp `initData` checked as Telegram documents it (core.telegram.org/bots/webapps, "Validating data
received via the Mini App"): secret_key = HMAC_SHA256(key="WebAppData", msg=bot_token); the data-check-string is
every received field but `hash`, as `key=value`, sorted by key, joined by "\\n"; the `hash` field must equal
hex(HMAC_SHA256(key=secret_key, msg=data_check_string)), compared in constant time; `auth_date` no older than
MAX_AGE_S. A duplicate key, a missing or non-numeric `auth_date`, or a `user` that is not a JSON object with an
integer id is refused too: Telegram never sends those."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

MAX_AGE_S = 24 * 3600
MAX_INIT_DATA = 8192  # characters; Telegram's initData is a few hundred


class InitDataError(ValueError):
    """Why an initData was refused: a short English reason for the JSON error."""


@dataclass(frozen=True)
class WebAppUser:
    id: int
    language_code: str | None
    start_param: str | None = None
    query_id: str | None = None  # for answerWebAppQuery: the app was opened from a button or a link


def secret_key(bot_token: str) -> bytes:
    return hmac.new(b"WebAppData", bot_token.encode(), hashlib.sha256).digest()


def data_check_string(fields: dict[str, str]) -> str:
    return "\n".join(f"{k}={fields[k]}" for k in sorted(fields) if k != "hash")


def sign(fields: dict[str, str], bot_token: str) -> str:
    """`fields` as an initData query string with its `hash` (tests and `gpu-advisor web --dev-token` use it)."""
    digest = hmac.new(secret_key(bot_token), data_check_string(fields).encode(), hashlib.sha256).hexdigest()
    return urlencode({**fields, "hash": digest})


def validate(init_data: str | None, bot_token: str, now: Callable[[], float] = time.time) -> WebAppUser:
    """The user an initData vouches for; InitDataError when it is missing, forged, stale or malformed."""
    if not init_data:
        raise InitDataError("missing Telegram initData")
    if len(init_data) > MAX_INIT_DATA:
        raise InitDataError("initData too long")
    try:
        pairs = parse_qsl(init_data, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise InitDataError("initData is not a query string") from None
    fields = dict(pairs)
    if len(fields) != len(pairs):
        raise InitDataError("initData repeats a field")
    given = fields.get("hash", "")
    expected = hmac.new(secret_key(bot_token), data_check_string(fields).encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode()):
        raise InitDataError("initData signature does not match")
    raw_date = fields.get("auth_date", "")
    if not raw_date.isascii() or not raw_date.isdigit():
        raise InitDataError("initData has no valid auth_date")
    if now() - int(raw_date) > MAX_AGE_S:
        raise InitDataError("initData is older than a day: reopen the app")
    try:
        user = json.loads(fields.get("user", ""))
    except ValueError:
        raise InitDataError("initData has no user") from None
    if not isinstance(user, dict) or not isinstance(user.get("id"), int) or isinstance(user.get("id"), bool):
        raise InitDataError("initData has no user")
    code = user.get("language_code")
    return WebAppUser(id=user["id"], language_code=code if isinstance(code, str) else None,
                      start_param=fields.get("start_param"), query_id=fields.get("query_id"))

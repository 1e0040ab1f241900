"""Logging: one line per record, JSON (one object a line) or text, with secrets redacted.

- `update_context` holds the update id and chat id of the update being handled (set by the error
  guard); every record logged while handling it carries them, whichever library logged it.
- Secrets (the bot token, also URL-encoded; the webhook secret) are replaced by `***` in the final
  line: message, arguments and traceback alike.
- Message texts of users are never logged at INFO or above (handlers log types and ids only).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

update_context: ContextVar[dict[str, int] | None] = ContextVar("update_context", default=None)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _variants(secrets: Iterable[str]) -> list[str]:
    out: set[str] = set()
    for secret in secrets:
        if secret and len(secret) >= 6:  # a tiny "secret" would redact half the log
            out.update({secret, secret.replace(":", "%3A"), secret.replace(":", "%3a")})
    return sorted(out, key=len, reverse=True)


class RedactingFormatter(logging.Formatter):
    """A text formatter that replaces the bot token (and other secrets) wherever they appear."""

    def __init__(self, token: str, fmt: str | None = TEXT_FORMAT, *, secrets: Iterable[str] = ()) -> None:
        super().__init__(fmt)
        self.token = token
        self._secrets = _variants([token, *secrets])

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context = update_context.get()
        if context:
            text += " [" + " ".join(f"{k}={v}" for k, v in context.items()) + "]"
        return self.redact(text)


class JsonFormatter(RedactingFormatter):
    """One JSON object a line: time, level, logger, message, update_id and chat_id where known, exc."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        context = update_context.get()
        if context:
            out.update(context)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exc"] = record.exc_text
        return self.redact(json.dumps(out, ensure_ascii=False, default=str))


_installed: list[str] = []  # the secrets of the installed formatter, for `redact`


def redact(text: str) -> str:
    """`text` with the secrets given to `setup_logging` replaced by `***` (for lines written to stderr)."""
    for secret in _installed:
        text = text.replace(secret, "***")
    return text


def setup_logging(token: str, level: int, fmt: str, secrets: Iterable[str] = ()) -> None:
    """The root logger writes to stderr in `fmt` ("json" or "text"); aiohttp's access log is quiet."""
    _installed[:] = _variants([token, *secrets])
    handler = logging.StreamHandler(sys.stderr)
    formatter = JsonFormatter(token, None, secrets=secrets) if fmt == "json" else \
        RedactingFormatter(token, TEXT_FORMAT, secrets=secrets)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


class _AlreadySaid(logging.Filter):
    """aiogram's "Cause exception while process update" (ERROR, with the stack) for an exception the webhook
    raises on purpose: the error guard or the de-duplication logged it in one line already."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Cause exception while process update")


class _BadRequestLine(logging.Filter):
    """aiohttp's "Error handling request" with a stack for a request it could not parse (a header holding
    `\x00`, a broken request line): a client's mistake, answered 400; one INFO line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        from aiohttp.http_exceptions import HttpProcessingError

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) and (exc.code or 400) < 500:
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg, record.args = "refused a malformed HTTP request (%s %s)", (exc.code, type(exc).__name__)
            record.exc_info = record.exc_text = None
        return True


def quiet_expected() -> None:
    """Install the two filters above (once) on aiogram's event logger and aiohttp's server logger."""
    for name, kind in (("aiogram.event", _AlreadySaid), ("aiohttp.server", _BadRequestLine)):
        logger = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in logger.filters):
            logger.addFilter(kind())

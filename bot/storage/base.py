"""What every storage backend shares: the chat settings model, question ids, errors and constants."""

from __future__ import annotations

import hashlib
from typing import Literal, Protocol

from pydantic import BaseModel, Field, ValidationError

from engine.schema import Language, Request

Currency = Literal["USD", "RUB"]
Tier = Literal["cheapest", "typical", "premium"]
QUESTION_TTL_S = 90 * 24 * 3600  # a keyboard older than this answers "stale"
KEY_PREFIX = "gpu-advisor"
LINK = "link:"  # links (a chat's last answer, a message's question) share the memory of recent questions
RECENT_QUESTIONS = 10_000  # kept in memory by the SQLite backend: the buttons people press are the newest


class StorageError(Exception):
    """The storage cannot be opened or used; str() is one line for the start-up error."""


class StorageUnavailable(StorageError):
    """A write could not reach the shared storage (a Redis outage): the user is asked to try again."""


class OwnPrice(BaseModel):
    value: float = Field(ge=0)
    currency: Currency = "USD"


class ChatSettings(BaseModel):
    language: Language | None = None  # None: decided per question (the question's own language first)
    currency: Currency = "USD"
    tier: Tier = "typical"
    prices: dict[str, OwnPrice] = Field(default_factory=dict)  # canonical GPU name → own $/hour


def question_id(request: Request) -> str:
    """A short stable id (12 hex characters) for a parsed question."""
    raw = request.model_dump_json(exclude_none=True).encode()
    return hashlib.blake2b(raw, digest_size=6).hexdigest()


def load_settings(raw: str | bytes | None) -> ChatSettings:
    if not raw:
        return ChatSettings()
    try:
        return ChatSettings.model_validate_json(raw)
    except ValidationError:
        return ChatSettings()  # a row written by an incompatible version: start afresh


def load_request(raw: str | bytes | None) -> Request | None:
    if not raw:
        return None
    try:
        return Request.model_validate_json(raw)
    except ValidationError:
        return None


class Storage(Protocol):
    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def get_settings(self, chat_id: int) -> ChatSettings: ...

    async def set_settings(self, chat_id: int, settings: ChatSettings) -> None: ...

    async def put_request(self, request: Request) -> str: ...

    async def get_request(self, qid: str) -> Request | None: ...

    async def set_link(self, key: str, qid: str) -> None: ...

    async def get_link(self, key: str) -> str | None: ...


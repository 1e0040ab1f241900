"""Redis (several replicas share one bot) and an in-process store (tests, experiments)."""

from __future__ import annotations

from typing import Any

from bot.storage.base import (
    KEY_PREFIX,
    QUESTION_TTL_S,
    ChatSettings,
    StorageError,
    load_request,
    load_settings,
    question_id,
)
from engine.schema import Request


class RedisStorage:
    """The same interface on Redis (redis.asyncio); `client` may be injected (tests use fakeredis)."""

    def __init__(self, url: str, client: Any = None) -> None:
        self.url = url
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            raise StorageError("storage is not open")
        return self._client

    async def open(self) -> None:
        if self._client is None:
            from redis.asyncio import Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            # one quick reconnect (a restarted Redis), no backoff: the breaker decides what waits
            self._client = Redis.from_url(self.url, socket_timeout=2, socket_connect_timeout=2,
                                          retry=Retry(NoBackoff(), 1))
        try:
            await self._client.ping()
        except Exception as exc:  # redis raises its own ConnectionError / TimeoutError / ResponseError
            where = self.url.split("@")[-1]  # never show a password from the URL
            raise StorageError(f"cannot reach Redis at {where}: {exc}") from None

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def get_settings(self, chat_id: int) -> ChatSettings:
        return load_settings(await self.client.get(f"{KEY_PREFIX}:chat:{chat_id}"))

    async def set_settings(self, chat_id: int, settings: ChatSettings) -> None:
        await self.client.set(f"{KEY_PREFIX}:chat:{chat_id}", settings.model_dump_json())

    async def put_request(self, request: Request) -> str:
        qid = question_id(request)
        await self.client.set(f"{KEY_PREFIX}:q:{qid}", request.model_dump_json(exclude_none=True),
                              ex=QUESTION_TTL_S)
        return qid

    async def get_request(self, qid: str) -> Request | None:
        return load_request(await self.client.get(f"{KEY_PREFIX}:q:{qid}"))

    async def set_link(self, key: str, qid: str) -> None:
        await self.client.set(f"{KEY_PREFIX}:link:{key}", qid, ex=QUESTION_TTL_S)

    async def get_link(self, key: str) -> str | None:
        raw = await self.client.get(f"{KEY_PREFIX}:link:{key}")
        return raw.decode() if isinstance(raw, bytes) else raw


class MemoryStorage:
    """In-process storage for tests and experiments (nothing survives a restart)."""

    def __init__(self) -> None:
        self.settings: dict[int, str] = {}
        self.requests: dict[str, str] = {}
        self.links: dict[str, str] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def get_settings(self, chat_id: int) -> ChatSettings:
        return load_settings(self.settings.get(chat_id))

    async def set_settings(self, chat_id: int, settings: ChatSettings) -> None:
        self.settings[chat_id] = settings.model_dump_json()

    async def put_request(self, request: Request) -> str:
        qid = question_id(request)
        self.requests[qid] = request.model_dump_json(exclude_none=True)
        return qid

    async def get_request(self, qid: str) -> Request | None:
        return load_request(self.requests.get(qid))

    async def set_link(self, key: str, qid: str) -> None:
        self.links[key] = qid

    async def get_link(self, key: str) -> str | None:
        return self.links.get(key)


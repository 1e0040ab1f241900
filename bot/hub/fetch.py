"""Fetching a config.json from the Hub, and caching it: GET `{endpoint}/{model_id}/resolve/main/config.json`
with a timeout, a size limit, a cache, negative caching and in-flight deduplication. It never raises for
anything the Hub or the network does; it says why in `HubResult.reason`."""

from __future__ import annotations

import asyncio
import contextlib
import json
from abc import ABC, abstractmethod
from typing import Any, Literal

import aiohttp
from pydantic import BaseModel

from bot.hub.configs import config_from_json, kept_fields, params_from_json
from bot.hub.ids import is_hub_id
from bot.lru import LRU
from engine.schema import ModelConfig

DEFAULT_ENDPOINT = "https://huggingface.co"
MAX_RESPONSE = 1_000_000  # bytes of a fetched config.json
OK_TTL = 24 * 3600.0  # seconds a fetched config stays in the in-memory cache
NEGATIVE_TTL = 600.0  # not found, gated, unusable: asked again after 10 minutes
TRANSIENT_TTL = 30.0  # offline, timeout: the Hub may be back soon, but not hammered meanwhile
MAX_NEGATIVE = 4096

Reason = Literal["ok", "not_found", "gated", "offline", "timeout", "invalid"]


class HubResult(BaseModel):
    model_id: str
    config: ModelConfig | None = None
    # total parameters, when the config alone tells them without guessing the MLP kind (plain,
    # non-gated MLP families); None lets the engine count them from the config
    params_b: float | None = None
    reason: Reason



class ConfigCache(ABC):
    """Where fetched config.json dicts are kept; the bot's storage provides a persistent one."""

    @abstractmethod
    async def get(self, model_id: str) -> dict[str, Any] | None: ...

    @abstractmethod
    async def set(self, model_id: str, data: dict[str, Any]) -> None: ...


class MemoryConfigCache(ConfigCache):
    """In-process cache with a time to live and a size bound (oldest out first)."""

    def __init__(self, ttl: float = OK_TTL, max_items: int = 1024) -> None:
        self._items: LRU[str, dict[str, Any]] = LRU(max_items, ttl)

    async def get(self, model_id: str) -> dict[str, Any] | None:
        return self._items.get(model_id)

    async def set(self, model_id: str, data: dict[str, Any]) -> None:
        self._items.put(model_id, data)


# Failures are remembered here, whatever cache the caller gives: a flood of one bad id costs the
# Hub one request per NEGATIVE_TTL. Keyed by endpoint, id and whether a token was sent.
_failures: LRU[tuple[str, str, bool], Reason] = LRU(MAX_NEGATIVE)
_inflight: dict[tuple[int, str, str, str | None], asyncio.Task[HubResult]] = {}


def forget_failures() -> None:
    """Drop the remembered failures (tests; an operator after fixing the token)."""
    _failures.clear()


def _remember_failure(key: tuple[str, str, bool], reason: Reason) -> None:
    _failures.put(key, reason, TRANSIENT_TTL if reason in ("offline", "timeout") else NEGATIVE_TTL)


def _remembered_failure(key: tuple[str, str, bool]) -> Reason | None:
    return _failures.get(key)



def config_url(model_id: str, endpoint: str = DEFAULT_ENDPOINT) -> str:
    return f"{endpoint.rstrip('/')}/{model_id}/resolve/main/config.json"


async def _read_limited(response: aiohttp.ClientResponse, limit: int) -> bytes | None:
    if response.content_length is not None and response.content_length > limit:
        return None
    body = bytearray()
    async for chunk in response.content.iter_chunked(65536):
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def _status_reason(response: aiohttp.ClientResponse) -> Reason:
    code = response.headers.get("X-Error-Code", "")
    if code in ("RepoNotFound", "EntryNotFound", "RevisionNotFound"):
        return "not_found"  # the Hub answers 401 for a repo that does not exist, to hide private ones
    if code == "GatedRepo" or response.status in (401, 403):
        return "gated"
    if response.status in (404, 410):
        return "not_found"
    return "offline"  # 429, 5xx: the Hub cannot answer now


async def _request(model_id: str, endpoint: str, token: str | None, timeout: float,
                   session: aiohttp.ClientSession | None) -> tuple[Reason, dict[str, Any] | None]:
    headers = {"Accept": "application/json", "User-Agent": "gpu-advisor"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    own = session is None
    client = session or aiohttp.ClientSession()
    try:
        async with asyncio.timeout(timeout):
            async with client.get(config_url(model_id, endpoint), headers=headers,
                                  timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                if response.status != 200:
                    return _status_reason(response), None
                body = await _read_limited(response, MAX_RESPONSE)
    except TimeoutError:  # asyncio.timeout and aiohttp's own timeouts alike
        return "timeout", None
    except (aiohttp.ClientError, OSError, ValueError):
        return "offline", None
    finally:
        if own:
            await client.close()
    if body is None:
        return "invalid", None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return "invalid", None
    if not isinstance(data, dict) or config_from_json(data) is None:
        return "invalid", None
    return "ok", data


def _result(model_id: str, data: dict[str, Any]) -> HubResult:
    cfg = config_from_json(data)
    if cfg is None:
        return HubResult(model_id=model_id, reason="invalid")
    return HubResult(model_id=model_id, config=cfg, params_b=params_from_json(data, cfg), reason="ok")


async def _fetch_and_remember(model_id: str, endpoint: str, token: str | None, timeout: float,
                              cache: ConfigCache | None, session: aiohttp.ClientSession | None) -> HubResult:
    reason, data = await _request(model_id, endpoint, token, timeout, session)
    if reason != "ok" or data is None:
        _remember_failure((endpoint, model_id, bool(token)), reason)
        return HubResult(model_id=model_id, reason=reason)
    if cache is not None:
        with contextlib.suppress(Exception):  # a broken cache must not break the answer
            await cache.set(model_id, kept_fields(data))  # the fields the engine can read, not the file whole
    return _result(model_id, data)


async def fetch_config(model_id: str, *, endpoint: str = DEFAULT_ENDPOINT, token: str | None = None,
                       timeout: float = 3.0, cache: ConfigCache | None = None,
                       session: aiohttp.ClientSession | None = None) -> HubResult:
    """A model's config.json from the Hub as a ModelConfig, or the reason there is none.

    Concurrent calls for one id share one request; failures are remembered for a while (see
    NEGATIVE_TTL, TRANSIENT_TTL); a successful config goes into `cache`. Never raises for what the
    network or the Hub does."""
    if not is_hub_id(model_id):
        return HubResult(model_id=model_id, reason="not_found")
    endpoint = endpoint.rstrip("/") or DEFAULT_ENDPOINT
    if cache is not None:
        try:
            cached = await cache.get(model_id)
        except Exception:
            cached = None
        if cached is not None:
            result = _result(model_id, cached)
            if result.reason == "ok":
                return result
    failed = _remembered_failure((endpoint, model_id, bool(token)))
    if failed is not None:
        return HubResult(model_id=model_id, reason=failed)

    key = (id(asyncio.get_running_loop()), endpoint, model_id, token)
    task = _inflight.get(key)
    if task is None:
        task = asyncio.create_task(_fetch_and_remember(model_id, endpoint, token, timeout, cache, session))
        _inflight[key] = task
        task.add_done_callback(lambda _t: _inflight.pop(key, None))
    # shield: one caller giving up (its handler cancelled) must not cancel the others' request
    return await asyncio.shield(task)

"""The command line's Hugging Face look-up: a request naming a Hub id the catalog lacks gets the architecture of
that repository's config.json, as the bot's enrich step does (bot.hub.fetch_config: the same fetcher, timeouts and
negative caching; fetched configs kept in a file cache between runs).

Offline (HF_HUB_OFFLINE=1 or GPU_ADVISOR_OFFLINE=1), or when the Hub does not answer, the request is left as it
is and the answer says so: the engine then answers from the name (its size, its base model).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from bot.hub.fetch import DEFAULT_ENDPOINT, ConfigCache

TIMEOUT_S = 3.0
# once the Hub is unreachable or silent in this process, the other ids of a batch are not tried (one process answers
# a whole `estimate --request` batch: a firewalled machine must not wait TIMEOUT_S for every row)
_unreachable: list[str] = []


class FileConfigCache(ConfigCache):
    """Fetched config.json dicts as files (one per id) under a folder; unreadable files count as absent."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, model_id: str) -> Path:
        return self.folder / (hashlib.sha256(model_id.encode()).hexdigest()[:32] + ".json")

    async def get(self, model_id: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(model_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    async def set(self, model_id: str, data: dict[str, Any]) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._path(model_id).write_text(json.dumps(data), encoding="utf-8")
        except OSError:
            pass  # a read-only home: the look-up still answered this run


def offline() -> bool:
    return any(os.environ.get(k, "").strip().lower() in ("1", "true", "yes") for k in
               ("HF_HUB_OFFLINE", "GPU_ADVISOR_OFFLINE"))


def cache_folder() -> Path:
    root = os.environ.get("GPU_ADVISOR_HUB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpu-advisor", "hub")
    return Path(root)


def needs_lookup(data: object) -> str | None:
    """The Hub id of a request's model when the catalog lacks it and no config or size came with it."""
    from bot.hub.ids import is_hub_id
    from engine.catalog import find_model

    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        return None
    model = data["model"]
    name = model.get("name")
    if not isinstance(name, str) or not is_hub_id(name) or model.get("config") is not None:
        return None
    if model.get("params_b") is not None or find_model(name) is not None:
        return None
    return name


def with_hub_config(data: Any) -> tuple[Any, str | None]:
    """The request with the Hub config of its model when it needs one, and a note on where it came from."""
    model_id = needs_lookup(data)
    if model_id is None:
        return data, None
    if offline() or _unreachable:
        return data, f"offline: {model_id} not looked up on the Hugging Face Hub; answered from its name"
    from bot.hub.fetch import fetch_config

    endpoint = os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    token = os.environ.get("HF_TOKEN") or None
    try:
        result = asyncio.run(fetch_config(model_id, endpoint=endpoint, token=token, timeout=TIMEOUT_S,
                                          cache=FileConfigCache(cache_folder())))
    except Exception:
        _unreachable.append(model_id)
        return data, f"the Hugging Face Hub did not answer for {model_id}; answered from its name"
    if result.reason in ("offline", "timeout"):
        _unreachable.append(model_id)
    if result.config is None:
        return data, f"no config.json of {model_id} on the Hugging Face Hub ({result.reason}); answered from its name"
    model = {**data["model"], "config": result.config.model_dump(exclude_none=True)}
    if result.params_b is not None:
        model["params_b"] = result.params_b
    return {**data, "model": model}, f"architecture from config.json of {model_id} on the Hugging Face Hub"

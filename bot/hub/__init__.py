"""A Hugging Face model's `config.json`, for a question that names a Hub id the catalog lacks.

- `ids`: `find_hub_id(text)`, an `owner/name` Hub id in free text (or a huggingface.co link), else None;
- `configs`: `parse_pasted_config(text)` / `config_from_json(data)`, a config.json → `engine.schema.ModelConfig`;
- `fetch`: `fetch_config(model_id, ...)`, the Hub's config.json with a cache, never raising for what the
  network or the Hub does (`HubResult.reason` says why there is none).

Nothing here runs at import time and nothing touches the network unless `fetch_config` is awaited.
"""

from __future__ import annotations

from bot.hub.configs import config_from_json, params_from_json, parse_pasted_config
from bot.hub.fetch import (
    DEFAULT_ENDPOINT,
    OK_TTL,
    ConfigCache,
    HubResult,
    MemoryConfigCache,
    Reason,
    config_url,
    fetch_config,
    forget_failures,
)
from bot.hub.ids import find_hub_id, is_hub_id

__all__ = [
    "DEFAULT_ENDPOINT", "OK_TTL", "ConfigCache", "HubResult", "MemoryConfigCache", "Reason", "config_from_json",
    "config_url", "fetch_config", "find_hub_id", "forget_failures", "is_hub_id", "params_from_json",
    "parse_pasted_config",
]

"""Reading untrusted configuration text safely: size, binary content, YAML bombs, deep nesting, huge numbers and
secrets. Every failure is an error key (`ConfigInputError.key`), never a traceback or a hang."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

MAX_BYTES = 256 * 1024
MAX_ALIASES = 64  # anchors may be reused a few times (CI-style YAML); a bomb needs many
MAX_NODES = 50_000  # values after alias expansion
MAX_DEPTH = 40
MAX_INT = 2**63

ERROR_KEYS = ("empty", "too_large", "binary", "yaml_bomb", "too_deep", "huge_number", "invalid_yaml", "invalid_json",
              "invalid_python", "invalid_values", "not_a_mapping", "unknown_format")

SECRET_KEY = re.compile(r"(^|_|-)(token|key|secret|password|passwd)$|^api[_-]?key$|wandb_api_key|hf_token",
                        re.IGNORECASE)
SECRET_VALUE = re.compile(r"\b(hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{16,}|[0-9a-f]{40})\b")
REDACTED = "<redacted>"
# Keys that end in _key/_token but hold no secret in the tools' own schemas (checked against the option lists).
NOT_SECRET = frozenset({"pad_token", "eos_token", "bos_token", "unk_token", "sep_token", "cls_token", "mask_token",
                        "special_tokens", "max_new_tokens", "chat_template_key", "dataset_text_field", "key",
                        "tokens", "hf_token_env"})


class ConfigInputError(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def is_secret_key(name: str) -> bool:
    plain = name.strip().lstrip("-").replace("-", "_").lower()
    return plain not in NOT_SECRET and bool(SECRET_KEY.search(plain))


def is_secret_value(value: object) -> bool:
    return isinstance(value, str) and bool(SECRET_VALUE.search(value))


def redact(text: str) -> str:
    """A string with every token-looking value replaced (for anything echoed back: key names, file names)."""
    return SECRET_VALUE.sub(REDACTED, text)


def check_text(data: str | bytes) -> str:
    """The input as text, or ConfigInputError: too large, binary, empty."""
    if isinstance(data, bytes):
        if len(data) > MAX_BYTES:
            raise ConfigInputError("too_large")
        if b"\x00" in data:
            raise ConfigInputError("binary")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ConfigInputError("binary") from None
    else:
        text = data
        if len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
            raise ConfigInputError("too_large")
    if "\x00" in text or sum(1 for c in text[:4096] if ord(c) < 32 and c not in "\t\n\r\f") > 8:
        raise ConfigInputError("binary")
    if not text.strip():
        raise ConfigInputError("empty")
    return text


class _CountingLoader(yaml.SafeLoader):
    """SafeLoader that refuses many aliases: the 'billion laughs' needs aliases of aliases."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise ConfigInputError("yaml_bomb")
        return super().compose_node(parent, index)


def _walk(obj: Any, depth: int, budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise ConfigInputError("yaml_bomb")
    if depth > MAX_DEPTH:
        raise ConfigInputError("too_deep")
    if isinstance(obj, bool):
        return
    if isinstance(obj, int) and abs(obj) >= MAX_INT:
        raise ConfigInputError("huge_number")
    if isinstance(obj, dict):
        for k, v in obj.items():
            _walk(k, depth + 1, budget)
            _walk(v, depth + 1, budget)
    elif isinstance(obj, list | tuple):
        for v in obj:
            _walk(v, depth + 1, budget)


def load_yaml(text: str) -> Any:
    try:
        loader = _CountingLoader(text)
    except yaml.reader.ReaderError:  # control characters YAML does not allow
        raise ConfigInputError("binary") from None
    try:
        data = loader.get_single_data()
    except ConfigInputError:
        raise
    except yaml.reader.ReaderError:
        raise ConfigInputError("binary") from None
    except RecursionError:
        raise ConfigInputError("too_deep") from None
    except ValueError:  # int conversion beyond Python's digit limit
        raise ConfigInputError("huge_number") from None
    except yaml.YAMLError:
        raise ConfigInputError("invalid_yaml") from None
    finally:
        loader.dispose()
    _checked(data)
    return data


def load_json(text: str) -> Any:
    try:
        data = json.loads(text)
    except RecursionError:
        raise ConfigInputError("too_deep") from None
    except json.JSONDecodeError:
        raise ConfigInputError("invalid_json") from None
    except ValueError:  # int conversion beyond Python's digit limit
        raise ConfigInputError("huge_number") from None
    _checked(data)
    return data


def _checked(data: Any) -> None:
    try:
        _walk(data, 0, [MAX_NODES])
    except RecursionError:
        raise ConfigInputError("too_deep") from None


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys of nested mappings (`zero_optimization.stage`); lists stay values."""
    out: dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out

"""A Hugging Face model's `config.json`, for a question that names a Hub id the catalog lacks.

- `find_hub_id(text)`: an `owner/name` Hub id in free text (or a huggingface.co link), else None.
- `parse_pasted_config(text)` / `config_from_json(data)`: a config.json (pasted, or fetched) →
  `engine.schema.ModelConfig`, with the common alternate field names of non-Llama families mapped.
- `fetch_config(model_id, ...)`: GET `{endpoint}/{model_id}/resolve/main/config.json` with a
  timeout, a size limit, a cache, negative caching and in-flight deduplication; it never raises for
  anything the Hub or the network does, it says why in `HubResult.reason`.

Nothing here runs at import time and nothing touches the network unless `fetch_config` is awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

import aiohttp
from pydantic import BaseModel, ValidationError

from engine.catalog import find_gpu, find_model
from engine.schema import ModelConfig

DEFAULT_ENDPOINT = "https://huggingface.co"
MAX_PASTE = 200_000  # characters of a pasted config we look at; beyond that it is not a config
MAX_RESPONSE = 1_000_000  # bytes of a fetched config.json
MAX_JSON_STARTS = 50  # "{" positions tried in a pasted text
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


# ---------------------------------------------------------------------------------------------
# Hub ids in free text

NAME_MAX = 96
_PART = rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{NAME_MAX - 1}}}"
_ID = re.compile(rf"^(?P<owner>{_PART})/(?P<name>{_PART})$")
_URL = re.compile(
    rf"(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/(?P<owner>{_PART})/(?P<name>{_PART})",
    re.IGNORECASE,
)
_BARE = re.compile(rf"(?<![A-Za-z0-9_./:@-])(?P<owner>{_PART})/(?P<name>{_PART})(?![A-Za-z0-9_/-])")
_NOT_MODELS = {"datasets", "spaces", "docs", "blog", "api", "settings", "collections", "papers", "organizations",
               "learn", "tasks", "join", "login", "pricing", "models"}
# words that stand on either side of a slash in questions, never as a Hub owner or model name
_WORDS = {
    "ru", "en", "de", "fr", "lora", "qlora", "full", "ft", "sft", "dpo", "ppo", "orpo", "rlhf", "inference",
    "train", "training", "finetune", "fine-tune", "fp32", "fp16", "bf16", "fp8", "fp4", "int8", "int4", "nf4",
    "4bit", "8bit", "4-bit", "8-bit", "16-bit", "s", "h", "hr", "hour", "hours", "day", "month", "mo", "gb",
    "gib", "tb", "tib", "mb", "gpu", "gpus", "cpu", "ram", "vram", "tokens", "token", "tok", "sec", "step",
    "adam", "adamw", "sgd", "lion", "zero", "zero3", "fsdp", "ddp", "ctx", "context", "batch", "epoch",
    "epochs", "usd", "rub", "eur", "yes", "no", "and", "or", "vs", "pcie", "sxm", "nvl", "input", "output",
}
# owners whose model names may be a single plain word (bigscience/bloom, microsoft/DialoGPT)
_KNOWN_OWNERS = {
    "meta-llama", "mistralai", "qwen", "google", "microsoft", "facebook", "bigscience", "tiiuae", "eleutherai",
    "openai", "openai-community", "deepseek-ai", "thudm", "zai-org", "01-ai", "nvidia", "allenai", "bigcode",
    "huggingfaceh4", "huggingfacetb", "stabilityai", "databricks", "mosaicml", "internlm", "baichuan-inc",
    "cohereforai", "coherelabs", "ibm-granite", "google-bert", "google-t5", "unsloth", "nousresearch",
    "moonshotai", "xai-org", "apple", "salesforce", "upstage", "ai21labs", "snowflake", "tinyllama",
    "yandex", "ai-forever", "sberbank-ai", "t-tech", "vikhrmodels", "lmsys", "teknium", "openbmb",
}
_NUMBERISH = re.compile(r"^[0-9][0-9.,_-]*[a-z]?$", re.IGNORECASE)  # 8k, 16k, 70b, 2024, 1.5, 12-05
# owners that are really settings or model names: r16/r32, bs8/bs16, Llama3/Qwen2.5
_NOT_OWNER = re.compile(r"^(?:[a-z]{0,3}\d+[a-z]{0,2}|(?:llama|qwen|mistral|mixtral|gemma|phi|falcon|gpt|"
                        r"deepseek|yi|glm|chatglm|claude|bloom|olmo|granite|command)[-_]?\d.*)$", re.IGNORECASE)


def _valid_part(part: str) -> bool:
    return 0 < len(part) <= NAME_MAX and "--" not in part and ".." not in part and part[-1] not in ".-"


def is_hub_id(model_id: str) -> bool:
    """Whether a string is a well-formed `owner/name` Hub model id (Hub naming rules)."""
    m = _ID.match(model_id)
    if m is None:
        return False
    return _valid_part(m["owner"]) and _valid_part(m["name"]) and not m["name"].endswith(".git")


def _plausible(owner: str, name: str) -> bool:
    lo, ln = owner.lower(), name.lower()
    if not (_valid_part(owner) and _valid_part(name)):
        return False
    if lo in _WORDS or ln in _WORDS or _NUMBERISH.match(owner) or _NUMBERISH.match(name):
        return False
    if lo not in _KNOWN_OWNERS and ("." in owner or _NOT_OWNER.match(owner)):
        return False
    if find_gpu(owner) or find_gpu(name) or find_model(owner):  # A100/H100, llama-3-8b/mistral-7b
        return False
    if lo in _KNOWN_OWNERS:
        return True
    # a model name almost always carries a size, a version or a separator (gpt2, Llama-3.1-8B)
    return any(ch.isdigit() or ch in "-._" for ch in name)


def _clean(part: str) -> str:
    return part.rstrip(".-")


def find_hub_id(text: str) -> str | None:
    """The first Hugging Face model id (`owner/name`, original case) in free text, else None.

    A huggingface.co link wins; otherwise a bare `owner/name` that looks like a model and not like
    "8k/16k", "A100/H100", "ru/en", a date or a fraction."""
    if not isinstance(text, str) or "/" not in text:
        return None
    text = text[:MAX_PASTE]
    for m in _URL.finditer(text):
        owner, name = m["owner"], _clean(m["name"])
        if owner.lower() in _NOT_MODELS:
            continue
        if _valid_part(owner) and _valid_part(name):
            return f"{owner}/{name}"
    for m in _BARE.finditer(text):
        owner, name = m["owner"], _clean(m["name"])
        if _plausible(owner, name):
            return f"{owner}/{name}"
    return None


# ---------------------------------------------------------------------------------------------
# config.json → ModelConfig

_LAYERS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
_HIDDEN = ("hidden_size", "n_embd", "d_model", "dim", "model_dim")
_HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
_KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "n_head_kv", "kv_n_heads")
_FFN = ("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim", "d_ff", "inner_hidden_size")
_VOCAB = ("vocab_size", "padded_vocab_size", "n_vocab")
_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
_TOP_K = ("num_experts_per_tok", "moe_top_k", "num_experts_per_token", "top_k_experts")
_NESTED = ("text_config", "llm_config", "language_config", "thinker_config")
# families whose transformers config defaults to untied embeddings when config.json says nothing
_UNTIED_BY_DEFAULT = {
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "chatglm", "glm", "glm4",
    "deepseek_v2", "deepseek_v3", "phi3", "internlm2", "baichuan", "yi", "olmo", "olmo2", "granite",
}
# families with a plain two-matrix MLP (the engine assumes a gated one unless told the size)
_PLAIN_MLP = {"gpt2", "gpt_neox", "gptj", "bloom", "falcon", "opt", "gpt_bigcode", "codegen", "mpt", "phi",
              "starcoder2", "gpt_neo", "bert", "roberta"}


def _int(data: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    return None


def _text_part(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's part of a config: multimodal configs nest it (`text_config`, ...)."""
    if _int(data, _LAYERS) is not None and _int(data, _HIDDEN) is not None:
        return data
    for key in _NESTED:
        nested = data.get(key)
        if isinstance(nested, dict) and _int(nested, _LAYERS) is not None:
            merged = {k: v for k, v in data.items() if k not in _NESTED}
            merged.update(nested)
            return merged
    inner = [data[k] for k in ("ffn_config", "attn_config") if isinstance(data.get(k), dict)]
    if inner:  # DBRX keeps its experts and KV heads one level down
        merged = dict(data)
        for part in inner:
            merged.update({k: v for k, v in part.items() if k not in data})
        return merged
    return data


def _fields(data: Mapping[str, Any]) -> dict[str, Any] | None:
    d = _text_part(data)
    layers, hidden, heads, vocab = _int(d, _LAYERS), _int(d, _HIDDEN), _int(d, _HEADS), _int(d, _VOCAB)
    if layers is None or hidden is None or heads is None or vocab is None:
        return None
    kv = _int(d, _KV_HEADS)
    if kv is None and d.get("multi_query_attention") is True:  # ChatGLM: groups of query heads
        kv = _int(d, ("multi_query_group_num",))
    if kv is None and (d.get("multi_query") is True):  # Falcon-7B, GPT-BigCode: one KV head
        kv = 1
    ffn = _int(d, _FFN)
    if ffn is None and "dim" in d and "hidden_size" not in d:  # Meta/Mistral params.json
        ffn = _int(d, ("hidden_dim",))
    head_dim = _int(d, ("head_dim",))
    if head_dim is None and d.get("kv_channels") is not None and "multi_query_group_num" in d:
        head_dim = _int(d, ("kv_channels",))  # ChatGLM
    tied = d.get("tie_word_embeddings")
    if not isinstance(tied, bool):
        tied = str(d.get("model_type", "")).lower() not in _UNTIED_BY_DEFAULT
    experts = _int(d, _EXPERTS) or None
    moe_ffn = _int(d, ("moe_intermediate_size", "expert_intermediate_size"))
    shared = _int(d, ("n_shared_experts", "num_shared_experts"))
    shared_ffn = _int(d, ("shared_expert_intermediate_size",))
    if shared is None and experts and shared_ffn and moe_ffn:  # Qwen-MoE: one wide shared expert
        shared = max(1, round(shared_ffn / moe_ffn))
    return {
        "num_hidden_layers": layers, "hidden_size": hidden, "intermediate_size": ffn,
        "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim, "vocab_size": vocab,
        "tie_word_embeddings": tied, "num_local_experts": experts,
        "num_experts_per_tok": _int(d, _TOP_K) if experts else None,
        "moe_intermediate_size": moe_ffn if experts else None,
        "n_shared_experts": shared if experts else None,
    }


def config_from_json(data: object) -> ModelConfig | None:
    """A decoded config.json → ModelConfig; None when it lacks the architecture or is out of bounds."""
    if not isinstance(data, dict):
        return None
    try:
        fields = _fields(data)
        if fields is None:
            return None
        cfg = ModelConfig(**fields)
    except (ValidationError, TypeError, ValueError, RecursionError):
        return None
    if cfg.head_dim is None and cfg.hidden_size < cfg.num_attention_heads:
        return None
    return cfg


def params_from_json(data: object, cfg: ModelConfig | None = None) -> float | None:
    """Total parameters (billions) for plain-MLP families, counted from the config; None otherwise
    (gated-MLP families: the engine counts them itself from the config)."""
    if not isinstance(data, dict):
        return None
    d = _text_part(data)
    cfg = cfg or config_from_json(data)
    if cfg is None or str(d.get("model_type", "")).lower() not in _PLAIN_MLP or cfg.num_local_experts:
        return None
    h, a = cfg.hidden_size, cfg.num_attention_heads
    kv = cfg.num_key_value_heads or a
    hd = cfg.head_dim or max(1, h // a)
    f = cfg.intermediate_size or 4 * h
    block = h * a * hd * 2 + 2 * h * kv * hd + 2 * h * f
    embedding = cfg.vocab_size * h * (1 if cfg.tie_word_embeddings else 2)
    return round((cfg.num_hidden_layers * block + embedding) / 1e9, 4)


def _json_objects(text: str) -> list[Any]:
    decoder = json.JSONDecoder()
    out: list[Any] = []
    start = text.find("{")
    tries = 0
    while start != -1 and tries < MAX_JSON_STARTS:
        tries += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            start = text.find("{", start + 1)
            continue
        out.append(value)
        start = text.find("{", end)
    return out


def parse_pasted_config(text: str) -> ModelConfig | None:
    """A config.json pasted into a message (maybe in a code fence, maybe with words around it) →
    ModelConfig; None when there is no usable config in it. Never raises."""
    try:
        if not isinstance(text, str) or len(text) > MAX_PASTE or "{" not in text:
            return None
        for value in _json_objects(text):
            cfg = config_from_json(value)
            if cfg is not None:
                return cfg
    except Exception:  # junk of any kind is "not a config", never an error
        return None
    return None


# ---------------------------------------------------------------------------------------------
# Cache

class ConfigCache(ABC):
    """Where fetched config.json dicts are kept; the bot's storage provides a persistent one."""

    @abstractmethod
    async def get(self, model_id: str) -> dict[str, Any] | None: ...

    @abstractmethod
    async def set(self, model_id: str, data: dict[str, Any]) -> None: ...


class MemoryConfigCache(ConfigCache):
    """In-process cache with a time to live and a size bound (oldest out first)."""

    def __init__(self, ttl: float = OK_TTL, max_items: int = 1024) -> None:
        self.ttl = ttl
        self.max_items = max_items
        self._items: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()

    async def get(self, model_id: str) -> dict[str, Any] | None:
        item = self._items.get(model_id)
        if item is None:
            return None
        expires, data = item
        if expires < time.monotonic():
            del self._items[model_id]
            return None
        self._items.move_to_end(model_id)
        return data

    async def set(self, model_id: str, data: dict[str, Any]) -> None:
        self._items[model_id] = (time.monotonic() + self.ttl, data)
        self._items.move_to_end(model_id)
        while len(self._items) > self.max_items:
            self._items.popitem(last=False)


# Failures are remembered here, whatever cache the caller gives: a flood of one bad id costs the
# Hub one request per NEGATIVE_TTL. Keyed by endpoint, id and whether a token was sent.
_failures: OrderedDict[tuple[str, str, bool], tuple[float, Reason]] = OrderedDict()
_inflight: dict[tuple[int, str, str, str | None], asyncio.Task[HubResult]] = {}


def forget_failures() -> None:
    """Drop the remembered failures (tests; an operator after fixing the token)."""
    _failures.clear()


def _remember_failure(key: tuple[str, str, bool], reason: Reason) -> None:
    ttl = TRANSIENT_TTL if reason in ("offline", "timeout") else NEGATIVE_TTL
    _failures[key] = (time.monotonic() + ttl, reason)
    _failures.move_to_end(key)
    while len(_failures) > MAX_NEGATIVE:
        _failures.popitem(last=False)


def _remembered_failure(key: tuple[str, str, bool]) -> Reason | None:
    item = _failures.get(key)
    if item is None:
        return None
    if item[0] < time.monotonic():
        del _failures[key]
        return None
    return item[1]


# ---------------------------------------------------------------------------------------------
# Fetching

class HubSettings(TypedDict):
    endpoint: str
    token: str | None


def hub_settings_from_env(env: Mapping[str, str] | None = None) -> HubSettings:
    """`endpoint` and `token` for `fetch_config` from HF_ENDPOINT and HF_TOKEN (as huggingface_hub
    reads them; HUGGING_FACE_HUB_TOKEN is the older name of the token)."""
    env = os.environ if env is None else env
    endpoint = (env.get("HF_ENDPOINT") or "").strip().rstrip("/") or DEFAULT_ENDPOINT
    token = (env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or "").strip() or None
    return {"endpoint": endpoint, "token": token}


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
            await cache.set(model_id, data)
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

"""A config.json (pasted, or fetched) → `engine.schema.ModelConfig`, with the common alternate field names of
non-Llama families mapped; the parameter count of a plain-MLP family from the catalog's formula."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from bot.hub.ids import MAX_PASTE
from engine.catalog import config_params
from engine.schema import ModelConfig

MAX_JSON_STARTS = 50  # "{" positions tried in a pasted text

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
        **_attention_fields(d, layers),
        "num_hidden_layers": layers, "hidden_size": hidden, "intermediate_size": ffn,
        "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim, "vocab_size": vocab,
        "tie_word_embeddings": tied, "num_local_experts": experts,
        "num_experts_per_tok": _int(d, _TOP_K) if experts else None,
        "moe_intermediate_size": moe_ffn if experts else None,
        "n_shared_experts": shared if experts else None,
    }


MAX_KEPT_BYTES = 32_768  # a cached config: what the engine can read from it, never a 900 KB file whole
_MAX_TEXT, _MAX_LIST, _MAX_DEPTH = 256, 1024, 3


def _kept(value: Any, depth: int) -> Any:
    """A config value as the cache keeps it, or `...` (dropped): numbers, flags, short names, short lists
    (per-layer patterns such as `layer_types`), small nested configs; not tokenizer tables, label maps of
    thousands of entries or embedded blobs."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value if len(value) <= _MAX_TEXT else ...
    if isinstance(value, list):
        if len(value) > _MAX_LIST:
            return ...
        items = [_kept(v, depth + 1) if depth < _MAX_DEPTH else ... for v in value]
        return ... if any(v is ... for v in items) else items
    if isinstance(value, dict) and depth < _MAX_DEPTH:
        kept = {str(k): v for k, v in ((k, _kept(v, depth + 1)) for k, v in value.items()) if v is not ...}
        return kept if len(kept) <= _MAX_LIST else ...
    return ...


def kept_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """What a cache keeps of a fetched config.json: every small field (the engine reads some now, a later
    version may read others), bounded to `MAX_KEPT_BYTES`; past that, the architecture fields alone."""
    kept = _kept(dict(data), 0)
    if isinstance(kept, dict) and len(json.dumps(kept)) <= MAX_KEPT_BYTES:
        return kept
    d = _text_part(data)
    scalars = {k: v for k, v in d.items() if v is None or isinstance(v, bool | int | float)
               or (isinstance(v, str) and len(v) <= _MAX_TEXT)}
    return dict(list(scalars.items())[:512])

_LINEAR_KINDS = ("linear_attention", "mamba", "mamba2", "gated_deltanet", "linear")


def _attention_fields(d: Mapping[str, Any], layers: int) -> dict[str, Any]:
    """Hybrid and local attention: the layers that keep a per-token KV cache (Qwen3-Next / Qwen3.5
    `layer_types` or `full_attention_interval`, Nemotron-H `hybrid_override_pattern` '*'), the sliding window
    and how many layers use it (Gemma 2/3, gpt-oss `layer_types`)."""
    out: dict[str, Any] = {}
    kinds = d.get("layer_types")
    if isinstance(kinds, list) and kinds and all(isinstance(k, str) for k in kinds):
        linear = sum(1 for k in kinds if k.lower() in _LINEAR_KINDS)
        if linear:
            out["attention_layers"] = len(kinds) - linear
        sliding = sum(1 for k in kinds if "sliding" in k.lower())
        full = sum(1 for k in kinds if k.lower() in ("full_attention", "attention", "global"))
        if sliding and full and not linear:
            out["sliding_window_pattern"] = max(1, round(len(kinds) / full))
    interval = _int(d, ("full_attention_interval",))
    if "attention_layers" not in out and interval and interval > 1:
        out["attention_layers"] = layers // interval
    pattern = d.get("hybrid_override_pattern")
    if isinstance(pattern, str) and "M" in pattern:
        out["attention_layers"] = pattern.count("*")
    window = _int(d, ("sliding_window",))
    if window and (out.get("sliding_window_pattern") or _int(d, ("sliding_window_pattern",))):
        out["sliding_window"] = window
        out.setdefault("sliding_window_pattern", _int(d, ("sliding_window_pattern",)))
    for key in ("kv_lora_rank", "qk_rope_head_dim", "attention_chunk_size", "max_position_embeddings"):
        value = _int(d, (key,))
        if value:
            out[key] = value
    return out


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
    return round(config_params(cfg, gated=False) / 1e9, 4)


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

"""KV cache: bytes per token per layer (GQA, MLA latent, fp8/int8), layer kinds (full, sliding window, chunked local),
and how a pool of bytes becomes blocks, tokens and concurrent requests (vLLM V1's hybrid allocator groups,
vllm/v1/core/kv_cache_utils.py; V0, SGLang, TGI and llama.cpp hold every layer for every token)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from engine.schema import Architecture
from engine.schema.serving import EngineFamily, KvCapacity

from .profile import data


@dataclass(frozen=True)
class LayerKind:
    kind: str  # "full" | "sliding" | "chunked"
    count: int  # layers of this kind on the rank
    window: int  # sliding window or chunk size (0 for full)


def token_layer_bytes(arch: Architecture, tp: int, element_bytes: float) -> float:
    """One token of one layer on one TP rank.

    GQA/MHA: K and V for the rank's KV heads (heads are replicated when TP exceeds them). MLA: one latent of
    kv_lora_rank + qk_rope_head_dim values, the same on every TP rank (vllm MLAAttentionSpec, num_kv_heads 1).
    """
    if arch.kv_lora_rank:
        return (arch.kv_lora_rank + (arch.qk_rope_head_dim or 0)) * element_bytes
    heads = max(1, arch.kv_heads // tp) if arch.kv_heads >= tp else 1
    return 2.0 * heads * arch.head_dim * element_bytes


def layer_kinds(arch: Architecture, layers: int) -> list[LayerKind]:
    """Layer kinds on a rank holding `layers` of the model's layers (in the model's proportions). A hybrid
    model's linear-attention / Mamba layers keep a fixed state per sequence, not a per-token KV: only its
    attention layers are counted (vllm/v1/kv_cache_interface.py MambaSpec vs FullAttentionSpec)."""
    if arch.attention_layers == 0:  # attention-free (Falcon-Mamba, Mamba): no per-token KV at all
        return [LayerKind("full", 0, 0)]
    if arch.attention_layers is not None and arch.layers:
        return [LayerKind("full", max(1, round(layers * arch.attention_layers / arch.layers)), 0)]
    local = arch.sliding_window or arch.attention_chunk_size
    if not local:
        return [LayerKind("full", layers, 0)]
    kind = "sliding" if arch.sliding_window else "chunked"
    if not arch.sliding_window_pattern:
        return [LayerKind(kind, layers, int(local))]
    full = layers // arch.sliding_window_pattern
    out = [LayerKind("full", full, 0)] if full else []
    return [*out, LayerKind(kind, layers - full, int(local))]


def _blocks_per_request(kind: LayerKind, length: int, mnbt: int, block: int) -> int:
    """vllm/v1/kv_cache_interface.py max_memory_usage_bytes / page size, for a request of `length` tokens."""
    if kind.kind == "sliding":
        return math.ceil(min(kind.window - 1 + mnbt, length) / block) + 1
    if kind.kind == "chunked":
        return math.ceil(min(kind.window + mnbt, length) / block)
    return math.ceil(length / block)


def _groups(kinds: list[LayerKind]) -> list[tuple[LayerKind, int]]:
    """(kind, groups of that kind): layers split into groups of the smallest kind's size (hybrid allocator)."""
    size = min(k.count for k in kinds)
    return [(k, math.ceil(k.count / size)) for k in kinds]


def _state_spec(arch: Architecture) -> dict[str, Any] | None:
    table = data().get("hybrid_state", {})
    spec = table.get(arch.name) or (table.get(arch.reference) if arch.reference else None)
    return spec if isinstance(spec, dict) else None


def state_layers(arch: Architecture, layers: int) -> int:
    """The layers holding a per-sequence state among the rank's `layers` (the model's proportion)."""
    spec = _state_spec(arch) or {}
    total = int(spec.get("layers") or arch.layers - (arch.attention_layers or 0))
    return max(0, round(layers * total / arch.layers)) if arch.layers else 0


def state_bytes(arch: Architecture, tp: int, element_bytes: float = 2.0) -> float | None:
    """The fixed state one linear-attention / Mamba layer holds per sequence on one TP rank (serving.toml
    [hybrid_state], vLLM MambaStateShapeCalculator shapes), or None when the catalog has no state shape for it."""
    spec = _state_spec(arch)
    if spec is None:
        return None
    k = int(spec["conv_kernel"]) - 1
    if spec["kind"] == "mamba1":  # mamba1_state_shape: conv (inner / TP, k - 1), temporal (inner / TP, state)
        return float(spec["inner"] * (k + spec["state"]) / tp) * element_bytes
    if spec["kind"] == "mamba2":
        inner = spec["heads"] * spec["head_dim"]
        conv = k * (inner + 2 * spec["groups"] * spec["state"]) / tp
        ssm = spec["heads"] / tp * spec["head_dim"] * spec["state"]
    else:  # gated_deltanet
        conv = k * (2 * spec["key_heads"] * spec["key_dim"] + spec["value_heads"] * spec["value_dim"]) / tp
        ssm = spec["value_heads"] / tp * spec["key_dim"] * spec["value_dim"]
    return float(conv + ssm) * element_bytes


def _hybrid_state_capacity(arch: Architecture, per_layer: float, state: float, pool: float, layers: int,
                           max_model_len: int, context: int, limit: int | None, block: int) -> KvCapacity:
    """vLLM V1 with state layers in the pool: the attention block grown so its page holds one state page, layers
    grouped by kind (groups of the smaller kind's size), a request needing cdiv(length, block) blocks per attention
    group and one block per state group; GPU KV cache size = max concurrency x max_model_len."""
    attention = layer_kinds(arch, layers)[0].count
    states = state_layers(arch, layers)
    if not attention:
        return _state_only_capacity(state, pool, states, max_model_len, limit)
    align = max(16, block)
    block = align * math.ceil(state / (align * per_layer))
    page = block * per_layer
    size = max(1, min(attention, states) if states else attention)
    attention_groups, state_groups = math.ceil(attention / size), math.ceil(states / size)
    blocks = int(pool // (page * size))

    def need(length: int) -> int:
        return attention_groups * math.ceil(length / block) + state_groups

    concurrency = blocks / need(max_model_len) if blocks else 0.0
    at_context = blocks / need(min(context, max_model_len)) if blocks else 0.0
    longest = max(0, (blocks - state_groups) // attention_groups * block) if blocks > state_groups else 0
    if limit:
        longest = min(longest, limit)
    return KvCapacity(bytes_per_token=round(per_layer * attention), groups=attention_groups + state_groups,
                      blocks=blocks, tokens=int(concurrency * max_model_len), max_concurrency=round(concurrency, 2),
                      max_model_len_that_fits=longest, concurrency_at_context=round(at_context, 2))


def _state_only_capacity(state: float, pool: float, states: int, max_model_len: int, limit: int | None) -> KvCapacity:
    """An attention-free model (Falcon-Mamba, Mamba) on vLLM V1: one KV cache group of every state layer, a request
    needing one page per layer whatever its length (MambaSpec.max_memory_usage_bytes = page_size_bytes), the block
    size set to max_model_len (vllm/model_executor/models/config.py MambaModelConfig.verify_and_update_config at
    1936cf38: mamba_block_size = max_model_len); so concurrency = blocks and GPU KV cache size = blocks x
    max_model_len."""
    blocks = int(pool // (state * states)) if states else 0
    longest = max_model_len if blocks else 0
    if limit:
        longest = min(longest, limit)
    return KvCapacity(bytes_per_token=0, groups=1 if states else 0, blocks=blocks, tokens=blocks * max_model_len,
                      max_concurrency=float(blocks), max_model_len_that_fits=longest,
                      concurrency_at_context=float(blocks))


def capacity(arch: Architecture, family: EngineFamily, pool_bytes: float, tp: int, layers: int,
             element_bytes: float, block: int, max_model_len: int, mnbt: int, context: int) -> KvCapacity:
    per_layer = token_layer_bytes(arch, tp, element_bytes)
    limit = arch.max_position_embeddings if arch.known and arch.max_position_embeddings else None
    pool = max(pool_bytes, 0.0)
    if arch.attention_layers == 0 and (only := state_bytes(arch, tp)):
        # every engine keeps one state per running sequence (SGLang's MambaPool, vLLM V0's MambaCacheManager
        # likewise hold max-running-requests states); V1's pool rule is the one modelled
        return _state_only_capacity(only, pool, state_layers(arch, layers), max_model_len, limit)
    state = state_bytes(arch, tp) if family == "vllm-v1" and arch.attention_layers is not None else None
    if state:
        return _hybrid_state_capacity(arch, per_layer, state, pool, layers, max_model_len, context, limit, block)
    kinds = layer_kinds(arch, layers)
    hybrid = family == "vllm-v1" and len(kinds) > 1 and not arch.kv_lora_rank
    uniform_local = family == "vllm-v1" and len(kinds) == 1 and kinds[0].kind != "full"
    if hybrid:
        groups = _groups(kinds)
        size = min(k.count for k in kinds)
        n_groups = sum(n for _, n in groups)
        blocks = int(pool // (per_layer * block * size))
        tokens = blocks // n_groups * block

        def need(length: int) -> int:
            return sum(n * _blocks_per_request(k, length, mnbt, block) for k, n in groups)
    else:
        n_groups = 1
        layers = sum(k.count for k in kinds)
        blocks = int(pool // (per_layer * block * layers)) if layers else 0
        tokens = blocks * block
        kind = kinds[0] if uniform_local else LayerKind("full", layers, 0)

        def need(length: int) -> int:
            return _blocks_per_request(kind, length, mnbt, block)
    concurrency = blocks / need(max_model_len) if blocks else 0.0
    at_context = blocks / need(min(context, max_model_len)) if blocks else 0.0
    # the longest request the pool holds: need() grows with the length, so search it
    lo, hi = 0, max(1, (limit or 16 * 1024 * 1024))
    if need(hi) <= blocks:
        lo = hi
    else:
        while hi - lo > block:
            mid = (lo + hi) // 2
            if need(mid) <= blocks:
                lo = mid
            else:
                hi = mid
        lo = lo // block * block
    bytes_per_token = per_layer * (min(k.count for k in kinds) * n_groups if hybrid else layers)
    return KvCapacity(bytes_per_token=round(bytes_per_token), groups=n_groups, blocks=blocks, tokens=tokens,
                      max_concurrency=round(concurrency, 2), max_model_len_that_fits=lo,
                      concurrency_at_context=round(at_context, 2))


def plain_bytes_per_token(arch: Architecture, tp: int, layers: int, element_bytes: float) -> float:
    """Every layer holding every token (the HF / llama.cpp cache, and the figure for one full-attention request);
    a hybrid model's attention layers only."""
    return token_layer_bytes(arch, tp, element_bytes) * sum(k.count for k in layer_kinds(arch, layers))

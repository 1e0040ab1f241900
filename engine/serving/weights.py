"""Weights per rank by format: block linears in the format's bytes (with its scales), embeddings and lm_head as the
format keeps them, split over TP ranks (vocabulary padded) and PP stages (the first holds the embedding, the last
the lm_head)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.schema import Architecture

from .profile import data


@dataclass(frozen=True)
class RankWeights:
    first: float  # bytes on the first PP stage (rank 0: what a start-up log prints)
    last: float  # bytes on the last PP stage (lm_head, sampler)
    per_layer: float  # bytes of one layer on one TP rank (llama.cpp offload unit)
    embedding: float  # bytes of the input embedding on one rank
    head: float  # bytes of the lm_head on one rank (0 when tied and PP == 1)


def padded_vocab(vocab: int, tp: int, engine: str) -> int:
    if engine in ("vllm", "sglang", "tensorrt-llm"):
        step = int(data()["vllm"]["vocab_padding"]) * tp
        return math.ceil(vocab / step) * step
    return vocab


def expert_params(arch: Architecture) -> float:
    """Routed expert weights (gate/up/down of every expert of every layer)."""
    if not arch.experts:
        return 0.0
    return float(arch.layers * arch.experts * (3 if arch.gated_mlp else 2) * arch.hidden * arch.expert_ffn)


def gguf_bits(fmt: str) -> float | None:
    return data()["llama_cpp"]["bpw"].get(fmt.split(":", 1)[1]) if fmt.startswith("gguf:") else None


def linear_bytes(arch: Architecture, fmt: str, tp: int = 1) -> float:
    """All block linears of the model in the format (before any split; expert padding as the TP split pads)."""
    spec = data()["formats"].get(fmt)
    if spec is None:
        bits = gguf_bits(fmt)
        return arch.linear_params * (bits or 16.0) / 8.0
    if spec.get("experts_only"):
        experts = min(expert_params(arch), arch.linear_params)
        ph, pf = float(spec.get("pad_hidden_to", 1)), float(spec.get("pad_ffn_per_rank_to", 1))
        ffn_rank = arch.expert_ffn / tp
        grow = (math.ceil(arch.hidden / ph) * ph * math.ceil(ffn_rank / pf) * pf
                / (arch.hidden * ffn_rank)) if experts else 1.0
        return experts * grow * spec["linear"] + (arch.linear_params - experts) * 2.0
    return arch.linear_params * float(spec["linear"])


def embedding_bytes_per_param(fmt: str) -> float:
    bits = gguf_bits(fmt)
    if bits is not None:
        return bits / 8.0  # the whole-file bpw of a mix already weighs the embedding and output types
    return float(data()["formats"].get(fmt, {}).get("embedding", 2.0))


def vision_tower_bytes(arch: Architecture, fmt: str, tp: int, engine: str) -> float:
    """The vision encoder + projector a multimodal checkpoint loads beside its decoder, on one TP rank (16-bit;
    serving.toml [vision_towers]); none for llama.cpp / Ollama (an mmproj file of its own) and text-only rows."""
    if engine not in ("vllm", "sglang", "tgi", "tensorrt-llm"):
        return 0.0
    towers = data().get("vision_towers", {})
    tower = towers.get(arch.name) or (towers.get(arch.reference) if arch.reference else None)
    if not tower:
        return 0.0
    return float(tower["params"]) * max(2.0, embedding_bytes_per_param(fmt)) / tp


def rank_weights(arch: Architecture, fmt: str, tp: int, pp: int, engine: str) -> RankWeights:
    vocab = padded_vocab(arch.vocab, tp, engine)
    row = arch.hidden * embedding_bytes_per_param(fmt)
    embedding = vocab * row / tp + vision_tower_bytes(arch, fmt, tp, engine)  # the first stage holds both
    head = 0.0 if arch.tied and pp == 1 else vocab * row / tp
    per_layer = linear_bytes(arch, fmt, tp) / arch.layers / tp
    layers_first = arch.layers // pp if pp > 1 else arch.layers
    layers_last = arch.layers - (pp - 1) * (arch.layers // pp) if pp > 1 else arch.layers
    if pp == 1:
        both = embedding + head + per_layer * arch.layers
        return RankWeights(both, both, per_layer, embedding, head)
    return RankWeights(embedding + per_layer * layers_first, head + per_layer * layers_last, per_layer,
                       embedding, head)

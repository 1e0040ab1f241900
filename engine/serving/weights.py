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


def mxfp4_experts_in_gguf(arch: Architecture, fmt: str) -> bool:
    """A GGUF of a model that ships its experts in MXFP4 (models.toml native_format): the experts stay MXFP4."""
    from engine.catalog import find_model

    if not fmt.startswith("gguf:") or not arch.experts:
        return False
    entry = find_model(arch.name)
    return entry is not None and entry.native_format == "mxfp4"


def gguf_other_bits(arch: Architecture, fmt: str) -> float:
    """Bits per weight of a GGUF's tensors outside the routed experts (serving.toml [llama_cpp])."""
    bits = gguf_bits(fmt) or 16.0
    if mxfp4_experts_in_gguf(arch, fmt) and fmt == "gguf:mxfp4":
        return float(data()["llama_cpp"]["bpw"][data()["llama_cpp"]["native_mxfp4_experts"]["others"]])
    return bits


def linear_bytes(arch: Architecture, fmt: str, tp: int = 1) -> float:
    """All block linears of the model in the format (before any split; expert padding as the TP split pads)."""
    spec = data()["formats"].get(fmt)
    if spec is None and mxfp4_experts_in_gguf(arch, fmt):
        experts = min(expert_params(arch), arch.linear_params)
        return experts * float(data()["llama_cpp"]["bpw"]["mxfp4"]) / 8.0 \
            + (arch.linear_params - experts) * gguf_other_bits(arch, fmt) / 8.0
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


def expert_bytes(arch: Architecture, fmt: str, tp: int = 1) -> float:
    """The routed experts' part of `linear_bytes` (the whole model, before any split): what a decode step reads only
    where the batch's tokens are routed."""
    experts = min(expert_params(arch), arch.linear_params)
    if not experts:
        return 0.0
    spec = data()["formats"].get(fmt)
    if spec is None and mxfp4_experts_in_gguf(arch, fmt):
        return experts * float(data()["llama_cpp"]["bpw"]["mxfp4"]) / 8.0
    if spec is None:
        return experts * (gguf_bits(fmt) or 16.0) / 8.0
    if spec.get("experts_only"):
        return linear_bytes(arch, fmt, tp) - (arch.linear_params - experts) * 2.0
    return experts * float(spec["linear"])


def decode_read_bytes(arch: Architecture, fmt: str, rank_bytes: float, tp: int, pp: int, batch: int) -> tuple[
        float, float]:
    """(dense, routed): the bytes one decode step of `batch` tokens reads from `rank_bytes` of one rank's weights.
    Everything but the routed experts is read whole (attention, shared experts, dense layers, lm_head, in their own
    format: bf16 beside MXFP4 experts); of the routed experts only those a token of the batch is routed to. vLLM's
    fused_moe_kernel (vllm-project/vllm@13cb3e4 vllm/model_executor/layers/fused_moe/fused_moe.py) loads, for each
    block of tokens, the weights of its own expert only (off_experts = expert_ids[pid_m]; b_ptr + off_experts *
    stride_be): uniform routing touches 1 - (1 - k/E)^batch of them. One stream reads the active parameters, never
    fewer bytes: its dense part is at 16 bits where the format quantizes only the experts."""
    every = expert_params(arch)
    if not every or not arch.experts_per_token or arch.experts_per_token >= arch.experts:
        return rank_bytes, 0.0
    share = arch.experts_per_token / arch.experts
    # the routed parameters from the model card's total and active counts (engine.speed.weight_params_read: the
    # layer count cannot tell DeepSeek's first dense layers), at the bytes the format gives an expert weight
    routed_params = max(0.0, arch.params - arch.active_params) / (1.0 - share)
    per_param = expert_bytes(arch, fmt, tp) / every
    routed = min(rank_bytes, routed_params * per_param / tp / max(1, pp))
    touched = 1.0 - (1.0 - share) ** max(1, batch)
    return rank_bytes - routed, routed * touched


def experts_only(fmt: str) -> bool:
    """The format quantizes the routed experts only; the rest stays 16-bit (MXFP4 in vLLM)."""
    return bool(data()["formats"].get(fmt, {}).get("experts_only"))


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
    row = arch.hidden * (gguf_other_bits(arch, fmt) / 8.0 if mxfp4_experts_in_gguf(arch, fmt)
                         else embedding_bytes_per_param(fmt))
    embedding = vocab * row / tp + vision_tower_bytes(arch, fmt, tp, engine)  # the first stage holds both
    # a tied lm_head shares the embedding in vLLM / SGLang; TGI loads it again from the same checkpoint tensor
    # (custom_modeling/flash_gemma3_modeling.py, flash_llama_modeling.py at v3.3.4: SpeculativeHead.load(prefix=
    # "...embed_tokens" when tie_word_embeddings), a second copy on the GPU
    head = 0.0 if arch.tied and pp == 1 and engine != "tgi" else vocab * row / tp
    per_layer = linear_bytes(arch, fmt, tp) / arch.layers / tp
    layers_first = arch.layers // pp if pp > 1 else arch.layers
    layers_last = arch.layers - (pp - 1) * (arch.layers // pp) if pp > 1 else arch.layers
    if pp == 1:
        both = embedding + head + per_layer * arch.layers
        return RankWeights(both, both, per_layer, embedding, head)
    return RankWeights(embedding + per_layer * layers_first, head + per_layer * layers_last, per_layer,
                       embedding, head)

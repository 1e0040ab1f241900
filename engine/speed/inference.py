"""Decode speed: bound by memory bandwidth (weights once per step for the batch, every sequence's KV cache),
or by compute for large batches. Calibration in engine/catalog/speed.toml [inference]."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from engine.catalog import Gpu
from engine.schema import Architecture, Scenario
from engine.speed import hardware
from engine.speed.hardware import gpus_per_node, link_kind, resolve_gpu


class InferenceSpeed(BaseModel):
    """Decode speed: tokens generated per second, all sequences of the batch together."""

    model_config = ConfigDict(defer_build=True)  # built by the first inference estimate

    gpu: str
    count: int
    batch_size: int
    context: int  # tokens in each sequence's KV cache
    tokens_per_second: float  # the whole batch
    tokens_per_second_per_sequence: float
    bound: Literal["memory", "compute"]
    bytes_per_step: float  # weights + KV caches read per decode step
    bandwidth_efficiency: float
    scaling: float  # tensor-parallel efficiency (1 for one GPU)


def scaling(gpu: Gpu, count: int, *, inference: bool = True) -> float:
    """Fraction of linear speed-up kept by tensor parallelism on `count` GPUs (1.0 for one).

    Training does not use this: its communication is modelled from bytes and bandwidth (engine/speed/training.py).
    """
    if count <= 1:
        return 1.0
    inf = hardware.calibration()["inference"]
    per_doubling = inf["nvlink_per_doubling"] if link_kind(gpu) == "nvlink" else inf["pcie_per_doubling"]
    in_node = min(count, gpus_per_node())
    result = per_doubling ** math.log2(in_node)
    if count > gpus_per_node():
        result *= inf["inter_node_per_doubling"] ** math.log2(count / gpus_per_node())
    return float(result)


def attention_width(arch: Architecture) -> int:
    """h_attn = heads · head_dim: the width of QKᵀ and AV (differs from `hidden` for Gemma and others)."""
    return arch.heads * arch.head_dim


def weight_params_read(arch: Architecture, batch: int) -> float:
    """Parameters read per decode step. Dense: all. MoE: shared part + the routed experts any of the
    `batch` tokens picks: fraction 1 − (1 − k/E)^batch of them (uniform routing)."""
    if not arch.experts or arch.active_params >= arch.params:
        return arch.params
    share = arch.experts_per_token / arch.experts  # routed experts per token / experts
    routed_total = (arch.params - arch.active_params) / (1.0 - share) if share < 1 else 0.0
    shared = arch.params - routed_total
    touched = 1.0 - (1.0 - share) ** batch
    return shared + routed_total * touched


def kv_bytes_per_token(arch: Architecture) -> float:
    """K and V for every layer: 2 · L · kv_heads · head_dim · bytes."""
    return 2.0 * arch.layers * arch.kv_heads * arch.head_dim * hardware.calibration()["inference"]["kv_bytes"]


def bandwidth_efficiency(bits: int) -> float:
    table = hardware.calibration()["inference"]["bandwidth_efficiency"]
    return float(table.get(str(bits), table["16"]))


def inference_speed(scenario: Scenario, gpu: Gpu | str, count: int | None = None) -> InferenceSpeed:
    """Decode tokens/s for `scenario.batch_size` sequences of `scenario.seq_len` tokens of context."""
    g = resolve_gpu(gpu)
    n = count if count is not None else scenario.gpu_count
    if n < 1:
        raise ValueError(f"GPU count must be at least 1, got {n}")
    arch = scenario.arch
    batch, context = scenario.batch_size, scenario.seq_len
    eff_bw = bandwidth_efficiency(scenario.bits)
    eff_n = scaling(g, n, inference=True)
    weight_bytes = weight_params_read(arch, batch) * scenario.bits / 8.0
    kv_bytes = kv_bytes_per_token(arch) * context * batch
    step_bytes = weight_bytes + kv_bytes
    memory_step = step_bytes / (n * g.bandwidth_tbs * 1e12 * eff_bw * eff_n)
    flops_step = batch * (2.0 * arch.active_params + 4.0 * arch.layers * context * attention_width(arch))
    compute_step = flops_step / (n * g.bf16_tflops * 1e12 * hardware.calibration()["inference"]["compute_utilisation"]
                                 * eff_n)
    step = max(memory_step, compute_step)
    bound: Literal["memory", "compute"] = "memory" if memory_step >= compute_step else "compute"
    return InferenceSpeed(
        gpu=g.name, count=n, batch_size=batch, context=context,
        tokens_per_second=batch / step, tokens_per_second_per_sequence=1.0 / step,
        bound=bound, bytes_per_step=step_bytes, bandwidth_efficiency=eff_bw, scaling=eff_n,
    )

"""Decode tokens/s (per user and in total) at the asked concurrency, time to first token, and what a million output
tokens cost. Bandwidth efficiency, all-reduce latency and prefill utilisation are serving.toml's [speed] (fit on the
Qwen2.5 vLLM speed benchmark); compute utilisation and MoE expert reads are engine.speed's; prices engine.pricing's."""

from __future__ import annotations

from typing import Literal

from engine import pricing
from engine.catalog import Gpu
from engine.schema import Architecture
from engine.schema.serving import Cost, GpuChoice, RankMemory, Settings, Speed
from engine.speed import calibration

from .core import kv_element_bytes
from .kv import plain_bytes_per_token
from .lora import idle_slot_bytes
from .profile import data
from .weights import decode_read_bytes, experts_only, rank_weights


def format_bits(fmt: str) -> int:
    if fmt in ("fp8", "int8") or fmt == "gguf:q8_0":
        return 8
    if fmt in ("gptq", "awq", "bitsandbytes", "mxfp4", "nvfp4") or fmt.startswith(("gguf:q", "gguf:iq")):
        return 4
    return 32 if fmt == "fp32" else 16


def kernel_floor_s(arch: Architecture, pp: int) -> float:
    """Seconds a decode step of one pipeline stage spends on the kernel chains of MLA + MoE layers (DeepSeek-V3/R1,
    Kimi-K2) beyond what their bytes take: serving.toml [speed] mla_moe_layer_floor_us a layer; 0 for others
    (their per-layer floors sit inside the bandwidth efficiency the dense Qwen2.5 rows were fit with)."""
    if not arch.experts or not arch.kv_lora_rank:
        return 0.0
    return float(data()["speed"]["mla_moe_layer_floor_us"]) * 1e-6 * (arch.layers // max(1, pp))


def decode_and_ttft(arch: Architecture, s: Settings, gpu: Gpu, choice: GpuChoice, weights_bytes: float,
                    users: int, prompt: int, output: int, element_bytes: float, host_bytes: float = 0.0) -> Speed:
    """`weights_bytes`: what a decode step reads on one rank (the input embedding table excluded)."""
    tp, pp = s.tensor_parallel, s.pipeline_parallel
    batch = max(1, users)
    bits = format_bits(s.weight_format)
    sp = data()["speed"]
    bw = gpu.bandwidth_tbs * 1e12 * sp["bandwidth_efficiency"][str(bits)]
    # the dense part at 16 bits' efficiency where the format quantizes only the experts (MXFP4)
    dense_bits = "16" if experts_only(s.weight_format) else str(bits)
    dense_bw = gpu.bandwidth_tbs * 1e12 * sp["bandwidth_efficiency"][dense_bits]
    dense, routed = decode_read_bytes(arch, s.weight_format, weights_bytes, tp, pp, batch)
    touched = (dense + routed) / weights_bytes if weights_bytes > 0 else 1.0
    context = prompt + output // 2  # the average context a decode step reads over a request's life
    kv_read = batch * context * plain_bytes_per_token(arch, tp, arch.layers // pp, element_bytes)
    memory_step = dense / dense_bw + (routed + kv_read) / bw + host_bytes * touched / (sp["host_ram_gbs"] * 1e9)
    peak = (gpu.fp8_tflops if bits == 8 and gpu.fp8_tflops else gpu.bf16_tflops) * 1e12
    util = calibration()["inference"]["compute_utilisation"]
    attention = 4.0 * arch.layers * context * arch.heads * arch.head_dim
    compute_step = batch * (2.0 * arch.active_params + attention) / (tp * pp) / (peak * util)
    latency = sp["allreduce_us"]["nvlink" if choice.nvlink else "pcie"] * 1e-6
    comm = 2 * (arch.layers // pp) * latency if tp > 1 else 0.0
    stage = max(memory_step, compute_step) + comm + kernel_floor_s(arch, pp)
    step = stage * pp  # one token passes every stage in turn
    if s.family == "hf":
        step += sp["hf_step_overhead_ms"] * 1e-3
    prefill_flops = 2.0 * arch.active_params * prompt + 2.0 * arch.layers * prompt * prompt * arch.heads * arch.head_dim
    prefill = prefill_flops / (tp * peak * sp["prefill_utilisation"])
    ttft = max(prefill, weights_bytes * pp / bw) + comm * max(1, prompt // s.max_num_batched_tokens) + step
    return Speed(per_user_tokens_s=round(1.0 / step, 2), total_tokens_s=round(batch / step, 1),
                 ttft_s=round(ttft, 3), bound="memory" if memory_step >= compute_step else "compute",
                 concurrency=batch, context=prompt + output)


def instance_speed(arch: Architecture, s: Settings, gpu: Gpu, choice: GpuChoice, memory: RankMemory, users: int,
                   prompt: int, output: int) -> Speed:
    """One TP x PP instance at `users` requests at once: what a decode step reads is the rank's weights less the
    input embedding table (llama.cpp: its whole GPU share), plus host RAM layers on a discrete GPU."""
    w = rank_weights(arch, s.weight_format, s.tensor_parallel, s.pipeline_parallel, s.engine)
    read = memory.weights_gib * 2**30 - (w.embedding if s.family not in ("llama.cpp", "ollama") else 0.0)
    read -= idle_slot_bytes(memory, users)  # LoRA slots no request of the batch uses are not read
    if s.family in ("llama.cpp", "ollama"):
        read *= max(1, choice.count)  # layers split over the GPUs: a token passes them one after another
    return decode_and_ttft(arch, s, gpu, choice, read, users, prompt, output,
                           kv_element_bytes(s.kv_cache_dtype, s.weight_format),
                           host_bytes=memory.host_ram_gib * 2**30 if not choice.unified_memory else 0.0)


def per_million(per_hour: float | None, total_tokens_s: float) -> float | None:
    """What a million output tokens cost at `total_tokens_s` (all replicas) and `per_hour` (all GPUs)."""
    if per_hour is None or total_tokens_s <= 0:
        return None
    return round(per_hour / (total_tokens_s * 3600.0) * 1e6, 3)


def cost(gpu_name: str, count: int, total_tokens_s: float, currency: str = "USD") -> Cost | None:
    cur: Literal["USD", "RUB"] = "RUB" if currency == "RUB" else "USD"
    try:
        price = pricing.price_range(gpu_name, currency=cur)
    except (LookupError, ValueError):
        return None
    per_hour = price.typical * count
    per_million = per_hour / (total_tokens_s * 3600.0) * 1e6 if total_tokens_s > 0 else 0.0
    return Cost(currency=cur, per_hour=round(per_hour, 2), per_month=round(per_hour * pricing.HOURS_PER_MONTH, 0),
                per_million_output_tokens=round(per_million, 3), gpu_hour_price=round(price.typical, 3),
                price_source=price.typical_where)

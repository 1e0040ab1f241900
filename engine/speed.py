"""How long a fine-tuning run takes, and how fast a model generates: the FLOPs model of DESIGN.md.

Training (DESIGN.md "Time and money"), per token:

    dense   = k · P_active, k = 6 full fine-tuning (forward 2 + backward 4), k = 4 LoRA/QLoRA (no
              weight gradients for the frozen base), + 2 · P_active when gradient checkpointing
              recomputes the forward
    attn    = 12 · L · s · h_attn  (forward 4 · L · s · h_attn: QKᵀ and AV, 2 · s · h_attn FLOPs each
              per layer and token; backward twice that, also for LoRA: attention has no weights to freeze),
              + 4 · L · s · h_attn recomputed with checkpointing. h_attn = heads · head_dim. Not halved for
              the causal mask (the PaLM / llm-foundry convention, in which the calibration was measured).
    time    = tokens · (dense + attn) / (GPUs · peak_bf16_dense · u · scaling)

`u` is the hardware FLOPs utilisation (llm-foundry's HFU: it counts the recompute), calibrated per GPU class
and method in engine/catalog/speed.toml on shared/data/throughput.md:

- full fine-tuning: A100 0.66 (median llm-foundry HFU 58.6–73.7 %), H100/H200 0.50 (39.8–56.8 %), so that
  H100 ≈ 2.4× A100 at 2k context (llm-foundry: 2.12–2.53×; seed S15 says 2–4×, throughput.md says 2–2.6×
  without FP8); workstation boards 0.47 (throughput.md MFU 0.35 × 8/6: lower sustained clocks);
- LoRA: A100 0.40 (LLaMA-Factory HF + FlashAttention-2, 2,954 tok/s on Llama-2-7B with checkpointing),
  H100 0.25 (H100 ≈ 2× A100 for PEFT, throughput.md), workstation 0.45; QLoRA × 0.85 (× 0.80 on
  workstation boards) for dequantisation (litgpt +15–16 % time, torchtune −22 % on a 4090);
- RTX A6000 × 0.88: its 39 % more peak than the A5000 turns into ~23 % more speed (same 768 GB/s; seed S13);
- micro-batch × sequence < 4k tokens per GPU × 0.7 (throughput.md modifier).

MFU reported back is the usual one: model FLOPs (k · P + attention, no recompute) over the peak.

Several GPUs: per-GPU utilisation holds inside a node; each doubling costs 0.97 over NVLink/NVSwitch,
0.88 over PCIe, and each doubling of nodes beyond 8 GPUs costs 0.92 more.

CPU offload: per optimizer step the trainable gradients go to the host and the updated weights come back
(4 bytes per trainable parameter over PCIe) and the CPU runs Adam while the GPUs wait; with parameter
offload (ZeRO-3) the 16-bit weights also stream in for every forward, backward and recompute, overlapped
with compute: time per token = max(compute, streaming) + optimizer step / tokens per optimizer step.

Inference decode is bound by memory bandwidth: one decode step reads the weights once for the batch and
each sequence's KV cache, at 67 % of peak bandwidth for BF16 weights (vLLM, Qwen2.5 speed benchmark),
51 % for 8-bit and 36 % for 4-bit; large batches hit the compute bound (2 · P_active FLOPs per token).

Everything here is pure and synchronous; the calibration is read once from speed.toml.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel

from engine.catalog import Gpu, data_file, find_gpu
from engine.schema import Architecture, Scenario

TOKENS_100M = 1e8
SECONDS_PER_HOUR = 3600.0

Link = Literal["nvlink", "pcie"]


class TrainingTime(BaseModel):
    """Wall-clock time of a training run on `count` GPUs, with the range that the utilisation spread gives."""

    gpu: str
    count: int
    tokens: float  # training tokens processed (dataset tokens × epochs)
    hours: float  # typical
    hours_fast: float  # at the high end of the utilisation range
    hours_slow: float  # at the low end
    tokens_per_second: float  # all GPUs together, typical
    tokens_per_second_per_gpu: float
    mfu: float  # model FLOPs (k · P_active + attention, no recompute) / (GPUs × dense BF16 peak × time)
    utilisation: float  # hardware FLOPs utilisation the estimate used (per GPU, before scaling losses)
    scaling: float  # multi-GPU efficiency (1 for one GPU)
    flops: float  # hardware FLOPs of the whole run
    offload_bound: bool  # PCIe transfers or CPU Adam, not the GPU, set the pace
    notes: list[str]


class InferenceSpeed(BaseModel):
    """Decode speed: tokens generated per second, all sequences of the batch together."""

    gpu: str
    count: int
    batch_size: int
    context: int  # tokens in each sequence's KV cache
    tokens_per_second: float  # the whole batch
    tokens_per_second_per_sequence: float
    bound: Literal["memory", "compute"]
    bytes_per_step: float  # weights + KV caches read per decode step
    bandwidth_efficiency: float
    notes: list[str]


# ---- calibration --------------------------------------------------------------------------------------


def calibration() -> dict[str, Any]:
    return data_file("speed.toml")


def gpus_per_node() -> int:
    return int(calibration()["scaling"]["gpus_per_node"])


def gpu_class(gpu: Gpu) -> str:
    for name, members in calibration()["classes"].items():
        if gpu.name in members:
            return str(name)
    return "default"


def link_kind(gpu: Gpu) -> Link:
    """NVLink/NVSwitch/Infinity Fabric between all GPUs of a node, or PCIe (2-way bridges count as PCIe)."""
    text = gpu.interconnect.lower()
    if "infinity fabric" in text:
        return "nvlink"
    if "nvlink" in text and "bridge" not in text and "c2c" not in text:
        return "nvlink"
    return "pcie"


def _band(table: dict[str, Any], cls: str) -> dict[str, float]:
    return table.get(cls) or table["default"]


def utilisation(scenario: Scenario, gpu: Gpu) -> tuple[float, float, float]:
    """Hardware FLOPs utilisation (typical, low, high) for this method on this GPU, per GPU."""
    cal = calibration()
    cls = gpu_class(gpu)
    method = "full" if scenario.method == "full" else "lora"
    band = _band(cal["utilisation"][method], cls)
    factor = float(cal["gpu_factor"].get(gpu.name, 1.0))
    if scenario.method == "qlora":
        factor *= float(cal["qlora_factor"].get(cls, cal["qlora_factor"]["default"]))
    mb = cal["micro_batch"]
    if scenario.batch_size * scenario.seq_len < mb["min_tokens"]:
        factor *= float(mb["factor"])  # small micro-batches leave the tensor cores idle between kernels
    return band["typical"] * factor, band["low"] * factor, band["high"] * factor


def scaling(gpu: Gpu, count: int, *, inference: bool = False) -> float:
    """Fraction of linear speed-up kept on `count` GPUs (1.0 for one)."""
    if count <= 1:
        return 1.0
    cal = calibration()
    sc = cal["scaling"]
    per_node = gpus_per_node()
    link = link_kind(gpu)
    if inference:
        inf = cal["inference"]
        per_doubling = inf["nvlink_per_doubling"] if link == "nvlink" else inf["pcie_per_doubling"]
    else:
        per_doubling = sc["nvlink_per_doubling"] if link == "nvlink" else sc["pcie_per_doubling"]
    in_node = min(count, per_node)
    nodes = count / per_node
    result = per_doubling ** math.log2(in_node)
    if nodes > 1:
        result *= sc["inter_node_per_doubling"] ** math.log2(nodes)
    return float(result)


# ---- FLOPs ------------------------------------------------------------------------------------------------


def attention_width(arch: Architecture) -> int:
    """h_attn = heads · head_dim: the width of QKᵀ and AV (differs from `hidden` for Gemma and others)."""
    return arch.heads * arch.head_dim


def dense_flops_per_token(scenario: Scenario, *, recompute: bool) -> float:
    """k · P_active (+ 2 · P_active recomputed forward when `recompute`)."""
    p_active = scenario.arch.active_params
    k = 6.0 if scenario.method == "full" else 4.0
    return (k + (2.0 if recompute else 0.0)) * p_active


def attention_flops_per_token(scenario: Scenario, *, recompute: bool) -> float:
    """12 · L · s · h_attn for forward + backward, + 4 · L · s · h_attn recomputed."""
    arch = scenario.arch
    forward = 4.0 * arch.layers * scenario.seq_len * attention_width(arch)
    return 3.0 * forward + (forward if recompute else 0.0)


def training_flops_per_token(scenario: Scenario) -> tuple[float, float]:
    """(hardware FLOPs, model FLOPs) per training token; they differ by the checkpointing recompute."""
    def per_token(recompute: bool) -> float:
        return dense_flops_per_token(scenario, recompute=recompute) + attention_flops_per_token(
            scenario, recompute=recompute)

    return per_token(scenario.gradient_checkpointing), per_token(False)


# ---- offload ----------------------------------------------------------------------------------------------


def _pcie_bytes_per_s(gpu: Gpu) -> float:
    table = calibration()["offload"]["pcie_gbs"]
    return float(table.get(gpu_class(gpu), table["default"])) * 1e9


def offload_seconds_per_token(scenario: Scenario, gpu: Gpu, count: int) -> tuple[float, float]:
    """(overlappable, serial) seconds per training token of the whole job that CPU offload adds.

    Serial: the optimizer step — gradients down and weights up over PCIe (2 + 2 bytes per trainable
    parameter, each GPU its 1/count share) and CPU Adam — once per optimizer step, while the GPUs wait.
    Overlappable: with parameter offload (zero3) the 16-bit weights stream in for the forward, the backward
    and a recompute of every micro-batch; prefetching hides them behind compute up to the PCIe limit.
    """
    if not scenario.offload:
        return 0.0, 0.0
    off = calibration()["offload"]
    arch = scenario.arch
    trainable = arch.params if scenario.method == "full" else arch.params * off["lora_trainable_fraction"]
    pcie = _pcie_bytes_per_s(gpu)
    micro_tokens = scenario.batch_size * scenario.seq_len * count
    step_tokens = max(float(off["tokens_per_optimizer_step"]), micro_tokens)
    step_seconds = 4.0 * trainable / count / pcie + trainable / count / off["cpu_adam_params_per_s"]
    serial = step_seconds / step_tokens
    streaming = 0.0
    if scenario.sharding == "zero3":
        passes = 3.0 if scenario.gradient_checkpointing else 2.0
        weight_bytes = arch.params * max(scenario.bits, 16) / 8.0
        streaming = passes * weight_bytes / count / pcie / micro_tokens
    return streaming, serial


# ---- training time -----------------------------------------------------------------------------------------


def resolve_gpu(gpu: Gpu | str) -> Gpu:
    if isinstance(gpu, Gpu):
        return gpu
    found = find_gpu(gpu)
    if found is None:
        raise ValueError(f"unknown GPU: {gpu!r}")
    return found


def training_time(scenario: Scenario, gpu: Gpu | str, count: int | None = None,
                  tokens: float = TOKENS_100M) -> TrainingTime:
    """Hours to process `tokens` training tokens (dataset tokens × epochs) on `count` GPUs."""
    if scenario.method == "inference":
        raise ValueError("training_time needs a training method (full, lora or qlora), not inference")
    if not (tokens > 0 and math.isfinite(tokens)):
        raise ValueError(f"tokens must be a positive number, got {tokens!r}")
    g = resolve_gpu(gpu)
    n = count if count is not None else scenario.gpu_count
    if n < 1:
        raise ValueError(f"GPU count must be at least 1, got {n}")
    u, u_low, u_high = utilisation(scenario, g)
    eff = scaling(g, n)
    hw_per_token, model_per_token = training_flops_per_token(scenario)
    peak = g.bf16_tflops * 1e12
    streaming, serial = offload_seconds_per_token(scenario, g, n)
    spt = _seconds_per_token(hw_per_token, n * peak * u * eff, streaming, serial)
    offload_bound = streaming + serial > hw_per_token / (n * peak * u * eff)
    tps = 1.0 / spt
    notes = _training_notes(scenario, g, n, eff, offload_bound)
    return TrainingTime(
        gpu=g.name, count=n, tokens=tokens,
        hours=tokens * spt / SECONDS_PER_HOUR,
        hours_fast=tokens * _seconds_per_token(hw_per_token, n * peak * u_high * eff, streaming, serial)
        / SECONDS_PER_HOUR,
        hours_slow=tokens * _seconds_per_token(hw_per_token, n * peak * u_low * eff, streaming, serial)
        / SECONDS_PER_HOUR,
        tokens_per_second=tps, tokens_per_second_per_gpu=tps / n,
        mfu=model_per_token * tps / (n * peak), utilisation=u, scaling=eff,
        flops=hw_per_token * tokens, offload_bound=bool(offload_bound), notes=notes,
    )


def _seconds_per_token(hw_per_token: float, flops_per_s: float, streaming: float, serial: float) -> float:
    # Weight streaming overlaps with compute (the slower sets the pace); the optimizer step does not.
    return max(hw_per_token / flops_per_s, streaming) + serial


def seconds_per_token(scenario: Scenario, gpu: Gpu, count: int) -> float:
    """The typical seconds per training token of the whole job: `training_time` without its report, for
    searches that rank many arrangements."""
    u = utilisation(scenario, gpu)[0]
    streaming, serial = offload_seconds_per_token(scenario, gpu, count)
    return _seconds_per_token(training_flops_per_token(scenario)[0],
                              count * gpu.bf16_tflops * 1e12 * u * scaling(gpu, count), streaming, serial)


def _training_notes(scenario: Scenario, gpu: Gpu, count: int, eff: float, offload_bound: bool) -> list[str]:
    notes = [f"FLOPs model: {'6' if scenario.method == 'full' else '4'}·P per token"
             + (" + 2·P recompute (gradient checkpointing)" if scenario.gradient_checkpointing else "")
             + " + attention 12·L·s·h"]
    if scenario.method == "qlora":
        notes.append("QLoRA dequantisation slows LoRA by ~15-20%")
    if gpu.name in calibration()["gpu_factor"]:
        notes.append(f"{gpu.name}: sustained speed below its peak ratio (speed.toml gpu_factor)")
    if scenario.batch_size * scenario.seq_len < calibration()["micro_batch"]["min_tokens"]:
        notes.append("micro-batch under 4k tokens per GPU: utilisation × 0.7")
    if count > 1:
        notes.append(f"{count} GPUs over {link_kind(gpu)}: scaling efficiency {eff:.2f}")
    if offload_bound:
        notes.append("CPU offload: PCIe transfers and CPU Adam take longer than the GPU's compute")
    elif scenario.offload:
        notes.append("CPU offload: PCIe transfers and CPU Adam add time to every optimizer step")
    return notes


# ---- inference -------------------------------------------------------------------------------------------


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
    return 2.0 * arch.layers * arch.kv_heads * arch.head_dim * calibration()["inference"]["kv_bytes"]


def bandwidth_efficiency(bits: int) -> float:
    table = calibration()["inference"]["bandwidth_efficiency"]
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
    compute_step = flops_step / (n * g.bf16_tflops * 1e12 * calibration()["inference"]["compute_utilisation"]
                                 * eff_n)
    step = max(memory_step, compute_step)
    bound: Literal["memory", "compute"] = "memory" if memory_step >= compute_step else "compute"
    notes = [f"decode reads {step_bytes / 1e9:.1f} GB per step at {eff_bw:.0%} of {g.bandwidth_tbs} TB/s"]
    if bound == "compute":
        notes.append("batch large enough to be compute-bound")
    if n > 1:
        notes.append(f"tensor parallel over {n} GPUs: efficiency {eff_n:.2f}")
    return InferenceSpeed(
        gpu=g.name, count=n, batch_size=batch, context=context,
        tokens_per_second=batch / step, tokens_per_second_per_sequence=1.0 / step,
        bound=bound, bytes_per_step=step_bytes, bandwidth_efficiency=eff_bw, notes=notes,
    )

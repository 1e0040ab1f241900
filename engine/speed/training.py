"""How long a fine-tuning run takes: the FLOPs model of DESIGN.md, with the terms that are not FLOPs.

Per GPU and micro-batch of m = batch × seq tokens:

    compute   = m · FLOPs per token / (peak_bf16_dense · u)       u of the matmuls, by GPU class (speed.toml)
    elementw. = m · layers · hidden · bytes · passes / bandwidth    norms, activations, residuals
    adapters  = m · Σ(in + out) · bytes · passes / bandwidth        LoRA only (PEFT's wrappers around the base)
    dequant   = passes · 4-bit linear params · bytes / bandwidth    QLoRA only (bitsandbytes MatMul4Bit)
    dispatch  = layers · seconds per layer                          CPU launch time; the GPU runs ahead of it
    busy      = max(compute + elementwise + adapters + dequant, dispatch)
    comm      = collective bytes / bus bandwidth                    ZeRO-3/FSDP gathers and reduce-scatters
    offload   = host <-> GPU bytes / PCIe                           gradients each micro-step, weights (ZeRO-3)
    micro     = busy + comm + offload − overlap · min(busy, comm + offload) + collective latencies

Per optimizer step: accumulation × micro + the optimizer update (state bytes / memory bandwidth, or with CPU
offload the updated weights back over PCIe and CPU Adam while the GPUs wait) + the DDP gradient all-reduce that
the last backward did not hide. Seconds per token = step / tokens per step.

FLOPs per token: k · P_matmul, k = 6 full (forward 2 + backward 4), 4 LoRA/QLoRA (the frozen base gets no weight
gradients), + 2 · P_matmul recomputed with checkpointing; P_matmul = active parameters less an untied input
embedding (a lookup, not a matmul). Attention 12 · L · s · h_attn (+ 4 · L · s · h_attn recomputed), not halved
for the causal mask (the llm-foundry convention in which utilisation was measured).
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from engine.catalog import Gpu
from engine.frameworks import profile
from engine.memory import LoraTargets, lora_parameters
from engine.memory.state import zero_offload
from engine.schema import Scenario
from engine.speed import hardware
from engine.speed.flops import (
    peak_flops,
    published_mfu,
    training_flops_per_token,
    utilisation,
)
from engine.speed.hardware import (
    gpus_per_node,
    intra_node_gbs,
    network_gbs,
    nodes,
    pcie_gbs,
    resolve_gpu,
)

TOKENS_100M = 1e8
SECONDS_PER_HOUR = 3600.0
SHARDED_PARAMS = ("zero3", "fsdp")
SHARDED_OPTIMIZER = ("zero1", "zero2", "zero3", "fsdp")


class StepTime(BaseModel):
    """Seconds of one optimizer step on each GPU, by term."""

    tokens: float  # training tokens per optimizer step, all GPUs together
    micro_batches: int  # per GPU per optimizer step
    compute: float
    elementwise: float  # norms, activations, residual adds: memory-bound work per token and layer
    adapters: float  # LoRA: the adapters' elementwise work, memory-bound
    dequantisation: float
    dispatch: float
    busy: float  # per micro-batch max(compute + dequantisation, dispatch), summed over the step
    communication: float  # collective bytes / bus bandwidth, before overlap
    network: float  # the part of `communication` the inter-node network adds (0 inside one node)
    latency: float  # collective launch latencies (not hidden)
    offload_transfer: float  # host <-> GPU traffic that can overlap compute
    exposed: float  # communication and transfers that compute did not hide
    optimizer: float  # update on the GPU
    offload_serial: float  # CPU Adam + updated weights over PCIe, GPUs idle
    total: float
    collective_bytes: float  # per GPU
    pcie_bytes: float  # per GPU, host <-> GPU


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
    mfu: float  # model FLOPs (k · P_matmul + attention, no recompute) / (GPUs × dense BF16 peak × time)
    utilisation: float  # of the matmuls while the GPU computes (per GPU)
    scaling: float  # time without communication / time with it (1 for one GPU)
    flops: float  # hardware FLOPs of the whole run
    offload_bound: bool  # PCIe transfers or CPU Adam take longer than the GPU's own work
    step: StepTime


# ---- FLOPs ------------------------------------------------------------------------------------------------


def trainable_params(scenario: Scenario) -> float:
    """Full: every parameter; LoRA/QLoRA: the adapters, r · Σ(in + out) over the adapted projections."""
    if scenario.method == "full":
        return scenario.arch.params
    return lora_parameters(scenario.arch, LoraTargets.parse(scenario.lora_targets), max(scenario.lora_rank, 1))


def adapter_elements_per_token(scenario: Scenario) -> float:
    """Σ(in + out) over the adapted projections a token passes through (MoE: its routed and shared experts):
    the activations PEFT's LoRA wrappers touch outside the base matmul (dropout of the input, the rank-r
    products, scaling, the add onto the base output)."""
    if scenario.method == "full":
        return 0.0
    arch = scenario.arch
    if arch.experts:
        arch = arch.model_copy(update={"experts": arch.experts_per_token})
    return lora_parameters(arch, LoraTargets.parse(scenario.lora_targets), 1)


def default_accumulation(scenario: Scenario, count: int) -> int:
    """Micro-batches per GPU per optimizer step: enough for the assumed tokens per optimizer step."""
    per_micro = scenario.batch_size * scenario.seq_len * count
    target = float(hardware.calibration()["step"]["tokens_per_optimizer_step"])
    return max(1, math.ceil(target / per_micro))


# ---- the step ---------------------------------------------------------------------------------------------


def _ring_latency_s(count: int) -> float:
    """One all-gather / reduce-scatter: NCCL's ring model, base + (n - nodes) in-node hops + (nodes - 1)
    network hops (src/graph/tuning.cc, Simple protocol)."""
    lat = hardware.calibration()["comm"]["latency_us"]
    k = nodes(count)
    return (lat["base"] + (count - k) * lat["hop_intra"] + (k - 1) * lat["hop_network"]) * 1e-6


def _weight_bytes(scenario: Scenario) -> float:
    """Bytes per parameter the GPUs gather (FSDP-QLoRA gathers the 4-bit storage) or stream from the host."""
    return scenario.bits / 8.0 if scenario.method == "qlora" else 2.0


def _gathers(scenario: Scenario) -> int:
    """All-gathers of the sharded weights per micro-batch: forward and backward; DeepSpeed ZeRO-3 gathers again
    for a checkpointing recompute (its fetch hooks run on every module forward, the recompute included), FSDP
    recomputes inside the unit it has already gathered for backward."""
    return 3 if scenario.sharding == "zero3" and scenario.gradient_checkpointing else 2


class _Busy(BaseModel):
    """The GPU's own seconds of one micro-batch, by term."""

    compute: float
    elementwise: float
    adapters: float
    dequant: float
    dispatch: float

    @property
    def total(self) -> float:
        return max(self.compute + self.elementwise + self.adapters + self.dequant, self.dispatch)


def _published_step(scenario: Scenario, g: Gpu, accum: int, m: int, n: int, util: float) -> StepTime:
    """An end-to-end MFU: model FLOPs (no recompute) at that share of the peak, everything else inside it."""
    busy = accum * m * training_flops_per_token(scenario)[1] / (peak_flops(scenario, g) * util)
    return StepTime.model_construct(
        tokens=float(accum * m * n), micro_batches=accum, compute=busy, elementwise=0.0, adapters=0.0,
        dequantisation=0.0, dispatch=0.0, busy=busy, communication=0.0, network=0.0, latency=0.0,
        offload_transfer=0.0, exposed=0.0, optimizer=0.0, offload_serial=0.0, total=busy, collective_bytes=0.0,
        pcie_bytes=0.0)


def _busy(scenario: Scenario, g: Gpu, m: int, util: float) -> _Busy:
    """Matmuls at the utilisation, the memory-bound elementwise, LoRA and dequantisation passes, and dispatch."""
    cal = hardware.calibration()
    arch = scenario.arch
    bandwidth = g.bandwidth_tbs * 1e12
    compute = m * training_flops_per_token(scenario)[0] / (g.bf16_tflops * 1e12 * util)
    act = cal["activations"]
    act_passes = 4.0 if scenario.gradient_checkpointing else 3.0  # forward, backward x2, recompute
    elementwise = (m * arch.layers * arch.hidden * act["bytes_per_hidden_per_layer_per_pass"] * act_passes
                   / (bandwidth * act["bandwidth_efficiency"]))
    adapters = 0.0
    if scenario.method in ("lora", "qlora"):
        lora = cal["lora"]
        passes = 4.0 if scenario.gradient_checkpointing else 3.0  # forward, backward x2, recompute
        adapters = (m * adapter_elements_per_token(scenario) * passes * lora["bytes_per_element_per_pass"]
                    / (bandwidth * lora["bandwidth_efficiency"]))
    dequant = 0.0
    if scenario.method == "qlora":
        q = cal["qlora"]
        passes = 3.0 if scenario.gradient_checkpointing else 2.0
        dequant = passes * arch.linear_params * q["bytes_per_param_per_pass"] / (bandwidth * q["bandwidth_efficiency"])
    disp = cal["dispatch"]
    per_layer = disp["seconds_per_layer"] + (disp["zero3_seconds_per_layer"] if scenario.sharding == "zero3" else 0.0)
    return _Busy(compute=compute, elementwise=elementwise, adapters=adapters, dequant=dequant,
                 dispatch=arch.layers * per_layer)


def _collectives(scenario: Scenario, n: int, trainable: float, no_communication: bool) -> tuple[float, float, int]:
    """Bytes each micro-batch moves (gathers, reduce-scatters), bytes of the step's all-reduce, collectives a
    micro-batch."""
    arch = scenario.arch
    grad_bytes = float(hardware.calibration()["comm"]["gradient_bytes"])
    share = (n - 1) / n
    if n <= 1 or no_communication:
        return 0.0, 0.0, 0
    if scenario.sharding in SHARDED_PARAMS:
        gathers = _gathers(scenario)
        return share * (gathers * arch.params * _weight_bytes(scenario) + trainable * grad_bytes), 0.0, \
            (gathers + 1) * arch.layers
    if scenario.sharding == "zero2":
        return share * trainable * grad_bytes, 0.0, arch.layers
    return 0.0, 2.0 * share * trainable * grad_bytes, 0  # DDP / ZeRO-1: one bucketed all-reduce per step


def _offload(scenario: Scenario, n: int, trainable: float, accum: int) -> tuple[float, float, float]:
    """Host-link bytes a micro-batch and a step move with CPU offload, and the CPU Adam's seconds a step."""
    if not scenario.offload:
        return 0.0, 0.0, 0.0
    off = hardware.calibration()["offload"]
    # DeepSpeed stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu: each micro-step the 16-bit gradient
    # partition comes back from the host, is added, and goes out again (once when there is no accumulation)
    micro = trainable / n * 2.0 * (2.0 if accum > 1 else 1.0)
    if scenario.sharding == "zero3" and zero_offload(scenario, profile(scenario.framework)).parameters:
        # parameter offload: each GPU fetches its shard for every gather (optimizer offload keeps the shards on it)
        micro += _gathers(scenario) * scenario.arch.params * _weight_bytes(scenario) / n
    step = trainable / n * 2.0  # updated 16-bit weights back to the GPU
    cpu_adam = trainable * min(n, gpus_per_node()) / n / off["cpu_adam_params_per_s_per_node"]
    return micro, step, cpu_adam


def _optimizer_seconds(scenario: Scenario, g: Gpu, n: int, trainable: float) -> float:
    """The optimizer step on the GPU: its state streamed at the memory bandwidth, sharded where ZeRO/FSDP shard it."""
    opt = hardware.calibration()["optimizer"]
    shard = n if scenario.sharding in SHARDED_OPTIMIZER else 1
    per_param = opt["bytes_per_param_8bit"] if "8bit" in (scenario.optimizer or "") else opt["bytes_per_param"]
    return trainable / shard * per_param / (g.bandwidth_tbs * 1e12 * opt["bandwidth_efficiency"])


def step_time(scenario: Scenario, gpu: Gpu | str, count: int | None = None, *,
              accumulation: int | None = None, u: float | None = None,
              ideal_network: bool = False, no_communication: bool = False) -> StepTime:
    """Seconds of one optimizer step, by term. `ideal_network`: as if every GPU sat in one node (the cost of
    the inter-node network is the difference); `no_communication`: without collectives (their cost)."""
    g = resolve_gpu(gpu)
    n = count if count is not None else scenario.gpu_count
    if n < 1:
        raise ValueError(f"GPU count must be at least 1, got {n}")
    if accumulation is not None and accumulation < 1:
        raise ValueError(f"accumulation must be at least 1 micro-batch, got {accumulation}")
    accum = accumulation if accumulation is not None else default_accumulation(scenario, n)
    m = scenario.batch_size * scenario.seq_len
    util = u if u is not None else utilisation(scenario, g)[0]
    if published_mfu(scenario, g) is not None:
        return _published_step(scenario, g, accum, m, n, util)
    b = _busy(scenario, g, m, util)
    busy = b.total

    trainable = trainable_params(scenario)
    micro_bytes, allreduce_bytes, collectives = _collectives(scenario, n, trainable, no_communication)
    bus = (intra_node_gbs(g) if ideal_network else network_gbs(g, n)) * 1e9
    comm = micro_bytes / bus
    network = comm - micro_bytes / (intra_node_gbs(g) * 1e9)
    latency = 0.0 if ideal_network or not collectives else collectives * _ring_latency_s(n)
    if ideal_network and collectives:
        latency = collectives * _ring_latency_s(min(n, gpus_per_node()))

    pcie = pcie_gbs(g) * 1e9
    pcie_micro, pcie_step, cpu_adam = _offload(scenario, n, trainable, accum)
    transfer = pcie_micro / pcie
    overlap = float(hardware.calibration()["comm"]["overlap"])
    hidden = comm + transfer
    micro = busy + hidden - overlap * min(busy, hidden) + latency
    allreduce = allreduce_bytes / bus
    allreduce_exposed = allreduce - overlap * min(allreduce, busy)

    if scenario.offload:
        optimizer, serial = 0.0, pcie_step / pcie + cpu_adam
    else:
        optimizer, serial = _optimizer_seconds(scenario, g, n, trainable), 0.0
    exposed = accum * (micro - busy - latency) + allreduce_exposed
    total = accum * micro + allreduce_exposed + optimizer + serial
    return StepTime.model_construct(  # every field a float computed above: no validation to do
        tokens=float(accum * m * n), micro_batches=accum, compute=accum * b.compute,
        elementwise=accum * b.elementwise, adapters=accum * b.adapters, dequantisation=accum * b.dequant,
        dispatch=accum * b.dispatch, busy=accum * busy,
        communication=accum * comm + allreduce,
        network=accum * network + (allreduce - allreduce_bytes / (intra_node_gbs(g) * 1e9)),
        latency=accum * latency, offload_transfer=accum * transfer, exposed=exposed, optimizer=optimizer,
        offload_serial=serial, total=total,
        collective_bytes=accum * micro_bytes + allreduce_bytes, pcie_bytes=accum * pcie_micro + pcie_step,
    )


# ---- training time -----------------------------------------------------------------------------------------


def _check(scenario: Scenario, tokens: float) -> None:
    if scenario.method == "inference":
        raise ValueError("training_time needs a training method (full, lora or qlora), not inference")
    if not (tokens > 0 and math.isfinite(tokens)):
        raise ValueError(f"tokens must be a positive number, got {tokens!r}")


def training_time(scenario: Scenario, gpu: Gpu | str, count: int | None = None,
                  tokens: float = TOKENS_100M, *, accumulation: int | None = None) -> TrainingTime:
    """Hours to process `tokens` training tokens (dataset tokens × epochs) on `count` GPUs."""
    _check(scenario, tokens)
    g = resolve_gpu(gpu)
    n = count if count is not None else scenario.gpu_count
    if n < 1:
        raise ValueError(f"GPU count must be at least 1, got {n}")
    u, u_low, u_high = utilisation(scenario, g)
    step = step_time(scenario, g, n, accumulation=accumulation)
    alone = step_time(scenario, g, n, accumulation=accumulation, no_communication=True) if n > 1 else step
    spt = step.total / step.tokens

    def hours_at(util: float) -> float:
        s = step_time(scenario, g, n, accumulation=accumulation, u=util)
        return tokens * s.total / s.tokens / SECONDS_PER_HOUR

    tps = 1.0 / spt
    hw_per_token, model_per_token = training_flops_per_token(scenario)
    peak = g.bf16_tflops * 1e12
    return TrainingTime(
        gpu=g.name, count=n, tokens=tokens, hours=tokens * spt / SECONDS_PER_HOUR,
        hours_fast=hours_at(u_high), hours_slow=hours_at(u_low),
        tokens_per_second=tps, tokens_per_second_per_gpu=tps / n,
        mfu=model_per_token * tps / (n * peak), utilisation=u, scaling=alone.total / step.total,
        flops=hw_per_token * tokens,
        offload_bound=bool(scenario.offload and step.offload_serial + step.offload_transfer > step.busy),
        step=step,
    )


def seconds_per_token(scenario: Scenario, gpu: Gpu, count: int) -> float:
    """The typical seconds per training token of the whole job: `training_time` without its report, for
    searches that rank many arrangements."""
    step = step_time(scenario, gpu, count)
    return step.total / step.tokens

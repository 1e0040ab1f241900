"""Scenario → Breakdown: the peak GPU memory of one GPU, by component, in GiB.

The model follows DESIGN.md: weights by precision, trainable state by optimizer and mixed
precision, activations counted tensor by tensor (Korthikanti et al. 2022, adapted to RMSNorm,
rotary attention with GQA, gated MLPs, frozen and 4-bit base layers), the logits peak of the loss,
the KV cache for inference, sharding over N GPUs, offload to CPU RAM, and the CUDA context and
allocator slack as overhead. Constants live in catalog/memory.toml with their sources.

Symbols (DESIGN.md): s sequence length, b micro-batch, h hidden size, f FFN size per projection,
a heads, kv KV heads, d head dim, V vocabulary, L layers, P parameters, N GPUs.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache

from engine.catalog import HERE
from engine.schema import Architecture, Breakdown, Scenario

GIB = float(2**30)


@cache
def constants() -> dict[str, dict[str, float]]:
    with (HERE / "memory.toml").open("rb") as f:
        return tomllib.load(f)


@dataclass(frozen=True)
class LoraTargets:
    """Which projections carry adapters: q k v o, gate up down (fc1 fc2 on plain MLPs), lm_head."""

    modules: frozenset[str]
    qkv_fused: bool = False

    @classmethod
    def parse(cls, spec: str) -> LoraTargets:
        spec = (spec or "").strip().lower()
        if spec in ("", "all_linear", "all-linear", "all"):
            return cls(frozenset({"q", "k", "v", "o", "gate", "up", "down"}))
        if spec == "qv":
            return cls(frozenset({"q", "v"}))
        if spec == "qkvo":
            return cls(frozenset({"q", "k", "v", "o"}))
        names = spec.split(":", 1)[1] if ":" in spec else spec
        tokens = {t.strip() for t in names.replace(";", ",").split(",") if t.strip()}
        mapping = {"fc1": "up", "fc2": "down"}
        fused = "qkv_fused" in tokens
        modules = {mapping.get(t, t) for t in tokens if t != "qkv_fused"}
        unknown = modules - {"q", "k", "v", "o", "gate", "up", "down", "lm_head"}
        if unknown:
            raise ValueError(f"unknown LoRA target(s): {', '.join(sorted(unknown))}")
        if fused:
            modules |= {"q", "k", "v"}
        return cls(frozenset(modules), qkv_fused=fused)


def weight_bytes_per_param(bits: int) -> float:
    w = constants()["weights"]
    if bits >= 32:
        return w["fp32"]
    if bits >= 16:
        return w["bf16"]
    if bits >= 8:
        return w["int8"] * (1 + w["int8_overhead"])
    return w["nf4"]


def lora_parameters(arch: Architecture, targets: LoraTargets, r: int) -> float:
    """r·Σ(in + out) over the adapted projections, with the real GQA and expert shapes."""
    h, q_dim, kv_dim = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    mlp_in, mlp_out = arch.hidden, arch.expert_ffn if arch.experts else arch.ffn
    mlp_copies = (arch.experts + arch.shared_experts) if arch.experts else 1
    shapes = {
        "q": (h, q_dim), "k": (h, kv_dim), "v": (h, kv_dim), "o": (q_dim, h),
        "gate": (mlp_in, mlp_out), "up": (mlp_in, mlp_out), "down": (mlp_out, mlp_in),
    }
    if not arch.gated_mlp:
        shapes.pop("gate")
    per_layer = 0.0
    if targets.qkv_fused:
        per_layer += r * (h + q_dim + 2 * kv_dim)
    for name, (fan_in, fan_out) in shapes.items():
        if name not in targets.modules or (targets.qkv_fused and name in ("q", "k", "v")):
            continue
        copies = mlp_copies if name in ("gate", "up", "down") else 1
        per_layer += copies * r * (fan_in + fan_out)
    total = per_layer * arch.layers
    if "lm_head" in targets.modules:
        total += r * (h + arch.vocab)
    return total


def activation_bytes_per_token_layer(s: Scenario, targets: LoraTargets) -> float:
    """Bytes autograd keeps per token per layer between forward and backward (no recomputation).

    Counted from what PyTorch saves: RMSNorm keeps its fp32 input; a linear layer keeps its input
    only when its weight is trained (or bitsandbytes 4-bit, which always keeps it); SiLU·up keeps
    three f-wide tensors; flash attention keeps q, k, v and its output (no s² term).
    """
    arch = s.arch
    h, q_dim, kv_dim = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    f = (arch.experts_per_token + arch.shared_experts) * arch.expert_ffn if arch.experts else arch.ffn
    act = 2.0  # 16-bit activations
    full = s.method == "full"
    keeps_inputs = full or (s.method == "qlora" and s.bits == 4)
    peft = s.method in ("lora", "qlora")
    dropout = peft and bool(constants()["activations"]["lora_dropout"])
    adapter_act = 4.0 if s.mixed_precision == "amp" else act

    def saved_input(width: float, modules: set[str]) -> float:
        """A projection group's input as kept for backward, per token."""
        adapted = modules & targets.modules if peft else set()
        kept = act if keeps_inputs else 0.0
        if adapted and dropout:
            # each adapter has its own dropout: its output (the lora_A input, in the adapter's
            # dtype: PEFT casts x to fp32 for fp32 adapters under AMP) and a bool mask
            copies = 1 if targets.qkv_fused and modules == {"q", "k", "v"} else len(adapted)
            kept += copies * (adapter_act + 1)
        elif adapted:
            kept = adapter_act  # lora_A keeps the (shared) input itself
        return width * kept

    norms = 2 * h * (4 + (act if full else 0))
    attention_in = saved_input(h, {"q", "k", "v"})
    attention = act * (2 * q_dim + 2 * kv_dim)
    if not s.flash_attention:
        # eager: fp32 softmax output and its 16-bit copy, a·s per token
        attention += (4 + act) * arch.heads * s.seq_len
    attention_out = saved_input(q_dim, {"o"})
    mlp_in = saved_input(h, {"gate", "up"})
    mlp_inner = (3 if arch.gated_mlp else 1) * act * f  # SiLU(gate)·up keeps gate, SiLU out and up
    mlp_out = saved_input(f, {"down"})
    return norms + attention_in + attention + attention_out + mlp_in + mlp_inner + mlp_out


@dataclass(frozen=True)
class _State:
    weights: float
    adapters: float
    gradients: float
    optimizer: float
    trainable: float
    cpu: float


def _optimizer_bytes(s: Scenario) -> float:
    o = constants()["optimizer"]
    pure = s.mixed_precision == "pure_bf16"
    opt = s.optimizer or "adamw"
    if opt in ("adamw", "paged_adamw"):
        return o["adamw_bf16"] if pure else o["adamw_fp32"]
    if opt in ("adamw_8bit", "paged_adamw_8bit"):
        return o["adamw_8bit"]
    if opt in ("sgd", "lion"):
        return o["sgd_fp32"] / (2 if pure else 1)
    return o["adafactor_fp32"]


def _frozen_base_bytes(s: Scenario) -> float:
    """Quantized bases (NF4, int8, fp8) quantize the block linears; embeddings, lm_head stay 16-bit."""
    arch = s.arch
    if s.bits >= 16:
        return arch.params * weight_bytes_per_param(s.bits)
    return arch.linear_params * weight_bytes_per_param(s.bits) + arch.embedding_params * 2.0


def _state(s: Scenario, targets: LoraTargets) -> _State:
    arch = s.arch
    n = s.gpu_count
    shard_w = n if s.sharding in ("fsdp", "zero3") else 1
    shard_g = n if s.sharding in ("fsdp", "zero3", "zero2") else 1
    shard_o = n if s.sharding in ("fsdp", "zero3", "zero2", "zero1") else 1
    opt_bytes = _optimizer_bytes(s)

    if s.method == "inference":
        return _State(_frozen_base_bytes(s) / n, 0, 0, 0, 0, 0)

    if s.method == "full":
        trainable = arch.params
        pure = s.mixed_precision == "pure_bf16" and s.bits < 32
        # HF Trainer AMP keeps fp32 weights; DeepSpeed ZeRO and FSDP keep 16-bit weights + fp32 master
        w_bytes = 2.0 if pure or s.sharding not in ("none", "ddp") else 4.0
        g_bytes = 2.0 if pure else 4.0
        master = 0.0 if pure or w_bytes == 4.0 else constants()["optimizer"]["master_fp32"]
        weights = trainable * w_bytes / shard_w
        gradients = trainable * g_bytes / shard_g
        optimizer = trainable * (opt_bytes + master) / shard_o
        cpu = 0.0
        if s.offload:
            cpu = optimizer + gradients * (shard_g > 1)
            optimizer = 0.0
            if shard_w > 1:
                cpu += weights
                weights = 0.0
        return _State(weights, 0.0, gradients, optimizer, trainable, cpu)

    # LoRA / QLoRA: a frozen base (16-bit, or NF4/int8 on the block linears) plus adapters
    base = _frozen_base_bytes(s)
    trainable = lora_parameters(arch, targets, s.lora_rank)
    p_bytes = 2.0 if s.mixed_precision == "pure_bf16" else 4.0
    weights = base / shard_w
    adapters = trainable * p_bytes / shard_w
    gradients = trainable * p_bytes / shard_g
    optimizer = trainable * opt_bytes / shard_o
    cpu = 0.0
    if s.offload:
        cpu = weights + optimizer
        weights, optimizer = 0.0, 0.0
    return _State(weights, adapters, gradients, optimizer, trainable, cpu)


def dequantized_weight_bytes(s: Scenario) -> float:
    """The 16-bit copy of one quantized matrix that bitsandbytes makes to multiply with it.

    A 4-bit layer dequantizes its whole weight to the compute dtype for every matmul over more than
    one token (MatMul4Bit: forward, and backward for the input gradient; one-token decoding uses
    the gemv kernel); an LLM.int8 layer does so in backward only. The copy of the largest quantized
    matrix is live beside the activations. Only the block linears are quantized, as Hugging Face
    does (embeddings and lm_head stay 16-bit, see _frozen_base_bytes).
    """
    if s.bits > 8 or (s.bits > 4 and s.method == "inference"):
        return 0.0
    arch = s.arch
    f = arch.expert_ffn if arch.experts else arch.ffn
    largest = arch.hidden * max(f, arch.heads * arch.head_dim)
    return largest * constants()["weights"]["dequant_bytes"]


def breakdown(s: Scenario) -> Breakdown:
    """Peak memory of the busiest GPU for the scenario."""
    c = constants()
    arch = s.arch
    targets = LoraTargets.parse(s.lora_targets) if s.method in ("lora", "qlora") else LoraTargets(frozenset())
    st = _state(s, targets)
    tokens = float(s.seq_len) * s.batch_size
    per_layer = activation_bytes_per_token_layer(s, targets)

    kv_cache = logits = activations = 0.0
    if s.method == "inference":
        n = s.gpu_count
        kv_cache = 2 * arch.layers * arch.kv_heads * arch.head_dim * tokens * 2 / n
        f = (arch.experts_per_token + arch.shared_experts) * arch.expert_ffn if arch.experts else arch.ffn
        # prefill of the longest prompt: one layer's working set at a time, last-token logits only
        activations = tokens * (8 * arch.hidden + (6 if arch.gated_mlp else 4) * f) / n
        logits = s.batch_size * arch.vocab * 4.0
        activations += dequantized_weight_bytes(s)
        # the cache lives from the first token to the last and grows in place (a few KiB a step
        # inside the allocator's 2 MiB-rounded blocks): it fragments like the weights, not like
        # the prefill's working set, which is made and freed layer by layer
        static_bytes = st.weights + kv_cache
        live = st.weights + kv_cache + activations + logits
    else:
        resid = 4.0 if (s.method == "full" and s.mixed_precision == "amp") or s.bits == 32 else 2.0
        # backward of a layer holds that layer's activations and their gradients at once
        working_layer = tokens * per_layer * c["activations"]["backward_working_layers"]
        if s.gradient_checkpointing:
            # each layer's input stays; one layer at a time is recomputed and back-propagated
            activations = tokens * arch.layers * arch.hidden * resid + working_layer
        else:
            activations = tokens * per_layer * arch.layers + working_layer
        activations += dequantized_weight_bytes(s)
        logits = tokens * arch.vocab * c["logits"]["chunked" if s.fused_loss else "plain"]
        # HF AMP keeps fp32 weights and autocast keeps 16-bit copies of them for backward
        autocast_copies = arch.params * 2.0 if (s.method == "full" and st.weights and
                                                s.mixed_precision == "amp" and s.sharding not in
                                                ("fsdp", "zero3")) else 0.0
        gathered = 0.0
        if s.sharding in ("fsdp", "zero3") and s.gpu_count > 1:
            # the unit being computed and the one prefetched are gathered whole, in 16 bits
            gathered = 2 * (arch.linear_params / arch.layers) * 2.0
        static = st.weights + st.adapters + st.optimizer + gathered
        backward = static + autocast_copies + max(activations + logits, st.gradients)
        step = static + st.gradients + st.optimizer * c["optimizer"]["step_temp_fraction"]
        live = max(backward, step)
        static_bytes = min(static + st.gradients, live)
    # the allocator's slack is part of the reserved peak; the CUDA context is not (it is outside
    # PyTorch's allocator) and is reported on its own line, added when checking a fit
    overhead = (c["overhead"]["fragmentation_static"] * static_bytes
                + c["overhead"]["fragmentation_dynamic"] * (live - static_bytes))
    total = live + overhead
    return Breakdown(
        weights=st.weights / GIB, adapters=st.adapters / GIB, gradients=st.gradients / GIB,
        optimizer=st.optimizer / GIB, activations=activations / GIB, logits=logits / GIB,
        kv_cache=kv_cache / GIB, overhead=overhead / GIB, total=total / GIB,
        cuda_context=c["overhead"]["cuda_context_gib"], cpu_ram=st.cpu / GIB,
        trainable_params=st.trainable,
    )

"""Weights, adapters, gradients and optimizer state per GPU, by method, precision and sharding."""

from __future__ import annotations

from dataclasses import dataclass

from engine.frameworks import Profile, profile
from engine.memory.constants import constants
from engine.memory.lora import LoraTargets, lora_parameters
from engine.schema import Scenario


@dataclass(frozen=True)
class State:
    weights: float
    adapters: float
    gradients: float
    optimizer: float
    trainable: float
    cpu: float
    upcast: float = 0.0  # extra bytes of non-quantized parameters cast to fp32 (prepare_model_for_kbit_training)


def weight_bytes_per_param(bits: int, prof: Profile | None = None) -> float:
    """Stored bytes per weight; a stack with its own 4-bit format says its size (profile nf4_bytes)."""
    w = constants()["weights"]
    if bits >= 32:
        return float(w["fp32"])
    if bits >= 16:
        return float(w["bf16"])
    if bits >= 8:
        return float(w["int8"] * (1 + w["int8_overhead"]))
    return prof.constant("nf4_bytes", float(w["nf4"])) if prof is not None else float(w["nf4"])


def optimizer_bytes(s: Scenario) -> float:
    o = constants()["optimizer"]
    pure = s.mixed_precision == "pure_bf16"
    opt = s.optimizer or "adamw"
    if opt in ("adamw", "adamw_fused", "paged_adamw"):
        return float(o["adamw_bf16"] if pure else o["adamw_fp32"])
    if opt in ("adamw_8bit", "paged_adamw_8bit"):
        return float(o["adamw_8bit"])
    if opt in ("sgd", "lion"):
        return float(o["sgd_fp32"]) / (2 if pure else 1)
    return float(o["adafactor_fp32"])


def frozen_base_bytes(s: Scenario, prof: Profile | None = None) -> float:
    """Quantized bases (NF4, int8, fp8) quantize the block linears; embeddings and lm_head stay 16-bit
    unless the stack quantizes lm_head too (profile lm_head_quantized)."""
    arch = s.arch
    prof = prof or profile(s.framework)
    if s.weight_bpw is not None:
        return exl2_weight_bytes(s)
    if s.bits >= 16:
        return arch.params * weight_bytes_per_param(s.bits)
    q = weight_bytes_per_param(s.bits, prof)
    lm_head = 0.0 if arch.tied else arch.vocab * arch.hidden
    if prof.lm_head_quantized:
        return (arch.linear_params + lm_head) * q + (arch.embedding_params - lm_head) * 2.0
    return arch.linear_params * q + arch.embedding_params * 2.0


def exl2_weight_bytes(s: Scenario) -> float:
    """ExLlamaV2's EXL2 weights on the GPU (turboderp-org/exllamav2 da07facd): the decoder's linear layers at the
    bits per weight said (conversion/convert_exl2.py -b, "Target bits per weight"), the output head at its own
    6 bits (-hb default 6), the embedding table in CPU RAM (model.py load(embed_cpu=True), line 179)."""
    w = constants()["weights"]
    head = s.arch.vocab * s.arch.hidden
    return s.arch.linear_params * float(s.weight_bpw or 16.0) / 8.0 + head * float(w["exl2_head_bits"]) / 8.0


def kbit_upcast_bytes(s: Scenario, prof: Profile | None = None) -> float:
    """What prepare_model_for_kbit_training adds: the 16-bit parameters of a quantized model made fp32."""
    prof = prof or profile(s.framework)
    if s.method == "inference" or s.bits >= 16 or not prof.kbit_upcast_fp32:
        return 0.0
    if not s.framework_assumed and not prof.constant("kbit_upcast_when_named", 1.0):
        return 0.0  # the stack named prepares a quantized model without the upcast (profile source)
    lm_head = 0.0 if (s.arch.tied or not prof.lm_head_quantized) else s.arch.vocab * s.arch.hidden
    return (s.arch.embedding_params - lm_head) * 2.0


def expert_fraction(s: Scenario) -> float:
    """The share of the parameters in routed experts (0 for a dense model)."""
    arch = s.arch
    if not arch.experts or arch.params <= 0:
        return 0.0
    routed = arch.layers * arch.experts * (3 if arch.gated_mlp else 2) * arch.hidden * arch.expert_ffn
    return min(1.0, routed / arch.params)


def expert_parallel_scale(s: Scenario, shard: int) -> float:
    """Per-GPU bytes of a state sharded `shard` ways, against the same state without expert parallelism.

    Expert parallelism (CONTRACT v2.1 `expert_parallel`; Megatron-Core moe/experts.py: each EP rank holds
    num_experts / ep local experts; DeepSpeed MoE deepspeed/moe/layer.py the same) puts 1/ep of the routed experts on
    each GPU; ZeRO / the distributed optimizer then shards the experts over the expert-data-parallel group (n / ep
    ranks), so an expert's share per GPU is 1/max(ep, shard) and the dense part stays 1/shard."""
    ep = max(1, s.expert_parallel)
    frac = expert_fraction(s)
    if ep <= 1 or not frac:
        return 1.0
    return ((1 - frac) / shard + frac / max(ep, shard)) * shard


ZERO = ("zero1", "zero2", "zero3")


@dataclass(frozen=True)
class ZeroOffload:
    optimizer: bool  # offload_optimizer: fp32 master, Adam moments and fp32 gradient partitions in host RAM
    parameters: bool  # offload_param (ZeRO-3 only): the 16-bit parameter partitions in host RAM


def zero_offload(s: Scenario, prof: Profile) -> ZeroOffload:
    """What a DeepSpeed ZeRO `offload` moves to CPU, by the stack's preset (catalog memory.toml [sharding]).

    DeepSpeed edaa7221 deepspeed/runtime/zero/stage3.py DeepSpeedZeroOptimizer_Stage3.__init__: with offload_optimizer
    the optimizer's device is the CPU (`self.device = ... OffloadDeviceEnum.cpu`), so the fp32 partitions, Adam's
    moments and the fp32 gradient partitions (`grad_partitions_flat_buffer`, allocated on `self.device`) are host
    memory; the 16-bit parameter partitions stay on the GPU unless offload_param is set too, which only stage 3 has.
    Which of the two `offload` means is the stack's preset: profile constants zero3_offload_optimizer and
    zero3_offload_params (defaults in memory.toml [sharding])."""
    c = constants()["sharding"]
    if s.sharding != "zero3":
        return ZeroOffload(optimizer=True, parameters=False)
    params = prof.constant("zero3_offload_params", c["zero3_offload_params"])
    if s.gpu_count == 1:
        # a preset that offloads the parameters on a single GPU only (profile constant zero3_offload_params_one_gpu)
        params = prof.constant("zero3_offload_params_one_gpu", params)
    return ZeroOffload(
        optimizer=bool(prof.constant("zero3_offload_optimizer", c["zero3_offload_optimizer"])),
        parameters=bool(params),
    )


def reduce_bucket_bytes(s: Scenario) -> float:
    """The 16-bit gradient bucket ZeRO keeps on the GPU when the gradient partitions live in host RAM.

    DeepSpeed stage3.py (edaa7221) allocates each IPG bucket as `torch.empty(self.reduce_bucket_size, ...)` on the
    device; transformers fills `reduce_bucket_size: "auto"` with hidden_size**2 (integrations/deepspeed.py
    HfTrainerDeepSpeedConfig.trainer_config_finalize)."""
    return float(s.arch.hidden) ** 2 * 2.0


def megatron_states(s: Scenario, prof: Profile | None = None) -> bool:
    """Full mixed-precision training on a stack that always runs Megatron-Core (profile constant megatron_core:
    NeMo), under Megatron's own data parallelism (not ZeRO-3 / FSDP)."""
    prof = prof or profile(s.framework)
    return (s.method == "full" and s.sharding in ("none", "ddp", "zero1") and s.mixed_precision == "amp"
            and s.bits < 32 and bool(prof.constant("megatron_core", 0.0)))


def fp32_model_weights(s: Scenario, prof: Profile | None = None) -> bool:
    """Whether full training runs the model in fp32 weights: HF AMP without sharding (Trainer `bf16=True` over an
    fp32 model: autocast computes the matmuls in 16-bit while the weights and the residual stream stay fp32).
    DeepSpeed casts the module to 16-bit when bf16/fp16 is enabled (DeepSpeed edaa7221 deepspeed/runtime/engine.py
    DeepSpeedEngine._configure_distributed_model: `_cast_module_mixed_precision(param_dtype, ...)`, `self.module.
    bfloat16()` up to 0.19.1), FSDP computes with its 16-bit `param_dtype`, and Megatron-Core keeps 16-bit model
    parameters beside an fp32 master: the weights, and so the layers' inputs, are 16-bit there."""
    return (s.method == "full" and s.mixed_precision == "amp" and s.bits < 32 and s.sharding in ("none", "ddp")
            and not megatron_states(s, prof))


def distributed_optimizer(s: Scenario, prof: Profile | None = None) -> bool:
    """Whether full training runs Megatron-Core's distributed optimizer over data parallelism: a stack that always
    trains on Megatron-Core and builds it (profile constants megatron_core and distributed_optimizer: NeMo 2 recipes,
    NVIDIA/NeMo e87aa6990581 nemo/collections/llm/recipes/optim/adam.py `use_distributed_optimizer=True`), on more
    than one GPU with Megatron's own data parallelism (not ZeRO-3 / FSDP, which shard the states themselves), mixed
    precision (a pure-bf16 run keeps no fp32 master)."""
    prof = prof or profile(s.framework)
    return megatron_states(s, prof) and s.gpu_count > 1 and bool(prof.constant("distributed_optimizer", 0.0))


def training_state(s: Scenario, targets: LoraTargets) -> State:
    arch = s.arch
    n = s.gpu_count
    shard_w = n if s.sharding in ("fsdp", "zero3") else 1
    shard_g = n if s.sharding in ("fsdp", "zero3", "zero2") else 1
    shard_o = n if s.sharding in ("fsdp", "zero3", "zero2", "zero1") else 1
    opt_bytes = optimizer_bytes(s)
    prof = profile(s.framework)

    if s.method == "inference":
        return State(frozen_base_bytes(s) / n, 0, 0, 0, 0, 0)

    if s.method == "full":
        trainable = arch.params
        pure = s.mixed_precision == "pure_bf16" and s.bits < 32
        # HF Trainer AMP keeps fp32 weights; DeepSpeed ZeRO and FSDP keep 16-bit weights + fp32 master
        w_bytes = 2.0 if pure or s.sharding not in ("none", "ddp") else 4.0
        g_bytes = 2.0 if pure else 4.0
        master = 0.0 if pure or w_bytes == 4.0 else float(constants()["optimizer"]["master_fp32"])
        if megatron_states(s, prof):
            # Megatron-Core's mixed precision: 16-bit model parameters, the fp32 gradient buffer, fp32 master weights
            # and Adam's moments in the optimizer (no autocast copies): 18 bytes a parameter; its distributed
            # optimizer splits the master weights and moments over the data-parallel ranks: 6 + 12/d (Megatron-LM
            # 50b073cc docs/source/api-guide/dist_optimizer.md; engine/posttrain/compose.py has the same for TP/PP
            # jobs, over the ranks left after TP x PP)
            w_bytes, g_bytes, master, shard_w, shard_g = 2.0, 4.0, 4.0, 1, 1
            shard_o = n if distributed_optimizer(s, prof) else 1
        weights = trainable * w_bytes / shard_w * expert_parallel_scale(s, shard_w)
        gradients = trainable * g_bytes / shard_g * expert_parallel_scale(s, shard_g)
        optimizer = trainable * (opt_bytes + master) / shard_o * expert_parallel_scale(s, shard_o)
        cpu = 0.0
        if s.offload and prof.state_offload and s.sharding in ZERO:
            moved = zero_offload(s, prof)
            if moved.optimizer:
                cpu, optimizer = optimizer + gradients, 0.0
                gradients = reduce_bucket_bytes(s)
            if moved.parameters:
                cpu, weights = cpu + weights, 0.0
        elif s.offload and prof.state_offload:
            cpu = optimizer + gradients * (shard_g > 1)
            optimizer = 0.0
            if shard_w > 1:
                cpu += weights
                weights = 0.0
        return State(weights, 0.0, gradients, optimizer, trainable, cpu)

    # LoRA / QLoRA: a frozen base (16-bit, or NF4/int8 on the block linears) plus adapters
    base = frozen_base_bytes(s)
    trainable = lora_parameters(arch, targets, s.lora_rank)
    p_bytes = 2.0 if s.mixed_precision == "pure_bf16" else 4.0
    weights = base / shard_w * expert_parallel_scale(s, shard_w)
    adapters = trainable * p_bytes / shard_w * expert_parallel_scale(s, shard_w)
    gradients = trainable * p_bytes / shard_g * expert_parallel_scale(s, shard_g)
    optimizer = trainable * opt_bytes / shard_o * expert_parallel_scale(s, shard_o)
    upcast = kbit_upcast_bytes(s) / shard_w
    cpu = 0.0
    if s.offload and prof.state_offload and s.sharding in ZERO:
        moved = zero_offload(s, prof)
        if moved.optimizer:
            cpu, optimizer = optimizer + gradients, 0.0
            gradients = min(gradients, reduce_bucket_bytes(s))
        if moved.parameters:
            cpu += weights + upcast
            weights, upcast = 0.0, 0.0
    elif s.offload and prof.state_offload:
        cpu = weights + optimizer + upcast
        weights, optimizer, upcast = 0.0, 0.0, 0.0
    return State(weights, adapters, gradients, optimizer, trainable, cpu, upcast)


def dequantized_weight_bytes(s: Scenario, prof: Profile | None = None) -> float:
    """The 16-bit copy of one quantized matrix that bitsandbytes makes to multiply with it.

    A 4-bit layer dequantizes its whole weight to the compute dtype for every matmul over more than
    one token (bitsandbytes/autograd/_functions.py MatMul4Bit: forward, and backward for the input
    gradient; one-token decoding uses the gemv kernel); an LLM.int8 layer does so in backward only.
    The copy of the largest quantized matrix is live beside the activations; where the stack quantizes
    lm_head too (profile lm_head_quantized), that is usually lm_head (V x h).
    """
    prof = prof or profile(s.framework)
    if s.bits > 8 or (s.bits > 4 and s.method == "inference"):
        return 0.0
    arch = s.arch
    f = arch.expert_ffn if arch.experts else arch.ffn
    largest = arch.hidden * max(f, arch.heads * arch.head_dim)
    if prof.lm_head_quantized and not arch.tied:
        largest = max(largest, arch.hidden * arch.vocab)
    return largest * float(constants()["weights"]["dequant_bytes"])

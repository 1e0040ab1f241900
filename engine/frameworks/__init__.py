"""Framework profiles: the switches of each training stack that change peak memory, as data.

One TOML file per stack (CONTRACT.md v2 `framework`), each switch with the code it was read from
under `[sources]`. The memory model reads a `Profile`; it never branches on a framework's name.
A constant only one stack needs lives in that stack's file (`[constants]`), not in memory.toml.
Without a named framework the scenario takes `DEFAULT` (plain Hugging Face Trainer + TRL) and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any

from engine.datafiles import read

HERE = files(__name__)
DEFAULT = "trl"

# loss kernels the memory model knows (engine/memory/loss.py says what each keeps alive)
LOSS_KERNELS = ("hf", "hf_legacy", "chunked", "fused_linear", "unsloth", "megatron", "torchtitan")
SWITCHES = (
    "loss_kernel", "held_output_bytes", "reentrant_checkpointing", "checkpoint_offload", "kbit_upcast_fp32",
    "lm_head_quantized", "bnb_inputs_outside_checkpoint", "fsdp_gather_bits", "fsdp_full_state_dict_load",
    "fused_adam", "default_mixed_precision",
)
# lora_kernels, lora_dropout, state_offload and adapter_offload a profile may leave out (default: the plain
# Hugging Face / PEFT behaviour); one it sets needs a source
LORA_KERNELS = ("peft", "unsloth")


@dataclass(frozen=True)
class Profile:
    name: str
    label: str
    loss_kernel: str  # one of LOSS_KERNELS
    held_output_bytes: float  # bytes per token x vocabulary entry the loop keeps alive through backward
    reentrant_checkpointing: bool  # torch.utils.checkpoint(use_reentrant=True): nothing saved inside a layer
    checkpoint_offload: bool  # checkpointed layer inputs go to CPU RAM (Unsloth "unsloth" checkpointing)
    kbit_upcast_fp32: bool  # PEFT prepare_model_for_kbit_training: non-quantized params (embeddings, lm_head) -> fp32
    lm_head_quantized: bool  # the 4/8-bit conversion replaces lm_head too
    bnb_inputs_outside_checkpoint: bool  # bitsandbytes 4-bit matmul keeps its input on ctx (escapes checkpointing)
    fsdp_gather_bits: int  # FSDP all-gathers 16-bit units, or 4-bit flat params (quant_storage) for QLoRA
    fsdp_full_state_dict_load: bool  # every rank holds the whole unsharded model while loading
    fused_adam: bool  # the optimizer step updates in place (no foreach temporaries)
    default_mixed_precision: str  # "amp" or "pure_bf16" when the request does not say
    lora_kernels: str = "peft"  # "peft" (a LoRA Linear per module) or "unsloth" (fused LoRA autograd functions)
    lora_dropout: bool | None = None  # the stack's default LoRA dropout is non-zero; None: catalog/memory.toml
    state_offload: bool = True  # `offload` moves states (ZeRO-Offload); False: the stack's only offload is activations
    # the stack's recipe keeps a LoRA/QLoRA run's frozen base in CPU RAM when it does not fit (FSDP
    # CPUOffload(offload_params=True)): the plans and "what to change" offer that offload for adapters too
    adapter_offload: bool = False
    constants: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    # rule -> the first release of the stack it holds in ([versions]); read with the request's framework_version
    versions: dict[str, str] = field(default_factory=dict)

    def constant(self, key: str, fallback: float) -> float:
        return float(self.constants.get(key, fallback))

    def since(self, rule: str, version: str | None) -> bool:
        """Whether `rule` holds in release `version` of this stack: False when either is unknown."""
        first = self.versions.get(rule)
        return first is not None and version is not None and release(version) >= release(first)


def release(version: str) -> tuple[int, ...]:
    """"1.16" -> (1, 16, 0, 0): releases compare as tuples of four numbers."""
    parts = [int(p) for p in version.split(".")[:4]]
    return tuple(parts + [0] * (4 - len(parts)))


def _parse(name: str, data: dict[str, Any]) -> Profile:
    switches = data["switches"]
    missing = [k for k in SWITCHES if k not in switches]
    if missing:
        raise ValueError(f"framework profile {name}: missing switches {missing}")
    if switches["loss_kernel"] not in LOSS_KERNELS:
        raise ValueError(f"framework profile {name}: unknown loss kernel {switches['loss_kernel']!r}")
    if switches.get("lora_kernels", "peft") not in LORA_KERNELS:
        raise ValueError(f"framework profile {name}: unknown LoRA kernels {switches['lora_kernels']!r}")
    return Profile(
        name=name, label=data["label"], loss_kernel=switches["loss_kernel"],
        held_output_bytes=float(switches["held_output_bytes"]),
        reentrant_checkpointing=bool(switches["reentrant_checkpointing"]),
        checkpoint_offload=bool(switches["checkpoint_offload"]),
        kbit_upcast_fp32=bool(switches["kbit_upcast_fp32"]),
        lm_head_quantized=bool(switches["lm_head_quantized"]),
        bnb_inputs_outside_checkpoint=bool(switches["bnb_inputs_outside_checkpoint"]),
        fsdp_gather_bits=int(switches["fsdp_gather_bits"]),
        fsdp_full_state_dict_load=bool(switches["fsdp_full_state_dict_load"]),
        fused_adam=bool(switches["fused_adam"]),
        default_mixed_precision=str(switches["default_mixed_precision"]),
        lora_kernels=str(switches.get("lora_kernels", "peft")),
        lora_dropout=None if "lora_dropout" not in switches else bool(switches["lora_dropout"]),
        state_offload=bool(switches.get("state_offload", True)),
        adapter_offload=bool(switches.get("adapter_offload", False)),
        constants={k: float(v) for k, v in data.get("constants", {}).items()},
        sources=dict(data.get("sources", {})),
        versions={k: str(v) for k, v in data.get("versions", {}).items()},
    )


@cache
def profiles() -> dict[str, Profile]:
    """Every profile, by its CONTRACT.md name (the file name: engine/frameworks/<name>.toml)."""
    out: dict[str, Profile] = {}
    for path in sorted((p for p in HERE.iterdir() if p.name.endswith(".toml")), key=lambda p: p.name):
        name = path.name.removesuffix(".toml")
        out[name] = _parse(name, read(path))
    return out


def profile(name: str | None) -> Profile:
    """The profile of a stack; None is the default stack (plain HF + TRL)."""
    table = profiles()
    if name is None:
        return table[DEFAULT]
    if name not in table:
        raise ValueError(f"no memory profile for framework {name!r}")
    return table[name]


def megatron_core(name: str | None, tensor_parallel: int = 1, pipeline_parallel: int = 1,
                  sharding: str | None = None) -> bool:
    """Whether the job runs on Megatron-Core: a stack that always does (profile constant `megatron_core`: NeMo), or
    a job split by tensor or pipeline parallelism (the stacks that have them run Megatron-Core for it: NeMo,
    Megatron-SWIFT, verl's Megatron backend). Its loss is the vocab-parallel cross-entropy over materialised logits
    (engine/scenario.py) and its gradients live in one persistent buffer (engine/memory/training.py).

    A job that shards with FSDP and splits by TP/PP is PyTorch-native instead (torchtitan, torchtune, axolotl and
    accelerate's N-D parallelism): DTensor tensor parallelism on the FSDP2 mesh and torch.distributed.pipelining
    (torchtitan 9dec370ad torchtitan/parallelisms/parallelize_llama.py apply_tp, apply_fsdp), its own loss on the
    vocabulary shard and FSDP's reduce-scattered gradients (engine/posttrain/compose.py dtensor_gathered_inputs_gib)."""
    if profile(name).constant("megatron_core", 0.0):
        return True
    if sharding == "fsdp" or profile(name).constant("pytorch_native", 0.0):
        return False
    return tensor_parallel > 1 or pipeline_parallel > 1

"""A Request resolved: the architecture every memory figure needs, and the Scenario with every default filled in
and listed as an Assumption."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from engine.schema.request import Method, MixedPrecision, Optimizer, Sharding


class Architecture(BaseModel):
    """A resolved architecture: every figure the memory model needs, none missing."""

    name: str
    known: bool  # from the catalog or a pasted config, not interpolated from a bare size
    params: float  # total parameters as instantiated
    active_params: float  # per token (MoE: routed experts in use + shared)
    layers: int
    hidden: int
    ffn: int  # per projection, dense layers
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    gated_mlp: bool
    experts: int  # 0 for dense
    experts_per_token: int
    expert_ffn: int
    shared_experts: int
    linear_params: float  # parameters in linear layers of the blocks (quantizable, LoRA targets)
    embedding_params: float  # token embeddings + untied lm_head
    # serving: attention shapes (defaults = plain full attention, no stated context limit)
    max_position_embeddings: int | None = None
    sliding_window: int | None = None
    sliding_window_pattern: int | None = None
    attention_chunk_size: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    attention_layers: int | None = None  # hybrid: layers with a per-token KV cache (None = all)
    reference: str | None = None  # an assumed shape: the catalog model it is borrowed from (None = by size)



class Assumption(BaseModel):
    """A default the answer relied on: its key (a Request field, or `architecture`) and the value used."""

    key: str
    value: str | int | float

    def __str__(self) -> str:  # CONTRACT.md's "seq_len=2048"
        if self.key == "architecture":
            return f"architecture=like {self.value}"
        return f"{self.key}={self.value}"


class Scenario(BaseModel):
    """A Request with every default filled in, and the list of those defaults."""

    arch: Architecture
    method: Method
    bits: int
    optimizer: Optimizer | None
    mixed_precision: MixedPrecision
    lora_rank: int
    lora_targets: str
    seq_len: int
    batch_size: int
    gradient_checkpointing: bool
    flash_attention: bool
    fused_loss: bool
    sharding: Sharding
    offload: bool
    gpu_count: int
    assumptions: list[Assumption]
    # how it runs: the stack's profile, the resolved loss kernel, the attention kernel the hardware allows, the
    # platform (CUDA, ROCm, Apple MPS) and the model code's family
    framework: str = "trl"
    framework_assumed: bool = False  # no framework named: the default stack, to be shown as an assumption
    loss_kernel: str = ""
    attention: Literal["flash", "sdpa", "eager"] | None = None
    platform: Literal["cuda", "rocm", "mps"] = "cuda"
    model_family: str = ""
    capacity_gib: float | None = None  # usable memory of the GPU it runs on (engine.catalog.usable_memory_gib)
    half_dtype: Literal["bf16", "fp16"] = "bf16"  # the 16-bit type autocast runs in: fp16 where the GPU has no bf16
    expert_parallel: int = 1  # CONTRACT.md v2.1: the routed experts are split over this many GPUs (MoE only)
    pretraining: bool = False  # training from scratch: timed at a published end-to-end MFU (engine/speed/training.py)
    train_precision: Literal["bf16", "fp8"] = "bf16"  # the matmuls' precision (FP8: Transformer Engine, NeMo)
    # CONTRACT v2.1 (docs/contract-training.md): selective activation checkpointing, Float8 linears (torchao; under
    # NeMo they are train_precision fp8), asynchronous TP, per-block torch.compile
    selective_checkpointing: bool = False
    float8: bool = False
    async_tp: bool = False
    compiled: bool = False
    weight_bpw: float | None = None  # EXL2 weights ("exl2 6.0bpw"): the decoder's linears at these bits per weight


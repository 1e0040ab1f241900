"""The data that flows through the engine: Request → Scenario → Breakdown → Plan → Answer.

Field names follow CONTRACT.md (`parse` and `estimate --request`) and Hugging Face `config.json`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Language = Literal["ru", "en"]
Intent = Literal["estimate", "cost", "compare", "help"]
Method = Literal["full", "lora", "qlora", "inference"]
Optimizer = Literal["adamw", "adamw_8bit", "paged_adamw", "paged_adamw_8bit", "sgd", "adafactor", "lion"]
MixedPrecision = Literal["amp", "pure_bf16"]
Sharding = Literal["none", "ddp", "fsdp", "zero1", "zero2", "zero3"]
# CONTRACT.md v2
Stage = Literal["sft", "dpo", "orpo", "kto", "simpo", "rm", "ppo", "grpo", "pretrain"]
Framework = Literal["hf", "trl", "unsloth", "axolotl", "llama-factory", "torchtune", "ms-swift", "litgpt", "deepspeed",
                    "fsdp-qlora", "verl", "openrlhf", "nemo"]
ServingEngine = Literal["vllm", "sglang", "tgi", "llama.cpp", "ollama", "tensorrt-llm", "hf"]
KvCacheDtype = Literal["fp8", "int8", "int4", "bf16"]
Currency = Literal["USD", "RUB", "EUR"]

# Hard limits that keep arithmetic meaningful; anything beyond is an input error, not an estimate.
MAX_PARAMS_B = 100_000.0  # 100T parameters
MAX_SEQ_LEN = 16 * 1024 * 1024
MAX_BATCH = 1_000_000
MAX_GPUS = 100_000


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class ModelConfig(Strict):
    """Architecture in Hugging Face `config.json` names (per-projection `intermediate_size`)."""

    num_hidden_layers: int = Field(gt=0, le=10_000)
    hidden_size: int = Field(gt=0, le=1_000_000)
    intermediate_size: int | None = Field(default=None, gt=0, le=10_000_000)
    num_attention_heads: int = Field(gt=0, le=100_000)
    num_key_value_heads: int | None = Field(default=None, gt=0, le=100_000)
    head_dim: int | None = Field(default=None, gt=0, le=100_000)
    vocab_size: int = Field(gt=0, le=100_000_000)
    tie_word_embeddings: bool | None = False
    num_local_experts: int | None = Field(default=None, ge=0, le=100_000)
    num_experts_per_tok: int | None = Field(default=None, ge=0, le=100_000)
    moe_intermediate_size: int | None = Field(default=None, gt=0, le=10_000_000)
    n_shared_experts: int | None = Field(default=None, ge=0, le=1_000)


class ModelRef(Strict):
    name: str | None = Field(default=None, max_length=200)
    params_b: float | None = Field(default=None, gt=0, le=MAX_PARAMS_B)
    active_params_b: float | None = Field(default=None, gt=0, le=MAX_PARAMS_B)
    config: ModelConfig | None = None


class GpuRef(Strict):
    name: str | None = Field(default=None, max_length=100)
    memory_gb: float | None = Field(default=None, gt=0, le=100_000)
    count: int = Field(default=1, ge=1, le=MAX_GPUS)
    total_gib: float | None = Field(default=None, gt=0, le=100_000)  # v2: memory as the driver reports it


class Money(Strict):
    amount: float = Field(gt=0, le=1e12)
    currency: Currency = "USD"


class EngineOptions(Strict):
    """Serving engine settings (CONTRACT.md v2 `engine_options`); None = the engine's default."""

    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    max_num_seqs: int | None = Field(default=None, ge=1, le=1_000_000)
    max_num_batched_tokens: int | None = Field(default=None, ge=1, le=MAX_SEQ_LEN)
    max_model_len: int | None = Field(default=None, ge=1, le=MAX_SEQ_LEN)
    engine_version: str | None = Field(default=None, max_length=40)


class Rollout(Strict):
    """GRPO/PPO generation (CONTRACT.md v2 `rollout`): colocated on the training GPUs or a server on others."""

    engine: ServingEngine | None = "vllm"
    mode: Literal["colocate", "server"] | None = None
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    tensor_parallel: int | None = Field(default=None, ge=1, le=1024)
    sleep: bool | None = None


class Request(Strict):
    """What the user said (CONTRACT.md `parse`), plus the power-user fields of `estimate --request`."""

    language: Language | None = None
    intent: Intent | None = None
    model: ModelRef | None = None
    method: Method | None = None
    gpus: list[GpuRef] = Field(default_factory=list, max_length=16)
    seq_len: int | None = Field(default=None, ge=1, le=MAX_SEQ_LEN)
    batch_size: int | None = Field(default=None, ge=1, le=MAX_BATCH)
    lora_rank: int | None = Field(default=None, ge=1, le=65_536)
    bits: Literal[4, 8, 16, 32] | None = None
    optimizer: Optimizer | None = None
    gradient_checkpointing: bool | None = None
    offload: bool | None = None
    tokens: float | None = Field(default=None, gt=0, le=1e15)
    epochs: float | None = Field(default=None, gt=0, le=10_000)
    error: str | None = None
    # Power-user settings (CONTRACT.md `estimate --request`); a question rarely says them.
    mixed_precision: MixedPrecision | None = None
    lora_targets: str | None = Field(default=None, max_length=200)
    flash_attention: bool | None = None
    sharding: Sharding | None = None
    fused_loss: bool | None = None
    rank_by: Literal["cost", "time"] | None = None  # "the fastest" ranks plans by time, else by cost
    # CONTRACT.md v2: what people say beyond v1 (every field None when not said)
    stage: Stage | None = None
    framework: Framework | None = None
    serving_engine: ServingEngine | None = None
    quantization: str | None = Field(default=None, max_length=40)  # nf4 int8 fp8 awq gptq mxfp4 nvfp4 gguf:<type>
    kv_cache_dtype: KvCacheDtype | None = None
    concurrency: int | None = Field(default=None, ge=1, le=MAX_BATCH)
    prompt_len: int | None = Field(default=None, ge=1, le=MAX_SEQ_LEN)
    output_len: int | None = Field(default=None, ge=1, le=MAX_SEQ_LEN)
    num_generations: int | None = Field(default=None, ge=1, le=4096)
    tensor_parallel: int | None = Field(default=None, ge=1, le=1024)
    pipeline_parallel: int | None = Field(default=None, ge=1, le=1024)
    context_parallel: int | None = Field(default=None, ge=1, le=1024)
    currency: Currency | None = None
    budget: Money | None = None
    deadline_hours: float | None = Field(default=None, gt=0, le=1e6)
    unsupported: list[str] = Field(default_factory=list, max_length=32)
    # CONTRACT.md v2 `estimate --request` power-user fields
    engine_options: EngineOptions | None = None
    rollout: Rollout | None = None
    reference_model: bool | None = None
    padding_free: bool | None = None


PARSE_FIELDS = (
    "language", "intent", "model", "method", "gpus", "seq_len", "batch_size", "lora_rank", "bits",
    "optimizer", "gradient_checkpointing", "offload", "tokens", "epochs", "error",
    # v2
    "stage", "framework", "serving_engine", "quantization", "kv_cache_dtype", "concurrency", "prompt_len", "output_len",
    "num_generations", "tensor_parallel", "pipeline_parallel", "context_parallel", "currency", "budget",
    "deadline_hours", "unsupported",
)


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
    assumptions: list[str]


class Breakdown(BaseModel):
    """Peak memory on the busiest GPU, GiB, by component; `total` is the peak, not a plain sum."""

    weights: float
    adapters: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    kv_cache: float
    overhead: float
    total: float  # the reserved peak: what torch.cuda.max_memory_reserved() would show
    cuda_context: float  # outside the allocator; needed on the GPU on top of `total`
    cpu_ram: float  # GiB of host memory the offload needs (0 without offload)
    trainable_params: float


class Fit(BaseModel):
    gpu: str
    memory_gb: float
    count: int
    fits: bool
    headroom_gb: float

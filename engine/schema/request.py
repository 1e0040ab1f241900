"""What the user asked: the Request (CONTRACT.md `parse` and `estimate --request`) and its vocabulary.

Field names follow CONTRACT.md and Hugging Face `config.json`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Language = Literal["ru", "en"]
Intent = Literal["estimate", "cost", "compare", "help"]
Method = Literal["full", "lora", "qlora", "inference"]
Optimizer = Literal["adamw", "adamw_fused", "adamw_8bit", "paged_adamw", "paged_adamw_8bit", "sgd", "adafactor", "lion"]
MixedPrecision = Literal["amp", "pure_bf16"]
Sharding = Literal["none", "ddp", "fsdp", "zero1", "zero2", "zero3"]
# CONTRACT.md v2
Stage = Literal["sft", "dpo", "orpo", "kto", "simpo", "rm", "ppo", "grpo", "pretrain"]
Framework = Literal["hf", "trl", "unsloth", "axolotl", "llama-factory", "torchtune", "ms-swift", "litgpt", "deepspeed",
                    "fsdp-qlora", "verl", "openrlhf", "nemo", "torchtitan", "arctictraining"]
# What «ALST» / «ArcticTraining» implies where the question says nothing else: the request fields of its long-sequence
# recipes (snowflakedb/ArcticTraining b28638e6 projects/sequence-parallelism/run-*.yml): full fine-tuning, activation
# checkpoints offloaded to CPU, TiledMLP, Liger's fused loss (`model.type: liger`), the optimizer in CPU RAM (cpu_adam)
ALST_RECIPE: tuple[tuple[str, object], ...] = (("method", "full"), ("activation_offload", True), ("tiled_mlp", True),
                                               ("fused_loss", True), ("offload", True))
ServingEngine = Literal["vllm", "sglang", "tgi", "llama.cpp", "ollama", "tensorrt-llm", "nim", "hf"]
KvCacheDtype = Literal["fp8", "int8", "int4", "bf16"]
AskedCurrency = Literal["USD", "RUB", "EUR"]  # what a question may ask in; prices are in Currency
Currency = Literal["USD", "RUB"]
Tier = Literal["cheapest", "typical", "premium"]  # which figure of a market price range leads
RankBy = Literal["cost", "time"]
# fits: with the planner's headroom to spare; tight: fits, with less; fits_with_changes: one listed change makes
# it fit on the GPUs asked; no_fit: no single change does; compare: several GPUs named side by side
Verdict = Literal["fits", "tight", "fits_with_changes", "no_fit", "compare"]

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
    # attention shapes a serving engine sizes its KV cache by (HF config.json names); None = plain full attention
    max_position_embeddings: int | None = Field(default=None, gt=0, le=1_000_000_000)
    sliding_window: int | None = Field(default=None, gt=0, le=100_000_000)
    sliding_window_pattern: int | None = Field(default=None, gt=0, le=10_000)  # one full layer in every N (Gemma 3: 6)
    attention_chunk_size: int | None = Field(default=None, gt=0, le=100_000_000)  # Llama 4 chunked local attention
    kv_lora_rank: int | None = Field(default=None, gt=0, le=100_000)  # MLA (DeepSeek-V2/V3): one latent per token
    qk_rope_head_dim: int | None = Field(default=None, ge=0, le=100_000)
    # hybrid models (Qwen3-Next / Qwen3.5 Gated DeltaNet, Nemotron-H / Jamba Mamba): the layers that keep a
    # per-token KV cache; the others hold a fixed state per sequence. None = every layer is attention.
    attention_layers: int | None = Field(default=None, ge=0, le=10_000)


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
    currency: AskedCurrency = "USD"


# Request.assumed marker: the engine options came from flags written into a question, not from a whole launch line or
# config, so the rest is the question's (max_model_len: the context asked or the default, not the model's own limit)
QUESTION_FLAGS = "engine_options.question"


class EngineOptions(Strict):
    """Serving engine settings (CONTRACT.md v2 `engine_options`); None = the engine's default."""

    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    max_num_seqs: int | None = Field(default=None, ge=1, le=1_000_000)
    max_num_batched_tokens: int | None = Field(default=None, ge=1, le=MAX_SEQ_LEN)
    max_model_len: int | None = Field(default=None, ge=1, le=MAX_SEQ_LEN)
    engine_version: str | None = Field(default=None, max_length=40)
    # vLLM 0.7-0.10: VLLM_USE_V1=1 / =0 picks the engine (V1 opt-in on 0.7, default from 0.8); None = the version's
    # default (engine/catalog/serving.toml [vllm] v1_from)
    vllm_use_v1: bool | None = None
    # vLLM V0 (0.6-0.10) `--num-scheduler-steps`: decode steps run back to back before the scheduler is called again
    # (multi-step scheduling; gone in V1); None = 1
    num_scheduler_steps: int | None = Field(default=None, ge=1, le=256)


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
    # the data as a count of examples with no length each said («на 100к примеров»): each counted at the context
    # (engine.scenario.training_tokens, said as the assumption example_tokens); a length each makes it `tokens`
    examples: float | None = Field(default=None, gt=0, le=1e12)
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
    # CONTRACT v2.1: the release of the stack named in `framework` ("1.16.0"; TRL's for trl, transformers' for hf):
    # rules that changed with a release read it (engine/frameworks/<stack>.toml [versions]); absent, the rule before
    framework_version: str | None = Field(default=None, max_length=20, pattern=r"^\d{1,4}(\.\d{1,4}){0,3}$")
    # beyond CONTRACT.md: the serving engines a question compares («vllm или sglang для 70b на 2 h100»), in order
    serving_engines_compared: list[ServingEngine] = Field(default_factory=list, max_length=4)
    # beyond CONTRACT.md: the tensor-parallel degrees a serving question compares («tp2 или tp4»), in order
    tensor_parallel_compared: list[Annotated[int, Field(ge=1, le=1024)]] = Field(default_factory=list, max_length=4)
    serving_engine: ServingEngine | None = None
    quantization: str | None = Field(default=None, max_length=100)  # nf4 int8 fp8 awq gptq mxfp4 nvfp4 gguf:<type>
    kv_cache_dtype: KvCacheDtype | None = None
    concurrency: int | None = Field(default=None, ge=1, le=MAX_BATCH)
    prompt_len: int | None = Field(default=None, ge=1, le=MAX_SEQ_LEN)
    output_len: int | None = Field(default=None, ge=1, le=MAX_SEQ_LEN)
    num_generations: int | None = Field(default=None, ge=1, le=4096)
    tensor_parallel: int | None = Field(default=None, ge=1, le=1024)
    pipeline_parallel: int | None = Field(default=None, ge=1, le=1024)
    context_parallel: int | None = Field(default=None, ge=1, le=1024)
    currency: AskedCurrency | None = None
    budget: Money | None = None
    deadline_hours: float | None = Field(default=None, gt=0, le=1e6)
    unsupported: list[str] = Field(default_factory=list, max_length=32)
    # CONTRACT.md v2 `estimate --request` power-user fields
    engine_options: EngineOptions | None = None
    rollout: Rollout | None = None
    reference_model: bool | None = None
    padding_free: bool | None = None
    # CONTRACT.md v2.1: ALST's activation-checkpoint offload to CPU, ALST TiledMLP, the expert-parallel degree (MoE),
    # and training from scratch (pretraining: every parameter trained, the time from 6·N·D at a published MFU)
    activation_offload: bool | None = None
    tiled_mlp: bool | None = None
    expert_parallel: int | None = Field(default=None, ge=1, le=1024)
    pretraining: bool | None = None
    # CONTRACT v2.1 (docs/contract-training.md): PyTorch-native training switches (torchtitan's job config):
    # selective activation checkpointing (torchtitan `activation_checkpoint.mode = "selective"`, op policy; Megatron's
    # `--recompute-granularity selective`), Float8 linears (torchao Float8Linear; Transformer Engine FP8 under
    # NeMo/Megatron), asynchronous tensor parallelism (torchtitan `experimental.enable_async_tensor_parallel`, needs
    # torch.compile) and per-block torch.compile (`training.compile`)
    selective_checkpointing: bool | None = None
    float8: bool | None = None
    async_tp: bool | None = None
    torch_compile: bool | None = None
    # CONTRACT v2.1 (docs/contract-serving-load.md): serving under load and the features deployments turn on
    request_rate: float | None = Field(default=None, gt=0, le=1e6)  # requests per second arriving
    ttft_p95_ms: float | None = Field(default=None, gt=0, le=1e7)  # the promise: time to first token, p95
    ttft_percentile: Literal[50, 95, 99] | None = None  # the percentile the TTFT promise is at (p95 when not said)
    tpot_ms: float | None = Field(default=None, gt=0, le=1e6)  # the promise: time per output token (p50)
    prefix_cache_hit_rate: float | None = Field(default=None, ge=0, le=1)
    speculative: Literal["eagle", "mtp", "draft", "ngram"] | None = None
    spec_acceptance: float | None = Field(default=None, ge=0, le=1)
    max_loras: int | None = Field(default=None, ge=1, le=100_000)
    max_lora_rank: int | None = Field(default=None, ge=1, le=65_536)
    enforce_eager: bool | None = None
    interconnect: Literal["nvlink", "pcie", "infiniband"] | None = None
    # disaggregated prefill/decode: prefill and decode on separate instances, the KV sent between them (SGLang
    # --disaggregation-mode prefill|decode, vLLM's NixlConnector); prefill_instances of the instances prefill
    # (None: the split that carries most), the rest decode
    disaggregated: bool | None = None
    prefill_instances: int | None = Field(default=None, ge=1, le=1024)
    # data-parallel attention (SGLang --enable-dp-attention, vLLM --data-parallel-size with
    # --enable-expert-parallel): each GPU of an instance runs attention for its own requests, its KV not replicated
    dp_attention: bool | None = None
    # Parser signals beyond CONTRACT.md (engine/parse): what was implied rather than said, small talk, and
    # what a cost question asks for first ("how long and how much" → ["time", "money"])
    assumed: list[str] = Field(default_factory=list, max_length=16)  # "model": a family's default; "gpus": Colab's T4
    smalltalk: Literal["greeting", "thanks", "capabilities"] | None = None
    asks: list[Literal["money", "time", "latency", "throughput", "count", "nodes", "users", "adapters",
                     "rate", "memory", "context", "models"]] = Field(default_factory=list, max_length=9)
    # a rental priced for a period ("сколько стоит неделя 8xh100", "100 часов в месяц h100"): hours of use in it,
    # and whether it is a month (then the monthly rental is compared with hourly at that use)
    rent_hours: float | None = Field(default=None, gt=0, le=1e6)
    rent_monthly: bool | None = None


PARSE_FIELDS = (
    "language", "intent", "model", "method", "gpus", "seq_len", "batch_size", "lora_rank", "bits",
    "optimizer", "gradient_checkpointing", "offload", "tokens", "epochs", "error",
    # v2
    "stage", "framework", "serving_engine", "quantization", "kv_cache_dtype", "concurrency", "prompt_len", "output_len",
    "num_generations", "tensor_parallel", "pipeline_parallel", "context_parallel", "currency", "budget",
    "deadline_hours", "unsupported",
    # v2.1
    "activation_offload", "tiled_mlp", "expert_parallel", "framework_version",
    "selective_checkpointing", "float8", "async_tp", "torch_compile",
    # beyond CONTRACT.md ("everything not named here is free"): the parser's signals for the answer
    "fused_loss", "assumed", "smalltalk", "asks", "rent_hours", "rent_monthly", "examples", "serving_engines_compared",
    "tensor_parallel_compared",
    # v2.1 serving under load (docs/contract-serving-load.md): the rate, the promise and the features said
    "request_rate", "ttft_p95_ms", "ttft_percentile", "tpot_ms", "prefix_cache_hit_rate", "speculative", "max_loras",
    "max_lora_rank", "enforce_eager", "interconnect", "disaggregated", "prefill_instances", "dp_attention",
)



def error_keys(error: str | None) -> list[str]:
    """The reasons in a Request's `error` (CONTRACT.md keeps it one string; the parser joins them with "; ")."""
    return [reason.strip() for reason in (error or "").split(";") if reason.strip()]


def join_errors(keys: list[str]) -> str | None:
    return "; ".join(keys) or None


"""The data that flows through the engine: Request → Scenario → Breakdown → Plan → Answer.

Field names follow CONTRACT.md (`parse` and `estimate --request`) and Hugging Face `config.json`.
Everything a view needs to word an answer is here: views import this module and nothing else of the engine.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.schema_serving import Issue as ServingIssue  # noqa: F401  (re-exported: views import only this module)
from engine.schema_serving import ServingResult
from engine.schema_serving import Settings as ServingSettings  # noqa: F401

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
    # CONTRACT v2.1 (docs/contract-serving-load.md): serving under load and the features deployments turn on
    request_rate: float | None = Field(default=None, gt=0, le=1e6)  # requests per second arriving
    ttft_p95_ms: float | None = Field(default=None, gt=0, le=1e7)  # the promise: time to first token, p95
    tpot_ms: float | None = Field(default=None, gt=0, le=1e6)  # the promise: time per output token (p50)
    prefix_cache_hit_rate: float | None = Field(default=None, ge=0, le=1)
    speculative: Literal["eagle", "mtp", "draft", "ngram"] | None = None
    spec_acceptance: float | None = Field(default=None, ge=0, le=1)
    max_loras: int | None = Field(default=None, ge=1, le=100_000)
    max_lora_rank: int | None = Field(default=None, ge=1, le=65_536)
    enforce_eager: bool | None = None
    interconnect: Literal["nvlink", "pcie", "infiniband"] | None = None
    # Parser signals beyond CONTRACT.md (engine/parse): what was implied rather than said, small talk, and
    # what a cost question asks for first ("how long and how much" → ["time", "money"])
    assumed: list[str] = Field(default_factory=list, max_length=16)  # "model": a family's default; "gpus": Colab's T4
    smalltalk: Literal["greeting", "thanks", "capabilities"] | None = None
    asks: list[Literal["money", "time", "latency", "throughput", "count", "users"]] = Field(default_factory=list,
                                                                                       max_length=6)
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
    "activation_offload", "tiled_mlp", "expert_parallel",
    # beyond CONTRACT.md ("everything not named here is free"): the parser's signals for the answer
    "fused_loss", "assumed", "smalltalk", "asks", "rent_hours", "rent_monthly",
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
    # serving: attention shapes (defaults = plain full attention, no stated context limit)
    max_position_embeddings: int | None = None
    sliding_window: int | None = None
    sliding_window_pattern: int | None = None
    attention_chunk_size: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    attention_layers: int | None = None  # hybrid: layers with a per-token KV cache (None = all)
    reference: str | None = None  # an assumed shape: the catalog model it is borrowed from (None = by size)


def error_keys(error: str | None) -> list[str]:
    """The reasons in a Request's `error` (CONTRACT.md keeps it one string; the parser joins them with "; ")."""
    return [reason.strip() for reason in (error or "").split(";") if reason.strip()]


def join_errors(keys: list[str]) -> str | None:
    return "; ".join(keys) or None


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
    # appended (issue 11, memory): the stack's profile, the resolved loss kernel, the attention kernel
    # the hardware allows, the platform (CUDA, ROCm, Apple MPS) and the model code's family
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
    # appended (issue 11, memory): non-quantized parameters of a 4/8-bit model cast to fp32 for training
    # (PEFT prepare_model_for_kbit_training), on top of `weights` (the model as loaded)
    upcast: float = 0.0
    # the allocator had to give back its cache to fit the GPU (the peak is at the card's capacity: tight)
    pressure: bool = False
    # a bare size only (engine.memory.breakdown): what a smaller model of another common shape (a larger
    # vocabulary: more logits) needs beyond this shape's own peak, included in `total` so that the estimate
    # never falls as the size grows; the other lines stay this size's own
    shape_margin: float = 0.0


class Fit(BaseModel):
    gpu: str
    memory_gb: float
    count: int
    fits: bool
    headroom_gb: float


# ---- plans and the answer ------------------------------------------------------------------------------------


class Arrangement(BaseModel):
    """GPUs as asked (or as a plan uses them): which, the memory of each, how many."""

    model_config = ConfigDict(frozen=True)

    gpu: str
    memory_gb: float
    count: int


class Note(BaseModel):
    """A message key with its parameters: something in the input not used as given (and what was used
    instead), or why no answer could be made."""

    key: str  # unknown_gpu, gpu_count, price, rate, parse error keys ("context length out of range", ...)
    params: dict[str, Any] = Field(default_factory=dict)


class PriceOptions(BaseModel):
    """How to price plans: the currency, which figure of the market range leads, the user's own prices."""

    currency: Currency = "USD"
    pick: Tier = "typical"
    overrides: dict[str, float] = Field(default_factory=dict)  # own price per GPU-hour in `currency`
    usd_rub: float | None = None
    rank_by: RankBy | None = None  # None: the request's wish, else cost


class Plan(BaseModel):
    gpu: str
    count: int
    techniques: list[str]
    per_gpu_gb: float
    memory_gb: float
    headroom_gb: float
    hours: float | None
    hours_per_100m_tokens: float | None
    usd: dict[str, float] | None  # the whole run: min / typical / max
    usd_per_hour: float | None  # all GPUs together, typical
    price_date: str | None
    slowdown: float  # time factor of the techniques against the plain arrangement
    currency: str = "USD"
    cost: dict[str, float] | None = None  # the whole run in `currency`: min / typical / max
    per_hour: float | None = None  # all GPUs together, in `currency`, the picked figure of the range
    cost_per_1m_tokens: float | None = None  # trained or generated tokens, in `currency`
    tokens_per_second: float | None = None  # inference: decode tokens/s of the whole batch
    own_price: bool = False
    cpu_ram_gb: float = 0.0  # host memory the offload needs on each machine (its GPUs' shares together)
    cost_per_100m: dict[str, float] | None = None  # 100M trained tokens in `currency`: min / typical / max
    offload_slowdown: float = 1.0  # CPU offload: seconds per token with it / without (engine.speed.offload_cost)
    pcie_gb_per_step: float = 0.0  # what the offload moves over each GPU's host link per optimizer step, GB
    nodes: int = 1  # machines the plan spans
    network_slowdown: float = 1.0  # the inter-node network against in-node links (engine.speed.multi_node_cost)
    timed_as: str | None = None  # a GPU given only by its memory: the typical card whose hours these are


class Change(BaseModel):
    """One change to the asked arrangement and what it saves per GPU."""

    key: str  # message key: gradient_checkpointing, optimizer_8bit, shorter_context, ..., combined
    params: dict[str, Any]
    saves_gb: float
    fits: bool
    total_gb: float = 0.0  # what one GPU must hold after the change (peak + CUDA context)
    tight: bool = False  # it fits, with under engine.fit.TIGHT of the capacity to spare (the verdict says so)
    parts: list[Change] = Field(default_factory=list)  # key "combined": the changes made together


class Comparison(BaseModel):
    """One named GPU in a side-by-side comparison, at the count asked."""

    gpu: str
    count: int
    fits: bool
    need_gb: float  # per GPU, with the CUDA context
    memory_gb: float
    plan: Plan | None  # the cheapest arrangement of this GPU at this count that fits
    providers: int = 0  # market offers its price rests on (engine.pricing): too few and it does not rank


class Monthly(BaseModel):
    """Renting the best plan's GPU by the month against by the hour."""

    gpu: str
    count: int  # GPUs of the best plan (the monthly price is per GPU)
    currency: str
    monthly_price: float  # per GPU
    hourly_price: float  # per GPU-hour
    break_even_hours: float  # of use per month
    run_hours: float | None  # the whole run's wall-clock hours, when known
    hourly_always: bool = False  # the break-even is above the hours of a month: hourly is cheaper at any use


class PlanResult(BaseModel):
    """What the planner found for a request: plans, changes, a comparison, alternatives, notes."""

    scenario: Scenario
    breakdown: Breakdown
    plans: list[Plan]
    changes: list[Change]
    asked_fits: bool | None  # None when no GPU was named
    tokens: float | None  # training tokens (dataset × epochs), when known
    currency: str = "USD"
    rank_by: RankBy = "cost"
    comparison: list[Comparison] = Field(default_factory=list)  # two or more GPUs named
    comparison_fix: list[Comparison] = Field(default_factory=list)  # none fits: the same GPUs with QLoRA
    alternatives: list[Plan] = Field(default_factory=list)  # catalog plans: the named GPU fails, or a cheaper one
    notes: list[Note] = Field(default_factory=list)
    monthly: Monthly | None = None


LineRole = Literal["asked", "plan", "common"]  # common: a familiar size that brackets the need


class GpuLine(BaseModel):
    """A GPU to draw against the need (a chart's capacity line), with whether the job as asked fits on it."""

    gpu: str
    memory_gb: float
    fits: bool
    role: LineRole


class Limits(BaseModel):
    """The question's budget and deadline against the plans (engine.plan.budget)."""

    budget: float | None = None  # in `currency`, the answer's
    budget_asked: Money | None = None  # as the question said it
    currency: Currency = "USD"
    deadline_hours: float | None = None
    meeting: list[Plan] = Field(default_factory=list)  # the plans within both, best first
    cheapest: Plan | None = None  # when none meets them: what the cheapest and the fastest plans give
    fastest: Plan | None = None
    unchecked: Literal["no_data_size", "no_price", "currency"] | None = None  # why they could not be checked


SHOWN_PLANS = 3  # the plans a reply lists (the price-date line speaks of those and the alternatives shown)


class Answer(BaseModel):
    """The engine's product for one request: everything a view words, nothing it must compute.

    `errors` non-empty means no answer could be made (then `scenario` and `breakdown` are None)."""

    request: Request
    errors: list[Note] = Field(default_factory=list)
    scenario: Scenario | None = None
    breakdown: Breakdown | None = None
    verdict: Verdict | None = None  # None when no GPU was named
    asked: Arrangement | None = None  # the (first) GPU named, at its count
    need_gb: float = 0.0  # one GPU must hold this: the reserved peak plus the CUDA context
    cluster_gb: float = 0.0  # all GPUs of the job together
    cpu_ram_gb: float = 0.0  # host memory the offload needs on each machine
    plans: list[Plan] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)  # what to change when the asked GPU does not fit
    comparison: list[Comparison] = Field(default_factory=list)
    comparison_fix: list[Comparison] = Field(default_factory=list)  # none fits as asked: with QLoRA
    alternatives: list[Plan] = Field(default_factory=list)  # other GPUs: the named one never fits, or none named
    cheaper: Plan | None = None  # a cheaper GPU that fits too, when the asked one is mostly idle
    notes: list[Note] = Field(default_factory=list)
    assumptions: list[Assumption] = Field(default_factory=list)
    monthly: Monthly | None = None
    price_date: str | None = None  # the newest price date among the plans shown
    old_prices: dict[str, str] = Field(default_factory=dict)  # GPU → its price date, where older than the window
    currency: Currency = "USD"
    rank_by: RankBy = "cost"
    tokens: float | None = None
    shape_reference: str | None = None  # the catalog model an unknown model's shape is borrowed from
    capacity: list[GpuLine] = Field(default_factory=list)  # the asked GPU, those of the plans, common ones
    serving: ServingResult | None = None  # a serving question (engine.serving): its whole answer as data
    serving_users: int = 0  # requests of the asked context the serving arrangement runs at once (all replicas)
    posttrain: PostTrainResult | None = None  # post-training / long-context estimate (engine.posttrain)
    # appended (issue 11, verdict): the asked GPU's usable memory (engine.fit.capacity), the change or
    # combination that makes a "fits_with_changes" fit, what a fused linear cross-entropy would give when no
    # framework was named, and what the asked GPU cannot run (engine.scenario.hardware_conflicts keys)
    capacity_gib: float = 0.0
    fix: Change | None = None
    fused_loss_gb: float | None = None
    conflicts: list[str] = Field(default_factory=list)
    limits: Limits | None = None  # the question's budget / deadline against the plans
    # appended (issue 13 probe): "сколько стоит T4 в час" with no model: the GPU's market range per GPU-hour (the
    # figures /price shows, engine.pricing.market_range) and the chat's own price for it, in the answer's currency
    market: PriceRange | None = None
    own_price: float | None = None
    rental: Rental | None = None  # the market answer for a period: its cost, and monthly against hourly


class Rental(BaseModel):
    """A GPU rented for a period at the market's hourly prices, all GPUs together, in the answer's currency."""

    count: int
    hours: float  # hours of use in the period
    cost: dict[str, float]  # min / typical / max
    monthly: MonthlyVsHourly | None = None  # per GPU, at the stated use per month


# engine.posttrain imports this module: its result type comes in once every model here is defined
from engine.posttrain.models import PostTrainResult  # noqa: E402
from engine.pricing import MonthlyVsHourly, PriceRange  # noqa: E402

Rental.model_rebuild(_types_namespace={"MonthlyVsHourly": MonthlyVsHourly})
Answer.model_rebuild(_types_namespace={"PostTrainResult": PostTrainResult, "PriceRange": PriceRange, "Rental": Rental})

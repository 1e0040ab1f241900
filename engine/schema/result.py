"""What the engine finds for a scenario: the per-GPU breakdown, the fit of each arrangement, the plans, the changes
that make it fit, a comparison, the monthly rental, the budget check and the chart's capacity lines."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.schema.request import Currency, Money, RankBy
from engine.schema.scenario import Scenario


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
    # non-quantized parameters of a 4/8-bit model cast to fp32 for training
    # (PEFT prepare_model_for_kbit_training), on top of `weights` (the model as loaded)
    upcast: float = 0.0
    # the allocator had to give back its cache to fit the GPU (the peak is at the card's capacity: tight)
    pressure: bool = False
    # a bare size only (engine.memory.breakdown): what a smaller model of another common shape (a larger
    # vocabulary: more logits) needs beyond this shape's own peak, included in `total` so that the estimate
    # never falls as the size grows; the other lines stay this size's own
    shape_margin: float = 0.0
    # FSDP / ZeRO-3: the units gathered whole on every rank at the peak (the layer computed, the one prefetched, what
    # ZeRO-3 keeps for reuse, FSDP's root unit) and a resident unsharded copy, if any; `weights` is the shard
    gathered: float = 0.0
    # HF AMP full fine-tuning: the 16-bit copies of the fp32 weights that autocast keeps for the backward
    autocast: float = 0.0
    # the optimizer step's temporaries (a non-fused Adam's foreach buffers), live at the step only
    step_buffers: float = 0.0


class Fit(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built on first use: a training answer makes none

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
    """One change that makes the job fit (or cheaper) and what it gives, for every kind of answer: a message key
    with its parameters; training says what it saves and what one GPU then holds, post-training the peak it gives,
    serving what it does to the users served (`effect`)."""

    key: str  # message key: gradient_checkpointing, optimizer_8bit, posttrain.change.*, serving.change.*, combined
    params: dict[str, Any] = Field(default_factory=dict)
    saves_gb: float = 0.0  # training: what it saves per GPU
    fits: bool | None = None  # it fits on the GPUs asked (None: no GPU to judge it against)
    total_gb: float = 0.0  # training: what one GPU must hold after the change (peak + CUDA context)
    per_gpu_total: float = 0.0  # post-training: the busiest GPU's reserved peak after it, GiB (no CUDA context)
    tight: bool = False  # it fits, with under engine.fit.TIGHT of the capacity to spare (the verdict says so)
    parts: list[Change] = Field(default_factory=list)  # key "combined": the changes made together
    effect: dict[str, Any] = Field(default_factory=dict)  # serving: users served, whether it loads, GiB freed
    # training: the scenario fields it sets (engine.plan.advice), so that a config can carry the fix the answer leads
    # with; not part of the answer's JSON
    update: dict[str, Any] = Field(default_factory=dict, exclude=True)


class Comparison(BaseModel):
    """One named GPU in a side-by-side comparison, at the count asked."""

    gpu: str
    count: int
    fits: bool
    need_gb: float  # per GPU, with the CUDA context
    memory_gb: float
    plan: Plan | None  # the cheapest arrangement of this GPU at this count that fits
    thin_price: bool = False  # priced on too few offers to rank by (engine.pricing.thin_price)


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


class ContextFit(BaseModel):
    """«какой максимальный контекст влезет»: the longest training context the GPUs asked hold (engine.plan.context)."""

    tokens: int  # 0: not even the shortest fits
    fused_tokens: int | None = None  # with a fused cross-entropy, when no stack was named and it reaches further


class Limits(BaseModel):
    """The question's budget and deadline against the plans (engine.plan.budget)."""

    budget: float | None = None  # in `currency`, the answer's
    budget_asked: Money | None = None  # as the question said it
    currency: Currency = "USD"
    deadline_hours: float | None = None
    meeting: list[Plan] = Field(default_factory=list)  # the plans within both, best first
    cheapest: Plan | None = None  # when none meets them: what the cheapest and the fastest plans give
    fastest: Plan | None = None
    asked: Plan | None = None  # the plan on the GPUs the question named, when one is planned: the first line judges it
    unchecked: Literal["no_data_size", "no_price", "currency"] | None = None  # why they could not be checked


SHOWN_PLANS = 3  # the plans a reply lists (the price-date line speaks of those and the alternatives shown)

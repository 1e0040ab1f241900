"""The engine's product for one request (engine.answer builds it): everything a view words, nothing it must compute.

An Answer is a tagged union by `kind`: a view (or a JSON reader) reads the kind and gets the one shape that kind
has, instead of probing which optional part is set.

- training: a fine-tuning (or inference-memory) estimate with plans, changes, a comparison
- posttrain: the same, judged by the post-training peak (DPO … GRPO, long context), with its PostTrainResult
- serving: a serving engine's answer (ServingResult) and the verdict on the GPUs asked
- market: a price question without a model: the GPU's market range per GPU-hour, a rental period's cost
- error: no answer could be made, and why
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.schema.posttrain import PostTrainResult
from engine.schema.prices import PriceRange, Rental
from engine.schema.request import Currency, RankBy, Request, Verdict
from engine.schema.result import (
    Arrangement,
    Breakdown,
    Change,
    Comparison,
    ContextFit,
    GpuLine,
    Limits,
    Monthly,
    Note,
    Plan,
)
from engine.schema.scenario import Assumption, Scenario
from engine.schema.serving import ServingResult


class AnswerBase(BaseModel):
    """What every kind of answer has: the request it answers, what the question said that the answer could not
    use or assumed (notes), the currency of its money, and the verdict on the GPUs asked (None when none was
    judged: a price or an error never judges one)."""

    # Every kind builds its validator with its first answer, not at import: an answer is of one kind, and a CLI
    # start pays only for that one (PlannedAnswer, the base with the heavy fields, is never built itself).
    model_config = ConfigDict(defer_build=True)

    request: Request
    notes: list[Note] = Field(default_factory=list)
    currency: Currency = "USD"
    verdict: Verdict | None = None


class PlannedAnswer(AnswerBase):
    """A training or post-training answer: the scenario, its per-GPU peak, the plans and what to change."""

    scenario: Scenario
    breakdown: Breakdown
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
    assumptions: list[Assumption] = Field(default_factory=list)
    monthly: Monthly | None = None
    price_date: str | None = None  # the newest price date among the plans shown
    old_prices: dict[str, str] = Field(default_factory=dict)  # GPU → its price date, where older than the window
    rank_by: RankBy = "cost"
    tokens: float | None = None
    shape_reference: str | None = None  # the catalog model an unknown model's shape is borrowed from
    capacity: list[GpuLine] = Field(default_factory=list)  # the asked GPU, those of the plans, common ones
    capacity_gib: float = 0.0  # the asked GPU's usable memory (engine.fit.capacity)
    fix: Change | None = None  # the change (or combination) that makes a "fits_with_changes" fit
    fix_plan: Plan | None = None  # the asked GPUs' plan after a change of method (LoRA → QLoRA): its hours and money
    fused_loss_gb: float | None = None  # what a fused linear cross-entropy would need, when no framework was named
    conflicts: list[str] = Field(default_factory=list)  # what the asked GPU cannot run (hardware_conflicts keys)
    limits: Limits | None = None  # the question's budget / deadline against the plans
    rental: Rental | None = None  # «сколько стоит инфер 70б на 2 h100 в месяц»: the GPUs asked for that period
    context_fit: ContextFit | None = None  # «какой максимальный контекст влезет»: the longest the GPUs asked hold


class TrainingAnswer(PlannedAnswer):
    kind: Literal["training"] = "training"


class PostTrainAnswer(PlannedAnswer):
    kind: Literal["posttrain"] = "posttrain"
    posttrain: PostTrainResult  # the post-training / long-context estimate (engine.posttrain)


class ServingAnswer(AnswerBase):
    kind: Literal["serving"] = "serving"
    serving: ServingResult  # the serving engine's whole answer as data (engine.serving)
    serving_users: int = 0  # requests of the asked context the serving arrangement runs at once (all replicas)
    rental: Rental | None = None  # the GPUs asked for the period the question prices («… в месяц»)


class MarketAnswer(AnswerBase):
    """"сколько стоит T4 в час" with no model: the GPU's market range per GPU-hour (the figures /price shows) and
    the chat's own price for it, in the answer's currency."""

    kind: Literal["market"] = "market"
    market: PriceRange
    own_price: float | None = None
    rental: Rental | None = None  # the market answer for a period: its cost, and monthly against hourly


class ModelFit(BaseModel):
    """The largest model of typical shape one row of a "which model fits" answer holds (engine.answer.models_fit)."""

    method: str  # "inference" or the training method said
    bits: int  # weight precision
    params_b: float | None  # billions of parameters; None: not even the smallest fits
    need_gb: float | None  # the training peak on one GPU, or (inference) the weights on one GPU
    host_ram_gb: float = 0.0  # inference: the layers the engine leaves in CPU RAM (llama.cpp, Ollama)


class ModelsAnswer(AnswerBase):
    """«какую модель можно запустить на 4090»: the largest model each precision (or the method said) fits."""

    kind: Literal["models"] = "models"
    gpu: str | None  # the catalog GPU, None for a bare memory size
    memory_gb: float
    count: int
    rows: list[ModelFit]


class ErrorAnswer(AnswerBase):
    kind: Literal["error"] = "error"
    errors: list[Note] = Field(min_length=1)  # why no answer could be made


Answer = Annotated[TrainingAnswer | PostTrainAnswer | ServingAnswer | MarketAnswer | ModelsAnswer | ErrorAnswer,
                   Field(discriminator="kind")]

"""The engine's vocabulary: the data that flows Request → Scenario → Breakdown → Plan → Answer, as types only.

Every module here imports pydantic, the standard library and its siblings, nothing else of the engine, so that any
engine module (and every view) may import it without an import circle. `from engine.schema import X` reaches every
public name; the modules say where each belongs:

- request.py: what the user asked (Request, ModelRef, GpuRef, Money, EngineOptions, Rollout, the literals, limits)
- scenario.py: the resolved Architecture, the Scenario and its Assumptions
- result.py: Breakdown, Fit, Arrangement, Note, Plan, Change, Comparison, Monthly, PlanResult, GpuLine, Limits
- serving.py: a serving answer (ServingResult and its parts)
- posttrain.py: a post-training answer (PostTrainResult, its options, lines, settings, times)
- prices.py: offers, PriceRange, RunCost, MonthlyVsHourly, Rental, PriceOptions
- answer.py: the Answer, a tagged union by kind (training, posttrain, serving, market, error)
"""

from engine.schema.answer import Answer
from engine.schema.posttrain import (
    POSTTRAIN_STAGES,
    PREFERENCE_STAGES,
    REFERENCE_FREE,
    CpKind,
    Line,
    LongContextOption,
    OptionKind,
    PostTrainOptions,
    PostTrainResult,
    RlTime,
)
from engine.schema.posttrain import Change as PostTrainChange
from engine.schema.posttrain import Settings as PostTrainSettings
from engine.schema.prices import FxRate, MonthlyVsHourly, Offer, PriceOptions, PriceRange, Rental, RunCost
from engine.schema.request import (
    MAX_BATCH,
    MAX_GPUS,
    MAX_PARAMS_B,
    MAX_SEQ_LEN,
    PARSE_FIELDS,
    AskedCurrency,
    Currency,
    EngineOptions,
    Framework,
    GpuRef,
    Intent,
    KvCacheDtype,
    Language,
    Method,
    MixedPrecision,
    ModelConfig,
    ModelRef,
    Money,
    Optimizer,
    RankBy,
    Request,
    Rollout,
    ServingEngine,
    Sharding,
    Stage,
    Strict,
    Tier,
    Verdict,
    error_keys,
    join_errors,
)
from engine.schema.result import (
    SHOWN_PLANS,
    Arrangement,
    Breakdown,
    Change,
    Comparison,
    Fit,
    GpuLine,
    Limits,
    LineRole,
    Monthly,
    Note,
    Plan,
    PlanResult,
)
from engine.schema.scenario import Architecture, Assumption, Scenario
from engine.schema.serving import Arrangement as ServingArrangement
from engine.schema.serving import Cost as ServingCost
from engine.schema.serving import (
    EngineFamily,
    GpuChoice,
    KvCapacity,
    LoadPoint,
    RankMemory,
    ServingLoad,
    ServingResult,
    Speed,
)
from engine.schema.serving import Issue as ServingIssue
from engine.schema.serving import Settings as ServingSettings

__all__ = [
    "MAX_BATCH",
    "MAX_GPUS",
    "MAX_PARAMS_B",
    "MAX_SEQ_LEN",
    "PARSE_FIELDS",
    "POSTTRAIN_STAGES",
    "PREFERENCE_STAGES",
    "REFERENCE_FREE",
    "SHOWN_PLANS",
    "Answer",
    "Architecture",
    "Arrangement",
    "AskedCurrency",
    "Assumption",
    "Breakdown",
    "Change",
    "Comparison",
    "CpKind",
    "Currency",
    "EngineFamily",
    "EngineOptions",
    "Fit",
    "Framework",
    "FxRate",
    "GpuChoice",
    "GpuLine",
    "GpuRef",
    "Intent",
    "KvCacheDtype",
    "KvCapacity",
    "Language",
    "Limits",
    "Line",
    "LineRole",
    "LoadPoint",
    "LongContextOption",
    "Method",
    "MixedPrecision",
    "ModelConfig",
    "ModelRef",
    "Money",
    "Monthly",
    "MonthlyVsHourly",
    "Note",
    "Offer",
    "Optimizer",
    "OptionKind",
    "Plan",
    "PlanResult",
    "PostTrainChange",
    "PostTrainOptions",
    "PostTrainResult",
    "PostTrainSettings",
    "PriceOptions",
    "PriceRange",
    "RankBy",
    "RankMemory",
    "Rental",
    "Request",
    "RlTime",
    "Rollout",
    "RunCost",
    "Scenario",
    "ServingArrangement",
    "ServingCost",
    "ServingEngine",
    "ServingIssue",
    "ServingLoad",
    "ServingResult",
    "ServingSettings",
    "Sharding",
    "Speed",
    "Stage",
    "Strict",
    "Tier",
    "Verdict",
    "error_keys",
    "join_errors",
]

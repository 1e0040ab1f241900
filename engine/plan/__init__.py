"""Request → ranked plans: which GPUs × counts × techniques fit, how long they run, what they cost,
and what to change when the asked arrangement does not fit.

- `search`: arrangements × techniques that fit, best first;
- `costing`: a plan's hours and money (a `Job` holds what all plans of a request share);
- `advice`: what to change, a cheaper GPU, the comparison of named GPUs, monthly against hourly;
- `inputs`: what the input said that cannot be used as given.
"""

from __future__ import annotations

from engine.catalog import find_gpu
from engine.fit import NO_HEADROOM, capacity, fits
from engine.memory import breakdown
from engine.plan.advice import cheaper_gpu, compare, monthly, what_to_change
from engine.plan.costing import Job
from engine.plan.inputs import checked_inputs
from engine.plan.search import asked_arrangements, catalog_arrangements, cuda_first, search
from engine.scenario import build_scenario, hardware_conflicts, training_tokens
from engine.schema import (
    Assumption,
    Breakdown,
    Change,
    Comparison,
    Plan,
    PlanResult,
    PriceOptions,
    RankBy,
    Request,
    Scenario,
)

__all__ = ["plan"]


def sharded_when_it_helps(request: Request, base: Scenario, b0: Breakdown) -> tuple[Scenario, Breakdown]:
    """Several GPUs for LoRA/QLoRA default to DDP, which holds the whole job on every card; when that does
    not fit the GPU asked and ZeRO-3 (parameters, gradients and optimizer state split across the cards) does
    better, ZeRO-3 is the default instead (shown as the assumption): "2× 4090" then means half the model each."""
    if request.sharding is not None or base.gpu_count < 2 or base.sharding != "ddp" or base.method == "inference":
        return base, b0
    named = asked_arrangements(request)
    if not named or fits(b0, capacity(named[0].gpu, named[0].memory_gb), NO_HEADROOM):
        return base, b0
    assumptions = [a if a.key != "sharding" else Assumption(key="sharding", value="zero3") for a in base.assumptions]
    sharded = base.model_copy(update={"sharding": "zero3", "assumptions": assumptions})
    b = breakdown(sharded)
    return (sharded, b) if b.total < b0.total else (base, b0)


def plan(request: Request, prices: PriceOptions | None = None) -> PlanResult:
    """Plans for the request; raises ScenarioError when it cannot be estimated."""
    notes, prices = checked_inputs(request, prices or PriceOptions())
    rank_by: RankBy = prices.rank_by or request.rank_by or "cost"
    base = build_scenario(request)
    b0 = breakdown(base)
    base, b0 = sharded_when_it_helps(request, base, b0)
    job = Job(base=base, tokens=training_tokens(request, base.seq_len), prices=prices, rank_by=rank_by,
              request=request)
    named = list(dict.fromkeys(asked_arrangements(request)))  # "H100 vs H100" once
    if named:
        plans = search(job, named, headroom=NO_HEADROOM)
        # the arrangement asked leads the plans of the GPUs asked
        asked_first = {(a.gpu, a.count) for a in named}
        plans = sorted(plans, key=lambda p: (p.gpu, p.count) not in asked_first)
    else:
        plans = search(job, catalog_arrangements(), every_count=False)
        plans = cuda_first(plans) if rank_by == "cost" else plans  # "the fastest" keeps the fastest first

    asked_fits = None
    changes: list[Change] = []
    alternatives: list[Plan] = []
    comparison: list[Comparison] = []
    comparison_fix: list[Comparison] = []
    if len(named) > 1:
        comparison = [compare(job, g) for g in named]
        if not any(c.fits for c in comparison) and base.method == "lora":
            # none holds LoRA as asked: QLoRA is the way forward a comparison names (never for full training)
            qlora = base.model_copy(update={"method": "qlora", "bits": 4, "optimizer": "paged_adamw"})
            comparison_fix = [compare(Job(base=qlora, tokens=job.tokens, prices=prices, rank_by=rank_by,
                                          request=request), g) for g in named]
    elif named:
        gpu = find_gpu(named[0].gpu, named[0].memory_gb)
        runs = gpu is None or not hardware_conflicts(base, gpu, request)
        asked_fits = runs and fits(b0, capacity(named[0].gpu, named[0].memory_gb), NO_HEADROOM)
        if not asked_fits:
            changes = what_to_change(base, b0, capacity(named[0].gpu, named[0].memory_gb), gpu, request)
        if not plans:
            others = search(job, catalog_arrangements(), every_count=False)
            alternatives = (cuda_first(others) if rank_by == "cost" else others)[:3]
        elif asked_fits:
            cheaper = cheaper_gpu(job, b0, named[0], plans)
            if cheaper is not None:
                alternatives = [cheaper]
    result = PlanResult(scenario=base, breakdown=b0, plans=plans, changes=changes, asked_fits=asked_fits,
                        tokens=job.tokens, currency=prices.currency, rank_by=rank_by, comparison=comparison,
                        comparison_fix=comparison_fix,
                        alternatives=alternatives, notes=notes)
    result.monthly = monthly(result, prices)
    return result

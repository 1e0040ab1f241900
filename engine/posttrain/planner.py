"""The planner of post-training (DPO … GRPO) and long-context requests: what such a request implies (vLLM's
rollout, the sharding that helps, whether the sequence is what does not fit), its plans (`engine.posttrain.search`),
and the plan adopted into the post-training answer with its changes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from engine import posttrain, pricing
from engine.fit import NO_HEADROOM, fits, need_gb
from engine.plan.costing import Job
from engine.plan.inputs import checked_inputs
from engine.plan.search import asked_arrangements, catalog_arrangements
from engine.posttrain.search import CP, breakdown_or_none, cp_time_factor, request_at, search
from engine.posttrain.setup import build_setup, constants
from engine.posttrain.timing import sequences_per_example
from engine.scenario import ScenarioError, build_scenario, training_tokens
from engine.schema import (
    Arrangement,
    Change,
    Comparison,
    Plan,
    PlanResult,
    PriceOptions,
    RankBy,
    Request,
    Rollout,
)


def with_rollout(request: Request) -> Request:
    """GRPO/PPO "with vLLM": the parser reads the engine as serving_engine; the rollout is vLLM's (colocated
    unless the request says otherwise, engine.posttrain's default)."""
    if request.stage in ("grpo", "ppo") and request.rollout is None and request.serving_engine == "vllm":
        return request.model_copy(update={"rollout": Rollout()})
    return request


def default_sharding(request: Request) -> Request:
    """Several GPUs asked for a LoRA/QLoRA post-training job without a sharding said: engine.scenario's default is DDP
    (a full copy per GPU). When that copy does not fit and ZeRO-3 does, ZeRO-3 is the default instead: the sharding
    that helps, not a "does not fit as asked" that only the scenario's default made."""
    named = asked_arrangements(request)
    if request.sharding is not None or not named or named[0].count < 2 or request.method == "inference" \
            or request.stage not in posttrain.POSTTRAIN_STAGES:
        return request
    try:
        base = build_scenario(request)
        if base.method not in ("lora", "qlora") or base.sharding != "ddp":
            return request
        ddp = posttrain.breakdown_for(request)
        if fits(ddp, named[0].memory_gb, NO_HEADROOM) and not ddp.pressure:
            return request  # a copy per GPU fits without the allocator giving its cache back (that is the card's edge)
        z3 = request.model_copy(update={"sharding": "zero3"})
        return z3 if fits(posttrain.breakdown_for(z3), named[0].memory_gb, NO_HEADROOM) else request
    except (ScenarioError, ValueError):
        return request


def long_sequence(request: Request) -> bool:
    """At least engine/catalog/posttrain.toml's long_context_tokens per sequence."""
    try:
        return build_scenario(request).seq_len >= int(constants()["context_parallel"]["long_context_tokens"])
    except (ScenarioError, ValueError):
        return False


def is_long_context(request: Request) -> bool:
    """A training request whose sequence-dependent lines (activations, logits) outweigh the model states: the
    sequence is what does not fit, and context parallelism is the way to spread it."""
    if request.method == "inference":
        return False
    try:
        r = posttrain.posttrain_result(request, advise=False)
    except (ScenarioError, ValueError):
        return False
    p = r.policy
    return p["activations"] + p["logits"] > p["weights"] + p["adapters"] + p["gradients"] + p["optimizer"] \
        and r.tokens_per_sequence >= 2 * int(constants()["context_parallel"]["min_tokens_per_gpu"])


def plan(request: Request, prices: PriceOptions | None = None) -> PlanResult:
    """Plans of a post-training or long-context request; raises ScenarioError when it cannot be estimated."""
    notes, prices = checked_inputs(request, prices or PriceOptions())
    rank_by: RankBy = prices.rank_by or request.rank_by or "cost"
    base = build_scenario(request)
    b0 = posttrain.breakdown_for(request)
    setup = build_setup(request)  # the sequences one example puts through the policy (a pair two, a prompt its
    tokens = training_tokens(request, setup.tokens, sequences_per_example(setup))  # generations), as result.py
    job = Job(base=base, tokens=tokens, prices=prices, rank_by=rank_by)
    named = list(dict.fromkeys(asked_arrangements(request)))
    long = is_long_context(request)
    asked_fits = None
    comparison: list[Comparison] = []
    alternatives: list[Plan] = []
    if named:
        plans = search(job, request, named, long, headroom=NO_HEADROOM)
    else:
        plans = search(job, request, catalog_arrangements(), long, every_count=False)
    if len(named) > 1:
        for g in named:
            found = search(job, request, [g], long, headroom=NO_HEADROOM, counts=(g.count,))
            judged = breakdown_or_none(request_at(request, [], g))
            need = need_gb(judged) if judged else math.inf
            comparison.append(Comparison(gpu=g.gpu, count=g.count, fits=bool(found), need_gb=round(need, 2),
                                         memory_gb=g.memory_gb, plan=found[0] if found else None,
                                         thin_price=pricing.thin_price(g.gpu)))
    elif named:
        asked_fits = fits(b0, named[0].memory_gb, NO_HEADROOM)
        if not plans:
            alternatives = search(job, request, catalog_arrangements(), long, every_count=False)[:3]
    return PlanResult(scenario=base, breakdown=b0, plans=plans, changes=[], asked_fits=asked_fits, tokens=tokens,
                      currency=prices.currency, rank_by=rank_by, comparison=comparison, alternatives=alternatives,
                      notes=notes)


def adopt_plan(result: posttrain.PostTrainResult, request: Request, plans: Sequence[Plan],
               asked: Arrangement | None) -> posttrain.PostTrainResult:
    """The plan on the GPUs asked (when it needs changes) first among the changes, and its settings as the ones to
    use: the answer names the change it plans with, not another that fits more tightly. Without such a plan, the
    first change that fits on the GPUs asked gives the settings."""
    plan = next((p for p in plans if asked and p.gpu == asked.gpu and p.count == asked.count and p.techniques), None)
    if plan is not None and asked is not None and set(plan.techniques) <= {"fused_loss"} | {
            t for t in plan.techniques if t.startswith(CP + ":")}:
        req = request_at(request, plan.techniques, asked)
        try:
            r = posttrain.posttrain_result(req, advise=False)
        except (ScenarioError, ValueError):
            return result
        cp = next((t for t in plan.techniques if t.startswith(CP + ":")), None)
        if cp is not None:
            degree = int(cp.split(":")[1])
            params: dict[str, Any] = {"degree": degree, "gpus": asked.count, "host_ram_gib": round(r.host_ram_gib, 1),
                                      "time_factor": round(cp_time_factor([cp]), 2)}
            if "fused_loss" in plan.techniques:
                params["with"] = "fused_loss"
            change = Change(key="posttrain.change.context_parallel", params=params, per_gpu_total=r.per_gpu_total,
                              fits=True)
        else:
            change = Change(key="posttrain.change.fused_loss", params={"use_liger_kernel": True},
                              per_gpu_total=r.per_gpu_total, fits=True)
        rest = [c for c in result.changes if (c.key, c.params.get("degree"), c.params.get("with"))
                != (change.key, change.params.get("degree"), change.params.get("with"))]
        return result.model_copy(update={"changes": [change, *rest], "settings": r.settings})
    fix = next((c for c in result.changes if c.fits and not c.params.get("extra_gpus")
                and (asked is None or int(c.params.get("gpus", 0) or 0) <= asked.count)), None)
    if fix is None or asked is None or plan is not None:
        return result
    settings = fixed_settings(request, fix, asked)
    return result if settings is None else result.model_copy(update={"settings": settings})


def fixed_settings(request: Request, fix: Any, asked: Arrangement) -> Any:
    """The settings of a long-context change on the GPUs asked (CP, fused loss, ALST offload / TiledMLP)."""
    from engine.posttrain import PostTrainOptions

    key = fix.key.removeprefix("posttrain.change.")
    rollout_update = {"vllm_tensor_parallel": {"tensor_parallel": fix.params.get("vllm_tensor_parallel_size"),
                                               "gpu_memory_utilization": fix.params.get("vllm_gpu_memory_utilization")},
                      "vllm_gpu_memory_utilization": {
                          "gpu_memory_utilization": fix.params.get("vllm_gpu_memory_utilization")},
                      "sleep_mode": {"sleep": True, **({"gpu_memory_utilization": fix.params[
                          "vllm_gpu_memory_utilization"]} if "vllm_gpu_memory_utilization" in fix.params else {})}}
    if key in rollout_update and request.rollout is not None:  # the rollout's fix: its settings are the answer's
        moved = request.model_copy(update={"rollout": request.rollout.model_copy(update=rollout_update[key])})
        try:
            return posttrain.posttrain_result(moved, advise=False).settings
        except (ScenarioError, ValueError):
            return None
    parts = {key, *str(fix.params.get("with", "")).split(",")} - {""}
    if not parts <= {"context_parallel", "fused_loss", "activation_offload", "tiled_mlp"}:
        return None
    update: dict[str, Any] = {}
    if "fused_loss" in parts:
        update["fused_loss"] = True
    if "context_parallel" in parts:
        update.update(context_parallel=int(fix.params.get("degree", 1)), sharding=request.sharding or "zero3")
    opts = PostTrainOptions(activation_offload="activation_offload" in parts, tiled_mlp="tiled_mlp" in parts)
    try:
        return posttrain.posttrain_result(request.model_copy(update=update), opts, advise=False).settings
    except (ScenarioError, ValueError):
        return None


def changes(result: posttrain.PostTrainResult, asked: Arrangement | None) -> list[Change]:
    """posttrain's changes as the answer's: what each saves per GPU, and whether it fits the GPUs asked
    (a change that needs more GPUs than asked is keyed more_gpus, so that the verdict does not count it)."""
    out = []
    for c in result.changes:
        gpus = int(c.params.get("gpus", 0) or 0) + int(c.params.get("extra_gpus", 0) or 0)
        more = asked is not None and (gpus > asked.count or "extra_gpus" in c.params)
        out.append(Change(key="more_gpus" if more else c.key, params={**c.params, "posttrain_key": c.key,
                                                                      "per_gpu_total": c.per_gpu_total},
                          saves_gb=round(result.per_gpu_total - c.per_gpu_total, 1), fits=bool(c.fits),
                          tight=bool(c.fits and c.tight)))
    return out

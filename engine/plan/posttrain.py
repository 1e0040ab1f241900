"""Plan search for post-training (DPO … GRPO) and long-context requests.

Arrangements are judged with `engine.posttrain.breakdown_for` (the post-training peak: reference, reward and value
models, rollouts, the vLLM share), not the plain SFT breakdown. Techniques are request changes; for long sequences
context parallelism over the arrangement's GPUs is one of them ("cp:<degree>:<ulysses|ring>"), with the step time
engine/catalog/posttrain.toml gives it. GRPO/PPO plans take their hours from the post-training time model
(generation + training per step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from engine import posttrain
from engine.fit import HEADROOM, NO_HEADROOM, fits, need_gb
from engine.plan.costing import PICK_FIELD, Job, Option, cost_plan, price, rank_key
from engine.plan.inputs import checked_inputs
from engine.plan.search import COUNTS, MAX_PLANS, NODE_COUNTS, asked_arrangements, catalog_arrangements
from engine.posttrain.setup import constants, heads_divide
from engine.scenario import ScenarioError, build_scenario
from engine.schema import (
    Arrangement,
    Breakdown,
    Change,
    Comparison,
    GpuRef,
    Plan,
    PlanResult,
    PriceOptions,
    RankBy,
    Request,
    Rollout,
    Scenario,
)

REQUEST_TECHNIQUES: dict[str, dict[str, Any]] = {
    "gradient_checkpointing": {"gradient_checkpointing": True},
    "fused_loss": {"fused_loss": True},
    "micro_batch_1": {"batch_size": 1},
    "optimizer_8bit": {"optimizer": "adamw_8bit"},
    "zero3": {"sharding": "zero3"},
    "cpu_offload": {"offload": True},
}
CP = "cp"  # technique name prefix: "cp:8:ulysses"


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
        if fits(posttrain.breakdown_for(request), named[0].memory_gb, NO_HEADROOM):
            return request
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


def cp_technique(request: Request, base: Scenario, count: int) -> str | None:
    """Context parallelism over all `count` GPUs, when the sequence is long enough to split that many ways."""
    c = constants()["context_parallel"]
    if count < 2 or count not in c["degrees"] or (request.context_parallel or 1) > 1 \
            or base.seq_len / count < c["min_tokens_per_gpu"]:
        return None
    kind = "ulysses" if heads_divide(base.arch.heads, base.arch.kv_heads, count) else "ring"
    return f"{CP}:{count}:{kind}"


def cp_time_factor(techniques: list[str]) -> float:
    for t in techniques:
        if t.startswith(CP + ":"):
            degree = int(t.split(":")[1])
            return 1.0 + float(constants()["context_parallel"]["overhead_per_doubling"]) * math.log2(degree)
    return 1.0


def chains(request: Request, base: Scenario, long: bool) -> list[list[str]]:
    """Technique chains, cheapest in time first; a "cp" entry stands for CP over the arrangement's GPUs."""
    chain = []
    if not base.gradient_checkpointing:
        chain.append("gradient_checkpointing")
    if base.batch_size > 1 and request.stage not in ("grpo", "ppo"):
        chain.append("micro_batch_1")  # GRPO's batch is its generations: posttrain's changes word that
    if base.optimizer in ("adamw", "paged_adamw") and base.method == "full":
        chain.append("optimizer_8bit")
    if base.sharding not in ("zero3", "fsdp"):
        chain.append("zero3")
    if base.method == "full" and not base.offload:
        chain.append("cpu_offload")
    out = [chain]
    if not base.fused_loss:
        out.append(["fused_loss", *chain])
    if long:
        out += [[CP, *chain]] + ([[CP, "fused_loss", *chain]] if not base.fused_loss else [])
    return out


def request_at(request: Request, techniques: list[str], gpu: Arrangement) -> Request:
    update: dict[str, Any] = {}
    for t in techniques:
        if t.startswith(CP + ":"):
            update["context_parallel"] = int(t.split(":")[1])
        else:
            update.update(REQUEST_TECHNIQUES[t])
    first = request.gpus[0] if request.gpus else GpuRef()
    update["gpus"] = [first.model_copy(update={"name": gpu.gpu, "memory_gb": gpu.memory_gb, "count": gpu.count,
                                               "total_gib": None})]
    return request.model_copy(update=update)


def _variants(request: Request, base: Scenario, count: int, long: bool) -> list[list[str]]:
    seen: list[list[str]] = [[]]
    for names in chains(request, base, long):
        for i in range(len(names)):
            prefix = names[: i + 1]
            if CP in prefix:
                cp = cp_technique(request, base, count)
                if cp is None:
                    break
                prefix = [cp if t == CP else t for t in prefix]
            if count == 1 and prefix[-1] == "zero3":
                continue
            if prefix not in seen:
                seen.append(prefix)
    return seen


def _breakdown(req: Request) -> Breakdown | None:
    try:
        return posttrain.breakdown_for(req)
    except (ScenarioError, ValueError):
        return None


def rank(job: Job, o: Option, req: Request) -> tuple[float, float, float, int]:
    """engine.plan's rank key with CP's step-time factor; GRPO/PPO by the money (or hours) of their steps.

    The first figure is compared at three significant figures: plans whose money (or hours) is the same but for
    float noise (GRPO on 1, 4 or 8 H100 costs the same) are listed by GPU count, fewest first, never in the order
    of a rounding error ("1×, 8×, 4×" at the same 5.8–57 $)."""
    key = rank_key(job, o)
    if req.stage in ("grpo", "ppo"):
        costs = rl_costs(job, o, req)
        if "hours" in costs:
            money = costs.get("cost", {}).get("typical", math.inf)
            hours = costs["hours"]
            first, second = (hours, money) if job.rank_by == "time" else (money, hours)
            return (_as_shown(first), o.count, second, key[2])
    factor = cp_time_factor(o.techniques)
    return (_as_shown(key[0] * factor), o.count, key[1] * factor, key[2])


def _as_shown(value: float) -> float:
    """A figure at three significant figures (finer than the answer prints, coarser than float noise)."""
    return float(f"{value:.3g}") if math.isfinite(value) and value > 0 else value


def search(job: Job, request: Request, candidates: Sequence[Arrangement], headroom: float = HEADROOM,
           counts: tuple[int, ...] | None = None, every_count: bool = True) -> list[Plan]:
    """Arrangements × technique sets that fit under the post-training peak, best first (one plan per GPU × count).
    Without `every_count` (the whole catalog) a GPU that fits as asked stops growing, as in engine.plan.search."""
    long = is_long_context(request)
    named = tuple(sorted({c.count for c in candidates} - set(COUNTS) - {1}))
    steps = (counts,) if counts else (tuple(sorted({*COUNTS, *named})), NODE_COUNTS)
    colocated = request.rollout is not None and request.rollout.mode in (None, "colocate")
    options: list[tuple[tuple[float, float, float, int], Option, Request]] = []
    settled: set[str] = set()
    for group in steps:
        for count in group:
            fitted: dict[str, list[set[str]]] = {}
            for techniques in _variants(request, job.base, count, long):
                used = set(techniques)
                pool = [c for c in candidates if c.gpu not in settled
                        and not any(f <= used for f in fitted.get(c.gpu, ()))]
                shared: Breakdown | None = None
                for c in pool:
                    arr = Arrangement(gpu=c.gpu, memory_gb=c.memory_gb, count=count)
                    req = request_at(request, techniques, arr)
                    # the vLLM share is a fraction of the card: only colocated rollouts depend on the GPU
                    b = _breakdown(req) if colocated or shared is None else shared
                    if b is None:
                        break
                    shared = b
                    if not fits(b, c.memory_gb, headroom):
                        continue
                    fitted.setdefault(c.gpu, []).append(used)
                    if not techniques and not every_count and job.rank_by == "cost":
                        settled.add(c.gpu)
                    o = Option(techniques, build_scenario(req), b, c.gpu, c.memory_gb, count)
                    options.append((rank(job, o, req), o, req))
        if options:
            break
    asked = {(c.gpu, c.count) for c in candidates} if every_count and len(candidates) == 1 else set()
    best: dict[tuple[str, int], tuple[tuple[float, float, float, int], Option, Request]] = {}
    for key, o, req in sorted(options, key=lambda item: item[0]):
        best.setdefault((o.gpu, o.count), (key, o, req))
    ordered = sorted(best.values(), key=lambda item: ((item[1].gpu, item[1].count) not in asked, item[0]))
    plans = [plan_of(job, o, req) for _key, o, req in ordered]
    plans = [p for p in plans if not dominated(p, plans)]
    return plans[:MAX_PLANS]


def dominated(p: Plan, plans: Sequence[Plan]) -> bool:
    """Another plan of the same GPU is both faster and cheaper: more GPUs that only cost
    more are no option."""
    def money(x: Plan) -> float:
        return (x.cost or {}).get("typical", math.inf) if x.cost else math.inf

    if p.hours is None:
        return False
    for q in plans:
        if q is p or q.gpu != p.gpu or q.hours is None:
            continue
        if q.hours < p.hours * 0.99 and money(q) < money(p) * 0.99:
            return True
    return False


def plan_of(job: Job, o: Option, req: Request) -> Plan:
    """The option costed: CP's step-time factor on the hours; GRPO/PPO hours from generation + training."""
    p = cost_plan(job, o)
    factor = cp_time_factor(o.techniques)
    update: dict[str, Any] = {"slowdown": round(factor, 2)}
    if factor != 1.0:
        for k in ("hours", "hours_per_100m_tokens"):
            if getattr(p, k) is not None:
                update[k] = round(getattr(p, k) * factor, 2)
        for k in ("cost", "usd"):
            if getattr(p, k):
                update[k] = {t: round(v * factor, 2) for t, v in getattr(p, k).items()}
    if req.stage in ("grpo", "ppo"):
        update.update(rl_costs(job, o, req))
    return p.model_copy(update=update)


def rl_costs(job: Job, o: Option, req: Request) -> dict[str, Any]:
    from engine.catalog import find_gpu

    try:
        r = posttrain.posttrain_result(req, advise=False)
    except (ScenarioError, ValueError):
        return {}
    t = r.time
    gpu = find_gpu(o.gpu)
    if t is None or gpu is None:
        return {}
    out: dict[str, Any] = {"hours": round(t.hours, 2), "hours_per_100m_tokens": None, "cost_per_1m_tokens": None}
    found = price(gpu, job.prices)
    if found is not None:
        out["cost"] = {k: round(getattr(found, k) * t.gpus * t.hours, 2) for k in ("min", "typical", "max")}
        # money per 1M tokens trained on (prompts + completions of the step's sequences)
        tokens = t.sequences_per_step * r.tokens_per_sequence
        if tokens:
            per_hour = getattr(found, PICK_FIELD[job.prices.pick]) * t.gpus
            out["cost_per_1m_tokens"] = round(per_hour * t.step_s / 3600 / tokens * 1e6, 4)
    if isinstance(t.cost, dict):
        out["usd"] = {k: round(float(t.cost[k]), 2) for k in ("min", "typical", "max")}
    return out


def plan(request: Request, prices: PriceOptions | None = None) -> PlanResult:
    """Plans of a post-training or long-context request; raises ScenarioError when it cannot be estimated."""
    notes, prices = checked_inputs(request, prices or PriceOptions())
    rank_by: RankBy = prices.rank_by or request.rank_by or "cost"
    base = build_scenario(request)
    b0 = posttrain.breakdown_for(request)
    tokens = request.tokens * (request.epochs or 1) if request.tokens else None
    job = Job(base=base, tokens=tokens, prices=prices, rank_by=rank_by)
    named = list(dict.fromkeys(asked_arrangements(request)))
    asked_fits = None
    comparison: list[Comparison] = []
    alternatives: list[Plan] = []
    if named:
        plans = search(job, request, named, headroom=NO_HEADROOM)
    else:
        plans = search(job, request, catalog_arrangements(), every_count=False)
    if len(named) > 1:
        for g in named:
            found = search(job, request, [g], headroom=NO_HEADROOM, counts=(g.count,))
            judged = _breakdown(request_at(request, [], g))
            need = need_gb(judged) if judged else math.inf
            comparison.append(Comparison(gpu=g.gpu, count=g.count, fits=bool(found), need_gb=round(need, 2),
                                         memory_gb=g.memory_gb, plan=found[0] if found else None))
    elif named:
        asked_fits = fits(b0, named[0].memory_gb, NO_HEADROOM)
        if not plans:
            alternatives = search(job, request, catalog_arrangements(), every_count=False)[:3]
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

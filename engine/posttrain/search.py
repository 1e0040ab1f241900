"""The plan search of post-training (DPO … GRPO) and long-context requests: arrangements × technique sets that fit
under the post-training peak.

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
from engine.fit import HEADROOM, fits
from engine.plan.costing import PICK_FIELD, Job, Option, cost_plan, price, rank_key
from engine.plan.search import COUNTS, MAX_PLANS, NODE_COUNTS
from engine.posttrain.setup import constants, heads_divide
from engine.scenario import ScenarioError, build_scenario
from engine.schema import Arrangement, Breakdown, GpuRef, Plan, Request, Scenario

REQUEST_TECHNIQUES: dict[str, dict[str, Any]] = {
    "gradient_checkpointing": {"gradient_checkpointing": True},
    "fused_loss": {"fused_loss": True},
    "micro_batch_1": {"batch_size": 1},
    "optimizer_8bit": {"optimizer": "adamw_8bit"},
    "zero3": {"sharding": "zero3"},
    "cpu_offload": {"offload": True},
}
CP = "cp"  # technique name prefix: "cp:8:ulysses"


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
    if base.optimizer in ("adamw", "adamw_fused", "paged_adamw") and base.method == "full":
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


def breakdown_or_none(req: Request) -> Breakdown | None:
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


def search(job: Job, request: Request, candidates: Sequence[Arrangement], long: bool, headroom: float = HEADROOM,
           counts: tuple[int, ...] | None = None, every_count: bool = True) -> list[Plan]:
    """Arrangements × technique sets that fit under the post-training peak, best first (one plan per GPU × count);
    `long`: a long-context request (context parallelism is one of the techniques). Without `every_count` (the whole
    catalog) a GPU that fits as asked stops growing, as in engine.plan.search."""
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
                    b = breakdown_or_none(req) if colocated or shared is None else shared
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
    # the hours unrounded: the reply rounds them once, as it does the step line's (1.5467 h is "1.5 h" in both)
    out: dict[str, Any] = {"hours": round(t.hours, 6), "hours_per_100m_tokens": None, "cost_per_1m_tokens": None}
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

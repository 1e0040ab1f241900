"""A serving question's answer: the serving engine's ServingResult priced, the verdict on the GPUs asked, and a
side-by-side of the GPUs named (engine.serving does the accounting; this module judges it)."""

from __future__ import annotations

from engine import pricing
from engine.catalog import find_gpu
from engine.fit import NO_HEADROOM, capacity, fits, tight
from engine.schema import (
    Assumption,
    Breakdown,
    GpuRef,
    Note,
    PriceOptions,
    Request,
    ServingAnswer,
    ServingCost,
    ServingSide,
    Verdict,
    error_keys,
)
from engine.serving import ServingResult, serve


def serving_answer(request: Request, prices: PriceOptions | None = None) -> ServingAnswer:
    """A serving question's answer: the engine's ServingResult and the verdict on the GPUs asked."""
    if prices is not None and request.currency is None:
        request = request.model_copy(update={"currency": prices.currency})
    sides = serving_sides(request) if len({g.name for g in request.gpus}) > 1 else \
        engine_sides(request) if len(request.serving_engines_compared) > 1 and request.gpus else \
        tp_sides(request) if len(request.tensor_parallel_compared) > 1 and request.gpus else []
    winner = next((x for x in sides if x.winner), None)
    served = request
    if winner is not None and winner.engine is not None:  # engines compared: the body is the winner's engine
        served = request.model_copy(update={"serving_engine": winner.engine})
    elif winner is not None and winner.tensor_parallel is not None:  # TP degrees compared: the winner's degree
        served = request.model_copy(update={"tensor_parallel": winner.tensor_parallel, "gpus": [
            GpuRef(name=request.gpus[0].name, memory_gb=request.gpus[0].memory_gb, count=winner.count)]})
    elif winner is not None and winner.holds_count is not None:  # the body of the answer is the winner's arrangement
        served = request.model_copy(update={"gpus": [GpuRef(name=winner.gpu, count=winner.holds_count)]})
    result = serve(served)
    if prices is not None and result.cost is not None and result.gpu is not None:
        result = result.model_copy(update={"cost": _priced(result, prices)})
    if sides:
        result = result.model_copy(update={"compared": sides})
    from engine.answer import moe_active  # the one rule for a bare "30b moe", shared with training

    notes = [Note(key=k) for k in error_keys(request.error)]  # what the question said that could not be used
    if moe_active(request):  # "30b moe": the active share assumed, said
        result = result.model_copy(update={"assumptions": [*result.assumptions,
                                                          Assumption(key="moe_active", value=moe_active(request))]})
    if "quantization" in request.assumed and request.quantization:  # "q4": the parser's pick, said (engine.serving's
        result = result.model_copy(update={"assumptions": [  # own "weight_format" assumption words it)
            *result.assumptions, Assumption(key="weight_format", value=request.quantization)]})
    if "ttft_p95_ms" in request.assumed and request.ttft_p95_ms:  # «латенси до 500 мс»: read as the first token's
        pct = request.ttft_percentile or 95
        result = result.model_copy(update={"assumptions": [
            *result.assumptions, Assumption(key="latency_as_ttft", value=f"p{pct} {request.ttft_p95_ms:g}")]})
    judged = "compare" if sides else serving_verdict(request, result)
    return ServingAnswer(request=request, serving=result, verdict=judged, notes=notes,
                  serving_users=serving_users(result), currency=result.cost.currency if result.cost else "USD")


def serving_sides(request: Request) -> list[ServingSide]:
    """Each GPU named for one serving job ("H100 or H200 for 32 users"), sized like a training comparison: whether
    the count named holds the asked users, else the smallest arrangement of that GPU that does (engine.serving's own
    search), with its price per hour, per 1M output tokens and speed per user. The winner holds the users at the
    lowest price per 1M output tokens (per hour where no token price is known); the winner comes first."""
    sides: list[ServingSide] = []
    # no users asked: each card at the load it holds (engine.serving sizes "throughput" at it), so that its price per
    # 1M tokens is that of a busy server, not of one request
    at_load = request.concurrency is None and "throughput" not in request.asks
    asked = request.model_copy(update={"asks": [*request.asks, "throughput"]}) if at_load else request
    for ref in list({g.name: g for g in request.gpus}.values())[:4]:
        r = serve(asked.model_copy(update={"gpus": [ref]}))
        name = r.gpu.name if r.gpu is not None else (ref.name or "")
        side = _held(ServingSide(gpu=name, count=ref.count, currency=request.currency or "USD"), r,
                     users=request.concurrency is None)
        if not side.holds_as_named and r.arrangement is not None and r.arrangement.gpu == name:
            a = r.arrangement
            side = side.model_copy(update={
                "holds_count": a.count, "per_hour": a.per_hour,
                "per_million_output_tokens": a.per_million_output_tokens, "per_user_tokens_s": a.per_user_tokens_s})
        sides.append(side)
    holding = [x for x in sides if x.holds_count is not None]
    if not holding:
        return sides
    inf = float("inf")
    best = min(holding, key=lambda x: (x.per_million_output_tokens if x.per_million_output_tokens is not None else inf,
                                       x.per_hour if x.per_hour is not None else inf, -(x.per_user_tokens_s or 0.0)))
    return _winner_first(sides, best)


def _held(side: ServingSide, r: ServingResult, users: bool = True) -> ServingSide:
    """The side with what the answer `r` holds when it fits as named: the GPUs, the requests of the context at once
    (when `users`), the prices and the speed per user; the side unchanged when it does not fit."""
    if not r.fits or r.gpu is None:
        return side
    return side.model_copy(update={
        "users": serving_users(r) if users else None, "holds_as_named": True, "holds_count": r.gpu.count,
        "per_hour": r.cost.per_hour if r.cost else None,
        "per_million_output_tokens": r.cost.per_million_output_tokens if r.cost else None,
        "per_user_tokens_s": r.speed.per_user_tokens_s if r.speed else None})


def _winner_first(sides: list[ServingSide], best: ServingSide) -> list[ServingSide]:
    """`best` marked the winner, first, the other sides after it in their order."""
    return [best.model_copy(update={"winner": True}), *(x for x in sides if x is not best)]


def engine_sides(request: Request) -> list[ServingSide]:
    """Each serving engine named for one job on the same GPUs («vllm или sglang для 70b на 2 h100»): what each holds
    on the GPUs asked, with that engine's own memory model and speed (engine.serving), the weights as asked (no
    format an engine would pick to make it fit). The winner holds the most requests of the asked context at once,
    then costs least per 1M output tokens; the winner comes first."""
    sides: list[ServingSide] = []
    for engine in request.serving_engines_compared[:4]:
        r = serve(request.model_copy(update={"serving_engine": engine}))
        sides.append(_held(ServingSide(gpu=r.gpu.name if r.gpu is not None else (request.gpus[0].name or ""),
                                       count=request.gpus[0].count, engine=engine,
                                       currency=request.currency or "USD"), r))
    holding = [x for x in sides if x.holds_as_named]
    if not holding:
        return sides
    inf = float("inf")
    best = min(holding, key=lambda x: (-(x.users or 0),
                                       x.per_million_output_tokens if x.per_million_output_tokens is not None else inf,
                                       -(x.per_user_tokens_s or 0.0)))
    return _winner_first(sides, best)


def tp_sides(request: Request) -> list[ServingSide]:
    """Each tensor-parallel degree named for one job («tp2 или tp4 для llama 70b на h100»): the GPUs of the kind asked,
    as many as the degree (or the count named, in replicas), the weights as asked. The winner holds the most requests
    of the asked context per GPU (within a tenth of the most is a tie), then costs least per 1M output tokens, then
    is faster per user; a faster runner-up is said beside it."""
    ref = request.gpus[0]
    sides: list[ServingSide] = []
    for tp in request.tensor_parallel_compared[:4]:
        count = max(ref.count, tp)
        r = serve(request.model_copy(update={"tensor_parallel": tp, "gpus": [ref.model_copy(update={"count": count})]}))
        sides.append(_held(ServingSide(gpu=r.gpu.name if r.gpu is not None else (ref.name or ""), count=count,
                                       tensor_parallel=tp, currency=request.currency or "USD"), r))
    holding = [x for x in sides if x.holds_as_named]
    if not holding:
        return sides
    inf = float("inf")

    def per_gpu(x: ServingSide) -> float:
        return (x.users or 0) / max(1, x.holds_count or x.count)

    most = max(per_gpu(x) for x in holding)
    near = [x for x in holding if per_gpu(x) >= 0.9 * most]  # within a tenth of the most per GPU: a tie, then cost
    best = min(near, key=lambda x: (x.per_million_output_tokens if x.per_million_output_tokens is not None else inf,
                                    -(x.per_user_tokens_s or 0.0)))
    return _winner_first(sides, best)


def _priced(r: ServingResult, prices: PriceOptions) -> ServingCost | None:
    """The serving cost at the chat's prices: its own price for the GPU, the figure of the range it picks, its rate."""
    assert r.cost is not None and r.gpu is not None
    try:
        found = pricing.price_range(r.gpu.name, overrides=prices.overrides, currency=prices.currency,
                                    usd_rub=prices.usd_rub)
    except (LookupError, ValueError):
        return r.cost
    hourly = {"cheapest": found.min, "premium": found.max}.get(prices.pick, found.typical)
    per_hour = hourly * r.gpu.count
    tokens_s = r.speed.total_tokens_s * max(1, r.replicas) if r.speed else 0.0
    return ServingCost(currency=prices.currency, per_hour=round(per_hour, 2),
                       per_month=round(per_hour * pricing.HOURS_PER_MONTH, 0),
                       per_million_output_tokens=round(per_hour / (tokens_s * 3600) * 1e6, 3) if tokens_s else 0.0,
                       gpu_hour_price=round(hourly, 3), price_source=found.typical_where)


def serving_users(r: ServingResult) -> int:
    """Requests of the asked context the configuration runs at once: KV room capped by max_num_seqs, all replicas."""
    if r.kv is None or r.settings is None or r.memory is None or r.memory.kv_pool_gib <= 0:
        return 0
    return int(min(r.kv.concurrency_at_context + 1e-9, r.settings.max_num_seqs)) * max(1, r.replicas)


def asked_kv_gib(r: ServingResult) -> float:
    """The KV cache the asked users need on one instance at the asked context (beyond the pool if they do not fit)."""
    if r.kv is None:
        return 0.0
    per_instance = -(-(r.users or 1) // max(1, r.replicas))
    return per_instance * r.context * r.kv.bytes_per_token / 2**30


def serving_breakdown(r: ServingResult) -> Breakdown | None:
    """What one GPU must hold for the asked users (rank 0): the engine's fixed parts plus the KV of the asked
    requests, in the training breakdown's terms so that the one fit rule of engine.fit judges it."""
    m = r.memory
    if m is None or r.kv is None:
        return None
    kv = min(m.kv_pool_gib, asked_kv_gib(r)) if m.kv_pool_gib > 0 else 0.0
    total = m.weights_gib + m.activation_peak_gib + kv + m.cuda_graph_gib
    return Breakdown(weights=m.weights_gib, adapters=0, gradients=0, optimizer=0, activations=m.activation_peak_gib,
                     logits=0, kv_cache=kv, overhead=m.cuda_graph_gib, total=total, cuda_context=m.non_torch_gib,
                     cpu_ram=m.host_ram_gib, trainable_params=0)


def serving_verdict(request: Request, r: ServingResult) -> Verdict | None:
    """fits / tight / fits_with_changes / no_fit on the GPUs asked (None when none was named, or no answer)."""
    if not request.gpus or r.memory is None:
        return None
    if r.instead_of is not None:  # the GPUs named miss the load's promise or capacity; the answer is sized anew
        named = r.instead_of.gpu
        same = r.gpu is not None and r.gpu.name == named.name and r.gpu.count <= named.count
        return "fits_with_changes" if same else "no_fit"
    b = serving_breakdown(r)
    gpu = find_gpu(r.gpu.name) if r.gpu else None
    if r.fits and b is not None:
        # the one fit rule against the driver-reported capacity (engine.fit), as the training verdict
        room = capacity(gpu.name, gpu.memory_gb) if gpu else (r.gpu.total_gib if r.gpu and r.gpu.total_gib else 0.0)
        return "tight" if tight(b, room) or not fits(b, room, NO_HEADROOM) else "fits"
    helps = any(c.key != "serving.change.arrangement" and c.key != "serving.change.fewer_users"
                and c.effect.get("loads", True) and c.effect.get("users_served", 0) >= (r.users or 1)
                for c in r.changes)
    return "fits_with_changes" if helps else "no_fit"

"""The smallest arrangement that serves the asked users: one instance of TP (dividing the attention heads, within a
node) x PP (across nodes when one node is not enough), replicated until the users fit; GPUs compared by price."""

from __future__ import annotations

import math

from engine import pricing
from engine.catalog import Gpu
from engine.schema import Architecture, GpuRef, Request

from .core import Profile, gpu_choice, loads, profile, settings_for, users_served
from .profile import data
from .types import Arrangement


def valid_tp(arch: Architecture, engine: str, most: int) -> list[int]:
    """TP degrees the engine accepts: they divide the attention heads (and the KV heads, or are a multiple of them)."""
    out = []
    for tp in (1, 2, 4, 8, 16):
        if tp > most:
            break
        if arch.heads % tp:
            continue
        if arch.kv_heads % tp and tp % arch.kv_heads:
            continue
        if engine in ("llama.cpp", "ollama", "hf") and tp > 1:
            continue  # one process, layers split (not sharded) across GPUs: sized as one GPU here
        out.append(tp)
    return out


def instance_shapes(arch: Architecture, engine: str) -> list[tuple[int, int]]:
    per_node = int(data()["limits"]["gpus_per_node"])
    tps = valid_tp(arch, engine, per_node)
    shapes = [(tp, 1) for tp in tps]
    if tps and engine not in ("llama.cpp", "ollama", "hf"):
        shapes += [(tps[-1], pp) for pp in (2, 4, 8)]
    return shapes


def _price(name: str, currency: str) -> float | None:
    try:  # the catalog's cached range (read only); a user's own price is the answer layer's to apply
        return pricing.market_range(name, currency="RUB" if currency == "RUB" else "USD").typical
    except (LookupError, ValueError):
        return None


def arrange(request: Request, arch: Architecture, engine: str, fmt: str, kv_dtype: str, candidates: list[Gpu | GpuRef],
            users: int, context: int, max_model_len: int) -> list[Arrangement]:
    """The cheapest arrangement per GPU kind that serves `users` requests of `context` tokens, cheapest first."""
    currency = request.currency or "USD"
    most = int(data()["limits"]["max_gpus"])
    found: list[Arrangement] = []
    for cand in candidates:
        ref = cand if isinstance(cand, GpuRef) else GpuRef(name=cand.name, memory_gb=cand.memory_gb)
        best: Arrangement | None = None
        price = _price(ref.name or "", currency) if ref.name else None
        for tp, pp in instance_shapes(arch, engine):
            if best is not None and (pp > 1 or tp * pp >= best.count):
                break  # a wider instance cannot use fewer GPUs; PP across nodes only when no node-sized TP serves
            choice, _gpu = gpu_choice(ref.model_copy(update={"count": tp * pp}))
            s = settings_for(request, engine, fmt, kv_dtype, choice, tp, pp, max_model_len)
            p: Profile = profile(request, arch, s, choice, context, users)
            if not loads(p):
                continue
            each = users_served(p, s)
            if each < 1:
                continue
            replicas = math.ceil(users / each)
            count = tp * pp * replicas
            if count > most:
                continue
            option = Arrangement(gpu=choice.name, count=count, tensor_parallel=tp, pipeline_parallel=pp,
                                 replicas=replicas, users_per_instance=each, users=users, context=context,
                                 concurrency_at_context=p.kv.concurrency_at_context,
                                 kv_pool_gib=round(p.memory.kv_pool_gib, 2),
                                 per_hour=round(price * count, 2) if price is not None else None, currency=currency)
            key = (option.per_hour if option.per_hour is not None else math.inf, option.count)
            if best is None or key < (best.per_hour if best.per_hour is not None else math.inf, best.count):
                best = option
        if best is not None:
            found.append(best)
    found.sort(key=lambda a: (a.per_hour if a.per_hour is not None else math.inf, a.count))
    return found

"""Sizing for a traffic target and a latency promise: the cheapest arrangement (GPU, count, TP x replicas, weight
format, KV dtype) whose instances, each taking an even share of the traffic, keep TTFT p95 and TPOT within the
promise. Instances are sized by the memory model (engine.serving.core.profile) and put under load by
engine.serving.load; prices are the catalog's typical hourly ones."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine import pricing
from engine.catalog import Gpu
from engine.schema import Architecture, GpuRef, Request

from .capacity import valid_tp
from .core import gpu_choice, loads, profile, settings_for
from .load import point
from .loadplan import features_for, machine_for, meets, ttft_key, workload_for
from .profile import data, supports


@dataclass(frozen=True)
class Sized:
    gpu: str
    count: int
    tensor_parallel: int
    replicas: int
    weight_format: str
    kv_cache_dtype: str
    per_hour: float | None


def _price(name: str, currency: str) -> float | None:
    try:
        return pricing.market_range(name, currency="RUB" if currency == "RUB" else "USD").typical
    except (LookupError, ValueError):
        return None


def formats(request: Request, fmt: str, gpu: Gpu, engine: str) -> list[str]:
    """The format asked, or 16-bit and FP8 (on GPUs with FP8 tensor cores) when none was said."""
    if request.quantization or request.bits:
        return [fmt]
    out = [fmt]
    if gpu.fp8_tflops and supports(engine, "fp8") and fmt != "fp8":
        out.append("fp8")
    return out


def size(request: Request, arch: Architecture, engine: str, fmt: str, kv_dtype: str, gpus: list[Gpu],
         prompt: int, output: int, context: int, max_model_len: int) -> Sized | None:
    """The cheapest arrangement that meets the promise at the load (per hour; fewer GPUs on a tie), a CUDA one
    before a ROCm one when the GPUs were not named (the rule and its reasons: engine.plan.search.cuda_first; here
    also because the load model is optimistic on MI300X, docs/serving-load.md)."""
    if not (request.request_rate or request.concurrency):
        return None
    most = int(data()["limits"]["max_gpus"])
    currency = request.currency or "USD"
    f = features_for(request)
    best: Sized | None = None
    best_rank: tuple[bool, float, int] | None = None
    for gpu in gpus:
        price = _price(gpu.name, currency)
        for wf in formats(request, fmt, gpu, engine):
            for kv in ([kv_dtype] if request.kv_cache_dtype or kv_dtype != "auto" else ["auto", "fp8"]):
                for tp in valid_tp(arch, engine, 8):
                    choice, _ = gpu_choice(GpuRef(name=gpu.name, count=tp))
                    s = settings_for(request, engine, wf, kv, choice, tp, 1, max_model_len)
                    p = profile(request, arch, s, choice, context, 1)
                    if not loads(p):
                        continue
                    m = machine_for(request, arch, s, gpu, choice, p.memory, p.kv)
                    one = point(m, f, workload_for(request, prompt, output, 1))
                    if one.max_concurrency < 1 or one.capacity_rps <= 0:
                        continue
                    least = max(1, math.ceil((request.request_rate or 0.0) / one.capacity_rps),
                                math.ceil((request.concurrency or 0) / one.max_concurrency))
                    for replicas in range(least, min(most // tp, least + 12) + 1):
                        w = workload_for(request, prompt, output, replicas)
                        lp = point(m, f, w)
                        if lp.max_concurrency < 1:
                            break
                        if meets(lp, request.ttft_p95_ms, request.tpot_ms, ttft_key(request)) and (
                                w.concurrency is None or w.concurrency <= lp.max_concurrency):
                            cost = price * tp * replicas if price is not None else math.inf
                            cand = Sized(gpu.name, tp * replicas, tp, replicas, wf, kv,
                                         price * tp * replicas if price is not None else None)
                            rank = (gpu.rocm_arch is not None, cost, cand.count)
                            if best_rank is None or rank < best_rank:
                                best, best_rank = cand, rank
                            break
    return best

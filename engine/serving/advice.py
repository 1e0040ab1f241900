"""Changes that help, as message keys with parameters and the numbers each gives (re-running the same model)."""

from __future__ import annotations

from collections.abc import Callable

from engine.catalog import Gpu
from engine.schema import Architecture, Change, Request
from engine.schema.serving import GpuChoice, ServingArrangement, Settings

from .core import Profile, loads, profile, users_served
from .profile import supports

Run = Callable[..., tuple[Settings, Profile]]


def _effect(p: Profile, s: Settings, replicas: int) -> dict[str, float | int | bool]:
    return {"kv_pool_gib": round(p.memory.kv_pool_gib, 2), "kv_tokens": p.kv.tokens,
            "max_concurrency": p.kv.max_concurrency, "concurrency_at_context": p.kv.concurrency_at_context,
            "users_served": users_served(p, s) * replicas if loads(p) else 0, "loads": loads(p)}


def changes(request: Request, arch: Architecture, s: Settings, gpu: GpuChoice, catalog_gpu: Gpu | None,
            base: Profile, context: int, users: int | None, replicas: int,
            arrangements: list[ServingArrangement]) -> list[Change]:
    out: list[Change] = []
    paged = s.family not in ("llama.cpp", "ollama", "hf")
    asked = users or 1

    def run(**update: object) -> tuple[Settings, Profile]:
        s2 = s.model_copy(update=update)
        return s2, profile(request, arch, s2, gpu, min(context, s2.max_model_len), asked)

    fp8_ok = catalog_gpu is None or bool(catalog_gpu.fp8_tflops) or float(catalog_gpu.compute_capability or 0) >= 8.0
    if paged and s.weight_format in ("bf16", "fp16", "fp32") and supports(s.engine, "fp8") and fp8_ok:
        s2, p = run(weight_format="fp8")
        out.append(Change(key="serving.change.fp8_weights", params={"from": s.weight_format, "to": "fp8"},
                          effect={**_effect(p, s2, replicas), "weights_gib": round(p.memory.weights_gib, 2)}))
    if paged and s.kv_cache_dtype in ("auto", "bf16", "fp16"):
        s2, p = run(kv_cache_dtype="fp8")
        out.append(Change(key="serving.change.fp8_kv_cache", params={"from": s.kv_cache_dtype, "to": "fp8"},
                          effect=_effect(p, s2, replicas)))
    if s.family in ("llama.cpp", "ollama") and s.kv_cache_dtype == "f16":
        s2, p = run(kv_cache_dtype="q8_0")
        out.append(Change(key="serving.change.q8_kv_cache", params={"from": "f16", "to": "q8_0"},
                          effect=_effect(p, s2, replicas)))
    if not loads(base) and base.kv.max_model_len_that_fits > 0:
        fit = base.kv.max_model_len_that_fits
        s2, p = run(max_model_len=fit)
        out.append(Change(key="serving.change.shorter_max_model_len",
                          params={"from": s.max_model_len, "to": fit}, effect=_effect(p, s2, replicas)))
    elif paged and s.max_model_len > context:
        s2, p = run(max_model_len=context)
        out.append(Change(key="serving.change.max_model_len_to_context",
                          params={"from": s.max_model_len, "to": context}, effect=_effect(p, s2, replicas)))
    combo = _combination(run, s, paged, fp8_ok, context, out, asked, replicas)
    if combo is not None:
        out.append(combo)
    served = users_served(base, s) * replicas if loads(base) else 0
    if users and 0 < served < users:
        out.append(Change(key="serving.change.fewer_users", params={"from": users, "to": served},
                          effect={"users_served": served}))
    for a in arrangements[:3]:
        if a.gpu == gpu.name and a.count <= gpu.count:
            continue
        out.append(Change(key="serving.change.arrangement",
                          params={"gpu": a.gpu, "count": a.count, "tensor_parallel": a.tensor_parallel,
                                  "pipeline_parallel": a.pipeline_parallel, "replicas": a.replicas},
                          effect={"concurrency_at_context": a.concurrency_at_context, "kv_pool_gib": a.kv_pool_gib,
                                  "per_hour": a.per_hour, "currency": a.currency,
                                  "per_million_output_tokens": a.per_million_output_tokens,
                                  "per_user_tokens_s": a.per_user_tokens_s}))
    return out


def _combination(run: Run, s: Settings, paged: bool, fp8_ok: bool, context: int, singles: list[Change], asked: int,
                 replicas: int) -> Change | None:
    """When no single change serves the asked users on these GPUs: the best of them together (FP8 weights + FP8 KV,
    and max_model_len cut to the context when it is longer), with the numbers it gives."""
    if not paged or any(c.effect.get("loads", True) and c.effect.get("users_served", 0) >= asked for c in singles):
        return None
    update: dict[str, object] = {}
    steps: list[str] = []
    if s.weight_format in ("bf16", "fp16", "fp32") and supports(s.engine, "fp8") and fp8_ok:
        update["weight_format"] = "fp8"
        steps.append("fp8_weights")
    if s.kv_cache_dtype in ("auto", "bf16", "fp16"):
        update["kv_cache_dtype"] = "fp8"
        steps.append("fp8_kv_cache")
    if len(steps) < 2:
        return None
    s2, p = run(**update)
    if s.max_model_len > context and not loads(p):
        s2, p = run(**update, max_model_len=context)
        steps.append("max_model_len_to_context")
    served = users_served(p, s2) * replicas if loads(p) else 0
    best_single = max((int(c.effect.get("users_served", 0)) for c in singles), default=0)
    if served <= best_single:
        return None
    return Change(key="serving.change.combined", params={"changes": steps, "weight_format": s2.weight_format,
                                                         "kv_cache_dtype": s2.kv_cache_dtype,
                                                         "max_model_len": s2.max_model_len},
                  effect={**_effect(p, s2, replicas), "weights_gib": round(p.memory.weights_gib, 2)})

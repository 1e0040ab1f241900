"""Changes that help, as message keys with parameters and the numbers each gives (re-running the same model)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from engine.catalog import Gpu
from engine.catalog.checkpoints import checkpoint
from engine.schema import Architecture, Change, Request
from engine.schema.serving import GpuChoice, LoadPoint, ServingArrangement, ServingLoad, Settings

from . import disagg, dpattn
from .core import Profile, loads, profile, users_served
from .load import Features, Machine, speculation, sweep
from .loadplan import CURVE as SWEEP
from .loadplan import evaluate, features_for, machine_for, meets, ttft_key, workload_for
from .profile import data, runs_on, supports

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
    int4 = int4_change(request, arch, s, gpu, base, context, users, replicas, fp8_kv=fp8_ok)
    if int4 is not None:
        out.append(int4)
    smaller = smaller_gguf(s, base, asked, replicas, run)
    if smaller is not None:
        out.append(smaller)
    if not loads(base):  # a change that still does not load is no way forward: only those that do are listed
        out = [c for c in out if c.effect.get("loads", True)]
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


# llama.cpp's 3-bit K-quant: the smallest type every usual GGUF publisher ships beside Q4_K_M (bartowski, unsloth)
SMALLER_GGUF = "gguf:q3_k_m"


def smaller_gguf(s: Settings, base: Profile, asked: int, replicas: int, run: Run) -> Change | None:
    """llama.cpp / Ollama on a card (or a Mac) the 4-bit GGUF does not fit: the 3-bit K-quant, with the room it gives,
    when that loads; the quality cost is the user's call, the change says the type."""
    if s.family not in ("llama.cpp", "ollama") or not s.weight_format.lower().startswith("gguf:q4") \
            or (loads(base) and users_served(base, s) * replicas >= asked):
        return None
    s2, p = run(weight_format=SMALLER_GGUF)
    if not loads(p):
        return None
    return Change(key="serving.change.smaller_gguf", params={"from": s.weight_format, "to": SMALLER_GGUF},
                  effect={**_effect(p, s2, replicas), "weights_gib": round(p.memory.weights_gib, 2)})


def int4_change(request: Request, arch: Architecture, s: Settings, gpu: GpuChoice, base: Profile, context: int,
                users: int | None, replicas: int, fp8_kv: bool = True) -> Change | None:
    """When the model does not load or does not serve the asked users: 4-bit weights from a published AWQ (else GPTQ)
    checkpoint of the model whose kernels run on the GPU (AWQ needs Turing, GPTQ runs on Volta: profile.runs_on),
    with the KV cache in FP8 where it is 16-bit and the GPU has FP8 (`fp8_kv`: Ampere and later; a T4 keeps a 16-bit
    cache), and the room that gives."""
    paged = s.family not in ("llama.cpp", "ollama", "hf")
    asked = users or 1
    served = users_served(base, s) * replicas if loads(base) else 0
    if not paged or s.weight_format not in ("bf16", "fp16", "fp32", "fp8") or (loads(base) and served >= asked):
        return None
    found = next(((fmt, c) for fmt in ("awq", "gptq") if supports(s.engine, fmt)
                  and runs_on(s.engine, fmt, gpu.compute_capability)
                  and (c := checkpoint(arch.name, fmt)) is not None), None)
    if found is None:
        return None
    fmt, ck = found
    update: dict[str, object] = {"weight_format": fmt}
    if s.kv_cache_dtype in ("auto", "bf16", "fp16") and supports(s.engine, "fp8") and fp8_kv:
        update["kv_cache_dtype"] = "fp8"
    s2 = s.model_copy(update=update)
    p = profile(request, arch, s2, gpu, min(context, s2.max_model_len), asked)
    if not loads(p):
        return None
    return Change(key="serving.change.int4_weights",
                 params={"format": fmt, "checkpoint": ck.repo, "kv_cache_dtype": s2.kv_cache_dtype},
                 effect={**_effect(p, s2, replicas), "weights_gib": round(p.memory.weights_gib, 2)})


ASSUMED_PREFIX_HIT = 0.5  # share of each prompt a shared system prompt / few-shot block makes (assumed, said)
FULL = 0.8  # without a promise, replicas enough to keep arrivals under this share of capacity (queues stay short)
LOW_LOAD = 8  # requests running at once below which decoding is memory-bound enough for speculation to pay


def _figures(p: LoadPoint, replicas: int) -> dict[str, object]:
    return {"ttft_p95_ms": p.ttft_ms.get("p95"), "per_user_tokens_s": p.per_user_tokens_s, "stable": p.stable,
            "capacity_rps": round(p.capacity_rps * replicas, 4)}


def load_changes(request: Request, arch: Architecture, s: Settings, gpu: GpuChoice, catalog_gpu: Gpu | None,
                 base: Profile, load: ServingLoad | None, prompt: int, output: int, replicas: int) -> list[Change]:
    """Changes under load, each with its figures from the load model at the asked load: prefix caching when prompts
    share a prefix, speculative decoding at low load (and where it stops paying), disaggregated prefill/decode and
    data-parallel attention where the engine runs them and they help, more replicas when the promise is missed or
    the queue grows without bound."""
    if load is None or catalog_gpu is None or not loads(base) or s.family in ("llama.cpp", "ollama", "hf"):
        return []
    m = machine_for(request, arch, s, catalog_gpu, gpu, base.memory, base.kv)
    f = features_for(request)
    now = load.point
    r_now = 1 if load.disaggregation else replicas

    def at(instances: int = replicas, **update: object) -> tuple[LoadPoint, int]:
        q = request.model_copy(update=update)
        return evaluate(q, machine_for(q, arch, s, catalog_gpu, gpu, base.memory, base.kv), prompt, output, instances)

    def promise(p: LoadPoint) -> bool:
        return meets(p, request.ttft_p95_ms, request.tpot_ms, ttft_key(request))

    out: list[Change] = []
    if not request.prefix_cache_hit_rate and prompt >= 512:
        cached, r = at(prefix_cache_hit_rate=ASSUMED_PREFIX_HIT)
        out.append(Change(key="serving.change.prefix_caching", params={"hit_rate": ASSUMED_PREFIX_HIT},
                         effect={**_figures(cached, r), "before": _figures(now, r_now), "meets": promise(cached)}))
    if not f.speculative and now.stable and (now.running or 1) <= LOW_LOAD:
        spec = replace(f, speculative="eagle")
        k, alpha, _ = speculation(spec)
        fast, r = at(speculative="eagle")
        if fast.per_user_tokens_s and now.per_user_tokens_s and fast.per_user_tokens_s > now.per_user_tokens_s * 1.05:
            stops = None
            if not load.disaggregation:
                w = workload_for(request, prompt, output, replicas)
                plain = sweep(m, f, w, list(SWEEP))
                sped = sweep(m, spec, w, list(SWEEP))
                stops = next((a.concurrency for a, b in zip(plain, sped, strict=True)
                              if a.per_user_tokens_s and b.per_user_tokens_s
                              and b.per_user_tokens_s <= a.per_user_tokens_s * 1.05), None)
            out.append(Change(key="serving.change.speculative",
                             params={"method": "eagle", "k": k, "acceptance": alpha},
                             effect={**_figures(fast, r), "before": _figures(now, r_now),
                                     "speedup": round(fast.per_user_tokens_s / now.per_user_tokens_s, 2),
                                     "stops_paying_at": stops * replicas if stops else None}))
    out += _pd_change(request, m, f, now, r_now, prompt, output, replicas, promise)
    if not request.dp_attention and dpattn.applies(arch, s.engine, s.family, s.tensor_parallel):
        wide, r = at(dp_attention=True)
        if wide.stable and (wide.capacity_rps * r > now.capacity_rps * r_now * 1.1
                            or wide.max_concurrency > now.max_concurrency * 1.1):
            out.append(Change(key="serving.change.dp_attention", params={"dp": s.tensor_parallel, "engine": s.engine},
                             effect={**_figures(wide, r), "before": _figures(now, r_now), "meets": promise(wide),
                                     "max_concurrency": wide.max_concurrency * r,
                                     "max_concurrency_before": now.max_concurrency * r_now}))
    promised = request.ttft_p95_ms is not None or request.tpot_ms is not None
    if (not now.stable or (promised and load.meets is False)) and (request.request_rate or request.concurrency):
        per = s.tensor_parallel * s.pipeline_parallel
        most = int(data()["limits"]["max_gpus"]) // per
        need = math.ceil((request.request_rate or 0.0) / (now.capacity_rps * r_now / replicas)) \
            if now.capacity_rps > 0 else 0
        start = max(replicas + 1, need)
        for more in range(start, min(most, start + 12) + 1):
            lp, r = at(more)
            ok = promise(lp) if promised else lp.stable and (lp.utilisation or 0.0) <= FULL
            if ok:
                out.append(Change(key="serving.change.more_replicas",
                                 params={"replicas": more, "tensor_parallel": s.tensor_parallel,
                                         "pipeline_parallel": s.pipeline_parallel, "count": more * per,
                                         "gpu": gpu.name},
                                 effect={**_figures(lp, r), "before": _figures(now, r_now), "meets": True}))
                break
    return out


def _pd_change(request: Request, m: Machine, f: Features, now: LoadPoint, r_now: int, prompt: int, output: int,
               replicas: int, promise: Callable[[LoadPoint], bool]) -> list[Change]:
    """Prefill and decode on separate instances of these GPUs, when the engine runs it and it helps: the decode
    steps lose the prefill that shares them (TPOT), or the prompts stop waiting behind decode steps (TTFT)."""
    if request.disaggregated or replicas < 2 or not disagg.supported(m.engine, m.family):
        return []
    whole = workload_for(request, prompt, output, 1)
    split = disagg.best_split(m, f, whole, replicas, request.interconnect)
    if split is None:
        return []
    pd = disagg.pd_point(m, f, whole, split)
    if not pd.stable or not now.stable:
        return []
    faster = (pd.tpot_ms.get("p50", math.inf) < now.tpot_ms.get("p50", 0.0) * 0.9
              or pd.ttft_ms.get("p95", math.inf) < now.ttft_ms.get("p95", 0.0) * 0.9)
    if not faster and not (promise(pd) and not promise(now)):
        return []
    return [Change(key="serving.change.disaggregated",
                   params={"prefill": split.prefill, "decode": split.decode, "link": split.link, "engine": m.engine},
                   effect={**_figures(pd, 1), "before": _figures(now, r_now), "meets": promise(pd),
                           "tpot_ms": pd.tpot_ms.get("p50"), "tpot_ms_before": now.tpot_ms.get("p50"),
                           "transfer_ms": round(disagg.transfer_s(m, whole, split.link) * 1e3, 3)})]


def merged(base: list[Change], under_load: list[Change]) -> list[Change]:
    """The changes under load after the changes on these GPUs and before other arrangements (renting more)."""
    first = next((i for i, c in enumerate(base) if c.key == "serving.change.arrangement"), len(base))
    return base[:first] + under_load + base[first:]

"""Serving capacity: how a serving engine (vLLM V0/V1, SGLang, TGI, llama.cpp / Ollama, HF generate) shares the
GPUs, how many users it serves at the asked context, how fast, for how much, and the launch command.

API (pure, synchronous):
- `is_serving_request(request)`: method "inference" with a serving engine, or a concurrency.
- `serve(request) -> ServingResult`: the whole answer as data (errors and changes as message keys).
- `serving_block(result) -> dict`: CONTRACT.md v2 `serving` block (and the extra fields the views read).
"""

from __future__ import annotations

from typing import Any

from engine.catalog import architecture, find_gpu, find_model, gpus, reference_of
from engine.catalog.ids import name_format
from engine.schema import Architecture, Assumption, GpuRef, Note, Request
from engine.schema.serving import ServingArrangement, ServingResult

# The layer's modules (memory budget, KV cache, sizing, load plan, launch command) are imported by the functions
# that use them: `is_serving_request` is asked of every question, and a training one needs none of them.

__all__ = ["ServingResult", "is_serving_request", "serve", "serving_block"]

DEFAULT_CONTEXT = 4096  # tokens in + out when the question names no context (shown as an assumption)
DEFAULT_OUTPUT = 512


def is_serving_request(request: Request) -> bool:
    """A serving engine or a concurrency is named; or plain inference of a model that ships quantized (the HF
    `generate` model has no MXFP4-experts / block-FP8 weights: an engine serves it in its own format)."""
    if request.method == "inference" and native_format_of(request) is not None:
        return True
    if request.method == "inference" and (request.request_rate or request.ttft_p95_ms or request.tpot_ms
                                          or "users" in request.asks or "throughput" in request.asks):
        return True  # a load, a latency promise or "how many users": the serving engine's question (vLLM assumed)
    return (request.method == "inference" and request.serving_engine is not None) or request.concurrency is not None


def _context(request: Request, arch: Architecture, assumptions: list[Assumption]) -> tuple[int, int, int]:
    """(context, prompt, output): prompt + output when said, else seq_len / max_model_len, else the default."""
    from .core import DEFAULT_CONTEXT_UNKNOWN

    opts = request.engine_options
    if request.prompt_len or request.output_len:
        output = request.output_len or DEFAULT_OUTPUT
        if not request.output_len:
            assumptions.append(Assumption(key="output_len", value=output))
        prompt = request.prompt_len or max(1, (request.seq_len or DEFAULT_CONTEXT) - output)
        return prompt + output, prompt, output
    context = request.seq_len or (opts.max_model_len if opts else None)
    if context is None:
        context = DEFAULT_CONTEXT if arch.known else min(DEFAULT_CONTEXT, DEFAULT_CONTEXT_UNKNOWN)
        assumptions.append(Assumption(key="context", value=context))
    output = min(DEFAULT_OUTPUT, max(1, context // 4))
    return context, max(1, context - output), output


def _model_id(request: Request, arch: Architecture) -> str:
    name = request.model.name if request.model and request.model.name else arch.name
    if not (request.model and request.model.name) and not arch.known:
        name = reference_of(arch)  # a bare size ("70B") is no checkpoint: the model whose shape was assumed
    if "/" in name:
        return name
    entry = find_model(name)
    return entry.hf_id if entry else name


def _native_format(request: Request, engine: str) -> str | None:
    """The format the checkpoint ships in (models.toml native_format), when the request names none and the engine
    loads it: gpt-oss serves its MXFP4 experts, DeepSeek-V3 its block FP8, as their config.json says."""
    from .profile import supports

    if request.quantization or request.bits or request.model is None or engine in ("llama.cpp", "ollama"):
        return None
    entry = find_model(request.model.name)
    fmt = entry.native_format if entry else None
    return fmt if fmt and supports(engine, fmt) else None


def _named_format(request: Request, engine: str) -> str | None:
    """The format a repository id says ("…-AWQ", "…-GPTQ-Int4", "…-FP8-Dynamic", "…-bnb-4bit"), when the request
    names none: the engine reads it from the checkpoint's quantization_config, not from a flag."""
    from .profile import supports

    if request.quantization or request.bits or request.model is None:
        return None
    fmt = name_format(request.model.name)
    if fmt is None or (engine in ("llama.cpp", "ollama") and not fmt.startswith("gguf:")):
        return None
    return fmt if supports(engine, fmt) else None


def native_format_of(request: Request) -> str | None:
    """A plain inference question (no engine, no format) about a model that ships quantized: its native format."""
    if request.model is None or request.quantization or request.bits:
        return None
    entry = find_model(request.model.name)
    return entry.native_format if entry else None


def _candidates(engine: str) -> list[Any]:
    """The GPUs compared when none is named (serving.toml [limits]); Apple Silicon for llama.cpp / Ollama."""
    from .profile import data

    limits = data()["limits"]
    names = list(limits["candidate_gpus"])
    if engine in ("llama.cpp", "ollama"):
        names += limits["local_candidate_gpus"]
    return [g for g in gpus() if g.name in names]


def _fail(name: str, errors: list[Note], assumptions: list[Assumption]) -> ServingResult:
    return ServingResult(model=name, errors=errors, assumptions=assumptions)


def _too_many(request: Request, arch: Architecture, engine: str, fmt: str, kv_dtype: str, cands: list[Any],
              users: int, context: int, max_model_len: int) -> Note:
    """More users than the largest arrangement serves: say how many the best instance serves, at most."""
    from .capacity import arrange
    from .profile import data

    most = int(data()["limits"]["max_gpus"])
    one = arrange(request, arch, engine, fmt, kv_dtype, cands, 1, context, max_model_len)
    best = 0
    for a in one:
        gpus_each = a.tensor_parallel * a.pipeline_parallel
        best = max(best, a.users_per_instance * (most // gpus_each))
    return Note(key="serving.error.users_too_many",
                params={"users": users, "max_users": best, "max_gpus": most, "context": context})


def serve(request: Request, sized: bool = False) -> ServingResult:
    """`sized`: the request is the arrangement the sizing picked (no second search)."""
    from .advice import changes, load_changes, merged
    from .capacity import arrange, valid_tp
    from .command import command
    from .core import catalog_gpu, gpu_choice, loads, profile, settings_for, users_served
    from .loadplan import feature_flags, load_answer, machine_for
    from .profile import data, supports, weight_format
    from .sizing import size
    from .speed import cost, instance_speed

    assumptions: list[Assumption] = []
    engine = request.serving_engine or "vllm"
    if request.serving_engine is None:
        assumptions.append(Assumption(key="serving_engine", value="vllm"))
    elif engine in ("tensorrt-llm", "nim"):
        # sized with vLLM V1's budget rules (no TRT-LLM profile yet)
        assumptions.append(Assumption(key="memory_model", value="vllm-v1"))
    name = request.model.name if request.model and request.model.name else "?"
    try:
        if request.model is None:
            raise ValueError("no model")
        arch = architecture(request.model)
    except ValueError:
        return _fail(name, [Note(key="serving.error.unknown_model", params={"model": name})], assumptions)
    name = arch.name
    if not arch.known:
        assumptions.append(Assumption(key="architecture", value=reference_of(arch)))
    native = _native_format(request, engine) or _named_format(request, engine)
    fmt = native or weight_format(request.quantization, request.bits, engine)
    if fmt is None:
        return _fail(name, [Note(key="serving.error.unknown_format", params={"quantization": request.quantization})],
                     assumptions)
    if native:
        assumptions.append(Assumption(key="native_format", value=fmt))
    elif not request.quantization or (fmt.startswith("gguf:") and fmt.split(":", 1)[1] not in request.quantization
                                      .lower().replace("gguf:", "")):
        # none said, or "q4" read as its usual mix (Q4_K_M)
        assumptions.append(Assumption(key="weight_format", value=fmt))
    if not supports(engine, fmt):
        engines = [e for e in data()["support"] if e != "source" and supports(e, fmt)]
        return _fail(name, [Note(key="serving.error.format_not_supported",
                                 params={"engine": engine, "format": fmt, "engines": engines})], assumptions)
    local = engine in ("llama.cpp", "ollama")
    kv_dtype: str = request.kv_cache_dtype or ("f16" if local else "auto")
    if local and kv_dtype in ("int8", "fp8"):
        kv_dtype = "q8_0"
    elif local and kv_dtype == "int4":
        kv_dtype = "q4_0"
    context, prompt, output = _context(request, arch, assumptions)
    limit = arch.max_position_embeddings if arch.known else None
    opts = request.engine_options
    max_model_len = (opts.max_model_len if opts and opts.max_model_len else None) or context
    said_context = bool(request.seq_len or request.prompt_len or request.output_len)
    if opts is not None and not opts.max_model_len and not said_context and limit:
        # an engine configuration without max_model_len: vLLM / SGLang take the model's own limit
        max_model_len = limit
    if not (opts and opts.max_model_len):
        assumptions.append(Assumption(key="max_model_len", value=max_model_len))
    warnings: list[Note] = []
    if limit and max(context, max_model_len) > limit:
        beyond = {"context": max(context, max_model_len), "limit": limit, "model": name}
        if not (opts and opts.max_model_len and opts.max_model_len >= context):
            return _fail(name, [Note(key="serving.error.context_beyond_model", params=beyond)], assumptions)
        # a power user set max_model_len past the model's limit (RoPE scaling, VLLM_ALLOW_LONG_MAX_MODEL_LEN)
        warnings.append(Note(key="serving.warning.beyond_model_context", params=beyond))
    users = request.concurrency or (request.batch_size if request.method == "inference" else None)
    pp = request.pipeline_parallel or 1
    ref: GpuRef | None = request.gpus[0] if request.gpus else None
    if request.tensor_parallel is not None and request.tensor_parallel not in valid_tp(arch, engine, 1 << 20) \
            and (arch.heads % request.tensor_parallel or
                 (arch.kv_heads % request.tensor_parallel and request.tensor_parallel % arch.kv_heads)):
        return _fail(name, [Note(key="serving.error.tp_not_divisor",
                                 params={"tensor_parallel": request.tensor_parallel, "heads": arch.heads,
                                         "kv_heads": arch.kv_heads,
                                         "valid": valid_tp(arch, engine, max(8, request.tensor_parallel))})],
                     assumptions)
    arrangements: list[ServingArrangement] = []
    if ref is None:
        cands = _candidates(engine)
        arrangements = arrange(request, arch, engine, fmt, kv_dtype, list(cands), users or 1, context, max_model_len,
                               prompt, output)
        if not arrangements:
            if (users or 1) <= 1:
                return _fail(name, [Note(key="serving.error.no_arrangement", params={"context": context})],
                             assumptions)
            return _fail(name, [_too_many(request, arch, engine, fmt, kv_dtype, list(cands), users or 1, context,
                                          max_model_len)], assumptions)
        best = arrangements[0]
        ref = GpuRef(name=best.gpu, count=best.count)
        tp, pp = best.tensor_parallel, best.pipeline_parallel
        assumptions.append(Assumption(key="gpu", value=best.gpu))
    else:
        if request.tensor_parallel is not None:
            tp = request.tensor_parallel
        else:
            fits_in = max(1, ref.count // pp)
            tp = max([t for t in valid_tp(arch, engine, fits_in)] or [1])
            if engine not in ("llama.cpp", "ollama", "hf"):  # those split layers, never tensors
                assumptions.append(Assumption(key="tensor_parallel", value=tp))
    if tp * pp > ref.count:
        ref = ref.model_copy(update={"count": tp * pp})
        assumptions.append(Assumption(key="gpu_count", value=tp * pp))
    choice, cat = gpu_choice(ref)
    if cat is None and choice.name:
        cat = catalog_gpu(choice.name) or find_gpu(choice.name)
    split = engine in ("llama.cpp", "ollama", "hf")
    # llama.cpp / Ollama / HF generate: one process with the layers split over every GPU (no replicas)
    replicas = 1 if split else max(1, choice.count // (tp * pp))
    s = settings_for(request, engine, fmt, kv_dtype, choice, tp, pp, max_model_len, assumptions)
    if fmt == "fp8" and cat is not None and not cat.fp8_tflops and cat.compute_capability:
        # no FP8 tensor cores (Ampere): vLLM runs FP8 checkpoints weight-only, W8A16 through FP8 Marlin
        # (vLLM docs/features/quantization/fp8.md): the memory of FP8, the compute of bf16
        assumptions.append(Assumption(key="fp8_compute", value="weight-only"))
    p = profile(request, arch, s, choice, context, users or 1)
    if p.gpu_layers is not None:
        s = s.model_copy(update={"gpu_layers": p.gpu_layers})
    served = users_served(p, s) * replicas if loads(p) else 0
    errors: list[Note] = warnings
    if ((users and served < users) or not loads(p)) and request.gpus:
        arrangements = arrange(request, arch, engine, fmt, kv_dtype, [ref.model_copy(update={"count": 1})],
                               users or 1, context, max_model_len, prompt, output)
        if not arrangements:
            others = _candidates(engine)
            arrangements = arrange(request, arch, engine, fmt, kv_dtype, list(others), users or 1, context,
                                   max_model_len, prompt, output)
        if not arrangements and users and users > 1:
            errors.append(_too_many(request, arch, engine, fmt, kv_dtype, [ref.model_copy(update={"count": 1})],
                                    users, context, max_model_len))
    speed = None
    price = None
    if cat is not None and loads(p):
        per_instance = max(1, min(users or 1, served or 1) // replicas) if users else 1
        if users is None and "throughput" in request.asks:
            per_instance = max(1, served // replicas)  # "how many tokens/s": at the load the GPUs hold
        speed = instance_speed(arch, s, cat, choice, p.memory, per_instance, prompt, output)
        price = cost(cat.name, choice.count, speed.total_tokens_s * replicas, request.currency or "USD")
    fits = loads(p) and (users is None or served >= users)
    load = None
    if cat is not None and loads(p) and s.family not in ("hf",):
        load = load_answer(request, machine_for(request, arch, s, cat, choice, p.memory, p.kv), prompt, output,
                           replicas, price.per_hour if price else None, request.currency or "USD")
    if not sized and not loads(p) and "throughput" in request.asks and not (request.quantization or request.bits) \
            and not local and supports(engine, "awq"):
        # "how many tokens/s will a 70B give on an H100": 16-bit does not load there, 4-bit AWQ weights do
        again = serve(request.model_copy(update={"quantization": "awq", "bits": 4}), sized=True)
        if again.memory is not None and again.speed is not None:
            again.assumptions.append(Assumption(key="weight_format",
                                                value="awq (16-bit does not load on the GPUs asked)"))
            return again
    promise = request.ttft_p95_ms or request.tpot_ms
    target = promise or (request.request_rate and not request.gpus)  # a named setup past capacity says so
    if not sized and target and (request.request_rate or request.concurrency) and not local \
            and (load is None or not load.point.stable or load.meets is False):
        kinds = [cat] if request.gpus and cat is not None else _candidates(engine)
        pick = size(request, arch, engine, fmt, kv_dtype, kinds, prompt, output, context, max_model_len)
        if pick is not None:
            update: dict[str, Any] = {"gpus": [GpuRef(name=pick.gpu, count=pick.count)],
                                      "tensor_parallel": pick.tensor_parallel}
            if pick.weight_format != fmt:
                update["quantization"] = pick.weight_format
            if pick.kv_cache_dtype != kv_dtype and pick.kv_cache_dtype == "fp8":
                update["kv_cache_dtype"] = "fp8"
            again = serve(request.model_copy(update=update), sized=True)
            asked = f"{ref.count}x{ref.name}" if request.gpus and ref is not None else "none"
            again.assumptions.append(Assumption(key="sized_for_load",
                                                value=f"{pick.count}x{pick.gpu} (asked: {asked})"))
            return again
    return ServingResult(
        model=name, model_known=arch.known, params_b=round(arch.params / 1e9, 4), layers=arch.layers,
        settings=s, gpu=choice,
        memory=p.memory, kv=p.kv, speed=speed, cost=price, users=users, context=context, prompt_len=prompt,
        output_len=output, replicas=replicas, fits=fits,
        arrangement=arrangements[0] if arrangements else None, alternatives=arrangements[1:4],
        changes=merged(changes(request, arch, s, choice, cat, p, context, users, replicas, arrangements),
                       load_changes(request, arch, s, choice, cat, p, load, prompt, output, replicas)),
        errors=errors, assumptions=assumptions,
        command=command(_model_id(request, arch), s, users, prompt, native=native is not None, layers=arch.layers,
                        bf16=cat.bf16 if cat is not None else True)
        + (feature_flags(request, engine) if engine in ("vllm", "sglang") else []),
        load=load,
    )


def arrangement_json(a: ServingArrangement) -> dict[str, Any]:
    """An arrangement as the contract has it: the GPUs by name and count (one card's memory is `total_gib`)."""
    return a.model_dump(exclude={"memory_gb"})


def serving_block(r: ServingResult) -> dict[str, Any]:
    """CONTRACT.md v2 `serving`: per GPU where it applies (rank 0 with PP; kv_tokens engine-wide)."""
    from .loadplan import load_block

    errors = [{**e.model_dump(), "effect": {}} for e in r.errors]  # the contract's message shape: key, params, effect
    if r.settings is None or r.memory is None or r.kv is None or r.gpu is None:
        return {"error": errors[0]["key"] if errors else "serving.error", "errors": errors,
                "assumptions": [str(x) for x in r.assumptions]}
    m, k, s = r.memory, r.kv, r.settings
    return {
        "tensor_parallel": s.tensor_parallel, "pipeline_parallel": s.pipeline_parallel,
        "weights_gib": round(m.weights_gib, 2), "activation_peak_gib": round(m.activation_peak_gib, 2),
        "non_torch_gib": round(m.non_torch_gib, 2), "cuda_graph_gib": round(m.cuda_graph_gib, 2),
        "kv_pool_gib": round(m.kv_pool_gib, 2), "kv_bytes_per_token": int(k.bytes_per_token),
        "kv_tokens": k.tokens, "max_concurrency": k.max_concurrency,
        "max_model_len_that_fits": k.max_model_len_that_fits,
        "decode_tokens_per_s": ({"per_user": r.speed.per_user_tokens_s, "total": r.speed.total_tokens_s}
                                if r.speed else None),
        "ttft_s": r.speed.ttft_s if r.speed else None,
        # beyond the contract's minimum: what the views need
        "engine": s.engine, "engine_family": s.family, "engine_version": s.version, "weight_format": s.weight_format,
        "kv_cache_dtype": s.kv_cache_dtype, "gpu": r.gpu.name, "gpu_total_gib": r.gpu.total_gib,
        "gpu_count": r.gpu.count, "replicas": r.replicas, "gpu_memory_utilization": s.gpu_memory_utilization,
        "max_model_len": s.max_model_len, "max_num_seqs": s.max_num_seqs,
        "max_num_batched_tokens": s.max_num_batched_tokens, "gpu_layers": s.gpu_layers,
        "budget_gib": round(m.budget_gib, 2), "cuda_graphs_in_budget": m.cuda_graphs_in_budget,
        "host_ram_gib": round(m.host_ram_gib, 2), "kv_blocks": k.blocks, "kv_groups": k.groups,
        "users": r.users, "context": r.context, "concurrency_at_context": k.concurrency_at_context, "fits": r.fits,
        "cost": r.cost.model_dump() if r.cost else None,
        "arrangement": arrangement_json(r.arrangement) if r.arrangement else None,
        "alternatives": [arrangement_json(a) for a in r.alternatives],
        "changes": [c.model_dump(include={"key", "params", "effect"}) for c in r.changes], "errors": errors,
        "assumptions": [str(x) for x in r.assumptions],
        "command": r.command,
        "load": load_block(r.load),  # CONTRACT v2.1
    }

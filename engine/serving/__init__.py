"""Serving capacity: how a serving engine (vLLM V0/V1, SGLang, TGI, llama.cpp / Ollama, HF generate) shares the
GPUs, how many users it serves at the asked context, how fast, for how much, and the launch command.

API (pure, synchronous):
- `is_serving_request(request)`: method "inference" with a serving engine, or a concurrency.
- `serve(request) -> ServingResult`: the whole answer as data (errors and changes as message keys).
- `serving_block(result) -> dict`: CONTRACT.md v2 `serving` block (and the extra fields the views read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.catalog import find_gpu, find_model, gpus, reference_of
from engine.catalog.checkpoints import checkpoint
from engine.schema import Architecture, Assumption, GpuRef, Note, Request
from engine.schema.serving import AskedSetup, Change, ServingArrangement, ServingResult, Settings

if TYPE_CHECKING:
    from engine.catalog import Gpu
    from engine.schema.serving import GpuChoice

    from .asked import Asked
    from .core import Profile

# The layer's modules (memory budget, KV cache, sizing, load plan, launch command) are imported by the functions
# that use them: `is_serving_request` is asked of every question, and a training one needs none of them.

__all__ = ["ServingResult", "is_serving_request", "runnable", "serve", "serving_block"]

def is_serving_request(request: Request) -> bool:
    """A serving engine or a concurrency is named; or plain inference of a model that ships quantized (the HF
    `generate` model has no MXFP4-experts / block-FP8 weights: an engine serves it in its own format)."""
    from .asked import native_format_of

    if request.method == "inference" and native_format_of(request) is not None:
        return True
    if request.method == "inference" and request.quantization in ("awq", "gptq", "fp8") \
            and request.serving_engine is None:
        return True  # AWQ / GPTQ / FP8 checkpoints are served by an engine's kernels (vLLM assumed), not HF generate
    exl2 = (request.quantization or "").startswith("exl2:")  # ExLlamaV2 splits it over the GPUs; no engine here
    if request.method == "inference" and request.serving_engine is None and any(g.count > 1 for g in request.gpus) \
            and not exl2:
        return True  # a model run across several GPUs is served by an engine's tensor parallelism (vLLM assumed)
    engine_asks = ("users", "throughput", "latency", "adapters", "rate")
    if request.method == "inference" and (request.request_rate or request.ttft_p95_ms or request.tpot_ms
                                          or any(a in request.asks for a in engine_asks)
                                          or request.max_loras or request.speculative or request.disaggregated
                                          or request.dp_attention
                                          or request.tensor_parallel or request.pipeline_parallel
                                          or request.engine_options):
        return True  # a load, a promise, "how many users", LoRA adapters served, disaggregated pools, DP attention,
        # TP / PP (replicas), an engine's own flag ("--gpu-memory-utilization 0.85"): an engine question (vLLM assumed)
    return (request.method == "inference" and request.serving_engine is not None) or request.concurrency is not None


def _model_id(request: Request, arch: Architecture) -> str:
    name = request.model.name if request.model and request.model.name else arch.name
    if not (request.model and request.model.name) and not arch.known:
        name = reference_of(arch)  # a bare size ("70B") is no checkpoint: the model whose shape was assumed
        ref = find_model(name)
        asked = request.model.params_b if request.model else None
        if asked and (ref is None or abs(ref.params_b - asked) > 0.15 * asked):
            # "123B" shaped like Llama-3.1-70B is not that checkpoint: a placeholder the reply asks to replace
            return f"your-org/model-{asked:g}B"
    if "/" in name:
        return name
    entry = find_model(name)
    return entry.served_id if entry else name  # the chat model: what a deployment answers users with


def _candidates(engine: str) -> list[Any]:
    """The GPUs compared when none is named (serving.toml [limits]); Apple Silicon for llama.cpp / Ollama."""
    from .profile import data


    limits = data()["limits"]
    names = list(limits["candidate_gpus"])
    if engine in ("llama.cpp", "ollama"):
        names += limits["local_candidate_gpus"]
    return [g for g in gpus() if g.name in names]


@dataclass(frozen=True)
class Placed:
    """Where the question is served: the GPUs, the parallel degrees, and the arrangements searched for it."""

    ref: GpuRef
    tp: int
    pp: int
    arrangements: list[ServingArrangement]


def serve(request: Request, sized: bool = False) -> ServingResult:
    """`sized`: the request is the arrangement the sizing picked (no second search)."""
    from .asked import read_asked

    assumptions: list[Assumption] = []
    asked = read_asked(request, assumptions)
    if isinstance(asked, ServingResult):
        return asked
    placed = _place(asked, assumptions)
    if isinstance(placed, ServingResult):
        return placed
    if "adapters" in request.asks and request.max_loras is None:
        if asked.engine == "vllm":
            return _with_adapter_slots(asked, placed, assumptions)
        # SGLang's --max-loras-per-batch pool and llama.cpp's --lora are not modelled: said, not guessed
        assumptions.append(Assumption(key="lora_adapter_slots", value=f"modelled for vLLM only, not {asked.engine}"))
    return _served(asked, placed, assumptions, sized)


def _with_adapter_slots(asked: Asked, placed: Placed, assumptions: list[Assumption]) -> ServingResult:
    """"How many LoRA adapters can it serve": the slots that fit in the KV pool beside the requests asked (one when
    none was said), then the answer with that many slots preallocated (`--max-loras`), as the command runs it."""
    from dataclasses import replace

    from .core import loads
    from .lora import slot_bytes, slots_beside

    request = asked.request
    rank = request.max_lora_rank or 16
    if request.max_lora_rank is None:
        assumptions.append(Assumption(key="max_lora_rank", value=rank))
    if not request.concurrency:
        assumptions.append(Assumption(key="concurrency", value="1"))
    _, _, replicas, _, p = _profiled(asked, placed, list(assumptions))  # the pool without adapters, served once
    if not loads(p) or p.memory.kv_pool_gib <= 0:
        return _served(asked, placed, assumptions, sized=True)
    per_slot = slot_bytes(asked.arch, rank, placed.tp)
    requests = -(-(request.concurrency or 1) // max(1, replicas))
    slots = slots_beside(p.memory.kv_pool_gib * 2**30, requests * asked.context * p.kv.bytes_per_token, per_slot)
    if slots < 1:
        base = _served(asked, placed, assumptions, sized=True)
        base.adapter_slots, base.adapter_slot_mib, base.adapter_rank = 0, round(per_slot / 2**20, 1), rank
        return base
    again = replace(asked, request=request.model_copy(update={"max_loras": slots, "max_lora_rank": rank}))
    result = _served(again, placed, assumptions, sized=True)
    result.adapter_slots, result.adapter_slot_mib, result.adapter_rank = slots, round(per_slot / 2**20, 1), rank
    return result


def _place(asked: Asked, assumptions: list[Assumption]) -> Placed | ServingResult:
    """The GPUs named (their tensor-parallel degree the largest that fits), else the best arrangement of the
    catalog's candidates; a failed result when none serves the question."""
    from .asked import failed
    from .capacity import valid_tp

    request, arch, engine = asked.request, asked.arch, asked.engine
    pp = request.pipeline_parallel or 1
    ref: GpuRef | None = request.gpus[0] if request.gpus else None
    arrangements: list[ServingArrangement] = []
    if ref is None:
        cands = _candidates(engine)
        arrangements = asked.arrange(list(cands))
        if not arrangements:
            if (asked.users or 1) <= 1:
                return failed(arch.name, [Note(key="serving.error.no_arrangement",
                                                params={"context": asked.context})], assumptions)
            return failed(arch.name, [asked.too_many(list(cands), asked.users or 1)], assumptions)
        best = arrangements[0]
        ref = GpuRef(name=best.gpu, count=best.count)
        tp, pp = best.tensor_parallel, best.pipeline_parallel
        assumptions.append(Assumption(key="gpu", value=best.gpu))
    elif request.tensor_parallel is not None:
        tp = request.tensor_parallel
    else:
        fits_in = max(1, ref.count // pp)
        tp = _pd_tp(asked, ref, pp) or max([t for t in valid_tp(arch, engine, fits_in)] or [1])
        if engine not in ("llama.cpp", "ollama", "hf"):  # those split layers, never tensors
            assumptions.append(Assumption(key="tensor_parallel", value=tp))
    if tp * pp > ref.count:
        ref = ref.model_copy(update={"count": tp * pp})
        assumptions.append(Assumption(key="gpu_count", value=tp * pp))
    return Placed(ref, tp, pp, arrangements)


PD_WEIGHT_SHARE = 0.6  # most of a card the weights may take for a disaggregated instance (the rest: KV, activations)


def _pd_tp(asked: Asked, ref: GpuRef, pp: int) -> int | None:
    """Disaggregated serving on GPUs named without a TP degree: the largest TP that leaves two instances (a prefill
    and a decode one) with the rank's weights in at most 60 % of the card (room left for the decode side's KV
    cache); None when none does (the usual largest TP, one instance)."""
    from .capacity import valid_tp
    from .weights import rank_weights

    if not asked.request.disaggregated or ref.count // pp < 2 or asked.local:
        return None
    gpu = find_gpu(ref.name) if ref.name else None
    memory = ref.memory_gb or (gpu.memory_gb if gpu is not None else None)
    if not memory:
        return None
    fits = [t for t in valid_tp(asked.arch, asked.engine, ref.count // pp // 2)
            if rank_weights(asked.arch, asked.fmt, t, pp, asked.engine).first <= PD_WEIGHT_SHARE * memory * 1e9]
    return max(fits) if fits else None


def _profiled(asked: Asked, placed: Placed, assumptions: list[Assumption]) -> tuple[
        GpuChoice, Gpu | None, int, Settings, Profile]:
    """The placed GPUs (and their catalog entry), the replicas they make, the engine's settings on them, and how
    one GPU's memory is shared (core.profile)."""
    from .core import catalog_gpu, gpu_choice, profile, settings_for

    request, engine, fmt = asked.request, asked.engine, asked.fmt
    tp, pp = placed.tp, placed.pp
    choice, cat = gpu_choice(placed.ref)
    if cat is None and choice.name:
        cat = catalog_gpu(choice.name) or find_gpu(choice.name)
    split = engine in ("llama.cpp", "ollama", "hf")
    # llama.cpp / Ollama / HF generate: one process with the layers split over every GPU (no replicas)
    replicas = 1 if split else max(1, choice.count // (tp * pp))
    s = settings_for(request, engine, fmt, asked.kv_dtype, choice, tp, pp, asked.max_model_len, assumptions)
    if fmt == "fp8" and cat is not None and not cat.fp8_tflops and cat.compute_capability:
        # no FP8 tensor cores (Ampere): vLLM runs FP8 checkpoints weight-only, W8A16 through FP8 Marlin
        # (vLLM docs/features/quantization/fp8.md): the memory of FP8, the compute of bf16
        assumptions.append(Assumption(key="fp8_compute", value="weight-only"))
    p = profile(request, asked.arch, s, choice, asked.context, asked.users or 1)
    if p.gpu_layers is not None:
        s = s.model_copy(update={"gpu_layers": p.gpu_layers})
    return choice, cat, replicas, s, p


def _served(asked: Asked, placed: Placed, assumptions: list[Assumption], sized: bool) -> ServingResult:
    """The answer on the placed GPUs: memory, users served, speed, cost, load, changes and the launch command; or
    the answer of the arrangement that does what was asked (4-bit weights that load, GPUs sized for the load)."""
    from .advice import changes, load_changes, merged
    from .budget import unused_gib
    from .command import command
    from .core import loads, users_served
    from .loadplan import feature_flags, load_answer, machine_for, with_load_features
    from .speed import cost, instance_speed

    request, arch, engine, users = asked.request, asked.arch, asked.engine, asked.users
    ref = placed.ref
    choice, cat, replicas, s, p = _profiled(asked, placed, assumptions)
    served = users_served(p, s) * replicas if loads(p) else 0
    errors: list[Note] = asked.warnings
    arrangements = placed.arrangements
    if ((users and served < users) or not loads(p)) and request.gpus:
        arrangements = asked.arrange([ref.model_copy(update={"count": 1})])
        if not arrangements:
            arrangements = asked.arrange(list(_candidates(engine)))
        if not arrangements and users and users > 1:
            errors.append(asked.too_many([ref.model_copy(update={"count": 1})], users))
    speed = None
    price = None
    if cat is not None and loads(p):
        per_instance = max(1, min(users or 1, served or 1) // replicas) if users else 1
        if users is None and "throughput" in request.asks:
            per_instance = max(1, served // replicas)  # "how many tokens/s": at the load the GPUs hold
        speed = instance_speed(arch, s, cat, choice, p.memory, per_instance, asked.prompt, asked.output)
        price = cost(cat.name, choice.count, speed.total_tokens_s * replicas, request.currency or "USD")
    load = None
    if cat is not None and loads(p) and s.family not in ("hf",):
        load = load_answer(request, machine_for(request, arch, s, cat, choice, p.memory, p.kv), asked.prompt,
                           asked.output, replicas, price.per_hour if price else None, request.currency or "USD")
    if not sized:
        again = _served_instead(asked, ref, cat, loads(p), load)
        if again is not None:
            if request.gpus and load is not None and again.load is not None:  # the named GPUs first in the reply
                again.instead_of = AskedSetup(gpu=choice, settings=s, replicas=replicas, load=load,
                                              headroom_gib=unused_gib(choice.total_gib, p.memory))
            return again
    found = merged(changes(request, arch, s, choice, cat, p, asked.context, users, replicas, arrangements),
                   load_changes(request, arch, s, choice, cat, p, load, asked.prompt, asked.output, replicas))
    if not sized and not loads(p):
        local = _local_instead(asked, found)
        if local is not None:
            return local
    run_as, command_for = runnable(s, found, arch.name) if not loads(p) else (s, None)
    attention_dp = load.attention_dp if load is not None else 1
    return ServingResult(
        model=arch.name, model_known=arch.known, params_b=round(arch.params / 1e9, 4), layers=arch.layers,
        settings=s, gpu=choice,
        memory=p.memory, kv=p.kv, speed=speed, cost=price, users=users, context=asked.context,
        prompt_len=asked.prompt, output_len=asked.output, replicas=replicas,
        fits=loads(p) and (users is None or served >= users),
        arrangement=arrangements[0] if arrangements else None, alternatives=arrangements[1:4],
        changes=found, errors=errors, assumptions=assumptions,
        command=with_load_features(command(_model_id(request, arch), run_as, users, asked.prompt,
                        native=asked.native is not None and command_for is None,
                        layers=arch.layers, bf16=cat.bf16 if cat is not None else True, replicas=replicas,
                        attention_dp=attention_dp)
        + (feature_flags(request, engine, attention_dp) if engine in ("vllm", "sglang") else []), load, engine),
        command_for=command_for,
        load=load,
    )


# what a change sets: (weight format, KV cache dtype); None keeps the asked one
RUNNABLE = {"serving.change.fp8_kv_cache": (None, "fp8"), "serving.change.combined": ("fp8", "fp8"),
            "serving.change.int4_weights": ("int4", None), "serving.change.fp8_weights": ("fp8", None),
            "serving.change.q8_kv_cache": (None, "q8_0"), "serving.change.smaller_gguf": ("to", None)}


def runnable(s: Settings, found: list[Change], model: str) -> tuple[Settings, str | None]:
    """Settings that do not start on the asked GPUs are no command to paste: the command runs the first KV-cache or
    weight change (in the order the answer lists them) that starts there, named beside it; when none does, the
    first arrangement of more GPUs the answer lists (its TP x PP). Online FP8
    (--quantization fp8) loads the 16-bit weights first, so FP8 weights only from a published FP8 checkpoint."""
    for c in found:
        if c.key not in RUNNABLE or not c.effect.get("loads"):
            continue
        fmt, kv = RUNNABLE[c.key]
        if fmt == "int4":
            fmt, kv = str(c.params.get("format")), c.params.get("kv_cache_dtype")
        elif fmt == "to":  # the GGUF type the change names
            fmt = str(c.params.get("to"))
        if fmt == "fp8" and checkpoint(model, "fp8") is None:
            continue
        return s.model_copy(update={"weight_format": fmt or s.weight_format,
                                    "kv_cache_dtype": str(kv or s.kv_cache_dtype)}), c.key
    more = next((c for c in found if c.key == "serving.change.arrangement"), None)
    if more is not None:  # nothing starts on the GPUs asked: the command is the arrangement's that does, said so
        return s.model_copy(update={"tensor_parallel": int(more.params["tensor_parallel"]),
                                    "pipeline_parallel": int(more.params["pipeline_parallel"])}), more.key
    return s, None


LOCAL_USERS = 4  # requests at once up to which a one-card setup is a personal one, where llama.cpp is the usual engine


def _local_instead(asked: Asked, found: list[Change]) -> ServingResult | None:
    """No engine named, the assumed vLLM does not load on the GPUs and no change of format or KV cache makes it
    (gpt-oss-20b on a 16 GB card: MXFP4 experts, bf16 attention and embeddings): llama.cpp with the model's GGUF,
    the way such cards run it, when that fits; said as the engine assumed instead."""
    request = asked.request
    if request.serving_engine is not None or asked.local or (asked.users or 1) > LOCAL_USERS \
            or request.request_rate or request.ttft_p95_ms or request.tpot_ms \
            or any(c.effect.get("loads") for c in found if c.key != "serving.change.arrangement"):
        return None
    local = serve(request.model_copy(update={"serving_engine": "llama.cpp"}), sized=True)
    on_cpu = local.settings is not None and local.settings.gpu_layers is not None \
        and local.layers is not None and local.settings.gpu_layers < local.layers
    if local.memory is None or not local.fits or on_cpu:
        return None  # layers left on the CPU are no way to run it on these GPUs (the token embeddings stay there)
    local.assumptions.append(Assumption(key="serving_engine_instead", value="llama.cpp"))
    return local


def _served_instead(asked: Asked, ref: GpuRef, cat: Any, loaded: bool, load: Any) -> ServingResult | None:
    """The answer of another arrangement when the one placed does not do what was asked: 4-bit AWQ weights for a
    throughput question whose 16-bit weights do not load, the GPUs sized for a request rate or latency promise
    the placed ones miss; None when the placed one stands."""
    from .profile import supports

    request, fmt = asked.request, asked.fmt
    if not loaded and "throughput" in request.asks and not (request.quantization or request.bits) \
            and not asked.local and supports(asked.engine, "awq"):
        # "how many tokens/s will a 70B give on an H100": 16-bit does not load there, 4-bit AWQ weights do
        again = serve(request.model_copy(update={"quantization": "awq", "bits": 4}), sized=True)
        if again.memory is not None and again.speed is not None:
            again.assumptions.append(Assumption(key="weight_format_instead", value="awq"))
            return again
    promise = request.ttft_p95_ms or request.tpot_ms
    target = promise or (request.request_rate and not request.gpus)  # a named setup past capacity says so
    if target and (request.request_rate or request.concurrency) and not asked.local \
            and (load is None or not load.point.stable or load.meets is False):
        kinds = [cat] if request.gpus and cat is not None else _candidates(asked.engine)
        pick = asked.size(kinds)
        if pick is not None:
            update: dict[str, Any] = {"gpus": [GpuRef(name=pick.gpu, count=pick.count)],
                                      "tensor_parallel": pick.tensor_parallel}
            if pick.weight_format != fmt:
                update["quantization"] = pick.weight_format
            if pick.kv_cache_dtype != asked.kv_dtype and pick.kv_cache_dtype == "fp8":
                update["kv_cache_dtype"] = "fp8"
            again = serve(request.model_copy(update=update), sized=True)
            named = f"{ref.count}x{ref.name}" if request.gpus and ref is not None else "none"
            again.assumptions.append(Assumption(key="sized_for_load",
                                                value=f"{pick.count}x{pick.gpu} (asked: {named})"))
            return again
    return None


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

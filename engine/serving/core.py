"""One configuration (model, engine, format, GPU, TP x PP, engine settings) -> its memory and KV capacity."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from engine.catalog import Gpu, find_gpu, gpus, usable_memory_gib
from engine.schema import Architecture, Assumption, GpuRef, Request
from engine.schema.serving import GpuChoice, KvCapacity, RankMemory, Settings

from .budget import GIB, paged_budget
from .engines import sglang_bucket, sglang_default_fraction, sglang_heuristic, sglang_vlm_factor, tgi_defaults
from .kv import capacity, plain_bytes_per_token
from .local import hf_generate, llama_cpp
from .profile import batch_defaults, data, family
from .weights import rank_weights

APPLE = re.compile(r"\b(apple|mac ?(book|studio|mini|pro)?|m[1-5]( ?(pro|max|ultra))?)\b", re.IGNORECASE)
DEFAULT_CONTEXT_UNKNOWN = 8192  # a bare size has no stated context limit: the assumption shown


@dataclass(frozen=True)
class Profile:
    memory: RankMemory
    kv: KvCapacity
    gpu_layers: int | None = None


def gpu_choice(ref: GpuRef | None, fallback: Gpu | None = None) -> tuple[GpuChoice, Gpu | None]:
    """The GPU as the driver reports it: the request's total_gib, else the catalog's driver_gib."""
    gpu = find_gpu(ref.name, ref.memory_gb) if ref is not None else fallback
    if ref is not None and gpu is None and not ref.memory_gb and not ref.total_gib:
        gpu = None
    count = ref.count if ref is not None else 1
    if gpu is not None:
        total = ref.total_gib if ref is not None and ref.total_gib else gpu.driver_gib
        if gpu.vendor.lower() == "apple" and ref is not None and ref.memory_gb and not ref.total_gib:
            total = usable_memory_gib(gpu, ref.memory_gb)  # "M3 Max 36GB": the GPU's share of that machine's RAM
        nvlink = not gpu.interconnect.lower().startswith("none") and "bridge" not in gpu.interconnect.lower()
        unified = gpu.vendor.lower() == "apple"
        cc = float(gpu.compute_capability) if gpu.compute_capability else None
        return GpuChoice(name=gpu.name, known=True, total_gib=total, count=count, nvlink=nvlink,
                         unified_memory=unified, compute_capability=cc, rocm=gpu.rocm_arch is not None), gpu
    fraction = 0.986
    size = ref.memory_gb if ref is not None else None
    if ref is not None and ref.name and APPLE.search(ref.name):
        # unified memory: the GPU shares the machine's RAM (llama.cpp's Metal working-set limit applies)
        total = ref.total_gib or (size or 16.0) * 1e9 / 2**30 * float(
            data()["llama_cpp"]["apple_gpu_share"])  # the GPU's share of unified memory (Metal working set)
        return GpuChoice(name=ref.name, known=False, total_gib=total, count=count, nvlink=False,
                         unified_memory=True), None
    total = (ref.total_gib if ref is not None and ref.total_gib else (size or 80.0) * fraction)
    name = (ref.name if ref is not None and ref.name else f"{round(size or total / fraction):g} GB GPU")
    return GpuChoice(name=name, known=False, total_gib=total, count=count, nvlink=False), None


def catalog_gpu(name: str) -> Gpu | None:
    return next((g for g in gpus() if g.name == name), None)


def settings_for(request: Request, engine: str, fmt: str, kv_dtype: str, gpu: GpuChoice, tp: int, pp: int,
                 max_model_len: int, assumptions: list[Assumption] | None = None) -> Settings:
    opts = request.engine_options
    version = opts.engine_version if opts else None
    fam = family(engine, version, gpu.compute_capability, opts.vllm_use_v1 if opts else None)
    paged = fam not in ("llama.cpp", "ollama", "hf")
    note = assumptions.append if assumptions is not None and paged else (lambda _x: None)
    mnbt_default, seqs_default = batch_defaults(fam, gpu.total_gib, gpu.name, max_model_len,
                                               version if engine == "vllm" else None)
    said_mnbt = opts.max_num_batched_tokens if opts and opts.max_num_batched_tokens else None
    if fam == "sglang":
        if sglang_heuristic(version):
            mnbt_default = sglang_bucket(gpu.total_gib, tp)[0]
        util_default = sglang_default_fraction(version, gpu.total_gib, tp, pp, said_mnbt or mnbt_default)
        block = int(data()["sglang"]["page_size"])
    elif fam == "tgi":
        mnbt_default = tgi_defaults(version)[2]
        util_default = float(data()["tgi"]["cuda_memory_fraction"])
        block = int(data()["tgi"]["block_size"])
    else:
        util_default = float(data()["vllm"]["gpu_memory_utilization"])
        block = int(data()["vllm"]["block_size"])
    util = opts.gpu_memory_utilization if opts and opts.gpu_memory_utilization else None
    if util is None:
        util = util_default
        note(Assumption(key="gpu_memory_utilization", value=f"{util:g}"))
    mnbt = opts.max_num_batched_tokens if opts and opts.max_num_batched_tokens else None
    if mnbt is None:
        mnbt = mnbt_default
        note(Assumption(key="max_num_batched_tokens", value=mnbt))
    seqs = opts.max_num_seqs if opts and opts.max_num_seqs else None
    if fam in ("llama.cpp", "ollama"):
        seqs = seqs or request.concurrency or int(data()["llama_cpp"]["default_parallel"])
    elif fam == "hf":
        seqs = seqs or request.concurrency or request.batch_size or 1
    if seqs is None:
        seqs = seqs_default
        note(Assumption(key="max_num_seqs", value=seqs))
    return Settings(engine=engine, family=fam, version=version, weight_format=fmt, kv_cache_dtype=kv_dtype,
                    gpu_memory_utilization=util, max_model_len=max_model_len, max_num_seqs=seqs,
                    max_num_batched_tokens=mnbt, block_size=block, tensor_parallel=tp, pipeline_parallel=pp)


def kv_element_bytes(kv_dtype: str, fmt: str) -> float:
    if kv_dtype in ("auto", "bf16", "fp16"):
        return 4.0 if fmt == "fp32" else 2.0
    return float(data()["kv"]["bytes"].get(kv_dtype, 2.0))


def profile(request: Request, arch: Architecture, s: Settings, gpu: GpuChoice, context: int, users: int) -> Profile:
    if s.family in ("llama.cpp", "ollama"):
        memory, kv, layers = llama_cpp(arch, s, gpu, context)
        return Profile(memory, kv, layers)
    if s.family == "hf":
        memory, kv = hf_generate(request, arch, s, max(1, users), context, gpus=max(1, gpu.count))
        return Profile(memory, kv)
    w = rank_weights(arch, s.weight_format, s.tensor_parallel, s.pipeline_parallel, s.engine)
    if request.max_loras and s.family in ("vllm-v0", "vllm-v1"):
        # the adapter slots are allocated with the model, before the KV cache is profiled (engine/serving/lora.py)
        from .lora import slot_bytes

        one_slot = slot_bytes(arch, request.max_lora_rank or 16, s.tensor_parallel) / s.pipeline_parallel
        slots = request.max_loras * one_slot  # each stage holds its layers' slots
        w = replace(w, first=w.first + slots, last=w.last + slots)
    if s.family == "sglang":  # a vision tower lowers mem_fraction_static (serving.toml [sglang.multimodal])
        said = bool(request.engine_options and request.engine_options.gpu_memory_utilization)
        factor = sglang_vlm_factor(arch, s.version, said)
        if factor != 1.0:
            s = s.model_copy(update={"gpu_memory_utilization": round(s.gpu_memory_utilization * factor, 4)})
    element = kv_element_bytes(s.kv_cache_dtype, s.weight_format)
    b = paged_budget(arch, s, gpu, w, plain_bytes_per_token(arch, s.tensor_parallel, arch.layers, element),
                     eager=bool(request.enforce_eager))
    caps = [capacity(arch, s.family, pool, s.tensor_parallel, n, element, s.block_size, s.max_model_len,
                     s.max_num_batched_tokens, context) for pool, n in zip(b.pools, b.layers, strict=True)]
    # every stage holds the same blocks: the engine takes the smallest count (rank 0's pool is what it logs)
    kv = min(caps, key=lambda c: c.blocks)
    if len(caps) > 1:
        kv = kv.model_copy(update={"bytes_per_token": caps[0].bytes_per_token})
    memory = b.memory
    if request.max_loras and s.family in ("vllm-v0", "vllm-v1"):
        memory = memory.model_copy(update={"adapter_slots": request.max_loras, "adapter_slot_gib": one_slot / GIB})
    return Profile(memory, kv)


def loads(p: Profile) -> bool:
    """The engine starts: weights fit and the pool holds one request of max_model_len (vLLM's start-up check)."""
    return p.memory.kv_pool_gib > 0 and p.kv.max_concurrency >= 1.0


def users_served(p: Profile, s: Settings) -> int:
    """Requests of the asked context the instance runs at once (KV room, capped by max_num_seqs)."""
    return int(min(math.floor(p.kv.concurrency_at_context + 1e-9), s.max_num_seqs))


def gib(x: float) -> float:
    return round(x / GIB, 3)

"""The load model of continuous batching: what an instance (one TP x PP copy of the model) delivers at a concurrency
or a request rate, and how long a request waits for its first token and between tokens.

A step decodes one token for every running request and carries prefill chunks (chunked prefill: at most
`max_num_batched_tokens` tokens a step, vllm/v1/core/sched/scheduler.py `token_budget`). Its time is the roofline of
what it reads (the rank's weights once, MoE: the experts the batch touches, 1-(1-k/E)^B of them; every request's KV
cache) against what it computes (2 x active params per token + attention), plus two all-reduces a layer under TP
and the engine's CPU time a step. Prefill is FLOPs at the engine's utilisation of dense peak (FP8 peak for FP8
weights on GPUs with FP8 tensor cores; FP4 on Blackwell). In steady state the instance runs B requests: a request
takes O decode steps of s(B) and its prefill t_p is spread over the steps of the others, so the request rate is
lambda = B / (s(B) O + B t_p) and the mean time per output token s / (1 - lambda t_p). B is bounded by the KV pool
(requests of prompt + half the output on average) and max_num_seqs; past that requests queue. Waits for the first
token follow Kingman's approximation (Poisson arrivals, deterministic prefill), said as an assumption. Pure functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal

from engine.catalog import HERE, Gpu
from engine.datafiles import read
from engine.schema import Architecture
from engine.schema.serving import LoadPoint
from engine.speed.hardware import intra_node_gbs, network_gbs, node_network_gbs, pcie_gbs

from .profile import data as serving_data
from .speed import kernel_floor_s
from .weights import decode_read_bytes, experts_only

Link = Literal["nvlink", "pcie", "infiniband"]
Z95 = 1.645


@cache
def data() -> dict[str, Any]:
    return read(HERE / "serving_load.toml")


def engine_figures(engine: str) -> dict[str, Any]:
    """The engine's step figures (serving_load.toml [engines]); an engine without its own takes vLLM's."""
    engines = data()["engines"]
    return dict(engines.get(engine) or engines["vllm"])


@dataclass(frozen=True)
class Workload:
    prompt: int  # tokens in
    output: int  # tokens out
    concurrency: int | None = None  # requests in flight (a closed loop, as benchmark clients run)
    request_rate: float | None = None  # requests per second arriving (an open Poisson stream)
    prefix_hit: float = 0.0  # share of prompt tokens found in the prefix cache


@dataclass(frozen=True)
class Features:
    speculative: str | None = None  # eagle | mtp | draft | ngram
    acceptance: float | None = None  # per proposed token; None: the method's default (assumed)
    spec_tokens: int | None = None
    max_loras: int = 0
    max_lora_rank: int = 0
    expert_parallel: bool = False
    enforce_eager: bool = False


@dataclass(frozen=True)
class Machine:
    """One instance: the model on tp x pp GPUs of one kind, with what the memory model found room for."""

    arch: Architecture
    engine: str
    gpu: Gpu
    tp: int
    pp: int
    weight_bits: int
    weight_format: str
    weight_bytes: float  # what a decode step reads on one rank (all experts; the embedding table excluded)
    kv_bytes_per_token: float  # one rank
    kv_tokens: int  # the instance's KV pool in tokens
    max_num_seqs: int
    max_num_batched_tokens: int
    link: Link = "nvlink"
    # A prefill runs as a step of its own, the running decodes waiting (SGLang's default scheduler; vLLM V0 without
    # chunked prefill) instead of riding in a decode step as a chunk (vLLM V1, V0 chunked, TensorRT-LLM)
    prefill_alone: bool = False
    scheduler_steps: int = 1  # vLLM V0 multi-step: decode steps between two calls of the scheduler
    adapter_slots: int = 0  # --max-loras slots on the rank; a step reads those of its batch's adapters only
    adapter_slot_bytes: float = 0.0
    # data-parallel attention: each of this many ranks runs attention for its own requests only, their KV whole on it
    # (kv_bytes_per_token is then a whole token's, read for the rank's own share of the batch)
    attention_dp: int = 1
    family: str = ""  # the engine as set (vllm-v0 for vLLM before V1)
    graphs: bool = True  # decode steps replay CUDA graphs (False: every kernel launched from Python, as eager)


# ---- one step ----------------------------------------------------------------------------------------------------
def peak_flops(m: Machine) -> float:
    g = m.gpu
    if m.weight_format == "nvfp4" and g.fp8_tflops and float(g.compute_capability or 0) >= 10.0:
        return g.fp8_tflops * 2e12  # Blackwell FP4 tensor cores: twice FP8
    if m.weight_bits == 8 and m.weight_format == "fp8" and g.fp8_tflops:
        return g.fp8_tflops * 1e12  # W8A8 FP8 GEMMs
    return g.bf16_tflops * 1e12  # W4A16 / W8A16 kernels dequantise to 16-bit compute


def bandwidth(m: Machine, dense: bool = False) -> float:
    """Bytes/s a decode step reads weights at; `dense`: the non-expert part, 16-bit where the format quantizes
    only the experts (MXFP4)."""
    eff = serving_data()["speed"]["bandwidth_efficiency"]
    bits = "16" if dense and experts_only(m.weight_format) else str(m.weight_bits)
    return m.gpu.bandwidth_tbs * 1e12 * float(eff.get(bits, eff["16"]))


def link_gbs(m: Machine) -> float:
    if m.link == "infiniband":
        return min(network_gbs(m.gpu, max(m.tp, 16)), node_network_gbs(m.gpu) / max(1, min(m.tp, 8)))
    if m.link == "pcie":
        return pcie_gbs(m.gpu)
    return intra_node_gbs(m.gpu)


def comm_time(m: Machine, f: Features, tokens: int, chunks: int = 1) -> float:
    """Two all-reduces of the hidden state a layer (the MoE layers' all-to-all under EP), for `tokens` tokens."""
    a = m.arch
    if m.tp <= 1 and not f.expert_parallel:
        return 0.0
    c = data()["comm"]
    latency = float(c["latency_us"][m.link]) * 1e-6
    layers = a.layers // m.pp
    n = max(m.tp, 2)
    message = tokens * a.hidden * float(c["activation_bytes"])
    link = link_gbs(m) * 1e9
    per_layer = 2 * (latency * chunks + 2 * (n - 1) / n * ramped(message / max(1, chunks), c) * chunks / link)
    if f.expert_parallel and a.experts:
        sent = message * a.experts_per_token
        per_layer += 2 * (latency * chunks + (n - 1) / n * ramped(sent / max(1, chunks), c) * chunks / link)
    return layers * per_layer


def ramped(message: float, c: dict[str, Any]) -> float:
    """The bytes a collective of `message` bytes costs at the link's peak bus bandwidth: below the size where NCCL's
    bus bandwidth saturates it runs at about half of it (serving_load.toml [comm] ramp_mib: nccl-tests all_reduce_perf
    on 8 GPUs, 66 GB/s at 1 MiB, 181 at 8, 242 at 16, 300 at 32 MiB against ~370-480 at 256 MiB and more), so a
    message pays its own size again up to ramp_mib: m + min(m, ramp)."""
    ramp = float(c.get("ramp_mib", 0.0)) * 2**20
    return message + min(message, ramp)


def attention_flops(a: Architecture, tokens: int, context: float) -> float:
    return 4.0 * a.layers * tokens * context * a.heads * a.head_dim


def decode_step(m: Machine, f: Features, batch: int, context: float, tokens_per_seq: int = 1) -> float:
    """Seconds for one step of `batch` requests at `context` tokens each, `tokens_per_seq` scored per request (a
    speculative verify step scores k + 1)."""
    a, e = m.arch, engine_figures(m.engine)
    b = max(1, batch)
    stage_b = max(1, math.ceil(b / m.pp))  # PP: pp micro-batches in flight, one per stage
    dense, routed = decode_read_bytes(a, m.weight_format, m.weight_bytes, m.tp, m.pp, b)  # MoE: routed experts only
    dense += min(b, m.adapter_slots) * m.adapter_slot_bytes  # one adapter per request at most (engine/serving/lora.py)
    kv = math.ceil(stage_b / max(1, m.attention_dp)) * context * m.kv_bytes_per_token
    memory = dense / bandwidth(m, dense=True) + (routed + kv) / bandwidth(m)
    tokens = stage_b * tokens_per_seq
    flops = tokens * (2.0 * a.active_params / m.pp + attention_flops(a, 1, context) / m.pp) / m.tp
    compute = flops / (peak_flops(m) * float(e["decode_mfu"]))
    overhead = float(e["step_overhead_ms"]) * 1e-3
    if f.enforce_eager or not m.graphs:
        overhead += eager_s(m)
    stage = max(memory, compute) + comm_time(m, f, tokens) + kernel_floor_s(a, m.pp)
    if f.max_loras:
        stage *= 1.0 + float(data()["lora"]["step_slowdown"])
    return stage * m.pp + overhead


def eager_s(m: Machine) -> float:
    """What launching a decode step's kernels from Python costs without CUDA graphs: the engine's per-layer figure,
    or, for an MLA + MoE layer (DeepSeek-V3/R1), serving_load.toml [eager] mla_moe_us_per_layer (several times the
    kernels of a dense layer)."""
    a = m.arch
    per_layer = float(engine_figures(m.engine)["eager_us_per_layer"])
    if a.experts and a.kv_lora_rank and per_layer > 0:
        per_layer = float(data()["eager"]["mla_moe_us_per_layer"])
    return per_layer * 1e-6 * a.layers / m.pp


def prefill_mfu(m: Machine) -> float:
    e = engine_figures(m.engine)
    return float(e.get("prefill_mfu", serving_data()["speed"]["prefill_utilisation"]))


def prefill_time(m: Machine, f: Features, w: Workload) -> float:
    """The GPU time of one request's uncached prompt tokens (compute, their all-reduces); cached tokens are read."""
    a = m.arch
    new = max(1, round(w.prompt * (1.0 - w.prefix_hit)))
    cached = w.prompt - new
    attn = 4.0 * a.layers * a.heads * a.head_dim * (new * cached + new * new / 2.0)
    flops = (2.0 * a.active_params * new + attn) / m.tp  # a prompt passes every PP stage in turn
    chunks = max(1, math.ceil(new / m.max_num_batched_tokens))
    t = flops / (peak_flops(m) * prefill_mfu(m)) + comm_time(m, f, new, chunks)
    if f.max_loras:
        t *= 1.0 + float(data()["lora"]["step_slowdown"])
    return t


# ---- speculative decoding ----------------------------------------------------------------------------------------
def speculation(f: Features) -> tuple[int, float, float]:
    """(k proposed tokens, acceptance, proposal cost per token against a decode step); k = 0 without it."""
    if not f.speculative:
        return 0, 0.0, 0.0
    s = data()["speculative"]
    method = f.speculative if f.speculative in s["acceptance"] else "draft"
    k = f.spec_tokens or int(s["tokens"][method])
    alpha = f.acceptance if f.acceptance is not None else float(s["acceptance"][method])
    return k, min(max(alpha, 0.0), 0.99), float(s["draft_cost"][method])


def token_step(m: Machine, f: Features, batch: int, context: float) -> float:
    """Seconds per output token of one request at `batch` (a decode step, or a speculative round per the tokens
    it yields: a verify step scores k + 1 tokens a request, which is free while memory-bound and not at high load)."""
    k, alpha, cost = speculation(f)
    if k == 0:
        return decode_step(m, f, batch, context)
    plain = decode_step(m, f, batch, context)
    verify = decode_step(m, f, batch, context, tokens_per_seq=k + 1)
    yielded = (1.0 - alpha ** (k + 1)) / (1.0 - alpha)
    return (verify + k * cost * plain) / yielded


# ---- the instance under load -------------------------------------------------------------------------------------
def kv_room(m: Machine, f: Features, w: Workload) -> tuple[int, str]:
    """Requests the instance runs at once and what binds it: the KV pool (each request holds its uncached prompt
    and half its output on average; cached prefix blocks are shared; TensorRT-LLM reserves the whole output,
    serving_load.toml kv_reserved_to_completion) or max_num_seqs (LoRA slots are out of the pool already: the memory
    model counts them with the weights, engine/serving/core.py)."""
    tokens = m.kv_tokens
    output = w.output if engine_figures(m.engine).get("kv_reserved_to_completion") else w.output / 2.0
    held = w.prompt * (1.0 - w.prefix_hit) + output + 1
    by_kv = int(tokens // held)
    if by_kv < m.max_num_seqs:
        return max(0, by_kv), "kv_cache"
    return m.max_num_seqs, "max_num_seqs"


def rate_at(m: Machine, f: Features, w: Workload, batch: int) -> tuple[float, float, float]:
    """(requests/s, decode step s, prefill t_p) with `batch` requests running."""
    ctx = w.prompt + w.output / 2.0
    s = token_step(m, f, batch, ctx)
    tp = prefill_time(m, f, w)
    return batch / (s * w.output + batch * tp), s, tp


def kingman_mean(rho: float, service: float) -> float:
    """Mean wait in queue, W = rho/(1-rho) (ca2+cs2)/2 S."""
    if rho <= 0:
        return 0.0
    qd = data()["queue"]
    rho = min(rho, 0.999)
    return rho / (1.0 - rho) * (float(qd["arrival_cv2"]) + float(qd["service_cv2"])) / 2.0 * service


def kingman(rho: float, service: float, q: float) -> float:
    """Wait in queue at quantile q (q = 0.5 median, ...): mean W (kingman_mean), tail P(wait > t) = rho e^(-t rho/W)."""
    if rho <= 0:
        return 0.0
    rho = min(rho, 0.999)
    mean = kingman_mean(rho, service)
    if 1.0 - q >= rho:
        return 0.0
    return mean / rho * math.log(rho / (1.0 - q))


def point(m: Machine, f: Features, w: Workload) -> LoadPoint:
    """The instance at the workload's concurrency (closed loop) or request rate (open loop)."""
    e = engine_figures(m.engine)
    cap, cap_limit = kv_room(m, f, w)
    if cap < 1:
        return LoadPoint(stable=False, binding_limit="kv_cache", capacity_rps=0.0, max_concurrency=0)
    cap_rate, cap_s, _ = rate_at(m, f, w, cap)
    floor = float(e["ttft_floor_ms"]) * 1e-3
    queued = 0.0  # requests waiting for a slot (closed loop past the cap)
    if w.request_rate is not None:
        lam = w.request_rate
        if lam >= cap_rate:
            return LoadPoint(stable=False, binding_limit="overloaded", request_rate=lam, capacity_rps=cap_rate,
                             max_concurrency=cap, output_tokens_s=cap_rate * w.output,
                             total_tokens_s=cap_rate * (w.prompt + w.output), utilisation=lam / cap_rate)
        lo, hi = 0.0, float(cap)  # the running batch that carries lam (rate_at grows with the batch)
        for _ in range(24):
            mid = (lo + hi) / 2
            if rate_at(m, f, w, max(1, round(mid)))[0] * (mid / max(1, round(mid))) < lam:
                lo = mid
            else:
                hi = mid
        batch = max(1, math.ceil(hi))
        _, s, tp = rate_at(m, f, w, batch)
        rho_total = lam / cap_rate
    else:
        c = w.concurrency or 1
        batch = min(c, cap)
        lam, s, tp = rate_at(m, f, w, batch)
        queued = max(0, c - cap)
        rho_total = batch / cap if queued == 0 else 1.0
    # a chunk rides in a decode step: one forward over the decodes and the chunk reads the weights once, so the
    # prompt takes the longer of its compute and its chunks' steps (vllm/v1/core/sched/scheduler.py token_budget)
    service = tp if m.prefill_alone else max(tp, _chunks(m, w, batch) * s)
    busy = min(0.95, lam * tp)  # share of the GPU's time the prefills take
    tpot = s / (1.0 - busy)
    base = floor + _step_residual(m, w, batch, s) + service  # the running step (group) ends, then the prompt
    slot_wait = queued / lam if queued and lam > 0 else 0.0
    rho = max(lam * service, rho_total if w.request_rate is not None else 0.0)
    ttft = {q: base + slot_wait + kingman(rho, service, q) for q in (0.5, 0.95, 0.99)}
    ttft_mean = base + slot_wait + kingman_mean(rho, service)
    lifetime = w.output * tpot
    arrivals = lam * lifetime  # prefills interleaved into one request's decode
    tpot95 = (s * w.output + tp * (arrivals + Z95 * math.sqrt(max(arrivals, 0.0)))) / w.output
    if queued:
        limit = cap_limit
    elif w.request_rate is not None and rho_total >= float(data()["queue"]["edge"]):
        limit = "near_capacity"
    else:
        limit = "compute" if busy > 0.5 else "memory_bandwidth" if _memory_bound(m, f, batch, w) else "compute"
    return LoadPoint(
        stable=True, binding_limit=limit, request_rate=round(lam, 4), concurrency=batch + queued,
        running=batch, output_tokens_s=round(lam * w.output, 1), total_tokens_s=round(lam * (w.prompt + w.output), 1),
        per_user_tokens_s=round(1.0 / tpot, 2), ttft_ms={"p50": _ms(ttft[0.5]), "p95": _ms(ttft[0.95]),
                                                         "p99": _ms(ttft[0.99])}, ttft_mean_ms=_ms(ttft_mean),
        tpot_ms={"p50": _ms(tpot), "p95": _ms(max(tpot, tpot95))}, e2e_ms=_ms(ttft[0.5] + (w.output - 1) * tpot),
        capacity_rps=round(cap_rate, 4), max_concurrency=cap, utilisation=round(min(rho_total, 1.0), 3),
        step_ms=_ms(s), prefill_ms=_ms(tp), saturation_tpot_ms=_ms(cap_s))


def _chunks(m: Machine, w: Workload, batch: int) -> int:
    """Steps a prompt's chunks ride in (chunked prefill: the token budget less the running requests' decode tokens)."""
    return max(1, math.ceil(w.prompt * (1.0 - w.prefix_hit) / max(1, m.max_num_batched_tokens - batch)))


def _step_residual(m: Machine, w: Workload, batch: int, s: float) -> float:
    """What an arriving prompt waits for the engine's running work to end: half a step on average, half a group of
    `scheduler_steps` steps under vLLM V0 multi-step (vllm-project/vllm vllm/engine/async_llm_engine.py @9700a6aa
    step_async: the scheduler is skipped while the group has steps left, "only called again when the current batch
    has completed"). Only when others are decoding: the share of arrivals that find the engine busy is taken as
    1 - e^(-others), the others being Poisson around the running count (closed loop: the other users in flight)."""
    others = batch - 1 if w.request_rate is None else batch
    return (1.0 - math.exp(-max(0, others))) * max(1, m.scheduler_steps) * s / 2.0


def _memory_bound(m: Machine, f: Features, batch: int, w: Workload) -> bool:
    heavy = replace(m, weight_bytes=0.0, kv_bytes_per_token=0.0)
    ctx = w.prompt + w.output / 2.0
    return decode_step(heavy, f, batch, ctx) < decode_step(m, f, batch, ctx)


def _ms(x: float) -> float:
    return round(x * 1e3, 2)


def sweep(m: Machine, f: Features, w: Workload, levels: list[int]) -> list[LoadPoint]:
    """The instance at each concurrency of `levels` (for the latency/throughput chart)."""
    return [point(m, f, replace(w, concurrency=c, request_rate=None)) for c in levels]

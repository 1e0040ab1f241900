"""The load answer of a serving request: the instance the memory model sized (engine.serving.core) put under the
request's load (engine.serving.load), spread over its replicas, against the promise (TTFT p95, TPOT), with what
it costs per 1M tokens at that load and how many users the arrangement holds within the promise."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from engine.catalog import Gpu
from engine.schema import Architecture, Assumption, Request
from engine.schema.serving import Disaggregation, GpuChoice, KvCapacity, LoadPoint, RankMemory, ServingLoad, Settings
from engine.speed.hardware import gpus_per_node

from . import disagg, dpattn
from .hosted import hosted_range
from .load import Features, Machine, Workload, data, engine_figures, kv_room, point, speculation
from .lora import idle_slot_bytes
from .profile import v0_chunked_prefill
from .speed import format_bits
from .weights import rank_weights

CURVE = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def features_for(request: Request) -> Features:
    return Features(speculative=request.speculative, acceptance=request.spec_acceptance,
                    max_loras=request.max_loras or 0,
                    max_lora_rank=(request.max_lora_rank or (16 if request.max_loras else 0)),
                    expert_parallel=bool(request.expert_parallel), enforce_eager=bool(request.enforce_eager))


def machine_for(request: Request, arch: Architecture, s: Settings, gpu: Gpu, choice: GpuChoice, memory: RankMemory,
                kv: KvCapacity) -> Machine:
    """The instance as the memory model found it: the rank's weights a step reads, its KV pool, the engine's caps."""
    w = rank_weights(arch, s.weight_format, s.tensor_parallel, s.pipeline_parallel, s.engine)
    read = memory.weights_gib * 2**30 - (w.embedding if s.family not in ("llama.cpp", "ollama") else 0.0)
    e = engine_figures(s.engine)
    opts = request.engine_options
    seqs = s.max_num_seqs
    mnbt = s.max_num_batched_tokens
    if "max_num_seqs" in e and not (opts and opts.max_num_seqs):
        seqs = int(e["max_num_seqs"])  # TensorRT-LLM / NIM: their own scheduler caps
    if "max_num_batched_tokens" in e and not (opts and opts.max_num_batched_tokens):
        mnbt = int(e["max_num_batched_tokens"])
    link = request.interconnect or ("infiniband" if s.tensor_parallel > gpus_per_node()
                                    else "nvlink" if choice.nvlink else "pcie")
    alone, steps = prefill_scheduling(s, opts.num_scheduler_steps if opts else None)
    m = Machine(arch=arch, engine=s.engine, gpu=gpu, tp=s.tensor_parallel, pp=s.pipeline_parallel,
                weight_bits=format_bits(s.weight_format), weight_format=s.weight_format,
                weight_bytes=max(0.0, read - idle_slot_bytes(memory, 0)),  # the slots: per batch (load.decode_step)
                kv_bytes_per_token=max(1.0, kv.bytes_per_token),
                kv_tokens=kv.tokens, max_num_seqs=seqs, max_num_batched_tokens=mnbt, link=link,
                prefill_alone=alone, scheduler_steps=steps, family=s.family,
                adapter_slots=memory.adapter_slots, adapter_slot_bytes=memory.adapter_slot_gib * 2**30)
    if not graphs_captured(arch, s):
        m = replace(m, graphs=False)
    if request.dp_attention and dpattn.applies(arch, s.engine, s.family, s.tensor_parallel):
        m = dpattn.with_dp_attention(m, arch, memory.kv_pool_gib * 2**30)
    return m


def graphs_captured(arch: Architecture, s: Settings) -> bool:
    """Whether decode steps replay CUDA graphs for this model on this engine release. SGLang 0.4.1 (2024-12-26) ran
    DeepSeek-V3 from day one without them: "Support CUDA Graph" is an item of the DeepSeek-V3 optimisation list
    opened that day (sgl-project/sglang#2591), shipped in v0.4.1.post2 ("Using CUDA Graph and FP8 GEMM Tuning",
    sgl-project/sglang#2643, 2024-12-29). serving_load.toml [eager] sglang_mla_moe_graphs_from."""
    if s.family != "sglang" or not (arch.experts and arch.kv_lora_rank) or not s.version:
        return True
    return release(s.version) >= release(str(data()["eager"]["sglang_mla_moe_graphs_from"]))


def release(version: str) -> tuple[int, ...]:
    """"0.4.1.post2" -> (0, 4, 1, 2); "0.4.1" -> (0, 4, 1, 0)."""
    m = re.match(r"\D*(\d+)\.(\d+)(?:\.(\d+))?(?:\.?post(\d+))?", version)
    if not m:
        return (999,)
    return tuple(int(x or 0) for x in m.groups())


def prefill_scheduling(s: Settings, scheduler_steps: int | None) -> tuple[bool, int]:
    """(a prefill runs as a step of its own, decode steps per scheduler call) for the engine as set.
    SGLang: run_step runs a waiting prefill batch first, alone, and decodes otherwise; prefill joins the decode
    batch only with --enable-mixed-chunk (sgl-project/sglang python/sglang/srt/managers/scheduler.py @d51c1c21
    run_step / get_new_batch_prefill, is_mixed_chunk); a streaming decode loop returns to the scheduler after each
    step ("if self.out_pyobjs and self.running_batch.has_stream: break"). vLLM V0 without chunked prefill:
    _schedule_default schedules the waiting prompts first and "Don't schedule decodes if prefills are scheduled"
    (vllm-project/vllm vllm/core/scheduler.py @0dce2b29); --num-scheduler-steps n runs n decode steps per call.
    vLLM V1 and TensorRT-LLM mix prefill chunks into decode steps."""
    if s.family == "sglang":
        return True, 1
    if s.family == "vllm-v0":
        return not v0_chunked_prefill(s.max_model_len, s.max_num_batched_tokens), max(1, scheduler_steps or 1)
    return False, 1


def workload_for(request: Request, prompt: int, output: int, replicas: int) -> Workload:
    """Per replica: the rate split evenly (a load balancer in front), the users likewise."""
    r = max(1, replicas)
    rate = request.request_rate / r if request.request_rate else None
    users = request.concurrency or (None if rate else 1)
    return Workload(prompt=prompt, output=output, concurrency=-(-users // r) if users and not rate else None,
                    request_rate=rate, prefix_hit=request.prefix_cache_hit_rate or 0.0)


def ttft_key(request: Request) -> str:
    """The TTFT percentile a promise is at: "p95" unless the question said p50 ("median") or p99."""
    return f"p{request.ttft_percentile or 95}"


def meets(p: LoadPoint, ttft_ms: float | None, tpot_ms: float | None, key: str = "p95") -> bool:
    if not p.stable:
        return False
    ok = True
    if ttft_ms is not None:
        ok = ok and p.ttft_ms.get(key, math.inf) <= ttft_ms
    if tpot_ms is not None:
        ok = ok and p.tpot_ms.get("p50", math.inf) <= tpot_ms
    return ok


def users_within(at: Callable[[int], LoadPoint], ttft_ms: float | None, tpot_ms: float | None,
                 key: str = "p95") -> int:
    """The most requests in flight `at` (a concurrency's load point) holds within the promise (its KV /
    max_num_seqs room without one)."""
    first = at(1)
    room = first.max_concurrency
    if ttft_ms is None and tpot_ms is None:
        return room
    if not meets(first, ttft_ms, tpot_ms, key):
        return 0
    lo, hi = 1, max(1, room)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if meets(at(mid), ttft_ms, tpot_ms, key):
            lo = mid
        else:
            hi = mid - 1
    return lo


def pd_split(request: Request, m: Machine, f: Features, w: Workload, replicas: int) -> disagg.Split | None:
    """The prefill : decode split of the instances when disaggregation is asked and the engine runs it (the split
    asked, else the one that carries most); None otherwise."""
    if not request.disaggregated or not disagg.supported(m.engine, m.family) or replicas < 2:
        return None
    asked = request.prefill_instances
    if asked and asked < replicas:
        return disagg.Split(asked, replicas - asked, disagg.kv_link(m, replicas, request.interconnect))
    return disagg.best_split(m, f, w, replicas, request.interconnect)


def per_million(per_hour: float | None, tokens_s: float | None) -> float | None:
    if per_hour is None or not tokens_s:
        return None
    return round(per_hour / (tokens_s * 3600.0) * 1e6, 3)


@dataclass(frozen=True)
class Arrangement:
    """How the load model runs the request's instances: `share` multiplies a point's figures for the whole
    (the replicas: a point is one instance's; 1 for disaggregated pools: a point is the whole's, ServingLoad.scale)."""

    m: Machine
    w: Workload
    split: disagg.Split | None
    share: int

    def at(self, f: Features, w: Workload | None = None) -> LoadPoint:
        w = w or self.w
        return disagg.pd_point(self.m, f, w, self.split) if self.split else point(self.m, f, w)


def arranged(request: Request, m: Machine, prompt: int, output: int, replicas: int) -> Arrangement:
    """Disaggregated pools when asked and run (the whole load), else `replicas` colocated instances (its share)."""
    whole = workload_for(request, prompt, output, 1)
    split = pd_split(request, m, features_for(request), whole, replicas)
    if split is not None:
        return Arrangement(m, whole, split, 1)
    return Arrangement(m, workload_for(request, prompt, output, replicas), None, max(1, replicas))


def evaluate(request: Request, m: Machine, prompt: int, output: int, replicas: int) -> tuple[LoadPoint, int]:
    """The load point of the request on `replicas` instances of `m`, and what its figures multiply by."""
    a = arranged(request, m, prompt, output, replicas)
    return a.at(features_for(request)), a.share


def load_answer(request: Request, m: Machine, prompt: int, output: int, replicas: int, per_hour: float | None,
                currency: str = "USD") -> ServingLoad:
    f = features_for(request)
    r = max(1, replicas)
    a = arranged(request, m, prompt, output, r)
    w, share, split = a.w, a.share, a.split

    def at(c: int) -> LoadPoint:
        return a.at(f, replace(w, concurrency=c, request_rate=None))
    p = a.at(f)
    notes = [Assumption(key="queueing", value="kingman(poisson arrivals, deterministic prefill)"),
             Assumption(key="engine_figures",
                        value=m.engine if m.engine in ("vllm", "sglang", "tensorrt-llm", "nim") else "vllm"),
             Assumption(key="prefill_scheduling",
                        value=("prefill steps alone" if m.prefill_alone else "chunks in decode steps")
                        + (f", {m.scheduler_steps} decode steps per scheduler call" if m.scheduler_steps > 1 else ""))]
    notes += feature_notes(request, m, split, w)
    if request.request_rate is None and not request.concurrency:
        notes.append(Assumption(key="concurrency", value="1"))
    speedup = None
    if f.speculative:
        k, alpha, _ = speculation(f)
        notes.append(Assumption(key="speculative", value=f"{f.speculative}(k={k}, acceptance={alpha:g})"))
        plain = a.at(replace(f, speculative=None))
        if plain.per_user_tokens_s and p.per_user_tokens_s:
            speedup = round(p.per_user_tokens_s / plain.per_user_tokens_s, 2)
    if f.max_loras:
        notes.append(Assumption(key="max_lora_rank", value=f.max_lora_rank))
    out_s = p.output_tokens_s * share if p.output_tokens_s is not None else None
    tot_s = p.total_tokens_s * share if p.total_tokens_s is not None else None
    promise = request.ttft_p95_ms is not None or request.tpot_ms is not None
    held = users_within(at, request.ttft_p95_ms, request.tpot_ms, ttft_key(request)) * share
    top = max(8, 2 * p.max_concurrency)
    curve = [at(c) for c in CURVE if c <= top]
    return ServingLoad(
        replicas=r, point=p, output_tokens_s=round(out_s, 1) if out_s is not None else None,
        total_tokens_s=round(tot_s, 1) if tot_s is not None else None,
        request_rate=round(p.request_rate * share, 4) if p.request_rate is not None else None,
        capacity_rps=round(p.capacity_rps * share, 4), ttft_p95_target_ms=request.ttft_p95_ms,
        ttft_percentile=request.ttft_percentile or 95,
        tpot_target_ms=request.tpot_ms,
        meets=meets(p, request.ttft_p95_ms, request.tpot_ms, ttft_key(request)) if promise else None,
        users_within_promise=held,
        per_million_tokens=per_million(per_hour, tot_s) if p.stable else None,
        per_million_output_tokens=per_million(per_hour, out_s) if p.stable else None,
        currency=currency, speculative_speedup=speedup, assumptions=notes, curve=curve,
        saturation_limit=kv_room(m, f, w)[1], hosted=hosted_range(m.arch.name, prompt, output),
        disaggregation=Disaggregation(prefill_instances=split.prefill, decode_instances=split.decode,
                                      link=split.link, transfer_ms=round(disagg.transfer_s(m, w, split.link) * 1e3, 3))
        if split else None, attention_dp=m.attention_dp)


def feature_notes(request: Request, m: Machine, split: disagg.Split | None, w: Workload) -> list[Assumption]:
    """What the answer took for disaggregation and DP attention, or why it could not use them."""
    out: list[Assumption] = []
    if request.disaggregated:
        if split is not None:
            out.append(Assumption(key="disaggregated",
                                  value=f"{split.prefill}P{split.decode}D over {split.link}"
                                  + ("" if request.prefill_instances else " (the split that carries most)")))
        elif not disagg.supported(m.engine, m.family):
            out.append(Assumption(key="disaggregated", value=f"not run by {m.family or m.engine}: colocated"))
        else:
            out.append(Assumption(key="disaggregated", value="one instance: colocated"))
    if request.dp_attention:
        out.append(Assumption(key="dp_attention", value=f"dp={m.attention_dp}" if m.attention_dp > 1
                              else "needs an MoE model on SGLang / vLLM over 2+ GPUs: plain TP"))
    return out


def load_block(load: ServingLoad | None) -> dict[str, object] | None:
    """CONTRACT v2.1 `serving.load`."""
    if load is None:
        return None
    p = load.point
    return {
        "throughput": {"output_tokens_s": load.output_tokens_s, "total_tokens_s": load.total_tokens_s,
                       "request_rate": load.request_rate, "per_user_tokens_s": p.per_user_tokens_s},
        "ttft_ms": p.ttft_ms, "tpot_ms": p.tpot_ms, "e2e_ms": p.e2e_ms, "binding_limit": p.binding_limit,
        "stable": p.stable, "capacity_rps": load.capacity_rps, "max_concurrency_per_replica": p.max_concurrency,
        "replicas": load.replicas, "utilisation": p.utilisation,
        "promise": {"ttft_p95_ms": load.ttft_p95_target_ms, "tpot_ms": load.tpot_target_ms, "meets": load.meets,
                    "ttft_percentile": load.ttft_percentile},
        "users_within_promise": load.users_within_promise,
        "per_million_tokens": load.per_million_tokens, "per_million_output_tokens": load.per_million_output_tokens,
        "currency": load.currency, "speculative_speedup": load.speculative_speedup,
        "assumptions": [str(x) for x in load.assumptions], "saturation_limit": load.saturation_limit,
        "hosted": load.hosted.model_dump() if load.hosted else None,
        "disaggregation": load.disaggregation.model_dump() if load.disaggregation else None,
        "attention_dp": load.attention_dp,
        "curve": [{"concurrency": c.concurrency, "output_tokens_s": c.output_tokens_s,
                   "ttft_p95_ms": c.ttft_ms.get("p95"), "tpot_ms": c.tpot_ms.get("p50")} for c in load.curve],
    }


LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # vllm/config/lora.py LoRAConfig max_lora_rank choices


def feature_flags(request: Request, engine: str, attention_dp: int = 1) -> list[str]:
    """The launch flags of the features asked, where the engine has one that runs as pasted (vLLM: --enable-lora
    --max-loras --max-lora-rank, --enable-expert-parallel, --enforce-eager, n-gram speculation; EAGLE / MTP / a
    draft model need their checkpoint named, said under "what to change" instead). With DP attention the command
    itself runs the experts in parallel (engine/serving/command.py)."""
    out: list[str] = []
    if engine == "vllm":
        if request.max_loras:
            rank = request.max_lora_rank or 16
            rank = next((r for r in LORA_RANKS if r >= rank), LORA_RANKS[-1])
            out += ["--enable-lora", "--max-loras", str(request.max_loras), "--max-lora-rank", str(rank)]
        if request.expert_parallel and attention_dp <= 1:
            out.append("--enable-expert-parallel")
        if request.enforce_eager:
            out.append("--enforce-eager")
        if request.speculative == "ngram":
            out += ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}']
    elif engine == "sglang":
        if request.enforce_eager:
            out.append("--disable-cuda-graph")
        if request.expert_parallel:
            out += ["--ep-size", str(request.tensor_parallel or 1)]
    return out


# vLLM V1's NIXL connector, the same on prefill and decode instances (kv_role kv_both: the proxy's kv_transfer_params
# say which side a request is on; vllm docs/features/nixl_connector_usage.md, toy_proxy_server.py)
NIXL = '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'


def with_load_features(argv: list[str], load: ServingLoad | None, engine: str) -> list[str]:
    """The launch command with the disaggregated pools the load answer ran (SGLang: the prefill instance's command,
    --disaggregation-mode prefill, decode instances the same with decode; vLLM: --kv-transfer-config with
    NixlConnector on every instance); DP attention is the command's own (engine/serving/command.py)."""
    if load is None or engine not in ("vllm", "sglang") or load.disaggregation is None:
        return argv
    return [*argv, *(["--kv-transfer-config", NIXL] if engine == "vllm" else ["--disaggregation-mode", "prefill"])]

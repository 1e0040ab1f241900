"""Disaggregated prefill/decode: some instances only prefill, the others only decode, the prompt's KV cache sent
from one to the other over the interconnect (SGLang --disaggregation-mode prefill|decode with Mooncake / NIXL;
vLLM V1's NixlConnector behind a proxy; TensorRT-LLM's disaggregated trtllm-serve).

A prefill instance runs prompt batches only (sgl-project/sglang python/sglang/srt/disaggregation/prefill.py
@000c2b94 event_loop_normal_disagg_prefill: get_new_batch_prefill, every request's max_new_tokens set to 1 by
PrefillBootstrapQueue._process_req), a queue of prompts served one after another: Kingman's wait on its own
utilisation. A decode instance runs decode steps only (decode.py: the transferred requests join as "prebuilt"
batches, no prompt computed), so its TPOT is the step time of its batch, with no prefill stealing the GPU. TTFT =
the prefill's queue + its compute + the KV transfer + the decode side's emission of the first token: SGLang
computes the first token on the prefill side and sends it with the KV (process_batch_result_disagg_prefill:
req.output_ids.append(next_token_id); send_kv_chunk), so the decode instance streams it at its next scheduling
point (half a step on average); vLLM's proxy asks the prefill instance for max_tokens = 1, non-streaming, then
streams every token from the decode instance (vllm-project/vllm tests/v1/kv_connector/nixl_integration/
toy_proxy_server.py @030ea52e send_request_to_service / _handle_completions): half a step and the step itself.
Every TP rank sends its own shard of the KV over its own link at once (prefill.py PrefillBootstrapQueue.add:
dest_tp_ranks = [self.tp_rank]), so the transfer takes one rank's bytes over one GPU's link. Pure functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.schema.serving import LoadPoint
from engine.speed.hardware import gpus_per_node, intra_node_gbs, node_network_gbs, pcie_gbs

from .load import (
    Features,
    Link,
    Machine,
    Workload,
    data,
    engine_figures,
    kingman,
    kingman_mean,
    kv_room,
    prefill_time,
    token_step,
)


@dataclass(frozen=True)
class Split:
    prefill: int  # instances that only prefill
    decode: int  # instances that only decode
    link: Link  # what the KV crosses from a prefill to a decode instance


def supported(engine: str, family: str) -> bool:
    """vLLM V1 (NixlConnector is a V1 KV connector), SGLang, TensorRT-LLM / NIM; not vLLM V0, TGI, llama.cpp."""
    return engine in data()["disaggregation"]["engines"] and family != "vllm-v0"


def kv_link(m: Machine, instances: int, said: Link | None) -> Link:
    """NVLink (or PCIe) while both pools fit one node, the network past it; the interconnect said wins."""
    if said:
        return said
    if instances * m.tp * m.pp <= gpus_per_node():
        return "nvlink" if m.link == "nvlink" else "pcie"
    return "infiniband"


def link_gbs_per_gpu(m: Machine, link: Link) -> float:
    """One GPU's share of the link the KV crosses: NVLink, PCIe, or one NIC of a rail-optimised node."""
    if link == "infiniband":
        return node_network_gbs(m.gpu) / gpus_per_node()
    if link == "pcie":
        return pcie_gbs(m.gpu)
    return intra_node_gbs(m.gpu)


def transfer_s(m: Machine, w: Workload, link: Link) -> float:
    """Seconds to send one request's uncached prompt KV from its prefill to its decode instance (one rank's shard
    over one GPU's link, every rank at once; a prefix the decode side holds is not sent: prefill.py
    pop_decode_prefix_len)."""
    d = data()["disaggregation"]
    tokens = max(1.0, w.prompt * (1.0 - w.prefix_hit))
    return float(d["transfer_latency_us"]) * 1e-6 + tokens * m.kv_bytes_per_token / (
        link_gbs_per_gpu(m, link) * 1e9 * float(d["transfer_efficiency"][link]))


def _first_token_steps(engine: str) -> float:
    """Decode steps between the KV's arrival and the first token reaching the client (see the module docstring)."""
    return 0.5 if engine == "sglang" else 1.5


def capacity(m: Machine, f: Features, w: Workload, split: Split) -> tuple[float, float, int, str]:
    """(requests/s the arrangement carries, of it the decode pool's, requests a decode instance runs at once, what
    binds the decode instance)."""
    cap, limit = kv_room(m, f, w)
    if cap < 1:
        return 0.0, 0.0, 0, "kv_cache"
    ctx = w.prompt + w.output / 2.0
    decode = split.decode * cap / (token_step(m, f, cap, ctx) * w.output)
    prefill = split.prefill / prefill_time(m, f, w)
    return min(decode, prefill), decode, cap, limit


def best_split(m: Machine, f: Features, w: Workload, instances: int, said: Link | None) -> Split | None:
    """The prefill : decode split of `instances` that carries the most requests/s (None under two instances)."""
    if instances < 2:
        return None
    link = kv_link(m, instances, said)
    return max((Split(p, instances - p, link) for p in range(1, instances)),
               key=lambda s: capacity(m, f, w, s)[0])


def pd_point(m: Machine, f: Features, w: Workload, split: Split) -> LoadPoint:
    """The whole disaggregated arrangement at the workload's request rate (open loop) or concurrency (closed loop:
    `w.concurrency` users over all instances)."""
    e = engine_figures(m.engine)
    rate_cap, decode_cap, cap, cap_limit = capacity(m, f, w, split)
    if cap < 1 or rate_cap <= 0:
        return LoadPoint(stable=False, binding_limit="kv_cache", capacity_rps=0.0, max_concurrency=0)
    ctx = w.prompt + w.output / 2.0
    tp = prefill_time(m, f, w)
    xfer = transfer_s(m, w, split.link)
    floor = float(e["ttft_floor_ms"]) * 1e-3
    prefill_bound = split.prefill / tp <= decode_cap
    if w.request_rate is not None and w.request_rate >= rate_cap:
        return LoadPoint(stable=False, binding_limit="overloaded", request_rate=w.request_rate,
                         capacity_rps=round(rate_cap, 4), max_concurrency=cap * split.decode,
                         output_tokens_s=rate_cap * w.output, total_tokens_s=rate_cap * (w.prompt + w.output),
                         utilisation=w.request_rate / rate_cap)
    lam = w.request_rate if w.request_rate is not None else rate_cap
    users = w.concurrency or 1
    s = token_step(m, f, 1, ctx)
    batch = 1
    for _ in range(30):  # the decode batch that carries lam, and (closed loop) the lam the users give
        batch = min(cap, max(1, math.ceil(lam * w.output * s / split.decode)))
        s = token_step(m, f, batch, ctx)
        if w.request_rate is None:
            first = floor + tp + xfer + _first_token_steps(m.engine) * s
            lam = min(rate_cap, users / (first + (w.output - 1) * s))
    rho = lam * tp / split.prefill  # one prefill instance's busy share
    base = floor + tp + xfer + _first_token_steps(m.engine) * s
    extra = 0.0  # closed loop at capacity: users wait for a prefill slot or a decode slot (Little's law)
    if w.request_rate is None:
        extra = max(0.0, users / lam - (w.output - 1) * s - base - kingman_mean(rho, tp))
    ttft = {q: base + extra + kingman(rho, tp, q) for q in (0.5, 0.95, 0.99)}
    limit = ("kv_cache" if cap_limit == "kv_cache" else "max_num_seqs") if extra > 0 and not prefill_bound \
        else "compute" if prefill_bound and lam >= float(data()["queue"]["edge"]) * rate_cap else "memory_bandwidth"
    if w.request_rate is not None and lam >= float(data()["queue"]["edge"]) * rate_cap:
        limit = "near_capacity"
    running = batch * split.decode  # the decode instances' batches (s is their step at `batch`)
    return LoadPoint(
        stable=True, binding_limit=limit, request_rate=round(lam, 4),
        concurrency=users if w.request_rate is None else running, running=running,
        output_tokens_s=round(lam * w.output, 1), total_tokens_s=round(lam * (w.prompt + w.output), 1),
        per_user_tokens_s=round(1.0 / s, 2),
        ttft_ms={k: round(v * 1e3, 2) for k, v in zip(("p50", "p95", "p99"), ttft.values(), strict=True)},
        ttft_mean_ms=round((base + extra + kingman_mean(rho, tp)) * 1e3, 2),
        tpot_ms={"p50": round(s * 1e3, 2), "p95": round(s * 1e3, 2)},
        e2e_ms=round((ttft[0.5] + (w.output - 1) * s) * 1e3, 2), capacity_rps=round(rate_cap, 4),
        max_concurrency=cap * split.decode, utilisation=round(min(lam / rate_cap, 1.0), 3),
        step_ms=round(s * 1e3, 2), prefill_ms=round(tp * 1e3, 2),
        saturation_tpot_ms=round(token_step(m, f, cap, ctx) * 1e3, 2))


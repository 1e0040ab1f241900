"""The arrangement that serves the asked users for the least money: one instance of TP (dividing the attention heads,
within a node) x PP (across nodes when one node is not enough), replicated until the users fit; GPUs compared by what
the asked load costs (per 1M output tokens at it, then per hour), one node first, desktop cards on one machine."""

from __future__ import annotations

import math

from engine import pricing
from engine.catalog import Gpu
from engine.schema import Architecture, GpuRef, Request
from engine.schema.serving import ServingArrangement

from .budget import GIB, unused_gib
from .core import Profile, gpu_choice, loads, profile, settings_for, users_served
from .profile import data
from .speed import instance_speed, per_million
from .weights import rank_weights


def valid_tp(arch: Architecture, engine: str, most: int) -> list[int]:
    """TP degrees the engine accepts: they divide the attention heads (vLLM's ModelConfig.verify_with_parallel_config,
    vllm/config.py: "Total number of attention heads (...) must be divisible by tensor parallel size"), and the KV
    heads divide by TP or TP by the KV heads (vllm/model_executor/layers/linear.py QKVParallelLinear: KV heads are
    split when there are more of them than ranks, else replicated `divide(tp_size, total_num_kv_heads)` times)."""
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
    """TP within one node (its all-reduce runs twice a layer), PP across nodes."""
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


def _rank(a: ServingArrangement) -> tuple[bool, float, float, int]:
    """What a team pays for the asked load: one node before several, then per 1M output tokens, per hour, GPUs."""
    inf = math.inf
    return (a.nodes > 1, a.per_million_output_tokens if a.per_million_output_tokens is not None else inf,
            a.per_hour if a.per_hour is not None else inf, a.count)


def arrange(request: Request, arch: Architecture, engine: str, fmt: str, kv_dtype: str, candidates: list[Gpu | GpuRef],
            users: int, context: int, max_model_len: int, prompt: int | None = None,
            output: int | None = None) -> list[ServingArrangement]:
    """Per GPU kind the arrangement that serves `users` requests of `context` tokens for the least money (per 1M
    output tokens at that load, then per hour), one-node arrangements first; desktop cards on one machine only."""
    currency = request.currency or "USD"
    limits = data()["limits"]
    most, per_node = int(limits["max_gpus"]), int(limits["gpus_per_node"])
    one_machine = set(limits["single_machine_gpus"])
    out_len = output or min(512, max(1, context // 4))
    in_len = prompt or max(1, context - out_len)
    found: list[ServingArrangement] = []
    for cand in candidates:
        ref = cand if isinstance(cand, GpuRef) else GpuRef(name=cand.name, memory_gb=cand.memory_gb)
        price = _price(ref.name or "", currency) if ref.name else None
        options: list[ServingArrangement] = []
        wider = 0  # TP degrees tried past the first one instance serves the users with
        for tp, pp in instance_shapes(arch, engine):
            if pp > 1 and any(o.pipeline_parallel == 1 for o in options):
                break  # PP across nodes only when no node-sized TP serves
            if any(o.replicas == 1 for o in options):
                wider += 1
                if wider > 1:
                    break  # wider still: more GPUs for the same users, decode gains less than the GPUs cost
            choice, gpu = gpu_choice(ref.model_copy(update={"count": tp * pp}))
            if options and not choice.nvlink and tp > 2:
                # PCIe only: past 2 GPUs vLLM's custom all-reduce is off (custom_all_reduce.py) and TP runs NCCL
                # over PCIe; replicas of a narrower TP that already serves, never a wider one
                break
            ceiling = per_node if choice.name in one_machine else most
            s = settings_for(request, engine, fmt, kv_dtype, choice, tp, pp, max_model_len)
            if s.family not in ("llama.cpp", "ollama", "hf") and rank_weights(
                    arch, fmt, tp, pp, engine).first > choice.total_gib * s.gpu_memory_utilization * GIB:
                continue  # the weights alone are past the engine's share: it cannot load
            p: Profile = profile(request, arch, s, choice, context, users)
            if not loads(p):
                continue
            each = users_served(p, s)
            if each < 1:
                continue
            replicas = math.ceil(users / each)
            count = tp * pp * replicas
            if count > ceiling:
                continue
            per_hour = round(price * count, 2) if price is not None else None
            sp = instance_speed(arch, s, gpu, choice, p.memory, -(-users // replicas), in_len, out_len) \
                if gpu is not None else None
            m = p.memory
            options.append(ServingArrangement(
                gpu=choice.name, memory_gb=gpu.memory_gb if gpu is not None else ref.memory_gb or choice.total_gib,
                count=count, tensor_parallel=tp, pipeline_parallel=pp, replicas=replicas,
                users_per_instance=each, users=users, context=context,
                concurrency_at_context=p.kv.concurrency_at_context, kv_pool_gib=round(m.kv_pool_gib, 2),
                per_hour=per_hour, currency=currency,
                per_million_output_tokens=per_million(per_hour, sp.total_tokens_s * replicas) if sp else None,
                per_user_tokens_s=sp.per_user_tokens_s if sp else None, nodes=math.ceil(count / per_node),
                total_gib=round(choice.total_gib, 2), budget_gib=round(m.budget_gib, 2),
                weights_gib=round(m.weights_gib, 2), activation_peak_gib=round(m.activation_peak_gib, 2),
                non_torch_gib=round(m.non_torch_gib + m.cuda_graph_gib, 2), cuda_graph_gib=round(m.cuda_graph_gib, 2),
                headroom_gib=unused_gib(choice.total_gib, m)))
        if options:
            found.append(min(options, key=_rank))
    found.sort(key=_rank)
    return found

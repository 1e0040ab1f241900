"""How a paged-KV engine shares one GPU (vLLM V0/V1, SGLang, TGI): budget, weights, the profiled batch's peak,
non-torch memory, CUDA graphs, and the KV pool that is left (engine/catalog/serving.toml for every figure)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.schema import Architecture
from engine.schema.serving import GpuChoice, RankMemory, Settings

from .engines import tgi_logits, tgi_pool, tgi_warmup_tokens
from .profile import cuda_graphs_in_budget, data, v1_before
from .weights import RankWeights

GIB = float(2**30)


@dataclass(frozen=True)
class Budget:
    memory: RankMemory  # rank 0 (first PP stage), as a start-up log prints it
    pools: tuple[float, ...]  # KV pool bytes of each PP stage (the engine sizes blocks by the smallest)
    layers: tuple[int, ...]  # layers on each PP stage


def unused_gib(total_gib: float, m: RankMemory) -> float:
    """One card's memory the engine leaves unused: the driver's total less everything it holds (weights, the
    profiled peak, non-torch memory, CUDA graphs and the KV pool it reserved). What `fits[]` and the plans say."""
    held = m.weights_gib + m.activation_peak_gib + m.non_torch_gib + m.cuda_graph_gib + max(0.0, m.kv_pool_gib)
    return round(total_gib - held, 2)


def moe_workspace(arch: Architecture, tokens: int, tp: int) -> float:
    """Fused-MoE intermediate caches for `tokens` tokens on one TP rank (16-bit)."""
    if not arch.experts:
        return 0.0
    k = max(1, arch.experts_per_token)
    return tokens * k * (3.0 * arch.expert_ffn / tp + arch.hidden) * 2.0


def bnb_workspace(arch: Architecture, tokens: int, tp: int) -> float:
    """bitsandbytes 4-bit in vLLM dequantizes weights to run them (serving.toml [formats] bitsandbytes):
    a dense linear one shard at a time, its 16-bit copy beside the shard's product; a MoE layer every expert's
    w13 and w2 at once before fused_experts."""
    if arch.experts:
        return arch.experts * 3.0 * arch.expert_ffn / tp * arch.hidden * 2.0
    ffn = arch.ffn / tp
    return ffn * arch.hidden * 2.0 + tokens * max(ffn, arch.hidden) * 2.0


def forward_bytes(arch: Architecture, tokens: int, tp: int, eager: bool = False) -> float:
    """The dense part of the forward peak of a batch of `tokens` tokens on one TP rank (`eager`: V0's profile run,
    without torch.compile's buffers)."""
    f = data()["vllm"]["forward"]
    ffn = arch.shared_experts * arch.expert_ffn if arch.experts else arch.ffn
    k_hidden = f["k_hidden_v0"] if eager else f["k_hidden"]
    return tokens * 2.0 * (k_hidden * arch.hidden + f["k_ffn"] * ffn / tp)


def sampler_bytes(arch: Architecture, rows: int, copies: float) -> float:
    return copies * 4.0 * rows * arch.vocab


def activation_peak(arch: Architecture, s: Settings, last_stage: bool) -> float:
    tokens, tp = s.max_num_batched_tokens, s.tensor_parallel
    ws = moe_workspace(arch, tokens, tp)
    dense = forward_bytes(arch, tokens, tp, eager=s.family == "vllm-v0")
    if s.weight_format == "bitsandbytes" and s.engine == "vllm":
        dense += bnb_workspace(arch, tokens, tp)  # freed after each layer: under the sampler's peak, not beside it
    if s.family == "vllm-v0":
        rows = s.max_num_seqs
        sampler = sampler_bytes(arch, rows, data()["vllm"]["v0"]["sampler_fp32_copies"]) if last_stage else 0.0
        return max(dense + ws, sampler)
    if s.engine == "vllm" and v1_before(s.version, "logits_only_until"):
        # 0.7.x V1: compute_logits on one row per dummy request, in the model's 16-bit dtype, no sampler
        # (gpu_model_runner.py profile_run @a64a84433; serving.toml [vllm.v1])
        logits = 2.0 * s.max_num_seqs * arch.vocab if last_stage else 0.0
        return ws + max(dense, logits)
    rows = min(s.max_num_seqs, tokens)
    # before 0.17 the dummy sampler sorted the whole vocabulary as V0's does (serving.toml [vllm.v1])
    sort_path = s.engine == "vllm" and v1_before(s.version, "sort_sampler_until")
    copies = data()["vllm"]["v0" if sort_path else "v1"]["sampler_fp32_copies"]
    sampler = sampler_bytes(arch, rows, copies) if last_stage else 0.0
    return ws + max(dense, sampler)


def non_torch(s: Settings, gpu: GpuChoice) -> float:
    """Memory outside torch the KV budget subtracts: what the profile run grew (NCCL, custom all-reduce under TP);
    V1 before 0.9.1 also the CUDA context, every byte outside torch (gpu_worker.py determine_available_memory)."""
    n = data()["vllm"]["non_torch"]
    context = data()["sglang"]["held_at_load_gib"] * GIB if (
        s.engine == "vllm" and s.family == "vllm-v1" and v1_before(s.version, "context_in_peak_until")) else 0.0
    if s.tensor_parallel == 1:
        return context + (n["tp1_gib"] * GIB if s.pipeline_parallel == 1 else n["pp_only_gib"] * GIB)
    return context + tp_buffers(s.tensor_parallel, gpu.nvlink)


def tp_buffers(tp: int, nvlink: bool) -> float:
    """NCCL / custom all-reduce buffers of one rank under TP > 1 ([vllm.non_torch])."""
    n = data()["vllm"]["non_torch"]
    if not nvlink:
        return n["tp_pcie_gib"] * GIB
    return (n["tp_nvlink_gib"] + n["tp_nvlink_per_doubling_gib"] * math.log2(tp / 2)) * GIB


def sglang_held(tp: int, nvlink: bool) -> float:
    """What an SGLang rank holds before loading weights: the CUDA context, and NCCL / custom all-reduce under TP."""
    return data()["sglang"]["held_at_load_gib"] * GIB + (tp_buffers(tp, nvlink) if tp > 1 else 0.0)


def cuda_graphs(layers: int) -> float:
    g = data()["vllm"]["cuda_graphs"]
    return (g["base_gib"] + g["per_layer_gib"] * layers) * GIB


def stage_layers(arch: Architecture, pp: int) -> tuple[int, ...]:
    if pp == 1:
        return (arch.layers,)
    each = arch.layers // pp
    return (*([each] * (pp - 1)), arch.layers - each * (pp - 1))


def paged_budget(arch: Architecture, s: Settings, gpu: GpuChoice, w: RankWeights, kv_token_bytes: float = 0.0,
                 eager: bool = False) -> Budget:
    """`kv_token_bytes`: one token's KV on a rank (TGI's warm-up batch holds some before the pool is sized).
    `eager`: `--enforce-eager` / SGLang `--disable-cuda-graph`, no graphs captured (vLLM's worker captures them only
    when `not model_config.enforce_eager`, vllm/v1/worker/gpu_worker.py `compile_or_warm_up_model`)."""
    total = gpu.total_gib * GIB
    layers = stage_layers(arch, s.pipeline_parallel)
    pp = s.pipeline_parallel
    weights = [w.first] + [w.per_layer * n for n in layers[1:-1]] + ([w.last] if pp > 1 else [])
    graphs = [0.0 if eager else cuda_graphs(n) for n in layers]
    if s.family == "sglang":
        # model_runner_kv_cache_mixin.py profile_max_num_token: rest = free after loading - free before loading x
        # (1 - mem_fraction_static); free before loading = total - what the process already holds (CUDA context,
        # NCCL / custom all-reduce under TP), so the pool is (total - held) x mem_fraction_static - weights; the
        # engine's share of the card is what it held before loading plus that fraction of the rest
        held = sglang_held(s.tensor_parallel, gpu.nvlink)
        budget = held + (total - held) * s.gpu_memory_utilization
        pools = tuple(budget - wt - held for wt in weights)
        act = forward_bytes(arch, s.max_num_batched_tokens, s.tensor_parallel) + moe_workspace(
            arch, s.max_num_batched_tokens, s.tensor_parallel)
        memory = RankMemory(budget_gib=budget / GIB, weights_gib=weights[0] / GIB, activation_peak_gib=act / GIB,
                            non_torch_gib=held / GIB, cuda_graph_gib=graphs[0] / GIB, cuda_graphs_in_budget=False,
                            kv_pool_gib=max(pools[0], 0.0) / GIB)
        return Budget(memory, pools, layers)
    acts = [activation_peak(arch, s, last_stage=(i == pp - 1)) for i in range(pp)]
    extra = non_torch(s, gpu)
    if s.family == "tgi":
        # flash_causal_lm.py warmup: the pool is sized from the memory free after the warm-up batch (its forward
        # and the logits of every prefill token), by release (engines.tgi_pool; serving.toml [tgi])
        acts = [forward_bytes(arch, s.max_num_batched_tokens, s.tensor_parallel)
                + moe_workspace(arch, s.max_num_batched_tokens, s.tensor_parallel)
                + tgi_logits(arch, s.max_num_batched_tokens, s.version) for _ in range(pp)]
        held = data()["sglang"]["held_at_load_gib"] * GIB + extra  # the CUDA context of a PyTorch server process
        warm = tgi_warmup_tokens(s.version, s.max_num_batched_tokens, s.max_model_len) * kv_token_bytes
        pools = tuple(tgi_pool(total, held + wt + a, warm, s.gpu_memory_utilization, s.version)
                      for wt, a in zip(weights, acts, strict=True))
        budget = total * s.gpu_memory_utilization
        extra = held
        in_budget = False
    elif s.engine in ("tensorrt-llm", "nim"):
        # TensorRT-LLM sizes the KV cache from the memory free once the engine is loaded (weights, the activation
        # buffers TensorRT pre-computes, the runtime): free x kv_cache_free_gpu_memory_fraction, 0.9 by default
        # (TensorRT-LLM docs/source/reference/memory.md and examples/kvcacheconfig.md, KvCacheConfig), not vLLM's
        # share of the whole card
        held = data()["sglang"]["held_at_load_gib"] * GIB + extra  # the CUDA context, NCCL under TP
        pools = tuple((total - held - wt - a - g) * s.gpu_memory_utilization
                      for wt, a, g in zip(weights, acts, graphs, strict=True))
        budget = held + weights[0] + acts[0] + graphs[0] + max(pools[0], 0.0)
        extra, in_budget = held, True
    else:
        budget = total * s.gpu_memory_utilization
        # on ROCm the worker skips the graph estimate (serving.toml [vllm] cuda_graphs_in_budget_from)
        in_budget = cuda_graphs_in_budget(s.version) and not gpu.rocm
        pools = tuple(budget - wt - a - extra - (g if in_budget else 0.0)
                      for wt, a, g in zip(weights, acts, graphs, strict=True))
    memory = RankMemory(budget_gib=budget / GIB, weights_gib=weights[0] / GIB, activation_peak_gib=acts[0] / GIB,
                        non_torch_gib=extra / GIB, cuda_graph_gib=graphs[0] / GIB, cuda_graphs_in_budget=in_budget,
                        kv_pool_gib=max(pools[0], 0.0) / GIB)
    return Budget(memory, pools, layers)

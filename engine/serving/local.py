"""Engines without a paged pool sized from free memory: llama.cpp / Ollama (GGUF, layers on the GPU and the rest in
host RAM, the KV cache allocated whole for n_ctx) and Hugging Face `generate` (engine/memory.py's model, called)."""

from __future__ import annotations

from engine.schema import Architecture, Request
from engine.schema.serving import GpuChoice, KvCapacity, RankMemory, Settings

from .kv import plain_bytes_per_token
from .profile import data
from .weights import rank_weights

GIB = float(2**30)


def kv_element_bytes(kv_dtype: str) -> float:
    bits = data()["llama_cpp"]["kv_bits"].get(kv_dtype)
    if bits is not None:
        return float(bits) / 8.0
    return float(data()["kv"]["bytes"].get(kv_dtype, 2.0))


def compute_buffer(arch: Architecture, n_ctx: int) -> float:
    """The graph allocator's reserve for the worst micro-batch (n_ubatch tokens, every one an output): ggml-alloc
    reuses a tensor's memory once nothing reads it, so the buffer is the largest set alive at once (serving.toml
    [llama_cpp]): the f32 logits with the final norm's output, or a layer's attention without flash attention:
    KQ (n_kv x n_ubatch x heads, f32), its mask (n_kv x n_ubatch, f32) and the layer's f32 activations (the
    residual, the norm output, Q, K and V)."""
    n = data()["llama_cpp"]["n_ubatch"]
    output = n * (arch.vocab + arch.hidden) * 4.0
    q, kv = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    attention = n * n_ctx * (arch.heads + 1) * 4.0 + n * (2 * arch.hidden + q + 2 * kv) * 4.0
    return max(output, attention)


def llama_cpp(arch: Architecture, s: Settings, gpu: GpuChoice, context: int) -> tuple[RankMemory, KvCapacity, int]:
    """(memory, capacity, layers on the GPUs): as many layers as fit (or -ngl), n_ctx = max_model_len x slots.
    Several GPUs hold the layers split between them (llama.cpp's default --split-mode layer, one process): their
    memory adds up, each keeps a compute buffer; the figures returned are per GPU (host RAM for the machine)."""
    w = rank_weights(arch, s.weight_format, 1, 1, "llama.cpp")
    apple = float(data()["llama_cpp"]["apple_gpu_share"])
    cards = max(1, gpu.count)
    # unified memory: total_gib is already the GPU's share of the RAM (Metal's working set); a discrete card keeps 5 %
    budget = gpu.total_gib * GIB * (1.0 if gpu.unified_memory else 0.95) * cards
    slots = max(1, s.max_num_seqs)
    n_ctx = s.max_model_len * slots
    per_token_layer = plain_bytes_per_token(arch, 1, 1, kv_element_bytes(s.kv_cache_dtype))
    per_layer_gpu = w.per_layer + per_token_layer * n_ctx
    buffer = compute_buffer(arch, n_ctx)
    fixed = w.embedding * 0 + w.head + buffer * cards  # token embeddings stay in host RAM (llama.cpp)
    if s.gpu_layers is not None:
        on_gpu = max(0, min(arch.layers, s.gpu_layers))
    else:
        on_gpu = int(max(0.0, budget - fixed) // per_layer_gpu) if per_layer_gpu > 0 else arch.layers
        on_gpu = min(arch.layers, on_gpu)
    weights = w.per_layer * on_gpu + (w.head if on_gpu == arch.layers else 0.0)
    kv = per_token_layer * n_ctx * on_gpu
    host = w.per_layer * (arch.layers - on_gpu) + w.embedding + per_token_layer * n_ctx * (arch.layers - on_gpu)
    memory = RankMemory(budget_gib=budget / cards / GIB, weights_gib=weights / cards / GIB,
                        activation_peak_gib=buffer / GIB, non_torch_gib=0.0, cuda_graph_gib=0.0,
                        cuda_graphs_in_budget=True, kv_pool_gib=kv / cards / GIB, host_ram_gib=host / GIB)
    if gpu.unified_memory and weights + kv + host + buffer > gpu.total_gib * cards / apple * GIB * 0.9:
        # one RAM for GPU and CPU: layers "in host RAM" are in the same memory (0.1 left to the system: assumption)
        memory = memory.model_copy(update={"kv_pool_gib": 0.0})
        slots = 0
    # the longest context of one slot: the KV of the layers on the GPU in what they leave (the rest in host RAM)
    resident = max(1, on_gpu)
    free = budget - fixed - w.per_layer * resident
    longest = int(max(0.0, free) // (per_token_layer * resident * max(1, s.max_num_seqs))) if per_token_layer else 0
    limit = arch.max_position_embeddings if arch.known and arch.max_position_embeddings else None
    longest = min(longest, limit) if limit else longest
    cap = KvCapacity(bytes_per_token=round(per_token_layer * arch.layers), groups=1, blocks=slots,
                     tokens=n_ctx if slots else 0, max_concurrency=float(slots), max_model_len_that_fits=longest,
                     concurrency_at_context=float(slots if context <= s.max_model_len else 0))
    return memory, cap, on_gpu


def hf_generate(request: Request, arch: Architecture, s: Settings, users: int, context: int, gpus: int = 1
                ) -> tuple[RankMemory, KvCapacity]:
    """Today's Hugging Face `generate` model (engine/memory.py) for `users` sequences of `context` tokens, the
    layers split over `gpus` GPUs (device_map="auto")."""
    from engine.memory import breakdown
    from engine.scenario import build_scenario

    asked = request.model_copy(update={"method": "inference", "batch_size": users, "seq_len": context})
    b = breakdown(build_scenario(asked, count=gpus))
    per_token = plain_bytes_per_token(arch, 1, arch.layers, 2.0) / gpus
    memory = RankMemory(budget_gib=b.total + b.cuda_context, weights_gib=b.weights,
                        activation_peak_gib=b.activations + b.logits, non_torch_gib=b.cuda_context,
                        cuda_graph_gib=0.0, cuda_graphs_in_budget=True, kv_pool_gib=b.kv_cache)
    cap = KvCapacity(bytes_per_token=round(per_token), groups=1, blocks=users, tokens=users * context,
                     max_concurrency=float(users), max_model_len_that_fits=context,
                     concurrency_at_context=float(users))
    return memory, cap

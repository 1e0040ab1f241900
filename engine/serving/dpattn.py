"""Data-parallel attention for MoE models (SGLang --enable-dp-attention, vLLM --data-parallel-size with
--enable-expert-parallel): the instance's GPUs run attention data-parallel, each for its own requests, and the MoE
layers over all of them (the tokens gathered before the experts and scattered after).

Under plain TP an MLA cache (DeepSeek V2/V3, Kimi K2) is one latent a token, the same on every TP rank, and a GQA
cache with fewer KV heads than ranks repeats its heads; both hold every request on every rank. With DP attention a
rank holds whole KV only for the requests it runs, so the instance's pool in tokens grows by the replication that
TP had (sgl-project/sglang python/sglang/srt/layers/dp_attention.py @00161092 compute_dp_attention_world_info:
attention TP size tp / dp, 1 at dp = tp; a step reads each rank's own share of the KV). The attention weights are
then whole on every rank instead of 1/tp of them (their memory leaves the KV pool, a decode step reads them whole).
Requests a rank runs: SGLang splits --max-running-requests over its DP workers (model_runner.py:
server_args.max_running_requests // dp_size when enable_dp_attention); vLLM runs one engine core, with its own
--max-num-seqs, per DP rank (vllm/v1/engine/core.py DPEngineCoreProc), and the launch command gives each rank its
share of the instance's cap (loadplan.with_load_features): either way the instance's cap is unchanged. Pure
functions.
"""

from __future__ import annotations

from dataclasses import replace

from engine.schema import Architecture

from .load import Machine
from .weights import experts_only, linear_bytes

ENGINES = ("sglang", "vllm")


def applies(arch: Architecture, engine: str, family: str, tp: int) -> bool:
    """An MoE model on SGLang or vLLM V1 with more than one GPU an instance."""
    return engine in ENGINES and family != "vllm-v0" and bool(arch.experts) and tp > 1


def attention_bytes(arch: Architecture, fmt: str) -> float:
    """The q/k/v/o projections of every layer in the format (the config's heads x head_dim; MLA: of the same order,
    12.5B parameters for DeepSeek-V3's ~11B of low-rank projections); 16-bit where the format quantizes only the
    experts (MXFP4)."""
    params = arch.layers * arch.hidden * arch.head_dim * 2.0 * (arch.heads + arch.kv_heads)
    per = 2.0 if experts_only(fmt) else linear_bytes(arch, fmt) / max(1.0, arch.linear_params)
    return params * per


def replication(arch: Architecture, tp: int) -> int:
    """How many TP ranks hold each token's KV under plain TP: all of them for MLA, tp / kv_heads past the heads."""
    if arch.kv_lora_rank:
        return tp
    return max(1, tp // max(1, min(tp, arch.kv_heads)))


def with_dp_attention(m: Machine, arch: Architecture, pool_bytes: float) -> Machine:
    """The instance `m` (plain TP, its rank's KV pool `pool_bytes`) with attention data-parallel over its TP ranks."""
    dp = m.tp
    extra = attention_bytes(arch, m.weight_format) * (1.0 - 1.0 / m.tp) / max(1, m.pp)
    left = max(0.0, pool_bytes - extra) / pool_bytes if pool_bytes > 0 else 0.0
    rep = replication(arch, m.tp)
    whole = m.kv_bytes_per_token * m.tp / rep  # a token's KV on the one rank that holds it
    tokens = int(m.kv_tokens * left * dp * m.kv_bytes_per_token / whole)
    return replace(m, attention_dp=dp, kv_tokens=tokens, kv_bytes_per_token=whole, weight_bytes=m.weight_bytes + extra)

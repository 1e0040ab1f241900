"""The inference peak: weights, the KV cache and the prefill's working set."""

from __future__ import annotations

from dataclasses import dataclass

from engine.frameworks import profile
from engine.memory.activations import active_ffn
from engine.memory.state import State, dequantized_weight_bytes
from engine.schema import Scenario


@dataclass(frozen=True)
class InferencePeak:
    kv_cache: float
    activations: float
    logits: float
    static: float  # long-lived (weights + cache): fragments little
    live: float


def inference_peak(s: Scenario, st: State) -> InferencePeak:
    arch = s.arch
    n = s.gpu_count
    tokens = float(s.seq_len) * s.batch_size
    kv_cache = 2 * arch.layers * arch.kv_heads * arch.head_dim * tokens * 2 / n
    f = active_ffn(arch)
    # prefill of the longest prompt: one layer's working set at a time, last-token logits only
    activations = tokens * (8 * arch.hidden + (6 if arch.gated_mlp else 4) * f) / n
    logits = s.batch_size * arch.vocab * 4.0
    activations += dequantized_weight_bytes(s, profile(s.framework))
    # the cache lives from the first token to the last and grows in place (a few KiB a step inside
    # the allocator's 2 MiB-rounded blocks): it fragments like the weights, not like the prefill's
    # working set, which is made and freed layer by layer
    static = st.weights + kv_cache
    live = st.weights + kv_cache + activations + logits
    return InferencePeak(kv_cache, activations, logits, static, live)

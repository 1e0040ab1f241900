"""Multi-LoRA serving: the adapter slots vLLM preallocates on every GPU, and how many of them a GPU holds.

vLLM (`--enable-lora --max-loras N --max-lora-rank R`) allocates, for each LoRA-wrapped linear layer, `lora_a_stacked`
(N, 1, R, input_size) and `lora_b_stacked` (N, 1, output_size, R) per output slice, in the model's dtype, before the
KV cache is profiled (vllm/lora/layers/base_linear.py `create_lora_weights` @1ace43ed). A column-parallel layer
(q/k/v, gate/up: 3 and 2 slices) keeps A whole and B split over the TP ranks; a row-parallel one (o, down) keeps A
split and B whole. Adapters beyond the slots wait in CPU memory (`--max-cpu-loras`) and are copied in for a batch.
A step reads only the slots of the adapters in its batch: the shrink/expand kernels run one program per active
LoRA id over the tokens sorted by it (vllm/lora/ops/triton_ops/lora_shrink_op.py `_lora_shrink_kernel`, lora_ids /
token_indices_sorted_by_lora_ids); an idle slot is memory, not bandwidth."""

from __future__ import annotations

from engine.schema import Architecture
from engine.schema.serving import RankMemory

MODEL_DTYPE_BYTES = 2  # lora_dtype defaults to the model's dtype (bf16/fp16)


def slot_bytes(arch: Architecture, rank: int, tp: int = 1) -> float:
    """One adapter slot on one GPU: A and B of q, k, v, o, gate, up, down in every layer."""
    h, kv, ffn = arch.hidden, arch.kv_heads * arch.head_dim, arch.ffn
    tp = max(1, tp)
    column = 3 * h + (h + 2 * kv) / tp + 2 * h + 2 * ffn / tp  # q/k/v and gate/up: A whole per slice, B split
    row = h / tp + h + ffn / tp + h  # o and down: A split, B whole
    return rank * (column + row) * arch.layers * MODEL_DTYPE_BYTES


def slots_beside(pool_bytes: float, kept_bytes: float, per_slot: float) -> int:
    """Adapter slots that fit in a GPU's KV pool beside the KV the requests kept there need."""
    if per_slot <= 0:
        return 0
    return max(0, int((pool_bytes - kept_bytes) // per_slot))


def idle_slot_bytes(memory: RankMemory, batch: int) -> float:
    """The adapter slots a step of `batch` requests does not read (at most one adapter per request is active);
    at batch 0, every slot: the weights a step reads before its batch's adapters are added."""
    return memory.adapter_slot_gib * 2**30 * max(0, memory.adapter_slots - max(0, batch))

"""A breakdown as the lines an answer shows: they add up to its total, in every door (JSON, table, chart).

engine.memory's `total` is the reserved peak, not a plain sum: the loss's logits and the stored activations are not
all live at the same moment, and near a card's capacity the allocator gives back part of its reserve. The tensors'
own lines stay as the memory model gives them; what the peak does not hold of them at once is one line of its own
(`freed_before_peak`, never positive), so that weights + … + reserve + that line = total.
"""

from __future__ import annotations

from engine.schema import Breakdown
from engine.schema.posttrain import PostTrainResult

# the lines of a breakdown in the order they are shown; cuda_context is outside the allocator, beside the total
TENSOR_LINES = ("weights", "gathered", "autocast", "upcast", "adapters", "gradients", "optimizer", "step_buffers",
                "activations", "logits", "kv_cache", "shape_margin")


def parts(b: Breakdown) -> dict[str, float]:
    """GiB by line: the tensors, the allocator's reserve, what is freed before the peak (≤ 0), the CUDA context.
    Their sum without cuda_context is `b.total`."""
    lines = {k: float(getattr(b, k)) for k in TENSOR_LINES}
    lines["overhead"] = b.overhead
    lines["freed_before_peak"] = min(0.0, b.total - sum(lines.values()))
    # a peak above the lines (none in engine.memory today: every phase's tensors have a line) goes to the reserve
    lines["overhead"] += max(0.0, b.total - sum(lines.values()))
    lines["cuda_context"] = b.cuda_context
    return lines


# the policy's own lines of a post-training breakdown (PostTrainResult.policy), in the order they are shown
POLICY_LINES = ("weights", "adapters", "gradients", "optimizer", "activations", "logits")


def posttrain_parts(r: PostTrainResult) -> dict[str, float]:
    """The busiest post-training GPU's lines: the policy's, those post-training adds (reference model, rollouts, the
    vLLM share), the rest of the peak as the reserve, or as `freed_before_peak` when phases take turns and the lines
    add up past the peak; the CUDA context. Their sum without cuda_context is `r.per_gpu_total`."""
    lines = {k: r.policy.get(k, 0.0) for k in POLICY_LINES}
    for x in r.lines:
        if x.key == "host_ram":
            continue  # CPU RAM (ALST's offloaded checkpoints), not a line of the GPU's peak
        lines[x.key] = lines.get(x.key, 0.0) + x.gib
    rest = r.per_gpu_total - sum(lines.values())
    lines["overhead"] = max(0.0, rest)
    lines["freed_before_peak"] = min(0.0, rest)
    lines["cuda_context"] = r.cuda_context
    return lines

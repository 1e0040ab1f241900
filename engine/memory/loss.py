"""The loss phase: what the logits and the cross-entropy keep alive, by loss kernel.

Bytes per token x vocabulary entry (b·s·V) at the loss phase's peak, traced from the code:

- "hf" (transformers >= 4.46, src/transformers/loss/loss_utils.py ForCausalLMLoss): forward holds the
  16-bit logits (2), their fp32 upcast `logits.float()` (4) and the log-softmax output cross_entropy
  saves (4); backward holds that saved output (4), the incoming gradient (4) and the log-softmax
  input gradient (4): 12 at the backward's start.
- "hf_legacy" (transformers < 4.46, models/llama/modeling_llama.py: `logits = logits.float()` in the
  model, then `shift_logits = logits[..., :-1, :].contiguous()`): the forward adds the shifted fp32
  copy: 2 + 4 + 4 + 4 = 14 for a moment.
- "bf16" model code that calls CrossEntropyLoss on 16-bit logits without an upcast (Qwen v1
  modeling_qwen.py QWenLMHeadModel.forward; GPT-2-style heads before v4.46): 2 + 2 (contiguous) + 2
  forward, 2 + 2 + 2 backward: 6.
- "chunked" (torchtune/modules/loss/ce_chunked_output_loss.py CEWithChunkedOutputLoss, litgpt
  utils.py chunked_cross_entropy): the fp32 work is per chunk; the saved log-softmax outputs of all
  chunks and a chunk's gradients stay.
- "unsloth" (unsloth/kernels/cross_entropy_loss.py Fast_CrossEntropyLoss): the 16-bit logits and a
  logsumexp per row; the gradient is written into the logits in place.
- "megatron" (Megatron-Core megatron/core/tensor_parallel/cross_entropy.py _VocabParallelCrossEntropy): the 16-bit
  logits and one fp32 copy that becomes the saved softmax and then, in place, the gradient: 2 + 4.
- "torchtitan" (torchtitan 9dec370ad train.py loss_fn `cross_entropy(pred.flatten(0, 1).float(), labels)`, `del pred`
  before backward): the live set is the transformers one, 12 (saved log-softmax 4, its incoming gradient 4, the input
  gradient 4); the blocks freed before it are the fp32 upcast, which the same-size incoming gradient takes again, and
  the 16-bit logits (2), too small for either: 14 reserved.
- "fused_linear" (Liger liger_kernel/ops/fused_linear_cross_entropy.py, Apple Cut Cross-Entropy,
  Unsloth's fused loss): the logits are never materialised whole: a chunk of about b·s·h/V rows in
  fp32 and the input gradient (b·s·h), counted per token x hidden.
"""

from __future__ import annotations

from engine.frameworks import Profile
from engine.memory.constants import constants
from engine.schema import Scenario

PLAIN = ("hf", "hf_legacy", "bf16", "torchtitan")


def effective_kernel(s: Scenario, prof: Profile, kernel: str | None = None) -> str:
    """The kernel in use: an explicit one, else the scenario's; a scenario switched to fused_loss later
    (a planner's "what to change") runs the chunked loss when its own kernel is plain cross-entropy."""
    if kernel:
        return kernel
    chosen = s.loss_kernel or prof.loss_kernel
    if s.fused_loss and chosen in PLAIN:
        return "chunked"
    if s.fused_loss and chosen == "unsloth":
        # Unsloth's fused loss: unsloth-zoo 292f6f70df01 unsloth_zoo/loss_utils.py unsloth_fused_ce_loss ("chunked
        # fused cross_entropy_loss(chunk(X) @ W + b, chunk(labels))", the input gradient computed in forward), or Cut
        # Cross-Entropy where installed: the logits are never whole
        return "fused_linear"
    return chosen


def loss_bytes_per_logit(kernel: str, prof: Profile | None = None) -> float:
    """Bytes per logit the caching allocator holds at the loss phase: a stack's own figure, else the kernel's, as laid
    out in one expandable segment where the stack launches with expandable_segments (catalog [loss.expandable])."""
    table = constants()["loss"]
    if prof is not None and prof.loss_kernel == kernel and "loss_bytes" in prof.constants:
        return prof.constant("loss_bytes", 0.0)
    if prof is not None and prof.constant("expandable_segments", 0.0) and kernel in table.get("expandable", {}):
        return float(table["expandable"][kernel])
    return float(table[kernel])


def live_bytes_per_logit(kernel: str, prof: Profile | None = None) -> float:
    """Bytes per logit alive at once at the loss phase, without the freed blocks the caching allocator keeps.

    Where catalog memory.toml [loss.live] traces a live set below the reserved figure (the transformers loss: 12 of
    20), that; a stack's own fitted loss_bytes and the other kernels keep their figure."""
    live = constants()["loss"].get("live", {})
    own = prof is not None and prof.loss_kernel == kernel and "loss_bytes" in prof.constants
    if kernel in live and not own:
        return float(live[kernel])
    return loss_bytes_per_logit(kernel, prof)


def loss_phase(s: Scenario, tokens: float, prof: Profile, kernel: str | None = None, live: bool = False) -> float:
    """Bytes at the loss phase beyond the model's checkpointed state (logits and CE tensors): as reserved by the
    caching allocator, or (live) only the tensors alive at once, as when the allocator has given its cache back."""
    kernel = effective_kernel(s, prof, kernel)
    per_logit = live_bytes_per_logit(kernel, prof) if live else loss_bytes_per_logit(kernel, prof)
    hidden_term = 0.0
    if kernel == "fused_linear":
        hidden_term = tokens * s.arch.hidden * float(constants()["loss"]["fused_linear_hidden"])
    return tokens * s.arch.vocab * per_logit + hidden_term


def held_outputs(s: Scenario, tokens: float, prof: Profile, kernel: str | None = None) -> float:
    """Logits the training loop keeps alive through the backward of the layers."""
    kernel = effective_kernel(s, prof, kernel)
    if kernel == "fused_linear":
        return 0.0
    return tokens * s.arch.vocab * prof.held_output_bytes

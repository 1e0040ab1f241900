"""«какой максимальный контекст влезет»: the longest training context that fits a GPU, by the verdict's own rule."""

from __future__ import annotations

from engine.fit import NO_HEADROOM, fits
from engine.memory import with_loss_kernel
from engine.schema import Scenario

STEP = 256  # contexts are searched in multiples of this
CEILING = 1 << 20  # a model that states no limit is searched up to 1M tokens


def longest_context(s: Scenario, room_gib: float, kernel: str | None = None) -> int:
    """The longest seq_len (a multiple of STEP, up to the model's own limit) whose peak fits `room_gib` as the
    answer's verdict counts it (engine.fit.fits, no headroom), with the scenario's loss kernel or `kernel`; 0 when
    not even STEP tokens fit. The peak grows with the context (activations and logits are linear in it, attention
    too under FlashAttention), so a bisection finds the edge."""
    top = min(s.arch.max_position_embeddings or CEILING, CEILING) // STEP
    lo, hi = 0, top
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(with_loss_kernel(s.model_copy(update={"seq_len": mid * STEP}), kernel), room_gib, NO_HEADROOM):
            lo = mid
        else:
            hi = mid - 1
    return lo * STEP

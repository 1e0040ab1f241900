"""The fit rule: what a GPU can hold, and whether a breakdown fits in it with a share kept free.

Every "does it fit" in the engine (estimate, plans, changes, comparison, the verdict, chart lines) asks
`fits`; nothing outside the engine holds a headroom number.
"""

from __future__ import annotations

from engine.schema import Breakdown

# Usable share of a GPU's labelled memory: drivers and ECC keep some back (an "80 GB" H100 shows
# 79.2 GiB to PyTorch).
USABLE_FRACTION = 0.98
HEADROOM = 0.10  # a plan keeps 10 % of usable memory free: allocator spikes, longer samples
NO_HEADROOM = 0.0  # the verdict's own rule: it fits when the peak fits
SPARE_SHARE = 0.40  # the asked GPU leaves this share of its memory free: a cheaper GPU may do


def need_gb(b: Breakdown) -> float:
    """What one GPU must hold: the reserved peak plus the CUDA context (outside the allocator)."""
    return b.total + b.cuda_context


def usable_gb(memory_gb: float, headroom: float) -> float:
    return memory_gb * USABLE_FRACTION * (1 - headroom)


def fits(b: Breakdown, memory_gb: float, headroom: float) -> bool:
    """Whether the peak fits in `memory_gb` with `headroom` (a share of the usable memory) kept free."""
    return need_gb(b) <= usable_gb(memory_gb, headroom)


def headroom_gb(b: Breakdown, memory_gb: float) -> float:
    """GiB left free on the GPU at the peak (negative: short by that much)."""
    return round(memory_gb * USABLE_FRACTION - b.cuda_context - b.total, 2)

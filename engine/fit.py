"""The fit rule: what a GPU can hold, and whether a breakdown fits in it with a share kept free.

Every "does it fit" in the engine (estimate, plans, changes, comparison, the verdict, chart lines) asks
`fits` against `capacity` (the memory the driver reports, engine.catalog.usable_memory_gib); nothing
outside the engine holds a headroom number.
"""

from __future__ import annotations

from functools import cache

from engine.catalog import find_gpu, usable_memory_gib
from engine.schema import Breakdown

HEADROOM = 0.10  # a plan keeps 10 % of usable memory free: allocator spikes, longer samples
TIGHT = HEADROOM  # the verdict: under this share to spare is "tight" (still a fit)
NO_HEADROOM = 0.0  # the verdict's own rule: it fits when the peak fits
SPARE_SHARE = 0.40  # the asked GPU leaves this share of its memory free: a cheaper GPU may do


@cache
def capacity(gpu: str | None, memory_gb: float) -> float:
    """GiB a job can use on one GPU named `gpu` (catalog name or alias) with `memory_gb` labelled memory:
    the driver-reported total ("80 GB" H100: 79.19 GiB; Apple: the GPU's share of unified memory)."""
    return usable_memory_gib(find_gpu(gpu, memory_gb), memory_gb)


def need_gb(b: Breakdown) -> float:
    """What one GPU must hold: the reserved peak plus the CUDA context (outside the allocator)."""
    return b.total + b.cuda_context


def fits(b: Breakdown, capacity_gib: float, headroom: float) -> bool:
    """Whether the peak fits in `capacity_gib` (usable GiB, see `capacity`) with `headroom` of it kept free."""
    return need_gb(b) <= capacity_gib * (1 - headroom)


def tight(b: Breakdown, capacity_gib: float) -> bool:
    """It fits, with under `TIGHT` of the capacity to spare, or only because the allocator gave back its cache."""
    return fits(b, capacity_gib, NO_HEADROOM) and (b.pressure or not fits(b, capacity_gib, TIGHT))


def headroom_gb(b: Breakdown, capacity_gib: float) -> float:
    """GiB left free on the GPU at the peak (negative: short by that much)."""
    return round(capacity_gib - b.cuda_context - b.total, 2)

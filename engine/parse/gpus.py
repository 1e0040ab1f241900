"""GPU names: the catalog's GPUs and aliases, plus a few cards the catalog has no figures for."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from engine.catalog import find_gpu, gpus
from engine.parse.names import NameIndex


@dataclass(frozen=True)
class GpuName:
    name: str  # canonical: the catalog's name, or the lexicon's for cards outside it
    memory_gb: float | None
    in_catalog: bool
    variants: tuple[float, ...]  # memory sizes the name comes in ("A100": 40, 80)


# Cards people ask about that the catalog (engine/catalog/gpus.toml: bandwidth, tensor throughput and capabilities,
# each sourced) does not hold: a name and memory only, so an answer gives their memory fit but no hours. Memory per
# GPU as sold; source: NVIDIA/AMD/Intel product pages as collected in the TechPowerUp GPU Database
# (techpowerup.com/gpu-specs), checked 2025. First size is the common one; others are variants. A card moves into
# the catalog once its figures are sourced (the RTX 30/40/50, A40, L40, A800, P40, MI210... rows did).
EXTRA_GPUS: tuple[tuple[str, tuple[float, ...], tuple[str, ...]], ...] = (
    ("RTX 2060", (6, 12), ("2060", "rtx 2060")),
    ("GTX 1080", (8,), ("1080", "gtx 1080")),
    ("Titan V", (12,), ("titan v",)),
    ("A16", (16,), ("a16",)),
    ("M40", (24, 12), ("m40", "tesla m40")),
    ("K80", (12,), ("k80", "tesla k80")),  # a K80 board is 2 GPUs × 12 GB; clouds expose 12 GB each
    ("MI100", (32,), ("mi100", "instinct mi100")),
    ("RX 7900 XT", (20,), ("7900 xt", "rx 7900 xt")),
    ("Gaudi 2", (96,), ("gaudi2", "gaudi 2")),
    ("Gaudi 3", (128,), ("gaudi3", "gaudi 3")),
)

# Spellings of catalog GPUs the catalog does not list: alias → catalog name.
EXTRA_GPU_ALIASES = {
    "a6000 ada": "RTX 6000 Ada", "rtx a6000 ada": "RTX 6000 Ada", "6000ada": "RTX 6000 Ada",
    "h100 sxm 80gb": "H100 SXM", "h100 80gb sxm": "H100 SXM", "h100 nvl 94gb": "H100 NVL",
    "a100 80gb sxm": "A100 80GB SXM", "a100 40gb sxm": "A100 40GB SXM", "a10 24gb": "A10",
    "tesla v100": "V100 16GB", "v100 16gb": "V100 16GB", "v100 sxm3": "V100 32GB", "l40 s": "L40S", "l40 c": "L40S",
    "h200 141gb": "H200 SXM", "b200 180gb": "B200", "mi300x 192gb": "MI300X", "6000 ada": "RTX 6000 Ada",
}


@cache
def gpu_index() -> NameIndex[GpuName]:
    cat = gpus()
    by_name = {}
    entries: list[tuple[str, GpuName]] = []
    for g in cat:
        variants = tuple(sorted({x.memory_gb for x in cat if g.family and x.family == g.family}))
        item = GpuName(g.name, g.memory_gb, True, variants or (g.memory_gb,))
        by_name[g.name] = item
        entries += [(a, item) for a in (g.name, *g.aliases)]
        if g.family and g.family_default:
            entries.append((g.family, item))
    entries += [(a, by_name[n]) for a, n in EXTRA_GPU_ALIASES.items() if n in by_name]
    for name, sizes, aliases in EXTRA_GPUS:
        item = GpuName(name, sizes[0], False, sizes)
        entries += [(a, item) for a in (name, *aliases)]
    # "В200" typed in Cyrillic reads as v200 after folding; B-series names answer to it too.
    entries += [("v" + a[1:], item) for a, item in list(entries) if a[:1] == "b" and a[1:2].isdigit()]
    return NameIndex(entries)


@cache
def resolve(item: GpuName, memory_gb: float | None) -> tuple[str, float | None]:
    """Canonical name and memory for a named GPU and the memory size said with it, if any."""
    if memory_gb is None:
        return item.name, item.memory_gb
    if item.in_catalog:
        g = find_gpu(item.name, memory_gb)
        if g is not None and abs(g.memory_gb - memory_gb) <= 0.5:
            return g.name, g.memory_gb
        return item.name, memory_gb  # a size the catalog lacks (a modded 48 GB 4090): what was said
    return item.name, memory_gb

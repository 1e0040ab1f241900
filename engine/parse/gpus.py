"""GPU names: the catalog's GPUs and aliases, plus common cards the catalog does not price."""

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


# Cards people ask about that the catalog (which needs prices and throughput) lacks. Memory per GPU
# as sold; source: NVIDIA/AMD/Intel product pages as collected in the TechPowerUp GPU Database
# (techpowerup.com/gpu-specs), checked 2025. First size is the common one; others are variants.
EXTRA_GPUS: tuple[tuple[str, tuple[float, ...], tuple[str, ...]], ...] = (
    ("RTX 3060", (12, 8), ("3060", "rtx 3060", "geforce rtx 3060")),
    ("RTX 3060 Ti", (8,), ("3060 ti", "rtx 3060 ti")),
    ("RTX 3070", (8,), ("3070", "rtx 3070")),
    ("RTX 3070 Ti", (8,), ("3070 ti", "rtx 3070 ti")),
    ("RTX 3080", (10, 12), ("3080", "rtx 3080")),
    ("RTX 3080 Ti", (12,), ("3080 ti", "rtx 3080 ti")),
    ("RTX 3090 Ti", (24,), ("3090 ti", "rtx 3090 ti")),
    ("RTX 4060", (8,), ("4060", "rtx 4060")),
    ("RTX 4060 Ti", (8, 16), ("4060 ti", "rtx 4060 ti")),
    ("RTX 4070", (12,), ("4070", "rtx 4070")),
    ("RTX 4070 Super", (12,), ("4070 super", "rtx 4070 super")),
    ("RTX 4070 Ti", (12,), ("4070 ti", "rtx 4070 ti")),
    ("RTX 4070 Ti Super", (16,), ("4070 ti super", "rtx 4070 ti super")),
    ("RTX 4080", (16,), ("4080", "rtx 4080")),
    ("RTX 4080 Super", (16,), ("4080 super", "rtx 4080 super")),
    ("RTX 4090 D", (24,), ("4090d", "4090 d", "rtx 4090 d")),
    ("RTX 5060 Ti", (16, 8), ("5060 ti", "rtx 5060 ti")),
    ("RTX 5070", (12,), ("5070", "rtx 5070")),
    ("RTX 5070 Ti", (16,), ("5070 ti", "rtx 5070 ti")),
    ("RTX 5080", (16,), ("5080", "rtx 5080")),
    ("RTX 2060", (6, 12), ("2060", "rtx 2060")),
    ("RTX 2070", (8,), ("2070", "rtx 2070")),
    ("RTX 2080", (8,), ("2080", "rtx 2080")),
    ("RTX 2080 Ti", (11,), ("2080 ti", "rtx 2080 ti")),
    ("GTX 1080", (8,), ("1080", "gtx 1080")),
    ("GTX 1080 Ti", (11,), ("1080 ti", "gtx 1080 ti")),
    ("Titan RTX", (24,), ("titan rtx",)),
    ("Titan V", (12,), ("titan v",)),
    ("Quadro RTX 6000", (24,), ("rtx 6000", "quadro rtx 6000")),
    ("RTX PRO 6000 Blackwell", (96,), ("rtx pro 6000", "rtx pro 6000 blackwell", "pro 6000")),
    ("RTX A2000", (12, 6), ("a2000", "rtx a2000")),
    ("RTX A4000", (16,), ("a4000", "rtx a4000")),
    ("RTX A4500", (20,), ("a4500", "rtx a4500")),
    ("RTX 4000 Ada", (20,), ("rtx 4000 ada", "4000 ada")),
    ("RTX 4500 Ada", (24,), ("rtx 4500 ada", "4500 ada")),
    ("RTX 5000 Ada", (32,), ("rtx 5000 ada", "5000 ada")),
    ("A40", (48,), ("a40",)),
    ("A30", (24,), ("a30",)),
    ("A16", (16,), ("a16",)),
    ("A800", (80, 40), ("a800",)),
    ("H800", (80,), ("h800",)),
    ("H20", (96,), ("h20",)),
    ("L40", (48,), ("l40",)),
    ("L20", (48,), ("l20",)),
    ("P100", (16, 12), ("p100", "tesla p100")),
    ("P40", (24,), ("p40", "tesla p40")),
    ("M40", (24, 12), ("m40", "tesla m40")),
    ("K80", (12,), ("k80", "tesla k80")),  # a K80 board is 2 GPUs × 12 GB; clouds expose 12 GB each
    ("MI210", (64,), ("mi210", "instinct mi210")),
    ("MI100", (32,), ("mi100", "instinct mi100")),
    ("RX 7900 XTX", (24,), ("7900 xtx", "rx 7900 xtx")),
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

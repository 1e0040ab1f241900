"""Arrangements × techniques: which GPU counts and technique sets fit, best first.

Memory depends on the GPU count and the techniques, not on the GPU model, so each (count,
techniques) breakdown is computed once and checked against every candidate GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

from engine.catalog import find_gpu, gpus
from engine.fit import HEADROOM, fits
from engine.memory import breakdown
from engine.plan.costing import Job, Option, cost_plan, priced_gpus, rank_key, with_slowdown
from engine.schema import Arrangement, Plan, Request, Scenario, Sharding

COUNTS = (1, 2, 4, 8)
NODE_COUNTS = (16, 32, 64)  # across nodes, only when nothing fits on one node
MAX_PLANS = 8

# Time cost of each technique (seed claim S12: checkpointing +20–30 %; 8-bit Adam ~free;
# ZeRO-3 communication; offload bounded by PCIe: speed.py models it in the hours).
TECHNIQUES: dict[str, dict[str, Any]] = {
    "gradient_checkpointing": {"gradient_checkpointing": True},
    "fused_loss": {"fused_loss": True},
    "micro_batch_1": {"batch_size": 1},
    "optimizer_8bit": {"optimizer": "adamw_8bit"},
    "zero3": {"sharding": "zero3"},
    "cpu_offload": {"offload": True},
}


def asked_arrangements(request: Request) -> list[Arrangement]:
    """Each GPU of the request that the catalog knows (or given by its memory), at its count, in order."""
    out: list[Arrangement] = []
    for ref in request.gpus:
        gpu = find_gpu(ref.name, ref.memory_gb)
        name = gpu.name if gpu else (ref.name or f"{ref.memory_gb or 0:g} GB GPU")
        memory = ref.memory_gb or (gpu.memory_gb if gpu else None)
        if memory is not None:
            out.append(Arrangement(gpu=name, memory_gb=float(memory), count=ref.count))
    return out


@cache
def catalog_arrangements(count: int = 1) -> tuple[Arrangement, ...]:
    """Every priced catalog GPU, at `count` (built once: a search over the catalog starts from them)."""
    return tuple(Arrangement(gpu=g.name, memory_gb=g.memory_gb, count=count) for g in priced_gpus())


@lru_cache(maxsize=64)
def all_arrangements(count: int) -> tuple[Arrangement, ...]:
    """Every catalog GPU, priced or not, at `count` (the estimate's fit list)."""
    return tuple(Arrangement(gpu=g.name, memory_gb=g.memory_gb, count=count) for g in gpus())


def variants(base: Scenario) -> list[tuple[list[str], Scenario]]:
    """Technique sets to try: cumulative chains, cheapest in time first (each adds to the ones before).

    A chunked loss costs no time but needs a kernel library, so it leads a second chain rather than
    being forced into every plan: a plan names it only when it is what makes the run fit.
    """
    if base.method == "inference":
        return [([], base)]
    chain = []
    if not base.gradient_checkpointing:
        chain.append("gradient_checkpointing")
    if base.batch_size > 1:
        chain.append("micro_batch_1")
    if base.optimizer in ("adamw", "paged_adamw") and base.method == "full":
        chain.append("optimizer_8bit")
    if base.sharding not in ("zero3", "fsdp"):
        chain.append("zero3")  # full, and LoRA/QLoRA too (PEFT with DeepSpeed ZeRO-3 or FSDP)
    if base.method == "full" and not base.offload:
        chain.append("cpu_offload")
    chains = [chain]
    if not base.fused_loss:
        chains.append(["fused_loss", *chain])  # chunked cross-entropy (Liger, Unsloth, Cut Cross-Entropy)
    out: list[tuple[list[str], Scenario]] = [([], base)]
    for names in chains:
        current = base
        for i, name in enumerate(names):
            current = current.model_copy(update=TECHNIQUES[name])
            out.append((names[: i + 1], current))
    return out


def sharding_at(variant: Scenario, count: int) -> Sharding:
    """The sharding a scenario takes on `count` GPUs."""
    if count == 1 and variant.offload and variant.sharding in ("zero3", "fsdp", "zero2"):
        return variant.sharding  # ZeRO-Offload on one GPU: fp32 master weights and optimizer in CPU RAM
    if count == 1:
        return "none" if variant.sharding in ("ddp", "zero3", "fsdp", "zero2", "zero1") else variant.sharding
    if variant.sharding == "none":
        return "zero3" if variant.method == "full" else "ddp"
    return variant.sharding


def at_count(variant: Scenario, count: int) -> Scenario:
    return variant.model_copy(update={"gpu_count": count, "sharding": sharding_at(variant, count)})


def useless(techniques: list[str], count: int) -> bool:
    return count == 1 and techniques[-1:] == ["zero3"]  # ZeRO-3 alone does nothing on one GPU


def plan_of(job: Job, o: Option) -> Plan:
    """The option costed, with what its techniques cost in time (kept options only: one more estimate each)."""
    return with_slowdown(job, cost_plan(job, o), at_count(job.base, o.count))


def search(job: Job, candidates: Sequence[Arrangement], headroom: float = HEADROOM,
           every_count: bool = True) -> list[Plan]:
    """Arrangements that fit, best first. Named GPUs are tried at the counts named too, and with the
    verdict's own rule (no headroom), so that the answer never says "fits" above plans that disagree.

    Without `every_count` (the whole catalog, cheapest first) a GPU that fits as asked stops growing: more
    of it, with no technique to drop, only costs more per token (scaling losses), so it cannot rank higher.
    """
    options: list[tuple[tuple[float, float, int], Option]] = []
    tried = variants(job.base)
    named_counts = tuple(sorted({c.count for c in candidates} - set(COUNTS) - {1}))
    settled: set[str] = set()
    for counts in (tuple(sorted({*COUNTS, *named_counts})), NODE_COUNTS):
        for count in counts:
            pool = [c for c in candidates if c.gpu not in settled]
            # techniques only add time: a set that contains one that already fits a GPU is not worth a plan
            fitted: dict[str, list[set[str]]] = {}
            for techniques, variant in tried:
                if useless(techniques, count):
                    continue
                used = set(techniques)
                open_gpus = [c for c in pool if not any(f <= used for f in fitted.get(c.gpu, ()))]
                if not open_gpus:
                    continue
                scenario = at_count(variant, count)
                b = breakdown(scenario)
                for c in open_gpus:
                    if fits(b, c.memory_gb, headroom):
                        fitted.setdefault(c.gpu, []).append(used)
                        if not techniques and not every_count and job.rank_by == "cost":
                            settled.add(c.gpu)
                        o = Option(techniques, scenario, b, c.gpu, c.memory_gb, count)
                        options.append((rank_key(job, o), o))
        if options:
            break
    # the cheapest (or fastest) technique set for each (GPU, count); only the kept ones become plans
    kept: dict[tuple[str, int], Option] = {}
    for _key, o in sorted(options, key=lambda item: item[0]):
        if (o.gpu, o.count) not in kept and len(kept) < MAX_PLANS:
            kept[(o.gpu, o.count)] = o
    return [plan_of(job, o) for o in kept.values()]

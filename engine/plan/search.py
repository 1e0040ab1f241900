"""Arrangements × techniques: which GPU counts and technique sets fit, best first.

Memory depends on the GPU count and the techniques, not on the GPU model, so each (count,
techniques) breakdown is computed once and checked against every candidate GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

from engine import pricing, speed
from engine.catalog import Gpu, find_gpu, gpus, unified_memory
from engine.fit import HEADROOM, capacity, fits
from engine.frameworks import profile
from engine.memory import breakdown
from engine.plan.costing import Job, Option, bare_name, cost_plan, priced_gpus, rank_key, with_slowdown
from engine.scenario import for_gpu, hardware_conflicts
from engine.schema import Arrangement, Breakdown, Plan, Request, Scenario, Sharding

COUNTS = (1, 2, 4, 8)
NODE_COUNTS = (16, 32, 64, 128, 256)  # across nodes, when nothing fits on one node without offloading to CPU RAM
MAX_PLANS = 8

# Time cost of each technique (seed claim S12: checkpointing +20–30 %; 8-bit Adam ~free;
# ZeRO-3 communication; offload bounded by PCIe: speed.py models it in the hours).
TECHNIQUES: dict[str, dict[str, Any]] = {
    "gradient_checkpointing": {"gradient_checkpointing": True},
    "fused_loss": {"fused_loss": True},
    "micro_batch_1": {"batch_size": 1},
    "optimizer_8bit": {"optimizer": "adamw_8bit"},
    "zero3": {"sharding": "zero3"},
    # DeepSpeed's ZeRO-Offload steps with its own CPU Adam (deepspeed/ops/adam/cpu_adam.py): a bitsandbytes
    # 8-bit Adam cannot run with it, so the offload replaces it with plain AdamW state kept in CPU RAM
    "cpu_offload": {"offload": True, "optimizer": "adamw"},
}


def asked_arrangements(request: Request) -> list[Arrangement]:
    """Each GPU of the request that the catalog knows (or given by its memory), at its count, in order."""
    out: list[Arrangement] = []
    for ref in request.gpus:
        gpu = find_gpu(ref.name, ref.memory_gb)
        name = gpu.name if gpu else (ref.name or bare_name(ref.memory_gb))
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
    if base.optimizer in ("adamw", "adamw_fused", "paged_adamw") and base.method == "full":
        chain.append("optimizer_8bit")
    if base.sharding not in ("zero3", "fsdp"):
        chain.append("zero3")  # full, and LoRA/QLoRA too (PEFT with DeepSpeed ZeRO-3 or FSDP)
    if not base.offload and (base.method == "full" or adapter_offload(base)):
        chain.append("cpu_offload")
    chains = [chain]
    if "zero3" in chain and "cpu_offload" in chain:
        # the optimizer alone in CPU RAM (ZeRO-Offload without parameter offload): on one GPU it moves
        # gradients and weights once a step instead of streaming the parameters through every pass
        chains.append([n for n in chain if n != "zero3"])
    if not base.fused_loss:
        chains += [["fused_loss", *names] for names in list(chains)]  # chunked cross-entropy (Liger, Unsloth, CCE)
    out: list[tuple[list[str], Scenario]] = [([], base)]
    seen: set[tuple[str, ...]] = set()
    for names in chains:
        current = base
        for i, name in enumerate(names):
            current = current.model_copy(update=TECHNIQUES[name])
            used = names[: i + 1]
            if name == "cpu_offload":  # its CPU Adam replaces the 8-bit optimizer (see TECHNIQUES)
                used = [n for n in used if n != "optimizer_8bit"]
            if tuple(names[: i + 1]) not in seen:
                seen.add(tuple(names[: i + 1]))
                out.append((used, current))
    return out


def adapter_offload(s: Scenario) -> bool:
    """A LoRA/QLoRA run whose stack's recipe offloads the frozen base to CPU RAM when it does not fit
    (engine.frameworks Profile.adapter_offload: Answer.AI fsdp_qlora's --use_cpu_offload)."""
    return s.method in ("lora", "qlora") and profile(s.framework).adapter_offload


def on_gpu(variant: Scenario, gpu: Gpu | None, cache: dict[tuple[object, ...], Scenario],
           name: tuple[object, ...]) -> Scenario:
    """`variant` as it runs on `gpu` (engine.scenario.for_gpu: fp16 AMP on T4/V100, no FlashAttention-2,
    Apple's platform), without a capacity: one scenario per distinct adaptation, so that a breakdown is
    shared by every GPU that runs it the same way. The capacity only matters near the limit (`fit_on`)."""
    if gpu is None:
        return variant
    key = (*name, gpu.bf16, gpu.flash_attention_2, gpu.vendor == "Apple", gpu.rocm_arch is not None)
    found = cache.get(key)
    if found is None:
        found = for_gpu(variant, gpu).model_copy(update={"capacity_gib": None})
        cache[key] = found
    return found


# a peak within this share above the capacity may still fit once the allocator gives back its cache
NEAR_LIMIT = 1.25


def fit_on(scenario: Scenario, b: Breakdown, gpu: Gpu | None, c: Arrangement,
           headroom: float) -> Breakdown | None:
    """The breakdown on GPU `c` when it fits there with `headroom`, else None. A peak just above the
    capacity is estimated again with the capacity (the allocator releases its cache before it fails)."""
    room = capacity(c.gpu, c.memory_gb)
    if b.cpu_ram * min(scenario.gpu_count, speed.gpus_per_node()) > speed.calibration()["offload"][
            "max_host_ram_gib_per_node"]:
        return None  # no machine holds what the offload puts in its CPU RAM
    if fits(b, room, headroom):
        return b
    if headroom > 0 or b.total + b.cuda_context > room * NEAR_LIMIT:
        return None
    bounded = breakdown(scenario.model_copy(update={"capacity_gib": room}))
    return bounded if fits(bounded, room, headroom) else None


def runnable(job: Job | None, scenario: Scenario, gpu: Gpu | None) -> bool:
    """Whether `gpu` can run the scenario at all: engine.scenario.hardware_conflicts (QLoRA without
    bitsandbytes, FlashAttention or bf16 asked where there is none), a bitsandbytes 8-bit optimizer where
    bitsandbytes has no backend, or on Apple Silicon CPU offload (the "CPU RAM" is the same unified memory) and
    more than one GPU."""
    if gpu is None:
        return True
    if scenario.optimizer in EIGHT_BIT and not gpu.bitsandbytes:
        return False
    if unified_memory(gpu) and (scenario.offload or scenario.gpu_count > 1):
        return False  # one Mac is one GPU: no NCCL between machines
    return not hardware_conflicts(scenario, gpu, job.request if job is not None else None)


EIGHT_BIT = ("adamw_8bit", "paged_adamw_8bit")  # bitsandbytes' optimizers (bnb.optim.AdamW8bit)


def sharding_at(variant: Scenario, count: int) -> Sharding:
    """The sharding a scenario takes on `count` GPUs."""
    if count == 1 and variant.offload and variant.sharding in ("zero3", "fsdp", "zero2"):
        return variant.sharding  # ZeRO-Offload on one GPU: fp32 master weights and optimizer in CPU RAM
    if count == 1 and variant.offload and variant.method == "full" and variant.sharding in ("none", "ddp"):
        # the optimizer offloaded on one GPU is ZeRO-Offload, ZeRO stage 2 with offload_optimizer
        # (microsoft/DeepSpeed docs/_tutorials/zero-offload.md); the one-GPU DeepSpeed file the config writes
        return "zero2"
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
    plain = at_count(job.base, o.count)
    gpu = find_gpu(o.gpu, o.memory)
    if gpu is not None:
        plain = for_gpu(plain, gpu)
    return with_slowdown(job, cost_plan(job, o), plain)


def search(job: Job, candidates: Sequence[Arrangement], headroom: float = HEADROOM,
           every_count: bool = True) -> list[Plan]:
    """Arrangements that fit, best first. Named GPUs are tried at the counts named too, and with the
    verdict's own rule (no headroom), so that the answer never says "fits" above plans that disagree.

    Without `every_count` (the whole catalog, cheapest first) a GPU that fits as asked stops growing: more
    of it, with no technique to drop, only costs more per token (scaling losses), so it cannot rank higher.
    When one node only fits with the optimizer (and parameters) in CPU RAM, two to eight nodes are tried
    too, without offload: what a person with 70B to fully fine-tune rents.
    """
    options: list[tuple[tuple[float, float, int], Option]] = []
    tried = variants(job.base)
    named_counts = tuple(sorted({c.count for c in candidates} - set(COUNTS) - {1}))
    settled: set[str] = set()
    hardware = {c.gpu: find_gpu(c.gpu, c.memory_gb) for c in candidates}
    adapted: dict[tuple[object, ...], Scenario] = {}
    pretrain = job.base.pretraining
    for counts in (tuple(sorted({*COUNTS, *named_counts})), NODE_COUNTS):
        node_pass = counts == NODE_COUNTS
        for count in counts:
            pool = [c for c in candidates if c.gpu not in settled]
            # techniques only add time: a set that contains one that already fits a GPU is not worth a plan
            fitted: dict[str, list[set[str]]] = {}
            for techniques, variant in tried:
                if useless(techniques, count) or ((node_pass or pretrain) and "cpu_offload" in techniques):
                    continue
                used = set(techniques)
                open_gpus = [c for c in pool if not any(f <= used for f in fitted.get(c.gpu, ()))]
                if not open_gpus:
                    continue
                at = at_count(variant, count)
                estimates: dict[int, Breakdown] = {}
                for c in open_gpus:
                    gpu = hardware[c.gpu]
                    scenario = on_gpu(at, gpu, adapted, (count, *techniques))
                    if not runnable(job, scenario, gpu):
                        continue
                    b = estimates.get(id(scenario))
                    if b is None:
                        b = estimates[id(scenario)] = breakdown(scenario)
                    got = fit_on(scenario, b, gpu, c, headroom)
                    if got is not None:
                        fitted.setdefault(c.gpu, []).append(used)
                        if not techniques and not every_count and job.rank_by == "cost" and not pretrain:
                            settled.add(c.gpu)
                        o = Option(techniques, scenario, got, c.gpu, c.memory_gb, count)
                        options.append((rank_key(job, o), o))
        if options and not all("cpu_offload" in o.techniques for _k, o in options) and not pretrain:
            break
    if pretrain:
        asked = asked_arrangements(job.request) if job.request is not None and "count" not in job.request.asks \
            else []  # «сколько h100 …»: the count is the question, not the one written
        options = within_a_month(job, options, {(a.gpu, a.count) for a in asked})
    # the cheapest (or fastest) technique set for each (GPU, count); only the kept ones become plans
    kept: dict[tuple[str, int], Option] = {}
    for _key, o in sorted(options, key=lambda item: item[0]):
        if (o.gpu, o.count) not in kept and len(kept) < MAX_PLANS:
            kept[(o.gpu, o.count)] = o
    order = list(kept.values())
    per_node = speed.gpus_per_node()
    nodes = [o for _k, o in sorted(options, key=lambda item: item[0]) if o.count > per_node]
    if nodes and nodes[0] not in order[:2]:
        # one node only fits with CPU offload: the best plan over several nodes is shown second
        order = [o for o in order if o is not nodes[0]]
        order.insert(min(1, len(order)), nodes[0])
    return [plan_of(job, o) for o in order[:MAX_PLANS]]


PRETRAIN_HOURS = 730.0  # a month: pretraining plans that finish within it, when any does (said as an assumption)


def within_a_month(job: Job, options: list[tuple[tuple[float, float, int], Option]],
                   named: set[tuple[str, int]]) -> list[tuple[tuple[float, float, int], Option]]:
    """Training from scratch is rented for weeks, not decades: when some arrangement (several nodes included) runs
    the tokens within a month, the slower ones are not plans (8 RTX 4090s for ten years cost less per token but
    finish nothing), and of each GPU the fewest that make it; the asked GPUs at their count stay whatever their
    hours. Without tokens all are kept."""
    tokens = job.tokens
    if not tokens:
        return options

    def hours(o: Option) -> float:
        gpu = find_gpu(o.gpu)
        return speed.seconds_per_token(o.scenario, gpu, o.count) * tokens / 3600.0 if gpu else float("inf")

    quick = [(k, o) for k, o in options if hours(o) <= PRETRAIN_HOURS]
    if not quick:
        return options
    fewest: dict[str, int] = {}  # of each GPU, the fewest that finish within the month: more only cost scaling
    for _k, o in quick:
        fewest[o.gpu] = min(fewest.get(o.gpu, o.count), o.count)
    return [(k, o) for k, o in options if (o.gpu, o.count) in named
            or (hours(o) <= PRETRAIN_HOURS and o.count == fewest[o.gpu])]  # the asked arrangement stays


def cuda_first(plans: list[Plan]) -> list[Plan]:
    """A catalog-wide list ranked by cost (no GPU named) with the ROCm cards after the CUDA ones, and in each a card
    whose price rests on one provider or a stale list (pricing: `weak`) after the well-priced ones, each group in
    its own order ("the fastest" keeps its own order). A thin price is still shown, said as such, but does not lead.

    Chosen over ranking by price alone: an everyday fine-tune runs a CUDA-first stack (bitsandbytes, FlashAttention-2
    and Liger builds, Unsloth), and the AMD speed rests on an unmeasured utilisation (catalog speed.toml
    [utilisation] amd, "assumption, unmeasured"), so a ROCm card's lower cost per token is not enough to lead the
    list; it stays in it, and a question that names the card gets it as asked."""
    def rocm(p: Plan) -> bool:
        gpu = find_gpu(p.gpu, p.memory_gb)
        return gpu is not None and gpu.rocm_arch is not None

    return sorted(plans, key=lambda p: (rocm(p), not p.own_price and pricing.uncorroborated(p.gpu)))


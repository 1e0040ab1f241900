"""Advice around the plans: what to change when the asked GPU does not fit, a cheaper GPU when it is
mostly idle, a side-by-side comparison of named GPUs, monthly against hourly rental."""

from __future__ import annotations

from typing import Any

from engine import pricing, speed
from engine.catalog import Gpu, find_gpu, unified_memory
from engine.fit import HEADROOM, NO_HEADROOM, SPARE_SHARE, capacity, fits, need_gb, tight
from engine.frameworks import profile
from engine.memory import breakdown
from engine.plan.costing import Job, Option, cost_key, cost_plan, rank_key
from engine.plan.search import (
    adapter_offload,
    at_count,
    catalog_arrangements,
    fit_on,
    on_gpu,
    plan_of,
    runnable,
    useless,
    variants,
)
from engine.schema import (
    Arrangement,
    Breakdown,
    Change,
    Comparison,
    Monthly,
    Plan,
    PlanResult,
    PriceOptions,
    Request,
    Scenario,
)

# The order a person gives things up in: free kernels first, then time, then what the run trains, then the
# job itself. A combination adds changes in this order and keeps only those it needs.
SACRIFICE = ("fused_loss", "optimizer_fused", "gradient_checkpointing", "optimizer_8bit", "smaller_batch",
             "cpu_offload", "mlx", "method", "bits", "shorter_context")


Single = tuple[str, dict[str, Any], dict[str, Any], Breakdown]  # key, params, scenario update, its breakdown
MIN_CONTEXT = 512  # a combination shortens the context down to this, no further


def _single_changes(base: Scenario) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    changes: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    if base.method != "inference":
        if not base.gradient_checkpointing:
            changes.append(("gradient_checkpointing", {}, {"gradient_checkpointing": True}))
        if base.method == "full" and base.optimizer == "adamw" and not profile(base.framework).fused_adam:
            # the foreach step's temporaries (memory.toml step_temp_fraction) go with the fused kernel, free
            changes.append(("optimizer_fused", {}, {"optimizer": "adamw_fused"}))
        if base.method == "full" and base.optimizer in ("adamw", "adamw_fused", "paged_adamw"):
            changes.append(("optimizer_8bit", {}, {"optimizer": "adamw_8bit"}))
        if base.method == "full":
            changes.append(("method", {"to": "lora"},
                            {"method": "lora", "lora_rank": 16, "lora_targets": "all_linear"}))
            changes.append(("method", {"to": "qlora"},
                            {"method": "qlora", "bits": 4, "lora_rank": 16, "lora_targets": "all_linear",
                             "optimizer": "paged_adamw"}))
        if base.method == "lora":
            changes.append(("method", {"to": "qlora"}, {"method": "qlora", "bits": 4, "optimizer": "paged_adamw"}))
        if not base.fused_loss:
            changes.append(("fused_loss", {}, {"fused_loss": True}))
        if base.method == "full" and not base.offload:
            # ZeRO-3's offload moves the parameters to CPU RAM too (DeepSpeed offload_param), said so
            # on one unsharded GPU the offload that runs is ZeRO-Offload (ZeRO stage 2 with offload_optimizer: the fp32
            # master weights and Adam states in CPU RAM; microsoft/DeepSpeed docs/_tutorials/zero-offload.md, "on a
            # single GPU"), the config writers' own one-GPU DeepSpeed file (engine/configs/writers/launch.py)
            one = base.gpu_count == 1 and base.sharding in (None, "none")
            changes.append(("cpu_offload", {"params": True} if base.sharding == "zero3" else {},
                            {"offload": True, "sharding": "zero2"} if one else {"offload": True}))
            if one:
                # where the optimizer's offload is not enough, ZeRO-3 on the one GPU offloads the 16-bit
                # parameters too (DeepSpeed offload_param, "ZeRO-Infinity" on a single GPU: docs/_tutorials/
                # zero.md "ZeRO-Infinity"), the arrangement the plan search already offers ("1× + ZeRO-3 + CPU
                # offload"), so that the verdict and the plans agree
                changes.append(("cpu_offload", {"params": True}, {"offload": True, "sharding": "zero3"}))
        elif adapter_offload(base) and not base.offload:
            # the recipe's own offload (fsdp_qlora --use_cpu_offload true): the frozen 4-bit shards in CPU RAM
            changes.append(("cpu_offload", {"what": "weights"}, {"offload": True, "optimizer": "adamw"}))
        elif base.method == "qlora" and base.gpu_count >= 2 and base.framework_assumed and not base.offload:
            # QLoRA on several cards with no stack named: the Answer.AI FSDP-QLoRA recipe is what runs a 70B on two
            # 24 GB cards (engine/frameworks/fsdp-qlora.toml: --use_cpu_offload, 14.92 GiB measured on 2x4090)
            changes.append(("cpu_offload", {"what": "weights", "recipe": "fsdp_qlora"},
                            {"offload": True, "optimizer": "adamw", "framework": "fsdp-qlora", "sharding": "fsdp"}))
    else:
        if base.bits > 8:
            changes.append(("bits", {"to": 8}, {"bits": 8}))
        if base.bits > 4:
            changes.append(("bits", {"to": 4}, {"bits": 4}))
    if base.seq_len >= 1024:
        changes.append(("shorter_context", {"from": base.seq_len, "to": base.seq_len // 2},
                        {"seq_len": base.seq_len // 2}))
    if base.batch_size > 1:
        changes.append(("smaller_batch", {"from": base.batch_size, "to": 1}, {"batch_size": 1}))
    return changes


def what_to_change(base: Scenario, b0: Breakdown, room: float, gpu: Gpu | None = None,
                   request: Request | None = None) -> list[Change]:
    """Changes to the asked arrangement, each with the total it gives and whether that fits `room` (usable
    GiB): those that fit alone first; when none does on the GPUs asked, the smallest combination that does
    (cheapest sacrifices first); then more GPUs. Changes the GPU cannot run (QLoRA without bitsandbytes) are
    left out."""
    def estimate(update: dict[str, Any]) -> Breakdown:
        return breakdown(base.model_copy(update=update))

    out: list[Change] = []
    singles: list[Single] = []
    pretraining = request is not None and request.stage == "pretrain"
    full_asked = request is not None and request.method == "full"
    for key, params, update in _single_changes(base):
        if key == "method" and (pretraining or (full_asked and params.get("to") == "qlora")):
            continue  # pretraining is no adapter job; full fine-tuning asked may drop to LoRA, never to 4-bit QLoRA
        if pretraining and key in ("cpu_offload", "bits"):
            continue  # a run from scratch on CPU-offloaded or 4-bit weights is no pretraining: more GPUs are the way
        if not runnable(None, base.model_copy(update=update), gpu):
            continue
        b = estimate(update)
        if b0.total - b.total < 0.05:
            continue
        singles.append((key, params, update, b))  # a combination halves the context one step at a time
        if key == "shorter_context" and not fits(b, room, NO_HEADROOM):
            key, params, update, b = _context_that_fits(base, room, (key, params, update, b))
        out.append(Change(key=key, params=params, saves_gb=round(b0.total - b.total, 1),
                          fits=fits(b, room, NO_HEADROOM), total_gb=round(need_gb(b), 2), tight=tight(b, room),
                          update=update))
    if any(c.key == "cpu_offload" and c.fits and c.update.get("sharding") == "zero2" for c in out):
        # the optimizer's offload is enough on the one GPU: the parameters' (slower, over PCIe every step) is not
        # offered beside it
        out = [c for c in out if not (c.key == "cpu_offload" and c.update.get("sharding") == "zero3"
                                      and base.gpu_count == 1)]
    if base.method == "qlora" and gpu is not None and not gpu.bitsandbytes:
        out += _without_bitsandbytes(base, b0, room, gpu)
    if singles:
        combined = _combination(base, b0, room, singles)
        if combined is not None:
            out.append(combined)
    # what fits first, the smallest sacrifice first (the verdict's fix is the first: a combination of small
    # sacrifices beats one big one, "fused loss + context 4096" before "context 1024"); then the rest
    out.sort(key=lambda c: (not c.fits, *(_cost_of(c, base) if c.fits else (0, 0, 0)), c.total_gb))
    if full_asked:  # what keeps full fine-tuning first, LoRA after it: an alternative, not the fix of full training
        out.sort(key=lambda c: any(p.key == "method" for p in (c.parts or [c])))
    for count in (c for c in (2, 4, 8) if c > base.gpu_count):
        sharding = "none" if base.method == "inference" else "fsdp" if base.sharding == "fsdp" else "zero3"
        if not runnable(None, base.model_copy(update={"gpu_count": count, "sharding": sharding}), gpu):
            break
        b = estimate({"gpu_count": count, "sharding": sharding})
        if fits(b, room, NO_HEADROOM) and b0.total - b.total >= 0.05:
            out.append(Change(key="more_gpus", params={"count": count, "sharding": sharding},
                              saves_gb=round(b0.total - b.total, 1), fits=True, total_gb=round(need_gb(b), 2),
                              update={"gpu_count": count, "sharding": sharding}))
            break
    return out


def _without_bitsandbytes(base: Scenario, b0: Breakdown, room: float, gpu: Gpu) -> list[Change]:
    """QLoRA asked where bitsandbytes has no backend (Apple Silicon): the routes that run there instead.

    On a Mac, MLX: mlx-lm trains LoRA on a 4-bit MLX model, which is QLoRA ("If --model points to a quantized
    model, then the training will use QLoRA", ml-explore/mlx-lm mlx_lm/LORA.md). MLX's 4-bit format (group 64,
    a 16-bit scale and bias per group: 4.5 bits) is the size the estimate already counts for NF4
    (catalog memory.toml [weights] nf4), and MLX has no PEFT fp32 upcast of the other layers, so its memory is the
    4-bit estimate less that upcast. Elsewhere and on a Mac too: 16-bit LoRA, which PyTorch (MPS) runs."""
    out: list[Change] = []
    if unified_memory(gpu):
        mlx = b0.model_copy(update={"upcast": 0.0, "total": b0.total - b0.upcast})
        out.append(Change(key="mlx", params={"bits": 4}, saves_gb=round(b0.upcast, 1),
                          fits=fits(mlx, room, NO_HEADROOM), total_gb=round(need_gb(mlx), 2), tight=tight(mlx, room)))
    lora = base.model_copy(update={"method": "lora", "bits": 16, "optimizer": "adamw"})
    if runnable(None, lora, gpu):
        b = breakdown(lora)
        out.append(Change(key="method", params={"to": "lora", "bits": 16}, saves_gb=round(b0.total - b.total, 1),
                          fits=fits(b, room, NO_HEADROOM), total_gb=round(need_gb(b), 2), tight=tight(b, room)))
    return out


def _context_that_fits(base: Scenario, room: float, halved: Single) -> Single:
    """The context halved again, down to MIN_CONTEXT, until the job fits `room`; the first halving if none does."""
    seq = base.seq_len // 2
    while seq // 2 >= MIN_CONTEXT:
        seq //= 2
        b = breakdown(base.model_copy(update={"seq_len": seq}))
        if fits(b, room, NO_HEADROOM):
            return ("shorter_context", {"from": base.seq_len, "to": seq}, {"seq_len": seq}, b)
    return halved


def _sacrifice(key: str) -> int:
    return SACRIFICE.index(key) if key in SACRIFICE else len(SACRIFICE)


def _cost_of(c: Change, base: Scenario) -> tuple[int, int, int]:
    """How much a fitting change gives up: its largest sacrifice, the context it cuts, how many changes."""
    parts = c.parts or [c]
    cut = max((base.seq_len - int(p.params.get("to", base.seq_len)) for p in parts if p.key == "shorter_context"),
              default=0)
    return max(_sacrifice(p.key) for p in parts), cut, len(parts)


def _combination(base: Scenario, b0: Breakdown, room: float,
                 singles: list[Single]) -> Change | None:
    """The fewest, cheapest changes that together fit `room`: add in SACRIFICE order until it fits, then drop
    each one the rest fit without."""
    ordered = sorted(singles, key=lambda s: (_sacrifice(s[0]), s[3].total))
    # one change per key (the larger saving of "bits 8" and "bits 4" is the one kept)
    picked: dict[str, Single] = {}
    for s in ordered:
        if s[0] not in picked or s[3].total < picked[s[0]][3].total:
            picked[s[0]] = s
    # offloading to CPU RAM is the last resort: a combination without it is tried first
    without = _fitting_combination(base, room, [s for s in picked.values() if s[0] != "cpu_offload"])
    found = without or _fitting_combination(base, room, list(picked.values()))
    if found is None:
        return None
    chosen, b = found
    if len(chosen) < 2:
        return None
    adapters = any(k == "method" for k, _p, _u, _x in chosen)  # a LoRA base is offloaded whole (engine.memory.state)
    parts = [Change(key=k, params={**p, "params": True} if k == "cpu_offload" and adapters else p,
                    saves_gb=round(b0.total - x.total, 1), fits=False, total_gb=round(need_gb(x), 2), update=u)
             for k, p, u, x in chosen]
    return Change(key="combined", params={}, saves_gb=round(b0.total - b.total, 1), fits=True,
                  total_gb=round(need_gb(b), 2), parts=parts, tight=tight(b, room),
                  update=_merged([part.update for part in parts]))


def _merged(updates: list[dict[str, Any]]) -> dict[str, Any]:
    """The scenario fields of changes made together. ZeRO-Offload (stage 2) is the offload of full fine-tuning on one
    GPU; with a switch to LoRA the offload is the adapters' own (the frozen base in CPU RAM, engine.memory.state)."""
    update: dict[str, Any] = {}
    for u in updates:
        update.update(u)
    if update.get("method") in ("lora", "qlora") and update.get("sharding") == "zero2" and update.get("offload"):
        del update["sharding"]
    return update


def _together(base: Scenario, parts: list[Single]) -> Breakdown:
    return breakdown(base.model_copy(update=_merged([part[2] for part in parts])))


def _fitting_combination(base: Scenario, room: float, ordered: list[Single]) -> tuple[list[Single], Breakdown] | None:
    """Changes of `ordered` added one by one until they fit `room`, then pruned of those not needed."""
    chosen: list[Single] = []
    b: Breakdown | None = None
    for s in ordered:
        chosen.append(s)
        b = _together(base, chosen)
        if fits(b, room, NO_HEADROOM):
            break
    else:
        # the context last: halved again down to MIN_CONTEXT ("QLoRA + fused CE + 1k context")
        if not chosen or chosen[-1][0] != "shorter_context":
            return None
        seq = chosen[-1][1]["to"]
        while seq // 2 >= MIN_CONTEXT:
            seq //= 2
            shorter = ("shorter_context", {"from": base.seq_len, "to": seq}, {"seq_len": seq},
                       breakdown(base.model_copy(update={"seq_len": seq})))
            chosen[-1] = shorter
            b = _together(base, chosen)
            if fits(b, room, NO_HEADROOM):
                break
        else:
            return None
    for s in list(chosen[:-1]):
        rest = [x for x in chosen if x is not s]
        trial = _together(base, rest)
        if fits(trial, room, NO_HEADROOM):
            chosen, b = rest, trial
    return (chosen, b) if b is not None else None


MAX_CHEAPER_GPUS = 64  # a cheaper GPU is offered at up to this many (eight nodes of eight)


def compare(job: Job, named: Arrangement) -> Comparison:
    """The named GPU at the count asked: the cheapest technique set that fits (and that the GPU can run),
    or the shortfall."""
    count = named.count
    gpu = find_gpu(named.gpu, named.memory_gb)
    room = capacity(named.gpu, named.memory_gb)
    adapted: dict[tuple[object, ...], Scenario] = {}
    fitting: list[tuple[tuple[float, float, int], Option]] = []
    for techniques, variant in variants(job.base):
        if useless(techniques, count):
            continue
        scenario = on_gpu(at_count(variant, count), gpu, adapted, (count, *techniques))
        if not runnable(job, scenario, gpu):
            continue
        got = fit_on(scenario, breakdown(scenario), gpu, named, NO_HEADROOM)
        if got is not None:
            o = Option(techniques, scenario, got, named.gpu, named.memory_gb, count)
            fitting.append((rank_key(job, o), o))
            if not techniques:
                break  # nothing to add: as asked is the cheapest
    best = plan_of(job, min(fitting, key=lambda item: item[0])[1]) if fitting else None
    plain = on_gpu(at_count(job.base, count), gpu, adapted, (count,))
    first = breakdown(plain.model_copy(update={"capacity_gib": room}) if gpu is not None else plain)
    return Comparison(gpu=named.gpu, count=count, fits=best is not None, need_gb=round(need_gb(first), 2),
                      memory_gb=named.memory_gb, plan=best, thin_price=pricing.thin_price(named.gpu))


def cheaper_gpu(job: Job, b0: Breakdown, named: Arrangement, plans: list[Plan]) -> Plan | None:
    """When the asked GPU leaves much of its memory unused, the cheapest catalog GPU that also fits, at the
    count asked or twice it (never more than MAX_CHEAPER_GPUS, and more than one node only when the asked
    arrangement is)."""
    if not fits(b0, capacity(named.gpu, named.memory_gb), SPARE_SHARE):
        return None
    asked = next((p for p in plans if p.gpu == named.gpu and p.count == named.count), None)
    if asked is None or asked.per_hour is None:
        return None
    per_node = max(named.count, speed.gpus_per_node())
    options: list[Plan] = []
    adapted: dict[tuple[object, ...], Scenario] = {}
    for count in sorted({named.count, named.count * 2}):
        if count > min(MAX_CHEAPER_GPUS, per_node):
            continue
        at = at_count(job.base, count)
        estimates: dict[int, Breakdown] = {}
        for c in catalog_arrangements():
            gpu = find_gpu(c.gpu, c.memory_gb)
            if c.memory_gb >= named.memory_gb:
                continue
            scenario = on_gpu(at, gpu, adapted, (count,))
            if not runnable(job, scenario, gpu):
                continue
            b = estimates.get(id(scenario))
            if b is None:
                b = estimates[id(scenario)] = breakdown(scenario)
            if fits(b, capacity(c.gpu, c.memory_gb), HEADROOM):
                options.append(cost_plan(job, Option([], scenario, b, c.gpu, c.memory_gb, count)))
    # cheaper for the whole run (money per token), not only per hour: a slow GPU can cost more in the end
    cheaper = [p for p in options if cost_key(p)[0] < cost_key(asked)[0] * 0.9]
    return min(cheaper, key=cost_key) if cheaper else None


def monthly(result: PlanResult, prices: PriceOptions) -> Monthly | None:
    """Monthly against hourly for the best plan's GPU, when a monthly offer exists; a break-even above the
    hours of a month says hourly is cheaper at any use."""
    if not result.plans or result.scenario.method == "inference":
        return None
    best = result.plans[0]
    if best.own_price:
        return None
    try:
        m = pricing.monthly_vs_hourly(best.gpu, pricing.HOURS_PER_MONTH, currency=prices.currency)
    except (LookupError, ValueError):
        return None
    return Monthly(gpu=m.gpu, count=best.count, currency=m.currency, monthly_price=round(m.monthly_price, 2),
                   hourly_price=round(m.hourly_price, 2), break_even_hours=round(m.break_even_hours, 1),
                   run_hours=best.hours, hourly_always=m.break_even_hours >= pricing.HOURS_PER_MONTH)

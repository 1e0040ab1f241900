"""What to change (message keys posttrain.change.*) and the ways to fit a long sequence (long_context_options)."""

from __future__ import annotations

import math
from typing import Any

from engine import speed
from engine.fit import HEADROOM, TIGHT
from engine.posttrain.setup import Setup, build_setup, constants, heads_divide
from engine.scenario import ScenarioError
from engine.schema import Change, GpuRef, Request, Rollout
from engine.schema.posttrain import LongContextOption, PostTrainOptions, PostTrainResult


def _total(request: Request, options: PostTrainOptions | None) -> float | None:
    found = _result(request, options)
    return None if found is None else found.per_gpu_total


def _result(request: Request, options: PostTrainOptions | None) -> PostTrainResult | None:
    from engine.posttrain.result import posttrain_result

    try:
        return posttrain_result(request, options, advise=False)
    except (ScenarioError, ValueError):
        return None


def rollout_fails(result: PostTrainResult) -> bool:
    """The rollout as set cannot run (engine.posttrain.result.ROLLOUT_FAILS): no change fixes the job unless it
    fixes that too."""
    from engine.posttrain.result import ROLLOUT_FAILS

    return any(n in ROLLOUT_FAILS for n in result.notes)


def _fits(request: Request, total: float, headroom: float = 0.0) -> bool | None:
    """Whether `total` (plus the CUDA context) fits the request's card with `headroom` of it kept free (the verdict's
    rule, engine.fit: 0 for a fit, TIGHT for a comfortable one)."""
    from engine.memory import constants as mc
    from engine.posttrain.result import card_limit

    limit = card_limit(request)
    return None if limit is None else total + float(mc()["overhead"]["cuda_context_gib"]) <= limit * (1 - headroom)


def _candidates(request: Request, options: PostTrainOptions | None,
                result: PostTrainResult) -> list[tuple[str, dict[str, Any], Request, PostTrainOptions | None]]:
    out: list[tuple[str, dict[str, Any], Request, PostTrainOptions | None]] = []
    st = result.settings
    stage = result.stage
    if stage == "grpo":
        b = st.per_device_train_batch_size
        if b > 1:
            half = max(1, b // 2)
            out.append(("fewer_generations", {"per_device_train_batch_size": half,
                                              "num_generations": max(2, (st.num_generations or b) // 2)},
                        request.model_copy(update={"batch_size": half,
                                                   "num_generations": max(2, (st.num_generations or b) // 2)}),
                        options))
    if stage in ("grpo", "ppo") and (st.max_completion_length or 0) >= 256:
        c = (st.max_completion_length or 0) // 2
        out.append(("shorter_completions", {"max_completion_length": c},
                    request.model_copy(update={"output_len": c, "prompt_len": st.max_prompt_length}), options))
    if result.method == "full":
        out.append(("use_lora", {"lora_rank": 16}, request.model_copy(update={"method": "lora"}), options))
    elif result.method == "lora":
        out.append(("use_qlora", {"bits": 4}, request.model_copy(update={"method": "qlora", "bits": 4}), options))
    if st.vllm_mode == "colocate":
        rollout = request.rollout or Rollout()
        used = rollout.gpu_memory_utilization or constants()["defaults"]["vllm_gpu_memory_utilization"]
        best = st.vllm_gpu_memory_utilization
        if best is not None and best != used:  # what vLLM needs: less frees the trainer, more lets vLLM start
            out.append(("vllm_gpu_memory_utilization", {"vllm_gpu_memory_utilization": best},
                        request.model_copy(update={"rollout": rollout.model_copy(update={
                            "gpu_memory_utilization": best})}), options))
        if not st.vllm_enable_sleep_mode:
            # asleep during the step, vLLM may take the share it needs (TRL vllm_enable_sleep_mode)
            share = max(used, best or used)
            out.append(("sleep_mode", {"vllm_enable_sleep_mode": True} | (
                {"vllm_gpu_memory_utilization": share} if share != used else {}),
                        request.model_copy(update={"rollout": rollout.model_copy(update={
                            "sleep": True, "gpu_memory_utilization": share})}), options))
        out += _vllm_tensor_parallel(request, options, result, rollout)
        gpus = [g.model_copy(update={"count": g.count + 1}) for g in request.gpus] or [GpuRef(count=2)]
        out.append(("vllm_server_gpu", {"vllm_mode": "server", "extra_gpus": 1},
                    request.model_copy(update={"gpus": gpus, "rollout": rollout.model_copy(update={
                        "mode": "server", "gpu_memory_utilization": None})}), options))
    if stage in ("dpo", "kto") and result.method == "full" and not st.precompute_ref_log_probs:
        out.append(("precompute_ref_log_probs", {"precompute_ref_log_probs": True},
                    request, (options or PostTrainOptions()).model_copy(update={"precompute_ref_log_probs": True})))
    if not request.fused_loss and result.policy.get("logits", 0) > result.policy.get("activations", 0):
        out.append(("fused_loss", {"use_liger_kernel": True}, request.model_copy(update={"fused_loss": True}),
                    options))
    return out


def _vllm_tensor_parallel(request: Request, options: PostTrainOptions | None, result: PostTrainResult,
                          rollout: Rollout) -> list[tuple[str, dict[str, Any], Request, PostTrainOptions | None]]:
    """A colocated vLLM that cannot hold the model on one card: split it over 2, 4, 8 of the training GPUs
    (TRL vllm_tensor_parallel_size, which must divide the processes), at the share that degree needs."""
    if not rollout_fails(result) or (rollout.tensor_parallel or 1) > 1:
        return []
    n = sum(g.count for g in request.gpus) or 1
    for t in (2, 4, 8):
        if t > n or n % t:
            break
        split = request.model_copy(update={"rollout": rollout.model_copy(update={"tensor_parallel": t})})
        found = _result(split, options)
        share = found.settings.vllm_gpu_memory_utilization if found is not None else None
        if share is None:
            continue
        sized = split.model_copy(update={"rollout": split.rollout.model_copy(update={  # type: ignore[union-attr]
            "gpu_memory_utilization": share})})
        again = _result(sized, options)
        if again is not None and not rollout_fails(again):
            return [("vllm_tensor_parallel", {"vllm_tensor_parallel_size": t, "vllm_gpu_memory_utilization": share},
                     sized, options)]
    return []


def changes(request: Request, options: PostTrainOptions | None, result: PostTrainResult) -> list[Change]:
    out = []
    failing = rollout_fails(result)
    for key, params, req, opts in _candidates(request, options, result):
        found = _result(req, opts)
        if found is None:
            continue
        total = found.per_gpu_total
        if total >= result.per_gpu_total and key not in ("vllm_server_gpu",) and not (
                failing and not rollout_fails(found)):  # a change that lets the rollout run is one even if bigger
            continue
        fits = _fits(req, total)
        out.append(Change(key=f"posttrain.change.{key}", params=params, per_gpu_total=round(total, 3),
                          fits=bool(fits) and not rollout_fails(found) if fits is not None else None,
                          tight=bool(fits) and not _fits(req, total, TIGHT)))
    seen = {c.key for c in out}
    for opt in long_context_options(request, options):
        if f"posttrain.change.{opt.kind}" in seen and not opt.combined:
            continue
        if opt.blocked is None and opt.per_gpu_total < result.per_gpu_total:
            out.append(Change(key=f"posttrain.change.{opt.kind}", params={
                "degree": opt.degree, "gpus": opt.gpus, "host_ram_gib": round(opt.host_ram_gib, 1),
                "time_factor": round(opt.time_factor, 2), **({"with": ",".join(opt.combined)} if opt.combined else {})},
                per_gpu_total=opt.per_gpu_total, fits=opt.fits and not failing, tight=opt.tight))
            if opt.fits and not opt.tight:
                break  # a comfortable fit: what comes after it is slower or needs more GPUs
    # the fits first (comfortable before tight), each group in the order found
    return sorted(out, key=lambda c: (not c.fits, c.tight))


def _step_seconds(setup: Setup) -> float:
    """Seconds of one micro-step's compute on the request's GPU (H100 SXM when none is named)."""
    try:
        gpu = speed.resolve_gpu(setup.gpu_name or "H100 SXM")
    except ValueError:
        gpu = speed.resolve_gpu("H100 SXM")
    tokens = float(setup.sequences * setup.tokens)
    return speed.training_time(setup.scenario, gpu, setup.scenario.gpu_count, tokens).hours * 3600.0


def long_context_options(request: Request, options: PostTrainOptions | None = None,
                         memory_gib: float | None = None) -> list[LongContextOption]:
    """Ways to fit the sequence, cheapest first: context parallelism over 2..64 GPUs (Ulysses when the heads
    divide, else ring), tensor parallelism, ALST activation-checkpoint offload and TiledMLP, a fused loss.

    `memory_gib` is the usable memory of one GPU (default: the request's first GPU x 0.98). Each option is the full
    post-training estimate of the request with that change; `fits` compares it (plus the CUDA context) with the GPU.
    The planner calls this when the sequence-dependent lines (activations, logits) are what does not fit.
    """
    from engine.memory import constants as mc
    from engine.posttrain.result import card_limit, posttrain_result

    opts = options or PostTrainOptions()
    limit = memory_gib if memory_gib is not None else card_limit(request)
    ctx = float(mc()["overhead"]["cuda_context_gib"])
    try:
        base = build_setup(request, opts)
    except (ScenarioError, ValueError):
        return []
    arch = base.scenario.arch
    count = max((g.count for g in request.gpus), default=1)
    c = constants()
    out: list[LongContextOption] = []

    def add(kind: str, degree: int, req: Request, o: PostTrainOptions, gpus: int, time_factor: float,
            cp_kind: str | None = None, blocked: str | None = None, combined: tuple[str, ...] = ()) -> None:
        if blocked:
            out.append(LongContextOption(kind=kind, degree=degree, cp_kind=cp_kind, gpus=gpus,
                                         per_gpu_total=math.inf, host_ram_gib=0.0, time_factor=time_factor,
                                         fits=False, blocked=blocked))
            return
        try:
            r = posttrain_result(req, o, advise=False)
        except (ScenarioError, ValueError):
            return
        fits = limit is not None and r.per_gpu_total + ctx <= limit
        tight = fits and limit is not None and r.per_gpu_total + ctx > limit * (1 - HEADROOM)
        out.append(LongContextOption(kind=kind, degree=degree, cp_kind=cp_kind, gpus=gpus,
                                     per_gpu_total=r.per_gpu_total, host_ram_gib=r.host_ram_gib,
                                     time_factor=time_factor, fits=fits, tight=tight, combined=list(combined)))

    current = request.context_parallel or 1
    for d in c["context_parallel"]["degrees"]:
        if d <= current or base.tokens / d < c["context_parallel"]["min_tokens_per_gpu"]:
            continue
        kind = opts.cp_kind or ("ulysses" if heads_divide(arch.heads, arch.kv_heads, d) else "ring")
        gpus = max(count, d)
        grown = [g.model_copy(update={"count": max(g.count, d)}) for g in request.gpus] or [GpuRef(count=d)]
        req = request.model_copy(update={"context_parallel": d, "gpus": grown,
                                         "sharding": request.sharding or "zero3"})
        # sequence parallelism keeps the step's FLOPs per token; the all-to-alls (Ulysses) or ring exchanges cost
        factor = 1.0 + c["context_parallel"]["overhead_per_doubling"] * math.log2(d)
        add("context_parallel", d, req, opts.model_copy(update={"cp_kind": kind}), gpus, factor, kind)
        if not request.fused_loss:  # ALST's recipe: sequence parallelism with Liger's fused loss
            add("context_parallel", d, req.model_copy(update={"fused_loss": True}),
                opts.model_copy(update={"cp_kind": kind}), gpus, factor, kind, combined=("fused_loss",))
    offload_factor = 1.0
    if not opts.activation_offload:
        ckpt_gib = base.sequences * base.tokens / (request.context_parallel or 1) * arch.layers * arch.hidden * 2 \
            / 2**30
        exposed = (1 - c["alst"]["offload_overlap"]) * 2 * ckpt_gib * 2**30 / (c["alst"]["pcie_gbps"] * 1e9)
        offload_factor = 1.0 + exposed / _step_seconds(base)
        add("activation_offload", 1, request, opts.model_copy(update={"activation_offload": True}), count,
            offload_factor)
    if not opts.tiled_mlp:
        add("tiled_mlp", 1, request, opts.model_copy(update={"tiled_mlp": True}), count,
            c["alst"]["tiled_mlp_time_factor"])
    if not request.fused_loss:
        fused = request.model_copy(update={"fused_loss": True})
        add("fused_loss", 1, fused, opts, count, 1.0)
        # ALST on the GPUs asked (arXiv 2506.13996 section 3): fused loss + checkpoints offloaded to CPU (+ TiledMLP)
        if not opts.activation_offload:
            add("activation_offload", 1, fused, opts.model_copy(update={"activation_offload": True}), count,
                offload_factor, combined=("fused_loss",))
            if not opts.tiled_mlp:
                add("activation_offload", 1, fused, opts.model_copy(update={"activation_offload": True,
                                                                           "tiled_mlp": True}),
                    count, offload_factor * c["alst"]["tiled_mlp_time_factor"], combined=("fused_loss", "tiled_mlp"))
    current_tp = request.tensor_parallel or 1
    for t in (2, 4, 8):
        if t <= current_tp:
            continue
        gpus = max(count, t * (request.context_parallel or 1))
        blocked = None if arch.heads % t == 0 else "posttrain.blocked.heads_do_not_divide"
        grown = [g.model_copy(update={"count": max(g.count, gpus)}) for g in request.gpus] or [GpuRef(count=gpus)]
        add("tensor_parallel", t, request.model_copy(update={"tensor_parallel": t, "gpus": grown}), opts, gpus,
            1.0 + c["tensor_parallel"]["overhead_per_doubling"] * math.log2(t), blocked=blocked)
    # fewest GPUs, then a comfortable fit before a tight one, then the least time
    out.sort(key=lambda o: (not o.fits, o.blocked is not None, o.gpus, o.tight, o.time_factor, len(o.combined),
                            o.per_gpu_total))
    return out


def pick_long_context(request: Request, options: PostTrainOptions | None = None,
                      memory_gib: float | None = None) -> LongContextOption | None:
    """The option the planner takes when the sequence is what does not fit: the job's activations + logits
    outweigh its model states, and an option of `long_context_options` fits (fewest GPUs, then least time).
    None when the states are the problem (shard them, quantize, offload instead) or nothing fits."""
    from engine.posttrain.result import posttrain_result

    try:
        r = posttrain_result(request, options, advise=False)
    except (ScenarioError, ValueError):
        return None
    p = r.policy
    states = p["weights"] + p["adapters"] + p["gradients"] + p["optimizer"]
    if p["activations"] + p["logits"] <= states:
        return None
    return next((o for o in long_context_options(request, options, memory_gib) if o.fits), None)

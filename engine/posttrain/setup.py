"""Request → Setup: the post-training job as the trainer runs it (sequences, lengths, models, GPUs, rollout).

Defaults are TRL's (catalog/posttrain.toml cites each line); every default used becomes an assumption "key=value".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from engine.catalog import HERE, find_gpu
from engine.datafiles import read
from engine.frameworks import megatron_core, profile
from engine.scenario import ScenarioError, build_scenario, stack_of
from engine.schema import Assumption, Request, Scenario
from engine.schema.posttrain import PREFERENCE_STAGES, REFERENCE_FREE, CpKind, PostTrainOptions


@cache
def constants() -> dict[str, Any]:
    return read(HERE / "posttrain.toml")


@dataclass
class Setup:
    stage: str
    scenario: Scenario  # the policy's scenario, whole sequences (before context parallelism)
    sequences: int  # sequences per micro-step through the policy (pairs counted twice)
    prompt_len: int
    completion_len: int
    tokens: int  # per sequence
    reference: str | None  # "copy" | "adapter_off" | "precomputed" | None
    beta: float | None
    cp: int
    cp_kind: CpKind | None
    tp: int
    pp: int  # pipeline stages (1F1B): each GPU holds layers / pp of the model
    train_gpus: int
    rollout_gpus: int
    rollout: str | None  # "colocate" | "server" | None (HF generate) ; None also for stages without generation
    vllm_util: float | None
    vllm_tp: int
    sleep: bool
    generation_batch: int  # sequences generated at once per training GPU
    card_gib: float | None  # the GPU's memory as the driver reports it (vLLM's share is a fraction of it)
    gpu_name: str | None
    framework: str | None
    generations: int
    options: PostTrainOptions
    assumptions: list[Assumption] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _card(request: Request) -> tuple[str | None, float | None]:
    if not request.gpus:
        return None, None
    ref = request.gpus[0]
    gpu = find_gpu(ref.name, ref.memory_gb)
    if ref.total_gib:
        return (gpu.name if gpu else ref.name), ref.total_gib
    if gpu is not None and (ref.memory_gb is None or abs(gpu.memory_gb - ref.memory_gb) < 1):
        return gpu.name, gpu.driver_gib
    return (gpu.name if gpu else ref.name), (ref.memory_gb * 0.98 if ref.memory_gb else None)


def heads_divide(heads: int, kv_heads: int, degree: int) -> bool:
    """DeepSpeed Ulysses splits attention heads over the degree: q heads must divide, KV heads divide or replicate."""
    return heads % degree == 0 and (kv_heads % degree == 0 or degree % kv_heads == 0)


def _lengths(request: Request, stage: str, c: dict[str, Any], extra: list[Assumption],
             updates: dict[str, Any]) -> tuple[int, int]:
    """(prompt, completion) of an RL stage, and the row length of a preference stage, with what was assumed."""
    prompt = completion = 0
    if stage in ("grpo", "ppo"):
        completion = request.output_len or 0
        prompt = request.prompt_len or 0
        if not completion:
            completion = c["completion_len"] if stage == "grpo" else c["ppo_completion_len"]
            if request.seq_len and not prompt:
                completion = max(1, request.seq_len - c["prompt_len"]) if request.seq_len > c["prompt_len"] \
                    else request.seq_len
            extra.append(Assumption(key="output_len", value=completion))
        if not prompt:
            prompt = max(0, request.seq_len - completion) if request.seq_len else c["prompt_len"]
            if not request.seq_len:
                extra.append(Assumption(key="prompt_len", value=prompt))
        updates["seq_len"] = prompt + completion
    elif (stage in PREFERENCE_STAGES or stage == "rm") and request.seq_len is None:
        updates["seq_len"] = c["preference_max_length"]
        extra.append(Assumption(key="max_length", value=c['preference_max_length']))
    return prompt, completion


def _generations(request: Request, stage: str, c: dict[str, Any], prompt: int, completion: int,
                 extra: list[Assumption], updates: dict[str, Any]) -> int:
    """GRPO's completions per prompt, and the micro-batch the stack cuts them into (a token budget, its profile)."""
    generations = 0
    if stage == "grpo":
        generations = request.num_generations or c["num_generations"]
        if request.num_generations is None:
            extra.append(Assumption(key="num_generations", value=generations))
        if request.batch_size is None:
            rows = generations
            budget = profile(stack_of(request)).constant("rl_micro_batch_tokens", 0.0)
            if budget:
                # the stack cuts the generations into micro-batches of a token budget (profile source)
                rows = max(1, min(generations, int(budget // max(1, prompt + completion))))
            updates["batch_size"] = rows
            extra.append(Assumption(key="batch_size", value=rows))
    return generations


def _reference(request: Request, stage: str, opts: PostTrainOptions, full: bool, c: dict[str, Any],
               assumptions: list[Assumption]) -> tuple[float | None, str | None]:
    """(GRPO's KL beta, how the reference model is held: a copy, the adapter switched off, precomputed, none)."""
    beta: float | None = None
    reference: str | None = None
    if stage in ("dpo", "kto"):
        if request.reference_model is False or opts.precompute_ref_log_probs:
            reference = "precomputed"
        else:
            reference = "copy" if full else "adapter_off"
    elif stage == "ppo":
        reference = "copy" if full else "adapter_off"
    elif stage == "grpo":
        beta = opts.beta if opts.beta is not None else (0.04 if request.reference_model else c["grpo_beta"])
        if opts.beta is None and not request.reference_model:
            assumptions.append(Assumption(key="beta", value=f"{beta:g}"))
        if beta > 0:
            reference = "copy" if full else "adapter_off"
    elif stage in REFERENCE_FREE:
        reference = None
    return beta, reference


def _parallel(request: Request, scenario: Scenario, opts: PostTrainOptions, tokens: int,
              assumptions: list[Assumption]) -> tuple[int, CpKind | None, int, int]:
    """(context parallel degree, its kind, tensor and pipeline parallel degrees), checked against the heads and the
    GPUs."""
    n = scenario.gpu_count
    cp = request.context_parallel or 1
    if cp > n:
        raise ScenarioError(f"context parallel degree {cp} needs at least {cp} GPUs, {n} given", "cp_needs_gpus",
                            cp=cp, gpus=n)
    arch = scenario.arch
    kind: CpKind | None = None
    if cp > 1:
        kind = opts.cp_kind or ("ulysses" if heads_divide(arch.heads, arch.kv_heads, cp) else "ring")
        if kind == "ulysses" and not heads_divide(arch.heads, arch.kv_heads, cp):
            raise ScenarioError(f"Ulysses sequence parallelism over {cp} GPUs needs the {arch.heads} attention heads "
                                f"to divide by {cp}; use ring attention or another degree", "ulysses_heads", cp=cp,
                                heads=arch.heads)
        if opts.cp_kind is None:
            assumptions.append(Assumption(key="cp_kind", value=kind))
        if math.ceil(tokens / cp) < 1:
            raise ScenarioError("sequence shorter than the context parallel degree", "sequence_under_cp")
    tp = request.tensor_parallel or 1
    if tp > 1 and arch.heads % tp:
        raise ScenarioError(f"tensor parallel {tp} needs the {arch.heads} attention heads to divide by it",
                            "tp_heads", tp=tp, heads=arch.heads)
    if cp * tp > n:
        raise ScenarioError(f"context parallel {cp} x tensor parallel {tp} needs {cp * tp} GPUs, {n} given",
                            "cp_tp_needs_gpus", cp=cp, tp=tp, needs=cp * tp, gpus=n)
    pp = request.pipeline_parallel or 1
    if tp > 1 or pp > 1:
        # which runtime splits the model: Megatron-Core, or PyTorch's own under FSDP (engine/frameworks megatron_core)
        native = not megatron_core(scenario.framework, tp, pp, scenario.sharding)
        assumptions.append(Assumption(key="model_parallel_runtime", value="pytorch" if native else "megatron"))
    if cp * tp * pp > n:
        raise ScenarioError(f"pipeline parallel {pp} x tensor parallel {tp} x context parallel {cp} needs "
                            f"{cp * tp * pp} GPUs, {n} given", "pp_needs_gpus", pp=pp, tp=tp, cp=cp,
                            needs=cp * tp * pp, gpus=n)
    return cp, kind, tp, pp


def _rollout(request: Request, stage: str, n: int, c: dict[str, Any], assumptions: list[Assumption],
             notes: list[str]) -> tuple[str | None, float | None, int, bool, int, int]:
    """Where an RL stage generates (vLLM colocated or a server on GPUs of its own, else HF generate):
    (mode, gpu_memory_utilization, vLLM TP, sleep mode, training GPUs, rollout GPUs)."""
    rollout: str | None = None
    util: float | None = None
    vtp, sleep = 1, False
    train_gpus, rollout_gpus = n, 0
    if stage in ("grpo", "ppo") and request.rollout is not None and request.rollout.engine in (None, "vllm"):
        r = request.rollout
        rollout = r.mode or "colocate"
        if r.mode is None:
            assumptions.append(Assumption(key="vllm_mode", value="colocate"))
        vtp = r.tensor_parallel or 1
        sleep = bool(r.sleep)
        if rollout == "server":
            util = r.gpu_memory_utilization or c["vllm_server_gpu_memory_utilization"]
            if n > vtp:
                train_gpus, rollout_gpus = n - vtp, vtp
            else:
                rollout_gpus = vtp
                notes.append("posttrain.note.server_needs_more_gpus")
        else:
            util = r.gpu_memory_utilization
    elif stage in ("grpo", "ppo"):
        notes.append("posttrain.note.hf_generate")
    return rollout, util, vtp, sleep, train_gpus, rollout_gpus


def build_setup(request: Request, options: PostTrainOptions | None = None) -> Setup:
    opts = options or PostTrainOptions()
    # CONTRACT v2.1: the request's own ALST switches (activation-checkpoint offload, TiledMLP) turn the options on
    said = {k: True for k in ("activation_offload", "tiled_mlp") if getattr(request, k)}
    if said:
        opts = opts.model_copy(update=said)
    c = constants()["defaults"]
    stage = request.stage or "sft"
    extra: list[Assumption] = []
    notes: list[str] = []
    updates: dict[str, Any] = {}

    prompt, completion = _lengths(request, stage, c, extra, updates)
    generations = _generations(request, stage, c, prompt, completion, extra, updates)

    if (request.context_parallel or 1) > 1 and request.sharding is None:
        # sequence parallelism runs with model states sharded over all ranks (ALST: ZeRO-3; 360-LLaMA-Factory,
        # ms-swift: ZeRO-3 / FSDP)
        updates["sharding"] = "zero3"
        extra.append(Assumption(key="sharding", value="zero3"))
    req = request.model_copy(update=updates) if updates else request
    scenario = build_scenario(req)
    drop = {k for k in ("seq_len", "batch_size") if k in updates}
    scenario.assumptions = [a for a in scenario.assumptions if a.key not in drop]
    assumptions = [*scenario.assumptions, *extra]
    if scenario.method == "inference":
        raise ScenarioError(f"{stage} is training: choose full, lora or qlora (context parallelism here is for "
                            "training, not serving)", "stage_is_training", stage=stage)
    full = scenario.method == "full"

    beta, reference = _reference(request, stage, opts, full, c, assumptions)

    # a pair is two sequences through the policy (trl/trainer/dpo_trainer.py concatenated_inputs stacks chosen over
    # rejected); padding-free / packing flattens them into one row (TRL v0.24.0, 04fd1203 dpo_trainer.py
    # concatenated_forward: `input_ids = input_ids[attention_mask.bool()].unsqueeze(0)`; ms-swift --packing packs
    # pairs into rows of max_length), so the row the request states is the whole micro-step: seq_len x batch, no 2x
    pairs = stage in ("dpo", "orpo", "simpo", "rm") and not request.padding_free
    sequences = scenario.batch_size * (2 if pairs else 1)
    tokens = scenario.seq_len

    if stage in ("grpo", "ppo") and "grad_accum" not in opts.model_fields_set:
        # TrainingArguments.gradient_accumulation_steps = 1; GRPO generates steps_per_generation (= it) micro-batches
        assumptions.append(Assumption(key="grad_accum", value=opts.grad_accum))

    n = scenario.gpu_count
    cp, kind, tp, pp = _parallel(request, scenario, opts, tokens, assumptions)

    rollout, util, vtp, sleep, train_gpus, rollout_gpus = _rollout(request, stage, n, c, assumptions, notes)
    if train_gpus != n:
        scenario = scenario.model_copy(update={"gpu_count": train_gpus})
    name, card = _card(request)
    framework = stack_of(request)
    if framework == "unsloth" and rollout == "colocate":
        notes.append("posttrain.note.unsloth_standby")
    return Setup(
        stage=stage, scenario=scenario, sequences=sequences, prompt_len=prompt, completion_len=completion,
        tokens=tokens, reference=reference, beta=beta, cp=cp, cp_kind=kind, tp=tp, pp=pp, train_gpus=train_gpus,
        rollout_gpus=rollout_gpus, rollout=rollout, vllm_util=util, vllm_tp=vtp, sleep=sleep,
        generation_batch=scenario.batch_size * opts.grad_accum, card_gib=card, gpu_name=name,
        framework=framework, generations=generations, options=opts, assumptions=assumptions, notes=notes,
    )

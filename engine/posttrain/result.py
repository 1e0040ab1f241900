"""Request → PostTrainResult: the per-GPU peak of a post-training or long-context job, its extra lines, the settings
to use and what to change."""

from __future__ import annotations

import math

from engine import memory
from engine.catalog import find_gpu
from engine.fit import capacity
from engine.memo import by_value
from engine.posttrain.compose import Composed, compose, vllm_util
from engine.posttrain.setup import Setup, build_setup, constants
from engine.posttrain.timing import rl_time, sequences_per_example, steps_for_tokens
from engine.scenario import training_tokens
from engine.schema import Assumption, Request
from engine.schema.posttrain import Line, PostTrainOptions, PostTrainResult, Settings


def card_limit(request: Request) -> float | None:
    """GiB the busiest GPU may use (engine.fit.capacity: the driver-reported memory, the answer's rule)."""
    if not request.gpus:
        return None
    ref = request.gpus[0]
    gpu = find_gpu(ref.name, ref.memory_gb)
    memory = ref.memory_gb or (gpu.memory_gb if gpu else None)
    return None if memory is None else capacity(ref.name, memory)


def _round_up(x: float, step: float) -> float:
    return round(math.ceil(x / step - 1e-9) * step, 2)


def settings_for(setup: Setup, comp: Composed) -> Settings:
    s = setup.scenario
    util = None
    if setup.rollout == "colocate":
        util = setup.vllm_util
        if comp.vllm_util_needed is not None:
            v = constants()["vllm"]
            step = v["utilization_step"]
            util = min(v["max_utilization"], _round_up(max(comp.vllm_util_needed, step), step))
    elif setup.rollout == "server":
        util = setup.vllm_util
    grpo = setup.stage == "grpo"
    return Settings(
        stack="arctictraining" if setup.framework == "arctictraining" else "trl",
        per_device_train_batch_size=s.batch_size,
        num_generations=setup.generations if grpo else None,
        max_prompt_length=setup.prompt_len or None,
        max_completion_length=setup.completion_len or None,
        max_length=setup.tokens if setup.stage not in ("grpo", "ppo") else None,
        use_vllm=(setup.rollout is not None) if setup.stage in ("grpo", "ppo") else None,
        vllm_mode=setup.rollout if setup.rollout in ("colocate", "server") else None,
        vllm_gpu_memory_utilization=util,
        vllm_enable_sleep_mode=setup.sleep if setup.rollout == "colocate" else None,
        vllm_tensor_parallel_size=setup.vllm_tp if setup.rollout else None,
        beta=setup.beta,
        precompute_ref_log_probs=(setup.reference == "precomputed") if setup.stage in ("dpo", "kto") else None,
        sequence_parallel_size=setup.cp if setup.cp > 1 else None,
        cp_kind=setup.cp_kind,
        tensor_parallel_size=setup.tp if setup.tp > 1 else None,
        # TrainingArguments.use_liger_kernel (engine/configs/options/transformers.txt); Unsloth fuses on its own
        # (ArcticTraining: `model.type: liger`)
        use_liger_kernel=True if s.fused_loss and setup.framework in (None, "trl", "hf", "arctictraining") else None,
        activation_offload=setup.options.activation_offload or None,
        tiled_mlp=setup.options.tiled_mlp or None,
        offload_optimizer=True if setup.framework == "arctictraining" and s.offload else None,
        gradient_checkpointing=s.gradient_checkpointing,
    )



# the rollout as asked cannot run: vLLM's share cannot hold its weights and KV cache, or the share and the trainer do
# not fit on one card together (vLLM refuses to start: no memory for the cache blocks; the step runs out of memory)
ROLLOUT_FAILS = ("posttrain.note.vllm_share_too_small", "posttrain.note.vllm_does_not_fit_beside_trainer")


@by_value()
def posttrain_result(request: Request, options: PostTrainOptions | None = None, *, advise: bool = True,
                     steps: int | None = None) -> PostTrainResult:
    """The post-training estimate; raises engine.scenario.ScenarioError (a ValueError) when it cannot be made."""
    setup = build_setup(request, options)
    comp = compose(setup)
    lines = [Line(key=k, gib=round(v, 3)) for k, v in comp.lines.items()]
    if comp.host_ram:
        lines.append(Line(key="host_ram", gib=round(comp.host_ram, 3)))
    pol = comp.policy
    policy = {k: round(v, 3) for k, v in pol.lines().items()}  # per GPU, after TP / PP / the distributed optimizer
    policy.update(activations=round(pol.activations, 3), logits=round(pol.logits, 3))
    server_total = None
    if setup.rollout == "server" and setup.card_gib and setup.vllm_util:
        server_total = round(setup.vllm_util * setup.card_gib, 3)
    notes = list(setup.notes)
    util_set = vllm_util(setup) if setup.rollout == "colocate" else setup.vllm_util
    if comp.vllm_util_to_start is not None and util_set is not None and comp.vllm_util_to_start > util_set:
        notes.append("posttrain.note.vllm_share_too_small")  # vLLM cannot hold its weights + one sequence's KV
    elif comp.vllm_util_needed is not None and util_set is not None and comp.vllm_util_needed > util_set:
        notes.append("posttrain.note.vllm_batch_queued")  # it starts; the batch generates in rounds
    if setup.rollout == "colocate" and setup.card_gib and comp.vllm_util_to_start is not None \
            and comp.trainer_peak + comp.vllm_util_to_start * setup.card_gib > setup.card_gib \
            and not (setup.sleep or setup.framework == "unsloth"):
        notes.append("posttrain.note.vllm_does_not_fit_beside_trainer")
    if steps is None:
        steps = steps_for_tokens(setup, training_tokens(request, setup.tokens, sequences_per_example(setup)))
    if setup.stage in ("grpo", "ppo") and comp.phase == "generate":
        notes.append("posttrain.note.generation_peak")
    if pol.logits >= max(pol.activations, pol.static):
        notes.append("posttrain.note.logits_largest")
    elif pol.activations >= pol.static:
        notes.append("posttrain.note.activations_largest")
    time = rl_time(setup, steps, comp.vllm_waves)
    assumptions = list(setup.assumptions)
    if time is not None and time.prompts is not None:
        # the yardstick amount of data (engine/catalog/posttrain.toml)
        assumptions.append(Assumption(key="prompts", value=time.prompts))
    result = PostTrainResult(
        stage=setup.stage, method=setup.scenario.method, per_gpu_total=round(comp.total, 3),
        cuda_context=float(memory.constants()["overhead"]["cuda_context_gib"]),
        trainer_peak=round(comp.trainer_peak, 3), phase=comp.phase,
        lines=lines, policy=policy, host_ram_gib=round(comp.host_ram, 3), train_gpus=setup.train_gpus,
        rollout_gpus=setup.rollout_gpus, rollout_gpu_total=server_total, sequences_per_micro_step=setup.sequences,
        tokens_per_sequence=setup.tokens, tokens_per_gpu=math.ceil(setup.tokens / setup.cp),
        settings=settings_for(setup, comp), changes=[], assumptions=assumptions, notes=notes, time=time,
    )
    if advise:
        from engine.posttrain.advice import changes

        result.changes = changes(request, options, result)
    return result


__all__ = ["card_limit", "constants", "posttrain_result"]

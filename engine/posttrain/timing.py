"""Time of an RL step: generation (bandwidth-bound decode, engine/speed.py) + training (engine/speed.py FLOPs model)
+ weight sync to a vLLM server. engine/serving/ did not exist when this was written: decode speed comes from
engine.speed.inference_speed (weights + KV read per step at the catalog's bandwidth efficiency)."""

from __future__ import annotations

import math

from engine import pricing, speed
from engine.posttrain.setup import Setup, constants
from engine.schema.posttrain import RlTime


def rl_time(setup: Setup, steps: int | None = None, waves: int = 1) -> RlTime | None:
    """Seconds per optimizer step and hours for `steps` steps (when None, the steps of the yardstick number of prompts);
    None without a known GPU. `waves`: the rounds in which vLLM generates the batch when its pool holds only part of
    it (engine.posttrain.compose.RolloutEngine.waves)."""
    if setup.stage not in ("grpo", "ppo") or setup.gpu_name is None:
        return None
    try:
        gpu = speed.resolve_gpu(setup.gpu_name)
    except ValueError:
        return None
    c = constants()["timing"]
    s = setup.scenario
    accum = setup.options.grad_accum
    seqs_per_gpu = setup.sequences * accum
    # decode: every engine runs its share of the step's sequences, completion_len steps at mid-length context
    if setup.rollout == "server":
        engines, batch = 1, seqs_per_gpu * setup.train_gpus
        count = setup.vllm_tp
    else:
        engines, batch = setup.train_gpus, seqs_per_gpu
        count = setup.vllm_tp if setup.rollout == "colocate" else 1
    del engines
    batch = math.ceil(batch / waves)  # each round decodes what the pool holds
    ctx = setup.prompt_len + setup.completion_len // 2
    bits = 16 if setup.rollout else (s.bits if s.bits < 16 else 16)
    dec = s.model_copy(update={"method": "inference", "bits": bits, "batch_size": batch, "seq_len": max(1, ctx),
                               "gpu_count": count})
    inf = speed.inference_speed(dec, gpu, count)
    per_seq = inf.tokens_per_second_per_sequence / (1.0 if setup.rollout else c["hf_generate_slowdown"])
    generation = waves * setup.completion_len / per_seq
    # training: every sequence of the step, prompt + completion, through the policy (and a reference forward)
    tokens = float(seqs_per_gpu * setup.train_gpus * setup.tokens)
    train = speed.training_time(s, gpu, setup.train_gpus, tokens).hours * 3600.0
    if setup.reference == "copy" or setup.reference == "adapter_off":
        k = 6.0 if s.method == "full" else 4.0
        train *= 1 + c["forward_flops_per_param"] / k
    if setup.stage == "ppo":
        train *= 2  # value model trained on the same tokens
    sync = 0.0
    if setup.rollout == "server":
        sync = s.arch.params * 2.0 / (c["sync_gbps"] * 1e9)
    step = generation + train + sync
    prompts = None
    if steps is None:  # no amount of data said: a fixed number of prompts, split over the data-parallel ranks
        prompts = int(c["yardstick_prompts"])
        n = steps_for_prompts(setup, prompts)
    else:
        n = steps
    hours = step * n / 3600.0
    gpus = setup.train_gpus + setup.rollout_gpus
    cost: dict[str, float | str] | None = None
    try:
        m = pricing.cost(hours, gpu.name, gpus)
        cost = {"currency": m.currency, "min": m.min, "typical": m.typical, "max": m.max}
    except (ValueError, LookupError):  # a GPU the catalog has no price for (H20): the hours stand, no cost
        cost = None
    return RlTime(sequences_per_step=seqs_per_gpu * setup.train_gpus, generation_s=generation, training_s=train,
                  sync_s=sync, step_s=step, steps=n, hours=hours, prompts=prompts,
                  decode_tokens_per_s_per_sequence=per_seq, gpus=gpus, cost=cost)


def sequences_per_example(setup: Setup) -> int:
    """Sequences one example of the data puts through the policy: a GRPO prompt its generations, a preference pair
    two (Setup.sequences counts a pair twice unless padding-free rows hold it whole), anything else one."""
    if setup.stage == "grpo":
        return max(1, setup.generations)
    return max(1, setup.sequences // max(1, setup.scenario.batch_size))


def steps_for_prompts(setup: Setup, prompts: int) -> int:
    """Optimizer steps that `prompts` prompts take: each gives `generations` completions (one under PPO), and a step
    holds sequences x grad_accum completions on every training GPU (TRL's generation_batch_size)."""
    per_prompt = max(1, setup.generations) if setup.stage == "grpo" else 1
    per_step = setup.sequences * setup.options.grad_accum * setup.train_gpus
    return max(1, math.ceil(prompts * per_prompt / per_step))


def steps_for_tokens(setup: Setup, tokens: float | None) -> int | None:
    """Optimizer steps that `tokens` of prompts + completions take, when the request says an amount of data."""
    if not tokens:
        return None
    per_step = setup.sequences * setup.options.grad_accum * setup.train_gpus * setup.tokens
    return max(1, math.ceil(tokens / per_step))

"""What flows out of the post-training layer: options beside the Request, and the result (GiB per GPU)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.schema.result import Change
from engine.schema.scenario import Assumption

POSTTRAIN_STAGES = ("dpo", "orpo", "kto", "simpo", "rm", "ppo", "grpo")
PREFERENCE_STAGES = ("dpo", "orpo", "kto", "simpo")
REFERENCE_FREE = ("orpo", "simpo")

CpKind = Literal["ulysses", "ring"]
OptionKind = Literal["context_parallel", "tensor_parallel", "activation_offload", "tiled_mlp", "fused_loss"]


class PostTrainOptions(BaseModel):
    """Settings a request cannot say today (CONTRACT v2 has no field for them); None = the framework default."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    beta: float | None = Field(default=None, ge=0, le=100)  # GRPO/PPO KL coefficient (TRL GRPO default 0.0)
    precompute_ref_log_probs: bool = False  # DPOConfig.precompute_ref_log_probs
    cp_kind: CpKind | None = None  # Ulysses when the heads divide, else ring
    activation_offload: bool = False  # ALST: activation checkpoints to CPU
    tiled_mlp: bool = False  # ALST TiledMLP
    grad_accum: int = Field(default=1, ge=1, le=100_000)


class Line(BaseModel):
    """One extra line of the per-GPU breakdown, GiB (key is a message key suffix: posttrain.line.<key>)."""

    model_config = ConfigDict(defer_build=True)  # built by the first post-training answer

    key: str
    gib: float
    params: dict[str, float | int | str | bool] = Field(default_factory=dict)


class Settings(BaseModel):
    """What to set in the framework for this estimate (TRL names; `stack` says whose names a view writes them in)."""

    model_config = ConfigDict(defer_build=True)  # built by the first post-training answer

    stack: Literal["trl", "arctictraining"] = "trl"
    per_device_train_batch_size: int
    num_generations: int | None = None
    max_prompt_length: int | None = None
    max_completion_length: int | None = None
    max_length: int | None = None
    use_vllm: bool | None = None
    vllm_mode: Literal["colocate", "server"] | None = None
    vllm_gpu_memory_utilization: float | None = None
    vllm_enable_sleep_mode: bool | None = None
    vllm_tensor_parallel_size: int | None = None
    beta: float | None = None
    precompute_ref_log_probs: bool | None = None
    sequence_parallel_size: int | None = None
    cp_kind: CpKind | None = None
    tensor_parallel_size: int | None = None
    use_liger_kernel: bool | None = None  # TrainingArguments.use_liger_kernel (engine/configs/options/transformers.txt)
    activation_offload: bool | None = None  # ALST checkpoint offload (ArcticTraining / DeepSpeed, not a TRL option)
    tiled_mlp: bool | None = None  # ALST TiledMLP (same)
    offload_optimizer: bool | None = None  # ArcticTraining's deepspeed.zero_optimization.offload_optimizer
    gradient_checkpointing: bool = True


class RlTime(BaseModel):
    """Seconds per optimizer step of an RL job (generation + training), and the run's hours."""

    model_config = ConfigDict(defer_build=True)  # built by the first post-training answer

    sequences_per_step: int
    generation_s: float
    training_s: float
    sync_s: float
    step_s: float
    steps: int
    hours: float
    decode_tokens_per_s_per_sequence: float
    gpus: int  # all GPUs of the job (trainers + rollout servers)
    prompts: int | None = None  # the assumed number of prompts `steps` covers, when no amount of data is said
    cost: dict[str, float | str] | None = None  # engine.pricing.cost of `hours` on `gpus` GPUs: min/typical/max USD


class PostTrainResult(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built by the first post-training answer

    stage: str
    method: str
    per_gpu_total: float  # reserved peak of the busiest training GPU, GiB (cuda context not included)
    cuda_context: float
    trainer_peak: float  # the trainer alone (no rollout engine share)
    phase: Literal["train", "generate"]  # which phase sets the peak
    lines: list[Line]  # extra lines beside the policy's own breakdown
    policy: dict[str, float]  # the policy's breakdown lines as the memory model gives them
    host_ram_gib: float  # per training GPU: offloaded states, checkpoints, sleeping engine
    train_gpus: int
    rollout_gpus: int
    rollout_gpu_total: float | None  # the vLLM server GPU's use (server mode), GiB
    sequences_per_micro_step: int
    tokens_per_sequence: int  # before context parallelism
    tokens_per_gpu: int  # per sequence, after context parallelism
    settings: Settings
    changes: list[Change]
    assumptions: list[Assumption]
    notes: list[str]  # message keys (posttrain.note.*)
    time: RlTime | None = None


class LongContextOption(BaseModel):
    """One way to fit a long sequence; per_gpu_total in GiB, time_factor against the plain step."""

    model_config = ConfigDict(defer_build=True)  # built by the first post-training answer

    kind: OptionKind
    degree: int = 1
    cp_kind: CpKind | None = None
    gpus: int
    per_gpu_total: float
    host_ram_gib: float
    time_factor: float
    fits: bool
    tight: bool = False  # fits, but under the planner's 10 % headroom (engine.fit.HEADROOM)
    combined: list[OptionKind] = Field(default_factory=list)  # applied together with `kind` (e.g. a fused loss)
    blocked: str | None = None  # message key when the option cannot be used (heads do not divide)

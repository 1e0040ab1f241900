"""What a writer needs (ConfigJob) and what writers and readers give back.

ConfigJob is the plan in the settings the estimate assumed; it does not depend on the planner's internals, so the
planner can change without touching the writers. `ConfigJob.request()` is the Request the job stands for: a reader
given what a writer wrote gives this request back (the round trip).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.schema import (
    KvCacheDtype,
    Method,
    MixedPrecision,
    Optimizer,
    Request,
    ServingEngine,
    Sharding,
    Stage,
)

# What `gpu-advisor config --framework` accepts: the training stacks and serving engines that have a writer.
Target = Literal["axolotl", "llama-factory", "trl", "unsloth", "torchtune", "deepspeed", "arctictraining", "accelerate",
                 "vllm", "sglang", "llama.cpp"]
TARGETS: tuple[Target, ...] = ("axolotl", "llama-factory", "trl", "unsloth", "torchtune", "deepspeed", "arctictraining",
                               "accelerate", "vllm", "sglang", "llama.cpp")


class ConfigJob(BaseModel):
    """One job in the settings the estimate assumed, plus the plan facts a config file states."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(default="your-org/your-model", max_length=200)  # a Hugging Face id where known
    method: Method = "lora"
    stage: Stage = "sft"
    bits: int = 16
    quantization: str | None = None  # nf4 int8 fp8 awq gptq gguf:<type>
    optimizer: Optimizer | None = "adamw"
    mixed_precision: MixedPrecision = "amp"
    half_dtype: Literal["bf16", "fp16"] = "bf16"  # fp16 on a GPU without bf16 (T4, V100)
    lora_rank: int = 16
    lora_targets: str = "all_linear"
    seq_len: int = Field(default=2048, ge=1)
    batch_size: int = Field(default=1, ge=1)  # micro-batch per GPU; serving: concurrent sequences
    grad_accum: int = Field(default=1, ge=1)
    gradient_checkpointing: bool = True
    flash_attention: bool = True
    fused_loss: bool = False
    sharding: Sharding = "none"
    offload: bool = False
    gpu_count: int = Field(default=1, ge=1)
    gpu_name: str | None = None
    context_parallel: int | None = None
    activation_offload: bool = False  # ALST: checkpointed layer inputs in CPU RAM (ArcticTraining)
    tiled_mlp: bool = False  # ALST TiledMLP (ArcticTraining)
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    # GRPO
    num_generations: int | None = None
    output_len: int | None = None
    rollout_mode: Literal["colocate", "server"] | None = None  # vLLM generation; None: the trainer's own generate
    rollout_gpu_memory_utilization: float | None = None
    rollout_tensor_parallel: int | None = None
    rollout_sleep: bool = False
    # serving
    serving_engine: ServingEngine | None = None
    kv_cache_dtype: KvCacheDtype | None = None
    concurrency: int | None = None
    gpu_memory_utilization: float | None = None
    replicas: int = Field(default=1, ge=1)  # data-parallel copies of the TP x PP instance (vLLM/SGLang DP)
    max_num_batched_tokens: int | None = None  # the prefill chunk the activation peak was estimated for
    gpu_layers: int | None = None  # llama.cpp: layers on the GPU when the answer left some in host RAM
    estimate_gib: float | None = None  # per GPU, the peak the plan was made for

    @property
    def serving(self) -> bool:
        return self.method == "inference"

    @property
    def peft(self) -> bool:
        return self.method in ("lora", "qlora")

    def request(self, target: str | None = None) -> Request:
        """The Request a file written for `target` stands for: what `check` of that file gives back (the round trip).
        It is the job itself, less what the target's format cannot say (each writer's notes list those)."""
        from engine.configs.expected import expected_request

        return expected_request(self, target)


class ConfigFile(BaseModel):
    name: str
    text: str


class ConfigOutput(BaseModel):
    """CONTRACT.md v2 `config --json`, plus `notes`: message keys for settings the tool cannot express."""

    framework: str
    files: list[ConfigFile]
    command: str
    estimate_gib: float | None = None
    notes: list[str] = Field(default_factory=list)


class ReadResult(BaseModel):
    """What a reader understood: the request, the format it recognised, the keys it did not understand (names only,
    secrets redacted), the keys it read and left out because they do not change memory (logging, saving, the Hub,
    the learning rate), and an error key when the input could not be read at all."""

    request: Request | None = None
    format: str | None = None
    ignored: list[str] = Field(default_factory=list)
    no_effect: list[str] = Field(default_factory=list)  # wandb_project, report_to, logging_steps, ...
    secrets: int = 0  # how many secret values were found (and dropped)
    error: str | None = None

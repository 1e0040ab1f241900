"""What each writer's files say about a job, as a Request: the job less what the target's format cannot express.

`check` of a written file gives this request back; the writers' notes name every setting dropped here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.schema import Request

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.configs.model import ConfigJob

AXOLOTL_STAGES = ("sft", "dpo", "orpo", "kto", "simpo", "grpo")
LF_STAGES = ("sft", "dpo", "kto", "rm", "ppo", "pretrain")
TRL_STAGES = ("sft", "dpo", "grpo", "kto", "rm", "pretrain")
TORCHTUNE_STAGES = ("sft", "dpo", "grpo")


def _serving(job: ConfigJob, engine: str) -> dict[str, Any]:
    from engine.configs.serving_flags import gguf_type

    q = (job.quantization or "").lower()
    if engine == "llama.cpp":
        from engine.configs.serving_flags import gguf_file, gguf_tag

        if not gguf_file(job):
            from engine.catalog.checkpoints import gguf_weights

            job = job.model_copy(update={"model": gguf_weights(job.model, gguf_tag(job))[0].partition(":")[0]})
    else:
        from engine.configs.writers.serving import loaded

        job = loaded(job)[0]
    r: dict[str, Any] = {"model": {"name": job.model}, "method": "inference", "serving_engine": engine,
                         "seq_len": job.seq_len, "gpus": [{"name": job.gpu_name, "count": job.gpu_count}]}
    if engine == "llama.cpp":
        slots = job.concurrency or 1
        r.update(concurrency=slots, flash_attention=job.flash_attention,
                 quantization=q if q.startswith("gguf:") else f"gguf:{gguf_type(job).lower()}",
                 engine_options={"max_model_len": job.seq_len, "max_num_seqs": slots})
        from engine.configs.readers.serving import gguf_bits

        r["bits"] = gguf_bits(r["quantization"])
        if job.kv_cache_dtype in ("int8", "int4", "bf16"):
            r["kv_cache_dtype"] = job.kv_cache_dtype
        return r
    pp = job.pipeline_parallel or 1
    tp = job.tensor_parallel or max(1, job.gpu_count // pp)
    r.update(tensor_parallel=tp, pipeline_parallel=pp if pp > 1 else None,
             engine_options={"max_model_len": job.seq_len, "max_num_seqs": job.concurrency,
                             "gpu_memory_utilization": job.gpu_memory_utilization or 0.9,
                             "max_num_batched_tokens": job.max_num_batched_tokens})
    if job.tensor_parallel:  # the command runs TP x PP x data parallel GPUs (an idle card is not named)
        r["gpus"] = [{"name": job.gpu_name, "count": tp * pp * job.replicas}]
    if job.kv_cache_dtype == "fp8":
        r["kv_cache_dtype"] = "fp8"
    if q in ("awq", "gptq", "mxfp4"):
        r.update(quantization=q, bits=4)
    elif q == "fp8":
        r.update(quantization="fp8", bits=8)
    elif q in ("nf4", "int8") or (job.bits in (4, 8) and not q):
        r.update(quantization="nf4", bits=4)
    return r


def expected_request(job: ConfigJob, target: str | None) -> Request:
    """The Request the config written for `job` and `target` describes (what `check` must read back)."""
    if target in ("vllm", "sglang", "llama.cpp") or (target is None and job.serving):
        return Request.model_validate(_serving(job, target or job.serving_engine or "vllm"))
    t = target or "trl"
    if t in ("trl", "accelerate"):
        from engine.configs.writers.launch import with_context_parallel

        job = with_context_parallel(job)[0]
    r = _training(job, t)
    cp = job.context_parallel if job.context_parallel and job.context_parallel > 1 else None
    framework = _FRAMEWORKS.get("trl" if t in ("accelerate", "deepspeed") else t)
    if framework is not None:
        framework(r, job, t, cp)
    return Request.model_validate(r)


def _training(job: ConfigJob, t: str) -> dict[str, Any]:
    """What every training framework's config says of the job."""
    r: dict[str, Any] = {
        "model": {"name": job.model}, "method": job.method, "seq_len": job.seq_len, "batch_size": job.batch_size,
        "optimizer": job.optimizer, "mixed_precision": "amp", "gradient_checkpointing": job.gradient_checkpointing,
        "flash_attention": job.flash_attention, "fused_loss": job.fused_loss, "offload": job.offload,
        "gpus": [{"name": job.gpu_name, "count": job.gpu_count}], "stage": job.stage, "sharding": job.sharding,
        "bits": job.bits if job.method == "qlora" else 16, "context_parallel": None,
    }
    if job.method == "qlora":
        r["quantization"] = "nf4" if job.bits == 4 else "int8"
    if job.peft:
        r.update(lora_rank=job.lora_rank, lora_targets=job.lora_targets)
    if job.stage == "grpo" and t in ("axolotl", "trl", "accelerate", "deepspeed", "unsloth"):
        r.update(num_generations=job.num_generations or 8, output_len=job.output_len or 256)
        if job.rollout_mode:
            r["rollout"] = {"engine": "vllm", "mode": job.rollout_mode,
                            "gpu_memory_utilization": job.rollout_gpu_memory_utilization,
                            "tensor_parallel": job.rollout_tensor_parallel
                            if job.rollout_tensor_parallel and job.rollout_tensor_parallel > 1 else None,
                            "sleep": True if job.rollout_sleep else None}
    return r


def _plain(job: ConfigJob) -> str:
    return "ddp" if job.gpu_count > 1 else "none"


def _axolotl(r: dict[str, Any], job: ConfigJob, t: str, cp: int | None) -> None:
    r["framework"] = "axolotl"
    r["stage"] = job.stage if job.stage in AXOLOTL_STAGES else "sft"
    if job.sharding in ("none", "ddp"):
        r.update(sharding=_plain(job), offload=False)
    elif job.sharding in ("zero1", "zero2"):
        r["offload"] = False
    r["context_parallel"] = cp


def _llama_factory(r: dict[str, Any], job: ConfigJob, t: str, cp: int | None) -> None:
    r["framework"] = "llama-factory"
    r["stage"] = job.stage if job.stage in LF_STAGES else "sft"
    r["mixed_precision"] = job.mixed_precision
    if job.sharding not in ("zero2", "zero3"):
        r.update(sharding=_plain(job), offload=False)


def _trl(r: dict[str, Any], job: ConfigJob, t: str, cp: int | None) -> None:
    """TRL's script, an accelerate launch of it, or DeepSpeed's launcher."""
    n = job.gpu_count
    r["framework"] = "deepspeed" if t == "deepspeed" or job.sharding.startswith("zero") else "trl"
    if job.stage == "grpo":
        r["seq_len"] = None  # GRPOConfig has no prompt limit: the completion length is max_completion_length
    r["stage"] = job.stage if job.stage in TRL_STAGES else "sft"
    if t == "deepspeed" and not job.sharding.startswith("zero"):
        r["sharding"] = "zero2" if n > 1 else "none"
    if r["sharding"] in ("none", "ddp"):
        r.update(sharding=_plain(job), offload=False)
    elif r["sharding"] in ("zero1", "zero2"):
        r["offload"] = job.offload
    if t == "deepspeed" and n == 1 and not job.sharding.startswith("zero"):
        r["sharding"] = "ddp"  # one GPU: ZeRO stage 0, DeepSpeed's data-parallel engine (read as ddp)
    if job.sharding == "fsdp" and t != "deepspeed":
        r["context_parallel"] = cp
    if job.gpu_count <= 1 and job.sharding == "none" and t == "trl":
        r.pop("gpus")  # the `trl` command and the script name no GPU; the header does
        r["gpus"] = [{"name": job.gpu_name, "count": n}]


def _unsloth(r: dict[str, Any], job: ConfigJob, t: str, cp: int | None) -> None:
    # the writer passes use_gradient_checkpointing="unsloth" with adapters: Unsloth's offload of layer inputs
    r.update(framework="unsloth", fused_loss=True, sharding=_plain(job),
             offload=bool(job.peft and job.gradient_checkpointing), flash_attention=True,
             stage=job.stage if job.stage in TRL_STAGES else "sft")


def _torchtune(r: dict[str, Any], job: ConfigJob, t: str, cp: int | None) -> None:
    n = job.gpu_count
    r.update(framework="torchtune", mixed_precision="pure_bf16", sharding="fsdp" if n > 1 else "none",
             stage=job.stage if job.stage in TORCHTUNE_STAGES else "sft", flash_attention=None,
             context_parallel=cp, offload=job.offload and n > 1 and not job.peft, num_generations=None,
             output_len=None)
    if job.stage == "grpo" and job.peft:
        r["stage"] = "sft"  # torchtune's GRPO recipe is full fine-tuning only
    if n == 1 or r["stage"] != "sft":
        r["context_parallel"] = None  # only the distributed SFT recipes read context_parallel_dim
    if job.optimizer == "adafactor":
        r["optimizer"] = None
    if job.peft:
        from engine.configs.common import target_tokens, targets_from_tokens

        tokens = set(target_tokens(job.lora_targets))
        if tokens & {"gate", "up", "down"}:
            tokens |= {"gate", "up", "down"}
        r["lora_targets"] = targets_from_tokens(tokens - {"fc1", "fc2", "qkv_fused"})
    if job.method == "qlora":
        r.update(bits=4, quantization="nf4")


# what each training framework's own config changes of the common reading
_FRAMEWORKS: dict[str, Callable[[dict[str, Any], ConfigJob, str, int | None], None]] = {
    "axolotl": _axolotl, "llama-factory": _llama_factory, "trl": _trl, "unsloth": _unsloth, "torchtune": _torchtune,
}

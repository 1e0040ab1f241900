"""Readers of configuration mappings (already loaded safely): Axolotl, LLaMA-Factory, HF/TRL arguments, DeepSpeed
JSON, accelerate config. Each is a key table (readers/keys.py: key → what it says) applied to the mapping, after the
keys read together (the method from adapter + quantization); keys a table lacks go through `Collector.unknown`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.configs.common import as_float, as_int
from engine.configs.options import known
from engine.configs.readers.collect import Collector, as_bool, set_method, zero_from_path
from engine.configs.readers.keys import (
    Handler,
    apply,
    each,
    model,
    optimizer,
    precision,
    skip,
    targets,
    to,
    unknown,
    when_true,
)
from engine.configs.safety import flatten

AXOLOTL_RL = {"dpo": "dpo", "ipo": "dpo", "orpo": "orpo", "kto": "kto", "simpo": "simpo", "grpo": "grpo"}
LF_STAGE = {"pt": "pretrain", "sft": "sft", "rm": "rm", "ppo": "ppo", "dpo": "dpo", "kto": "kto"}
FUSED_KEYS = ("liger_fused_linear_cross_entropy", "liger_cross_entropy", "cut_cross_entropy")
ZERO = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}

# TRL's vLLM generation settings (GRPOConfig) → the request's `rollout` field and its value (CONTRACT.md v2)
ROLLOUT: dict[str, tuple[str, Any]] = {
    "use_vllm": ("on", lambda v: bool(as_bool(v))),
    "vllm_mode": ("mode", lambda v: str(v) if str(v) in ("colocate", "server") else None),
    "vllm_gpu_memory_utilization": ("gpu_memory_utilization", as_float),
    "vllm_tensor_parallel_size": ("tensor_parallel", as_int),
    "vllm_enable_sleep_mode": ("sleep", as_bool),
}


def _rollout(key: str, value: Any, c: Collector) -> None:
    r = dict(c.fields.get("rollout") or {"engine": "vllm"})
    if key in ROLLOUT:
        field, convert = ROLLOUT[key]
        r[field] = convert(value)
    c.fields["rollout"] = r


def rollout(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    _rollout(key, value, c)


def finish_rollout(c: Collector) -> None:
    """Keep `rollout` only when vLLM generation is on (use_vllm); TRL's default mode is server."""
    r = c.fields.pop("rollout", None)
    if r and r.pop("on", False):
        r.setdefault("mode", "server")
        c.fields["rollout"] = r


def _zero_file(c: Collector, path: str, ignored_as: str) -> None:
    """A DeepSpeed JSON named, not sent: its stage and offload from the file name where it says them."""
    sharding, offload = zero_from_path(path)
    c.set("sharding", sharding)
    c.set("offload", offload)
    if sharding is None:
        c.ignore(ignored_as)


def _amp_word(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    if str(value).lower() in ("bf16", "fp16", "fp8"):
        c.set("mixed_precision", "amp")


# ---------------------------------------------------------------- Axolotl


def _ax_targets(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    if not as_bool(data.get("lora_target_linear")):  # lora_target_linear: true wins over a module list
        c.targets(key, value)


def _ax_checkpointing(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    fsdp = data.get("fsdp_config")
    fsdp_ac = isinstance(fsdp, dict) and as_bool(fsdp.get("activation_checkpointing"))
    c.set("gradient_checkpointing", bool(fsdp_ac) or (bool(value) if not isinstance(value, str) else True))


def _ax_flash(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    c.set("flash_attention", as_bool(value) or as_bool(data.get("sdp_attention")) or False)


def _ax_deepspeed(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    _zero_file(c, str(value), key)


def _ax_fsdp(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    if not isinstance(value, dict):
        c.unknown(key, value)
        return
    c.set("sharding", "fsdp")
    c.set("offload", as_bool(value.get("offload_params")) or False)
    if as_bool(value.get("activation_checkpointing")):
        c.fields["gradient_checkpointing"] = True


def _ax_vllm(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    if not isinstance(value, dict):
        c.unknown(key, value)
        return
    for sub, v in value.items():
        if sub in ("gpu_memory_utilization", "tensor_parallel_size"):
            _rollout(f"vllm_{sub}", v, c)
        else:
            c.unknown(f"vllm.{sub}", v)


def _ax_trl(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    if not isinstance(value, dict):
        c.unknown(key, value)
        return
    c.set("num_generations", as_int(value.get("num_generations")))
    c.set("output_len", as_int(value.get("max_completion_length")))
    for sub in value:
        if sub in ROLLOUT:
            _rollout(sub, value[sub], c)
        elif sub not in ("num_generations", "max_completion_length"):
            c.unknown(f"trl.{sub}", value[sub])


AXOLOTL_KEYS: dict[str, Handler] = {
    **each(("adapter", "load_in_4bit", "load_in_8bit", "rl", *FUSED_KEYS), skip),  # read before the loop
    "base_model": model,
    "lora_r": to("lora_rank", as_int),
    "lora_target_linear": when_true("lora_targets", "all_linear"),
    "lora_target_modules": _ax_targets,
    "sequence_len": to("seq_len", as_int),
    "micro_batch_size": to("batch_size", as_int),
    "optimizer": optimizer,
    **each(("bf16", "fp16", "tf32"), precision),
    "gradient_checkpointing": _ax_checkpointing,
    "flash_attention": _ax_flash,
    "sdp_attention": when_true("flash_attention", True),
    "deepspeed": _ax_deepspeed,
    "fsdp_config": _ax_fsdp,
    **each(("context_parallel_size", "sequence_parallel_degree"), to("context_parallel", as_int)),
    "vllm": _ax_vllm,
    "trl": _ax_trl,
}


def axolotl(data: dict[str, Any], c: Collector) -> None:
    adapter = str(data.get("adapter") or "").lower()
    quant = 4 if as_bool(data.get("load_in_4bit")) else 8 if as_bool(data.get("load_in_8bit")) else None
    if adapter and adapter not in ("lora", "qlora"):
        c.ignore("adapter")
    else:
        set_method(c, adapter in ("lora", "qlora"), quant)
    c.set("stage", AXOLOTL_RL.get(str(data.get("rl") or "").lower(), "sft"))
    c.default("gradient_checkpointing", False)
    c.default("fused_loss", False)
    fused = [as_bool(data.get(k)) for k in FUSED_KEYS if k in data]
    if fused:
        c.set("fused_loss", any(fused))
    apply(AXOLOTL_KEYS, data, c)
    finish_rollout(c)
    c.default("offload", False)


# ---------------------------------------------------------------- TrainingArguments, TRL configs, ModelConfig


def _hf_deepspeed(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    if isinstance(value, dict):
        deepspeed(value, c)
    else:
        _zero_file(c, str(value), f"{key} (the JSON file it names was not sent)")


def _hf_fsdp(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    words = " ".join(value) if isinstance(value, list) else str(value)
    if words.strip() and words.strip().lower() not in ("false", "none", ""):
        c.set("sharding", "fsdp")
        c.set("offload", "offload" in words)


def _hf_generations(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    c.set("num_generations", as_int(value))
    c.set("stage", "grpo")


HF_KEYS: dict[str, Handler] = {
    "per_device_train_batch_size": to("batch_size", as_int),
    "max_length": to("seq_len", as_int),
    # TRL's old name of it: SFTConfig.__post_init__ sets max_length = max_seq_length (huggingface/trl v0.19.0
    # trl/trainer/sft_config.py, deprecated there, removed in v0.20)
    "max_seq_length": to("seq_len", as_int),
    "optim": optimizer,
    **each(("bf16", "fp16"), precision),
    "gradient_checkpointing": to("gradient_checkpointing", as_bool),
    "use_liger_kernel": to("fused_loss", as_bool),
    "deepspeed": _hf_deepspeed,
    "fsdp": _hf_fsdp,
    "attn_implementation": to("flash_attention", lambda v: str(v).lower() != "eager"),
    "model_name_or_path": model,
    "lora_r": to("lora_rank", as_int),
    "lora_target_modules": targets,
    "num_generations": _hf_generations,
    "max_completion_length": to("output_len", as_int),
    "padding_free": to("padding_free", as_bool),
    **each(ROLLOUT, rollout),
}
HF_METHOD_KEYS = ("use_peft", "load_in_4bit", "load_in_8bit")


def _hf_key(key: str, value: Any, c: Collector) -> None:
    """One TrainingArguments / TRL config / ModelConfig key."""
    (HF_KEYS.get(key) or unknown)(c, key, value, {})


def hf_key(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    _hf_key(key, value, c)


def hf_args(data: dict[str, Any], c: Collector) -> None:
    """TrainingArguments / TRL config / ModelConfig fields in one mapping (a `trl --config` YAML, an args JSON)."""
    if any(k in data for k in ("use_peft", "lora_r", "max_length", "max_seq_length", "num_generations",
                               "dataset_name")):
        c.fields["framework"] = "trl"  # TRL's own fields (ModelConfig, ScriptArguments, trainer configs)
    trl = c.fields.get("framework") == "trl"
    peft = bool(as_bool(data.get("use_peft")))
    quant = 4 if as_bool(data.get("load_in_4bit")) else 8 if as_bool(data.get("load_in_8bit")) else None
    set_method(c, peft, quant)
    apply({**HF_KEYS, **each(HF_METHOD_KEYS, skip)}, data, c)
    finish_rollout(c)
    c.default("gradient_checkpointing", trl)  # TRL configs default to True (trl/trainer/base_config.py), HF to off
    c.default("fused_loss", False)
    c.default("offload", False)
    if trl:
        c.default("mixed_precision", "amp")  # TRL: bf16 defaults to on (base_config.py __post_init__)


# ---------------------------------------------------------------- LLaMA-Factory (its own keys, then HF's)


def _lf_precision(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    if not as_bool(data.get("pure_bf16")):
        precision(c, key, value, data)


LF_KEYS: dict[str, Handler] = {
    **each(("finetuning_type", "quantization_bit", "quantization_method", "stage", "disable_gradient_checkpointing",
            "enable_liger_kernel", "pure_bf16", "pref_loss"), skip),  # read before the loop
    "model_name_or_path": model,
    "lora_rank": to("lora_rank", as_int),
    "lora_target": targets,
    "cutoff_len": to("seq_len", as_int),
    **each(("bf16", "fp16"), _lf_precision),
    "flash_attn": to("flash_attention", lambda v: str(v).lower() != "disabled"),
}


def llama_factory(data: dict[str, Any], c: Collector) -> None:
    ft = str(data.get("finetuning_type") or "lora").lower()
    qbit = as_int(data.get("quantization_bit"))
    qmethod = str(data.get("quantization_method") or "bnb").lower()
    if ft in ("lora", "full"):
        set_method(c, ft == "lora", qbit if qmethod in ("bnb", "bitsandbytes") else None)
    else:
        c.ignore("finetuning_type")
    if qbit and qmethod in ("gptq", "awq"):
        c.set("quantization", qmethod)
    stage = str(data.get("stage") or "sft").lower()
    loss = str(data.get("pref_loss") or "").lower()
    c.set("stage", loss if stage == "dpo" and loss in ("orpo", "simpo") else LF_STAGE.get(stage))  # pref_loss
    c.set("gradient_checkpointing", not as_bool(data.get("disable_gradient_checkpointing")))
    c.set("fused_loss", bool(as_bool(data.get("enable_liger_kernel"))))
    c.set("mixed_precision", "pure_bf16" if as_bool(data.get("pure_bf16")) else None)
    apply(LF_KEYS, data, c, hf_key)
    c.default("offload", False)


# ---------------------------------------------------------------- DeepSpeed JSON, accelerate config (flattened keys)


def _ds_batch(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    b = as_int(value)
    if b is None and value != "auto":  # "auto": the Trainer fills it in
        c.ignore(key)
    c.set("batch_size", b)


def _ds_optimizer(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    c.optimizer(key, {"adamw": "adamw_torch", "adam": "adamw_torch"}.get(str(value).lower(), str(value)))


DS_MONITORS = ("wandb", "tensorboard", "csv_monitor", "comet", "flops_profiler", "comms_logger")  # DeepSpeed's logging


def _ds_other(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    if key.startswith("zero_optimization.offload_"):
        return  # offload devices are read before the loop
    if key.startswith(("optimizer.params", "scheduler.")):
        c.unused(key)  # learning rate, betas, warm-up: no bearing on memory
    elif key in known("deepspeed") or key.split(".")[0] in ("bf16", "fp16", *DS_MONITORS):
        c.unknown(key, value)
    else:
        c.other(key, value)


DEEPSPEED_KEYS: dict[str, Handler] = {
    "train_micro_batch_size_per_gpu": _ds_batch,
    **each(("bf16.enabled", "fp16.enabled"), precision),
    "optimizer.type": _ds_optimizer,
    "zero_optimization.stage": skip,  # read before the loop
}


def deepspeed(data: dict[str, Any], c: Collector) -> None:
    c.fields.setdefault("framework", "deepspeed")
    flat = flatten(data)
    zero_stage = as_int(flat.get("zero_optimization.stage"))
    if zero_stage is not None:
        c.set("sharding", ZERO.get(zero_stage))
    offload = any(str(flat.get(f"zero_optimization.{k}.device", "none")).lower() in ("cpu", "nvme")
                  for k in ("offload_optimizer", "offload_param"))
    c.set("offload", offload)
    apply(DEEPSPEED_KEYS, flat, c, _ds_other)


def _acc_other(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    if key.startswith("deepspeed_config.offload_"):
        return  # read before the loop
    c.unknown(key.rsplit(".", 1)[-1] if key.startswith("fsdp_config.") else key, value)


ACCELERATE_KEYS: dict[str, Handler] = {
    "mixed_precision": _amp_word,
    "parallelism_config.parallelism_config_cp_size": to("context_parallel", as_int),
    **each(("distributed_type", "num_processes", "fsdp_config.fsdp_offload_params",
            "fsdp_config.fsdp_activation_checkpointing", "deepspeed_config.zero_stage",
            "deepspeed_config.deepspeed_config_file"), skip),  # read before the loop
}


def accelerate_config(data: dict[str, Any], c: Collector) -> None:
    dist = str(data.get("distributed_type") or "").upper()
    flat = flatten(data)
    if dist == "FSDP":
        c.set("sharding", "fsdp")
        c.set("offload", as_bool(flat.get("fsdp_config.fsdp_offload_params")) or False)
        if as_bool(flat.get("fsdp_config.fsdp_activation_checkpointing")):
            c.set("gradient_checkpointing", True)
    elif dist == "DEEPSPEED":
        stage = as_int(flat.get("deepspeed_config.zero_stage"))
        if stage is not None:
            c.set("sharding", ZERO.get(stage))
        off = any(str(flat.get(f"deepspeed_config.offload_{k}_device", "none")).lower() in ("cpu", "nvme")
                  for k in ("optimizer", "param"))
        c.set("offload", off or None)
        if "deepspeed_config.deepspeed_config_file" in flat:
            c.ignore("deepspeed_config.deepspeed_config_file (the JSON file it names was not sent)")
    elif dist in ("MULTI_GPU",):
        c.set("sharding", "ddp")
    n = as_int(data.get("num_processes"))
    if n and n > 0:
        c.gpu_count = n * max(1, as_int(data.get("num_machines")) or 1)
    apply(ACCELERATE_KEYS, flat, c, _acc_other)


def torchtune_config(data: dict[str, Any], c: Collector) -> None:
    """A torchtune recipe config YAML (the file `tune run --config` takes)."""
    from engine.configs.readers.cmdline import tune_overrides

    c.fields.setdefault("framework", "torchtune")
    flat = flatten(data)
    component = str(flat.get("model._component_", ""))
    peft = "lora" in component
    c.set("method", ("qlora" if "qlora" in component else "lora") if peft else "full")
    c.set("bits", 4 if "qlora" in component else 16)
    if "qlora" in component:
        c.set("quantization", "nf4")
    c.set("mixed_precision", "pure_bf16" if str(data.get("dtype", "bf16")) == "bf16" else None)
    c.set("stage", "sft")

    def text(v: Any) -> str:
        if isinstance(v, list):
            return "[" + ",".join(str(x) for x in v) + "]"
        return str(v)

    items = [(k, text(v)) for k, v in flat.items() if k not in ("model._component_", "dtype")]
    tune_overrides(items, c, peft)


# ---------------------------------------------------------------- ArcticTraining (DeepSpeed's ALST) recipes

ARCTIC_STAGES = {"sft": "sft", "dpo": "dpo"}
ARCTIC_ATTENTION = ("flash_attention_2", "flash_attention_3")
ARCTIC_NO_MEMORY = ("exit_iteration", "min_iterations", "logger", "checkpoint", "seed", "epochs", "train_log_iter",
                    "wandb", "eval_interval", "train_iters", "scheduler", "tokenizer")


def arctictraining(data: dict[str, Any], c: Collector) -> None:
    """An ArcticTraining recipe (snowflakedb/ArcticTraining b28638e6 projects/sequence-parallelism/run-*.yml; keys of
    arctic_training/config/trainer.py, model.py, data.py): DeepSpeed ZeRO with Ulysses sequence parallelism and the
    ALST switches; `model.type: liger` is Liger's fused loss."""
    c.set("stage", ARCTIC_STAGES.get(str(data.get("type") or "sft").lower()))
    raw_model = data.get("model")
    model: dict[str, Any] = raw_model if isinstance(raw_model, dict) else {}
    set_method(c, bool(model.get("peft_config")), None)
    if isinstance(model.get("name_or_path"), str):
        c.model = c.model or model["name_or_path"]
    c.set("fused_loss", str(model.get("type") or "").lower() == "liger")
    attention = str(model.get("attn_implementation") or "flash_attention_2").lower()
    c.set("flash_attention", attention in ARCTIC_ATTENTION)
    c.set("gradient_checkpointing", not as_bool(model.get("disable_activation_checkpoint")))
    c.set("batch_size", as_int(data.get("micro_batch_size")))
    sp = as_int(data.get("sequence_parallel_size"))
    if sp and sp > 1:
        c.set("context_parallel", sp)
        c.gpu_count = max(c.gpu_count or 1, sp)  # the sequence-parallel group is that many GPUs at least
    c.set("activation_offload", as_bool(data.get("activation_checkpoint_cpu_offload")) or None)
    c.set("tiled_mlp", as_bool(data.get("tiled_mlp_compute")) or None)
    raw_data = data.get("data")
    section: dict[str, Any] = raw_data if isinstance(raw_data, dict) else {}
    c.set("seq_len", as_int(section.get("max_length")))
    if isinstance(data.get("deepspeed"), dict):
        ds = dict(data["deepspeed"])
        if ds.pop("seq_parallel_communication_data_type", None) is not None:
            c.unused("deepspeed.seq_parallel_communication_data_type")  # the all-to-all's dtype (bf16 in the recipes)
        deepspeed(ds, c)
    c.default("sharding", "zero3")  # every recipe runs ZeRO-3 (engine/frameworks/arctictraining.toml)
    c.default("offload", False)
    read = {"type", "model", "micro_batch_size", "sequence_parallel_size", "activation_checkpoint_cpu_offload",
            "tiled_mlp_compute", "data", "deepspeed", "optimizer", "gradient_accumulation_steps"}
    for key in data:
        if key in ARCTIC_NO_MEMORY:
            c.unused(key)
        elif key not in read:
            c.unknown(key, data[key])

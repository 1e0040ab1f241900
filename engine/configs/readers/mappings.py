"""Readers of configuration mappings (already loaded safely): Axolotl, LLaMA-Factory, HF/TRL arguments, DeepSpeed
JSON, accelerate config. Each fills a Collector; keys it has no mapping for go through `Collector.unknown`."""

from __future__ import annotations

from typing import Any

from engine.configs.readers.collect import Collector, as_bool, as_int, set_method, zero_from_path
from engine.configs.safety import flatten

AXOLOTL_RL = {"dpo": "dpo", "ipo": "dpo", "orpo": "orpo", "kto": "kto", "simpo": "simpo", "grpo": "grpo"}
LF_STAGE = {"pt": "pretrain", "sft": "sft", "rm": "rm", "ppo": "ppo", "dpo": "dpo", "kto": "kto"}
FUSED_KEYS = ("liger_fused_linear_cross_entropy", "liger_cross_entropy", "cut_cross_entropy")


def _precision(c: Collector, key: str, value: Any) -> None:
    if as_bool(value):
        c.set("mixed_precision", "amp")
    elif value not in (False, None, "false", "False"):
        c.ignore(key)


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
    for key, value in data.items():
        if key in ("adapter", "load_in_4bit", "load_in_8bit", "rl", *FUSED_KEYS):
            continue
        if key == "base_model":
            c.model = str(value)
        elif key == "lora_r":
            c.set("lora_rank", as_int(value))
        elif key == "lora_target_linear":
            if as_bool(value):
                c.set("lora_targets", "all_linear")
        elif key == "lora_target_modules":
            if not as_bool(data.get("lora_target_linear")):
                c.targets(key, value)
        elif key == "sequence_len":
            c.set("seq_len", as_int(value))
        elif key == "micro_batch_size":
            c.set("batch_size", as_int(value))
        elif key == "optimizer":
            c.optimizer(key, value)
        elif key in ("bf16", "fp16", "tf32"):
            _precision(c, key, value)
        elif key == "gradient_checkpointing":
            fsdp_ac = isinstance(data.get("fsdp_config"), dict) and as_bool(
                data["fsdp_config"].get("activation_checkpointing"))
            c.set("gradient_checkpointing", bool(fsdp_ac) or (bool(value) if not isinstance(value, str) else True))
        elif key == "flash_attention":
            c.set("flash_attention", as_bool(value) or as_bool(data.get("sdp_attention")) or False)
        elif key == "sdp_attention":
            if as_bool(value):
                c.set("flash_attention", True)
        elif key == "deepspeed":
            sharding, offload = zero_from_path(str(value))
            c.set("sharding", sharding)
            c.set("offload", offload)
            if sharding is None:
                c.ignore(key)
        elif key == "fsdp_config" and isinstance(value, dict):
            c.set("sharding", "fsdp")
            c.set("offload", as_bool(value.get("offload_params")) or False)
            if as_bool(value.get("activation_checkpointing")):
                c.fields["gradient_checkpointing"] = True
        elif key in ("context_parallel_size", "sequence_parallel_degree"):
            c.set("context_parallel", as_int(value))
        elif key == "vllm" and isinstance(value, dict):
            for sub, v in value.items():
                if sub in ("gpu_memory_utilization", "tensor_parallel_size"):
                    _rollout(f"vllm_{sub}", v, c)
                else:
                    c.unknown(f"vllm.{sub}", v)
        elif key == "trl" and isinstance(value, dict):
            c.set("num_generations", as_int(value.get("num_generations")))
            c.set("output_len", as_int(value.get("max_completion_length")))
            for sub in value:
                if sub in ("use_vllm", "vllm_mode", "vllm_gpu_memory_utilization", "vllm_tensor_parallel_size",
                           "vllm_enable_sleep_mode"):
                    _rollout(sub, value[sub], c)
                elif sub not in ("num_generations", "max_completion_length"):
                    c.unknown(f"trl.{sub}", value[sub])
        else:
            c.unknown(key, value)
    finish_rollout(c)
    c.default("offload", False)


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
    c.set("stage", LF_STAGE.get(stage))
    c.set("gradient_checkpointing", not as_bool(data.get("disable_gradient_checkpointing")))
    c.set("fused_loss", bool(as_bool(data.get("enable_liger_kernel"))))
    c.set("mixed_precision", "pure_bf16" if as_bool(data.get("pure_bf16")) else None)
    used = {"finetuning_type", "quantization_bit", "quantization_method", "stage", "disable_gradient_checkpointing",
            "enable_liger_kernel", "pure_bf16"}
    for key, value in data.items():
        if key in used:
            continue
        if key == "model_name_or_path":
            c.model = str(value)
        elif key == "lora_rank":
            c.set("lora_rank", as_int(value))
        elif key == "lora_target":
            c.targets(key, value)
        elif key == "cutoff_len":
            c.set("seq_len", as_int(value))
        elif key in ("bf16", "fp16"):
            if not as_bool(data.get("pure_bf16")):
                _precision(c, key, value)
        elif key == "flash_attn":
            c.set("flash_attention", str(value).lower() != "disabled")
        else:
            _hf_key(key, value, c)
    c.default("offload", False)


def _hf_key(key: str, value: Any, c: Collector) -> None:
    """One TrainingArguments / TRL config / ModelConfig key."""
    if key == "per_device_train_batch_size":
        c.set("batch_size", as_int(value))
    elif key == "max_length":
        c.set("seq_len", as_int(value))
    elif key == "optim":
        c.optimizer(key, value)
    elif key in ("bf16", "fp16"):
        _precision(c, key, value)
    elif key == "gradient_checkpointing":
        c.set("gradient_checkpointing", as_bool(value))
    elif key == "use_liger_kernel":
        c.set("fused_loss", as_bool(value))
    elif key == "deepspeed":
        if isinstance(value, dict):
            deepspeed(value, c)
        else:
            sharding, offload = zero_from_path(str(value))
            c.set("sharding", sharding)
            c.set("offload", offload)
            if sharding is None:
                c.ignore(f"{key} (the JSON file it names was not sent)")
    elif key == "fsdp":
        words = " ".join(value) if isinstance(value, list) else str(value)
        if words.strip() and words.strip().lower() not in ("false", "none", ""):
            c.set("sharding", "fsdp")
            c.set("offload", "offload" in words)
    elif key == "attn_implementation":
        c.set("flash_attention", str(value).lower() != "eager")
    elif key == "model_name_or_path":
        c.model = str(value)
    elif key == "lora_r":
        c.set("lora_rank", as_int(value))
    elif key == "lora_target_modules":
        c.targets(key, value)
    elif key == "num_generations":
        c.set("num_generations", as_int(value))
        c.set("stage", "grpo")
    elif key == "max_completion_length":
        c.set("output_len", as_int(value))
    elif key == "padding_free":
        c.set("padding_free", as_bool(value))
    elif key in ("use_vllm", "vllm_mode", "vllm_gpu_memory_utilization", "vllm_tensor_parallel_size",
                 "vllm_enable_sleep_mode"):
        _rollout(key, value, c)
    else:
        c.unknown(key, value)


def _rollout(key: str, value: Any, c: Collector) -> None:
    """TRL's vLLM generation settings → the request's `rollout` (CONTRACT.md v2)."""
    r = dict(c.fields.get("rollout") or {"engine": "vllm"})
    if key == "use_vllm":
        r["on"] = bool(as_bool(value))
    elif key == "vllm_mode":
        r["mode"] = str(value) if str(value) in ("colocate", "server") else None
    elif key == "vllm_gpu_memory_utilization":
        from engine.configs.readers.collect import as_float

        r["gpu_memory_utilization"] = as_float(value)
    elif key == "vllm_tensor_parallel_size":
        r["tensor_parallel"] = as_int(value)
    elif key == "vllm_enable_sleep_mode":
        r["sleep"] = as_bool(value)
    c.fields["rollout"] = r


def finish_rollout(c: Collector) -> None:
    """Keep `rollout` only when vLLM generation is on (use_vllm); TRL's default mode is server."""
    r = c.fields.pop("rollout", None)
    if r and r.pop("on", False):
        r.setdefault("mode", "server")
        c.fields["rollout"] = r


HF_METHOD_KEYS = ("use_peft", "load_in_4bit", "load_in_8bit")


def hf_args(data: dict[str, Any], c: Collector) -> None:
    """TrainingArguments / TRL config / ModelConfig fields in one mapping (a `trl --config` YAML, an args JSON)."""
    if any(k in data for k in ("use_peft", "lora_r", "max_length", "num_generations", "dataset_name")):
        c.fields["framework"] = "trl"  # TRL's own fields (ModelConfig, ScriptArguments, trainer configs)
    trl = c.fields.get("framework") == "trl"
    peft = bool(as_bool(data.get("use_peft")))
    quant = 4 if as_bool(data.get("load_in_4bit")) else 8 if as_bool(data.get("load_in_8bit")) else None
    set_method(c, peft, quant)
    for key, value in data.items():
        if key not in HF_METHOD_KEYS:
            _hf_key(key, value, c)
    finish_rollout(c)
    c.default("gradient_checkpointing", trl)  # TRL configs default to True (trl/trainer/base_config.py), HF to off
    c.default("fused_loss", False)
    c.default("offload", False)
    if trl:
        c.default("mixed_precision", "amp")  # TRL: bf16 defaults to on (base_config.py __post_init__)


def deepspeed(data: dict[str, Any], c: Collector) -> None:
    c.fields.setdefault("framework", "deepspeed")
    from engine.configs.options import known

    names = known("deepspeed")
    flat = flatten(data)
    zero_stage = as_int(flat.get("zero_optimization.stage"))
    if zero_stage is not None:
        c.set("sharding", {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}.get(zero_stage))
    offload = any(str(flat.get(f"zero_optimization.{k}.device", "none")).lower() in ("cpu", "nvme")
                  for k in ("offload_optimizer", "offload_param"))
    c.set("offload", offload)
    for key, value in flat.items():
        if key == "train_micro_batch_size_per_gpu":
            b = as_int(value)
            if b is None and value != "auto":
                c.ignore(key)
            c.set("batch_size", b)
        elif key in ("bf16.enabled", "fp16.enabled"):
            _precision(c, key, value)
        elif key == "optimizer.type":
            c.optimizer(key, {"adamw": "adamw_torch", "adam": "adamw_torch"}.get(str(value).lower(), str(value)))
        elif key == "zero_optimization.stage" or key.startswith(("zero_optimization.offload_", "optimizer.params",
                                                                  "scheduler.")):
            continue
        elif key in names or key.split(".")[0] in ("bf16", "fp16"):
            c.unknown(key, value)
        else:
            c.other(key, value)


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
            c.set("sharding", {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}.get(stage))
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
    for key, value in flat.items():
        if key == "mixed_precision":
            if str(value).lower() in ("bf16", "fp16", "fp8"):
                c.set("mixed_precision", "amp")
        elif key == "parallelism_config.parallelism_config_cp_size":
            c.set("context_parallel", as_int(value))
        elif key in ("distributed_type", "num_processes", "fsdp_config.fsdp_offload_params",
                     "fsdp_config.fsdp_activation_checkpointing", "deepspeed_config.zero_stage",
                     "deepspeed_config.deepspeed_config_file") or key.startswith("deepspeed_config.offload_"):
            continue
        else:
            c.unknown(key.rsplit(".", 1)[-1] if key.startswith("fsdp_config.") else key, value)


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

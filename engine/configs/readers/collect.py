"""What a reader gathers: request fields, the keys it did not understand, the secrets it dropped; then the Request."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from engine.configs.common import HF_OPTIM_BACK, made_for, targets_from_modules
from engine.configs.model import ReadResult
from engine.configs.safety import REDACTED, is_secret_key, is_secret_value, redact
from engine.schema import Request

# Keys with no bearing on memory: understood, used for nothing (learning rate, logging, saving, data paths, ...).
NO_MEMORY = re.compile(
    r"(^|_|\.)(learning_rate|lr|warmup|warmup_ratio|warmup_steps|logging|logging_steps|log|save|saves|output_dir|"
    r"seed|wandb|hub|report_to|eval|evaluation|num_epochs|num_train_epochs|epochs|max_steps|weight_decay|adam_beta1|"
    r"adam_beta2|adam_epsilon|max_grad_norm|lr_scheduler|lr_scheduler_type|dataset|datasets|dataset_name|template|"
    r"val_set_size|run_name|resume|resume_from_checkpoint|dataloader|tokenizer|chat_template|special_tokens|"
    r"trust_remote_code|do_train|overwrite|overwrite_cache|overwrite_output_dir|plot_loss|preprocessing|cache_dir|"
    r"strict|debug|compute_environment|machine_rank|num_machines|rdzv_backend|same_network|use_cpu|"
    r"main_training_function|gradient_clipping|gradient_accumulation_steps|train_batch_size|lora_alpha|lora_dropout|"
    r"task_type|bias|dataset_prepared_path|micro_batch_size_eval|save_steps|save_strategy|logging_dir|do_eval|"
    r"per_device_eval_batch_size|max_samples|preprocessing_num_workers|ddp_timeout|metric_logger|profiler|device|"
    r"checkpointer|output|shuffle|clip_grad_norm|compile|log_every_n_steps|log_peak_memory_stats|log_level|"
    r"max_steps_per_epoch|optimizer\.lr|optimizer\.weight_decay|optimizer\.fused|low_cpu_ram|reward_funcs|"
    r"sample_packing|pad_to_sequence_len|base_model_config|tokenizer_type|model_type|hf_token_env|"
    r"fsdp_state_dict_type|fsdp_auto_wrap_policy|fsdp_reshard_after_forward|fsdp_cpu_ram_efficient_loading|"
    r"auto_wrap_policy|state_dict_type|reshard_after_forward|fsdp_version|zero3_init_flag|deepspeed_config_file|"
    r"overlap_comm|contiguous_gradients|stage3_gather_16bit_weights_on_model_save|pin_memory|"
    r"bnb_4bit_quant_type|bnb_4bit_compute_dtype|bnb_4bit_quant_storage|dtype|torch_dtype|quantization_method|finetuning_type|host|port|"
    r"use_vllm|vllm_mode|plugins|stage|parallelism_config_dp_shard_size|gpu_layers|split_mode|tensor_split|"
    r"hf_use_auth_token|use_auth_token|steps_per_print|wall_clock_breakdown|dump_state|prescale_gradients|gradient_predivide_factor|"
    r"remove_unused_columns|loss_type|cpo_alpha|simpo_gamma|pref_beta|orpo_alpha|rl_beta|served_model_name|"
    r"hf_overrides|json_model_override_args)$")


# Prefixes with no bearing on memory: torchtune config sections, evaluation, logging, saving, the Hub
NO_MEMORY_SECTIONS = ("tokenizer.", "checkpointer.", "metric_logger.", "profiler.", "lr_scheduler.", "save_", "eval_",
                      "hub_", "push_to_hub", "logging_", "report_", "wandb_", "run_", "data_seed", "dataloader_",
                      "resume_", "overwrite_", "lr_", "warmup_", "adam_", "eos_token", "pad_token", "bos_token",
                      "chat_template", "wandb.", "tensorboard.", "csv_monitor.", "comet.", "flops_profiler.",
                      "comms_logger.")


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("true", "yes", "1", "on", "auto"):
            return True
        if v in ("false", "no", "0", "off", "none"):
            return False
    if isinstance(value, int):
        return bool(value)
    return None


def zero_from_path(path: str) -> tuple[str | None, bool]:
    """(sharding, offload) from a DeepSpeed config's file name (zero3_bf16_cpuoffload_all.json, ds_z2_config.json)."""
    name = path.rsplit("/", 1)[-1].lower()
    m = re.search(r"(?:zero|_z|^z)(\d)", name)
    stage = int(m.group(1)) if m else None
    sharding = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}.get(stage) if stage is not None else None
    return sharding, "offload" in name


class Collector:
    def __init__(self, fmt: str, framework: str | None):
        self.format = fmt
        self.fields: dict[str, Any] = {"framework": framework} if framework else {}
        self.ignored: list[str] = []
        self.no_effect: list[str] = []
        self.secrets = 0
        self.gpu_count: int | None = None
        self.gpu_name: str | None = None
        self.model: str | None = None

    def set(self, field: str, value: Any) -> None:
        if value is not None:
            self.fields[field] = value

    def default(self, field: str, value: Any) -> None:
        """The tool's own default for a field its file did not set."""
        self.fields.setdefault(field, value)

    def ignore(self, key: str) -> None:
        name = redact(str(key))[:120]
        if name not in self.ignored:
            self.ignored.append(name)

    def secret(self, key: str, value: Any) -> bool:
        """True (and the value dropped) when the key or its value is a secret. A switch is never one:
        `hf_use_auth_token: true` says to use the stored login, it carries no token."""
        if isinstance(value, bool) or (isinstance(value, str) and value.strip().lower() in ("true", "false")):
            return is_secret_value(str(key)) and self._drop(key)
        if is_secret_key(str(key)) or is_secret_value(value) or is_secret_value(str(key)):
            return self._drop(key)
        return False

    def _drop(self, key: str) -> bool:
        self.secrets += 1
        self.ignore(f"{redact(str(key)) if not is_secret_value(str(key)) else REDACTED} (secret, not read)")
        return True

    def other(self, key: str, value: Any) -> None:
        """A key outside the tool's option list: a secret (dropped) or listed as not understood."""
        if not self.secret(key, value):
            self.ignore(key)

    def unknown(self, key: str, value: Any) -> None:
        """A key the reader has no mapping for: listed as without effect when it has no bearing on memory, else as
        not understood."""
        if self.secret(key, value):
            return
        plain = str(key).lstrip("-").replace("-", "_")
        if not NO_MEMORY.search(plain) and not plain.startswith(NO_MEMORY_SECTIONS):
            self.ignore(str(key))
            return
        self.unused(key)

    def unused(self, key: str) -> None:
        """A key read and left out: it does not change memory (logging, saving, the Hub, the learning rate)."""
        name = redact(str(key))[:120]
        if name not in self.no_effect:
            self.no_effect.append(name)

    def optimizer(self, key: str, value: Any) -> None:
        opt = HF_OPTIM_BACK.get(str(value).lower()) if isinstance(value, str) else None
        if opt is None:
            self.ignore(f"{key}")
        else:
            self.set("optimizer", opt)

    def targets(self, key: str, value: Any) -> None:
        t = targets_from_modules(value) if isinstance(value, list | str) else None
        if t is None:
            self.ignore(key)
        else:
            self.set("lora_targets", t)

    def header(self, text: str) -> None:
        """The GPU (and model) from a header this project wrote."""
        found = made_for(text)
        if found:
            self.gpu_count = self.gpu_count or found[0]
            self.gpu_name = found[1]
        m = re.search(r"gpu-advisor: .{1,40}? config for (\S{1,200}?), ", text)
        if m:
            self.model = self.model or m.group(1)

    def result(self) -> ReadResult:
        data = dict(self.fields)
        for key in [k for k, v in data.items() if is_secret_value(v)]:
            data.pop(key)
            self.secrets += 1
            self.ignore(f"{key} (secret, not read)")
        if self.model and is_secret_value(self.model):
            self.model = None
            self.secrets += 1
            self.ignore("model (secret, not read)")
        if self.model:
            data["model"] = {"name": self.model[:200]}
        if "sharding" not in data and data.get("method") not in (None, "inference"):
            data["sharding"] = "ddp" if (self.gpu_count or 1) > 1 else "none"
        if self.gpu_count or self.gpu_name:
            data["gpus"] = [{"name": self.gpu_name, "count": self.gpu_count or 1}]
        for _ in range(len(data) + 1):
            try:
                request = Request.model_validate(data)
                break
            except ValidationError as exc:
                bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
                if not bad:
                    return ReadResult(format=self.format, ignored=self.ignored, no_effect=self.no_effect,
                                      secrets=self.secrets, error="invalid_values")
                for key in bad:
                    data.pop(key, None)
                    self.ignore(f"{key} (value out of range)")
        else:
            return ReadResult(format=self.format, ignored=self.ignored, no_effect=self.no_effect, secrets=self.secrets,
                              error="invalid_values")
        return ReadResult(request=request, format=self.format, ignored=self.ignored, no_effect=self.no_effect,
                          secrets=self.secrets)


def method_from(peft: bool, quant_bits: int | None) -> tuple[str, int]:
    if peft:
        return ("qlora", quant_bits) if quant_bits in (4, 8) else ("lora", 16)
    return "full", 16


def set_method(c: Collector, peft: bool, quant_bits: int | None) -> None:
    method, bits = method_from(peft, quant_bits)
    c.set("method", method)
    c.set("bits", bits)
    if method == "qlora":
        c.set("quantization", "nf4" if bits == 4 else "int8")

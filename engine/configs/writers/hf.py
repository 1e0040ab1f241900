"""A TRL script (SFTTrainer / DPOTrainer / GRPOTrainer), the `trl` command line and an Unsloth snippet.

Argument names: options/trl.txt (trainer configs, ModelConfig), options/transformers.txt (TrainingArguments),
options/unsloth.txt (FastLanguageModel.from_pretrained / get_peft_model).
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from engine.configs.common import HF_OPTIM, header, target_modules
from engine.configs.model import ConfigFile, ConfigJob, ConfigOutput
from engine.configs.writers.launch import accelerate_files, launcher, train_gpus

TRAINERS = {"sft": ("SFTTrainer", "SFTConfig"), "dpo": ("DPOTrainer", "DPOConfig"),
            "grpo": ("GRPOTrainer", "GRPOConfig"), "kto": ("KTOTrainer", "KTOConfig"),
            "rm": ("RewardTrainer", "RewardConfig"), "pretrain": ("SFTTrainer", "SFTConfig"),
            "orpo": ("ORPOTrainer", "ORPOConfig"), "simpo": ("CPOTrainer", "CPOConfig")}
# Trainers outside `trl`'s top level (TRL f2cd57710ae3 docs/source/orpo_trainer.md, cpo_trainer.md: ORPO and CPO
# live in trl.experimental); SimPO is CPOTrainer with loss_type="simpo" and cpo_alpha=0.0 (cpo_trainer.md)
TRAINER_MODULES = {"orpo": "trl.experimental.orpo", "simpo": "trl.experimental.cpo"}
STAGE_ARGS: dict[str, dict[str, Any]] = {"simpo": {"loss_type": "simpo", "cpo_alpha": 0.0}}
# The datasets TRL's own docs use for each trainer (a placeholder for the user's data): preference pairs (prompt,
# chosen, rejected) for DPO, ORPO, SimPO and the reward model, unpaired labels for KTO, prompts for GRPO
DATASETS = {"sft": "trl-lib/Capybara", "dpo": "trl-lib/ultrafeedback_binarized", "grpo": "trl-lib/tldr",
            "kto": "trl-lib/kto-mix-14k", "rm": "trl-lib/ultrafeedback_binarized", "pretrain": "trl-lib/Capybara",
            "orpo": "trl-lib/ultrafeedback_binarized", "simpo": "trl-lib/ultrafeedback_binarized"}
# `trl <command>` (TRL f2cd57710ae3 docs/source/clis.md: sft, dpo, reward, grpo, rloo, kto; no ORPO/CPO command)
CLI = {"sft": "sft", "dpo": "dpo", "grpo": "grpo", "kto": "kto", "rm": "reward", "pretrain": "sft"}


def trainer_import(stage: str | None) -> str:
    """"from trl import DPOTrainer, DPOConfig", or the experimental module that holds ORPO and CPO (SimPO)."""
    trainer, config = TRAINERS.get(stage or "sft", TRAINERS["sft"])
    return f"from {TRAINER_MODULES.get(stage or '', 'trl')} import {trainer}, {config}"


def rollout_args(job: ConfigJob) -> dict[str, Any]:
    """GRPOConfig's vLLM generation settings (use_vllm, vllm_mode, ...) for the rollout the estimate assumed."""
    if job.rollout_mode is None:
        return {}
    r: dict[str, Any] = {"use_vllm": True, "vllm_mode": job.rollout_mode}
    if job.rollout_gpu_memory_utilization is not None:
        r["vllm_gpu_memory_utilization"] = job.rollout_gpu_memory_utilization
    if job.rollout_tensor_parallel and job.rollout_tensor_parallel > 1:
        r["vllm_tensor_parallel_size"] = job.rollout_tensor_parallel
    if job.rollout_sleep:
        r["vllm_enable_sleep_mode"] = True
    return r


def generation_note(job: ConfigJob) -> list[str]:
    gens = job.num_generations or 8
    batch = math.lcm(gens, job.batch_size * train_gpus(job))
    if job.stage == "grpo" and batch != job.batch_size * job.grad_accum * train_gpus(job):
        return [f"changed:generation_batch_size={batch} (TRL needs a multiple of num_generations)"]
    return []


def sharded_qlora(job: ConfigJob) -> bool:
    """4-bit weights sharded by FSDP or ZeRO-3 must be stored as bf16 (bnb_4bit_quant_storage) to be flattened."""
    return job.method == "qlora" and job.bits == 4 and job.sharding in ("fsdp", "zero3")


def torch_dtype(job: ConfigJob) -> str:
    """The dtype the model loads in: float16 where the GPU has no bf16 (T4, V100); float32 for a full fine-tune there,
    as the Trainer's fp16 grad scaler refuses to unscale fp16 gradients."""
    if job.half_dtype == "fp16":
        return "float16" if job.peft else "float32"
    return "bfloat16"


def training_args(job: ConfigJob) -> dict[str, Any]:
    """Trainer config arguments (TrainingArguments + the trainer's own) for the job."""
    a: dict[str, Any] = {"output_dir": "outputs", "per_device_train_batch_size": job.batch_size,
                         "gradient_accumulation_steps": job.grad_accum, "gradient_checkpointing":
                         job.gradient_checkpointing, job.half_dtype: True, "max_length": job.seq_len}
    if job.optimizer:
        a["optim"] = HF_OPTIM[job.optimizer]
    if job.fused_loss:
        a["use_liger_kernel"] = True
    a.update(STAGE_ARGS.get(job.stage or "", {}))
    if job.stage == "grpo":
        gens = job.num_generations or 8
        a["num_generations"] = gens
        a["max_completion_length"] = job.output_len or 256
        # GRPOConfig wants the generation batch divisible by num_generations and by the global micro-batch
        a["generation_batch_size"] = math.lcm(gens, job.batch_size * train_gpus(job))
        a.pop("max_length")
        a.update(rollout_args(job))
    if job.sharding == "fsdp":
        # FSDP checkpoints itself (fsdp_activation_checkpointing in accelerate.yaml); the Trainer refuses both on
        a["gradient_checkpointing"] = False
    if job.sharding in ("zero1", "zero2", "zero3"):
        from engine.configs.writers.launch import ds_file

        a["deepspeed"] = ds_file(job)
    return a


def model_args(job: ConfigJob) -> dict[str, Any]:
    """ModelConfig arguments (trl/trainer/model_config.py) for the job: quantization and LoRA."""
    m: dict[str, Any] = {"model_name_or_path": job.model, "dtype": torch_dtype(job),
                         "attn_implementation": "flash_attention_2" if job.flash_attention else "eager"}
    if job.method == "qlora":
        m["load_in_4bit" if job.bits == 4 else "load_in_8bit"] = True
        if job.bits == 4:
            m["bnb_4bit_quant_type"] = "nf4"
            if sharded_qlora(job):
                m["bnb_4bit_quant_storage"] = "bfloat16"
    if job.peft:
        m.update(use_peft=True, lora_r=job.lora_rank, lora_alpha=job.lora_rank * 2,
                 lora_target_modules="all-linear" if job.lora_targets == "all_linear"
                 else target_modules(job.lora_targets))
    return m


def _notes(job: ConfigJob) -> list[str]:
    notes = []
    if job.stage not in TRAINERS:
        notes.append(f"not_expressible:stage={job.stage}")
    if job.stage == "grpo":
        notes.append("not_expressible:seq_len (GRPOConfig does not truncate prompts;"
                     " completions: max_completion_length)")
        notes += generation_note(job)
    if job.mixed_precision == "pure_bf16":
        notes.append("not_expressible:mixed_precision=pure_bf16")
    if job.offload and job.sharding in ("none", "ddp"):
        notes.append("not_expressible:offload without zero or fsdp")
    return notes


def _py(value: Any) -> str:
    return repr(value)


def _dataset_and_args(job: ConfigJob, config: str, args: dict[str, Any]) -> list[str]:
    """The script's dataset line and its trainer config call."""
    body = ",\n    ".join(f"{k}={_py(v)}" for k, v in args.items())
    return [f"dataset = load_dataset({DATASETS.get(job.stage, DATASETS['sft'])!r}, split='train')  # your data here",
            f"args = {config}(\n    {body},\n)"]


def trl_script(job: ConfigJob) -> ConfigOutput:
    trainer, config = TRAINERS.get(job.stage, TRAINERS["sft"])
    args, margs = training_args(job), model_args(job)
    lines = [*header(job, f"TRL {trainer}"), "from datasets import load_dataset",
             "from transformers import AutoModelForCausalLM, AutoTokenizer"]
    if job.method == "qlora":
        lines.append("from transformers import BitsAndBytesConfig")
    if job.peft:
        lines.append("from peft import LoraConfig")
    lines.append(trainer_import(job.stage))
    lines += ["", f"MODEL = {job.model!r}"]
    load = [f"dtype={margs['dtype']!r}", f"attn_implementation={margs['attn_implementation']!r}"]
    if job.method == "qlora":
        if job.bits == 4:
            storage = ", bnb_4bit_quant_storage='bfloat16'" if sharded_qlora(job) else ""
            lines.append("quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4', "
                         f"bnb_4bit_compute_dtype={torch_dtype(job)!r}{storage})")
        else:
            lines.append("quant = BitsAndBytesConfig(load_in_8bit=True)")
        load.append("quantization_config=quant")
    lines.append(f"model = AutoModelForCausalLM.from_pretrained(MODEL, {', '.join(load)})")
    lines.append("tokenizer = AutoTokenizer.from_pretrained(MODEL)")
    peft = ""
    if job.peft:
        targets = "'all-linear'" if job.lora_targets == "all_linear" else _py(target_modules(job.lora_targets))
        lines.append(f"peft_config = LoraConfig(r={job.lora_rank}, lora_alpha={job.lora_rank * 2}, "
                     f"lora_dropout=0.05, target_modules={targets}, task_type='CAUSAL_LM')")
        peft = ", peft_config=peft_config"
    lines += _dataset_and_args(job, config, args)
    extra = ", reward_funcs=reward_len" if job.stage == "grpo" else ""
    if job.stage == "grpo":
        lines[-1:-1] = ["", "def reward_len(completions, **kwargs):  # your reward here",
                        "    return [-abs(200 - len(c)) for c in completions]", ""]
    lines.append(f"trainer = {trainer}(model=model, args=args, train_dataset=dataset, processing_class=tokenizer"
                 f"{peft}{extra})")
    lines.append("trainer.train()")
    files = [ConfigFile(name="train.py", text="\n".join(lines) + "\n"), *accelerate_files(job)]
    return ConfigOutput(framework="trl", files=files, command=launcher(job, "train.py"),
                        estimate_gib=job.estimate_gib, notes=_notes(job))


def trl_command(job: ConfigJob) -> str:
    """`trl <stage> --flag value ...` with the same settings as the script (flags are the config field names)."""
    argv = ["trl", CLI.get(job.stage, "sft")]
    for k, v in {**model_args(job), **training_args(job)}.items():
        if isinstance(v, bool):
            argv += [f"--{k}", "True" if v else "False"]
        elif isinstance(v, list):
            argv += [f"--{k}", *map(str, v)]
        else:
            argv += [f"--{k}", str(v)]
    argv += ["--dataset_name", DATASETS.get(job.stage, DATASETS["sft"])]
    return shlex.join(argv)


def unsloth(job: ConfigJob) -> ConfigOutput:
    notes = _notes(job)
    if job.gpu_count > 1:
        notes.append("not_expressible:multi_gpu (Unsloth runs on one GPU)")
    load = {"model_name": job.model, "max_seq_length": job.seq_len, "load_in_4bit": job.method == "qlora"
            and job.bits == 4, "load_in_8bit": job.method == "qlora" and job.bits == 8,
            "full_finetuning": job.method == "full"}
    lines = [*header(job, "Unsloth"), "from unsloth import FastLanguageModel", "from datasets import load_dataset",
             trainer_import(job.stage), "",
             "model, tokenizer = FastLanguageModel.from_pretrained(",
             *(f"    {k}={_py(v)}," for k, v in load.items()), ")"]
    if job.peft:
        gc = "'unsloth'" if job.gradient_checkpointing else "False"
        lines += ["model = FastLanguageModel.get_peft_model(", "    model,", f"    r={job.lora_rank},",
                  f"    target_modules={_py(target_modules(job.lora_targets))},",
                  f"    lora_alpha={job.lora_rank * 2},", "    lora_dropout=0,",
                  f"    use_gradient_checkpointing={gc},", ")"]
    args = training_args(job)
    args["gradient_checkpointing"] = job.gradient_checkpointing  # one GPU: no FSDP to checkpoint instead
    args.pop("deepspeed", None)
    args.pop("use_liger_kernel", None)  # Unsloth's own fused cross-entropy is always on
    trainer, config = TRAINERS.get(job.stage, TRAINERS["sft"])
    lines += _dataset_and_args(job, config, args)
    lines.append(f"trainer = {trainer}(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)")
    lines.append("trainer.train()")
    if not job.fused_loss:
        notes.append("not_expressible:fused_loss=off (Unsloth always fuses the cross-entropy)")
    return ConfigOutput(framework="unsloth", files=[ConfigFile(name="train_unsloth.py", text="\n".join(lines) + "\n")],
                        command="python train_unsloth.py", estimate_gib=job.estimate_gib, notes=notes)

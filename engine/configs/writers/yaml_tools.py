"""Axolotl and LLaMA-Factory YAML (key names: options/axolotl.txt, options/llama_factory.txt + transformers.txt)."""

from __future__ import annotations

import math
from typing import Any

import yaml

from engine.configs.common import HF_OPTIM, header, target_modules
from engine.configs.model import ConfigFile, ConfigJob, ConfigOutput

# DeepSpeed configs the tools ship (options/*.txt `file:` lines): a YAML names one by path.
AXOLOTL_DS = {("zero1", False): "deepspeed_configs/zero1.json", ("zero2", False): "deepspeed_configs/zero2.json",
              ("zero3", False): "deepspeed_configs/zero3_bf16.json",
              ("zero3", True): "deepspeed_configs/zero3_bf16_cpuoffload_all.json"}
LF_DS = {("zero2", False): "examples/deepspeed/ds_z2_config.json",
         ("zero2", True): "examples/deepspeed/ds_z2_offload_config.json",
         ("zero3", False): "examples/deepspeed/ds_z3_config.json",
         ("zero3", True): "examples/deepspeed/ds_z3_offload_config.json"}
LF_STAGES = {"sft": "sft", "dpo": "dpo", "kto": "kto", "rm": "rm", "ppo": "ppo", "pretrain": "pt", "orpo": "dpo",
             "simpo": "dpo"}
# ORPO and SimPO are LLaMA-Factory's dpo stage with another preference loss (LLaMA-Factory ff6d4d12eeb0
# src/llamafactory/hparams/finetuning_args.py RLHFArguments.pref_loss: sigmoid, hinge, ipo, kto_pair, orpo, simpo;
# no reference model for orpo and simpo, line 593)
LF_PREF_LOSS = {"orpo": "orpo", "simpo": "simpo"}
# LLaMA-Factory chat templates by model family (src/llamafactory/data/template.py register_template names); the
# first fragment the Hub id contains wins ("default" is a generic template none of these models was trained on)
LF_TEMPLATES = (("llama-3", "llama3"), ("llama3", "llama3"), ("llama-2", "llama2"), ("qwen3", "qwen3"),
                ("qwq", "qwen"), ("qwen", "qwen"), ("deepseek-r1", "deepseekr1"), ("mistral", "mistral"),
                ("mixtral", "mistral"), ("gemma-3", "gemma3"), ("gemma", "gemma"), ("phi-4", "phi4"),
                ("phi", "phi"), ("yi-", "yi"), ("chatglm3", "chatglm3"), ("baichuan2", "baichuan2"),
                ("gpt-oss", "gpt"))
# LLaMA-Factory's demo datasets (data/dataset_info.json): preference pairs for DPO/RM, KTO labels for KTO
LF_DATASETS = {"dpo": "dpo_en_demo", "rm": "dpo_en_demo", "kto": "kto_en_demo", "pretrain": "c4_demo",
               "orpo": "dpo_en_demo", "simpo": "dpo_en_demo"}


def lf_template(model: str) -> str:
    name = model.lower().replace("meta-llama-3", "llama-3")
    return next((template for fragment, template in LF_TEMPLATES if fragment in name), "default")


AXOLOTL_RL = {"dpo": "dpo", "orpo": "orpo", "kto": "kto", "simpo": "simpo", "grpo": "grpo"}
# Axolotl datasets in the format each method reads (axolotl 067b021c8b87 examples): preference pairs through the
# tokenizer's chat template for DPO and SimPO (examples/llama-3/instruct-dpo-lora-8b.yml), Argilla's cleaned
# UltraFeedback pairs for ORPO (examples/mistral/orpo/mistral-qlora-orpo.yml), its unpaired KTO labels for KTO
# (examples/llama-3/qlora-1b-kto.yaml; prompt_strategies/kto: llama3.ultra, chatml.ultra)
AXOLOTL_PAIRS = {"path": "fozziethebeat/alpaca_messages_2k_dpo_test", "type": "chat_template.default",
                 "field_messages": "conversation", "field_chosen": "chosen", "field_rejected": "rejected"}
AXOLOTL_DATASETS: dict[str, dict[str, str]] = {
    "dpo": AXOLOTL_PAIRS, "simpo": AXOLOTL_PAIRS,
    "orpo": {"path": "argilla/ultrafeedback-binarized-preferences-cleaned", "type": "chat_template.argilla"},
    "kto": {"path": "argilla/ultrafeedback-binarized-preferences-cleaned-kto", "type": "chatml.ultra",
            "split": "train"}}


def axolotl_dataset(job: ConfigJob) -> dict[str, str]:
    """The dataset entry for the job's method; the SFT placeholder in Alpaca format otherwise."""
    entry = dict(AXOLOTL_DATASETS.get(job.stage, {"path": "your-org/your-dataset", "type": "alpaca"}))
    if job.stage == "kto" and "llama-3" in job.model.lower().replace("llama3", "llama-3"):
        entry["type"] = "llama3.ultra"
    return entry


def dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=False)


def _launch(job: ConfigJob, module: str, path: str) -> str:
    if job.gpu_count > 1:
        return f"accelerate launch --num_processes {job.gpu_count} -m {module} {path}"
    return f"python -m {module} {path}"


def axolotl(job: ConfigJob) -> ConfigOutput:
    notes: list[str] = []
    c: dict[str, Any] = {"base_model": job.model}
    if job.method == "qlora":
        c["load_in_4bit" if job.bits == 4 else "load_in_8bit"] = True
    if job.peft:
        c["adapter"] = "qlora" if job.method == "qlora" else "lora"
        c["lora_r"] = job.lora_rank
        c["lora_alpha"] = job.lora_rank * 2
        c["lora_dropout"] = 0.05
        if job.lora_targets == "all_linear":
            c["lora_target_linear"] = True
        else:
            c["lora_target_modules"] = target_modules(job.lora_targets)
    if job.stage in AXOLOTL_RL:
        c["rl"] = AXOLOTL_RL[job.stage]
    elif job.stage not in ("sft", "pretrain"):
        notes.append(f"not_expressible:stage={job.stage}")
    c["datasets"] = [axolotl_dataset(job)]
    if job.stage in ("orpo", "kto"):
        c["remove_unused_columns"] = False  # the examples' setting: the trainer reads the pair's own columns
    c["output_dir"] = "./outputs/out"
    c["sequence_len"] = job.seq_len
    c["sample_packing"] = False
    c["micro_batch_size"] = job.batch_size
    c["gradient_accumulation_steps"] = job.grad_accum
    c["num_epochs"] = 1
    if job.optimizer:
        c["optimizer"] = HF_OPTIM[job.optimizer]
    c["learning_rate"] = 2e-4 if job.peft else 1e-5
    c["bf16"] = True
    if job.mixed_precision == "pure_bf16":
        notes.append("not_expressible:mixed_precision=pure_bf16")
    c["gradient_checkpointing"] = job.gradient_checkpointing
    c["flash_attention"] = job.flash_attention
    if not job.flash_attention:
        c["sdp_attention"] = False
    if job.fused_loss:
        c["plugins"] = ["axolotl.integrations.liger.LigerPlugin"]
        c["liger_fused_linear_cross_entropy"] = True
    if job.stage == "grpo":
        gens = job.num_generations or 8
        from engine.configs.writers.hf import rollout_args

        roll = rollout_args(job)
        c["trl"] = {"num_generations": gens, "max_completion_length": job.output_len or 256, "use_vllm": False,
                    "generation_batch_size": math.lcm(gens, job.batch_size * job.gpu_count),
                    **{k: v for k, v in roll.items() if k in ("use_vllm", "vllm_mode", "vllm_enable_sleep_mode")}}
        vllm = {"gpu_memory_utilization": roll.get("vllm_gpu_memory_utilization"),
                "tensor_parallel_size": roll.get("vllm_tensor_parallel_size")}
        if any(v is not None for v in vllm.values()):
            c["vllm"] = {k: v for k, v in vllm.items() if v is not None}  # Axolotl's vLLM section (vllm.py)
    _sharding(job, c, notes)
    if job.context_parallel and job.context_parallel > 1:
        c["context_parallel_size"] = job.context_parallel
    text = "\n".join(header(job, "Axolotl")) + "\n" + dump(c)
    return ConfigOutput(framework="axolotl", files=[ConfigFile(name="axolotl.yaml", text=text)],
                        command=_launch(job, "axolotl.cli.train", "axolotl.yaml"), estimate_gib=job.estimate_gib,
                        notes=notes)


def _sharding(job: ConfigJob, c: dict[str, Any], notes: list[str]) -> None:
    if job.sharding in ("zero1", "zero2", "zero3"):
        path = AXOLOTL_DS.get((job.sharding, job.offload))
        if path is None:
            notes.append(f"not_expressible:offload with {job.sharding}")
            path = AXOLOTL_DS[(job.sharding, False)]
        c["deepspeed"] = path
    elif job.sharding == "fsdp":
        c["fsdp_version"] = 2
        c["fsdp_config"] = {"offload_params": job.offload, "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                            "state_dict_type": "FULL_STATE_DICT", "reshard_after_forward": True,
                            "activation_checkpointing": job.gradient_checkpointing}
        c["gradient_checkpointing"] = False  # FSDP checkpoints itself (fsdp_config.activation_checkpointing)
    elif job.offload:
        notes.append("not_expressible:offload without zero or fsdp")


def llama_factory(job: ConfigJob) -> ConfigOutput:
    notes: list[str] = []
    c: dict[str, Any] = {"model_name_or_path": job.model}
    if job.stage not in LF_STAGES:
        notes.append(f"not_expressible:stage={job.stage}")
    c["stage"] = LF_STAGES.get(job.stage, "sft")  # no GRPO stage in LLaMA-Factory's finetuning_args
    if job.stage in LF_PREF_LOSS:
        c["pref_loss"] = LF_PREF_LOSS[job.stage]
    c["do_train"] = True
    c["finetuning_type"] = "lora" if job.peft else "full"
    if job.peft:
        c["lora_rank"] = job.lora_rank
        c["lora_alpha"] = job.lora_rank * 2
        c["lora_target"] = "all" if job.lora_targets == "all_linear" else ",".join(target_modules(job.lora_targets))
    if job.method == "qlora":
        c["quantization_bit"] = job.bits
        c["quantization_method"] = "bnb"
    c["dataset"] = LF_DATASETS.get(job.stage, "alpaca_en_demo")
    c["template"] = lf_template(job.model)
    if c["template"] == "default":
        notes.append(f"not_expressible:chat template of {job.model} (set `template` to the model's own)")
    c["cutoff_len"] = job.seq_len
    c["output_dir"] = "saves/run"
    c["per_device_train_batch_size"] = job.batch_size
    c["gradient_accumulation_steps"] = job.grad_accum
    c["num_train_epochs"] = 1.0
    c["learning_rate"] = 1.0e-4 if job.peft else 1.0e-5
    if job.optimizer:
        c["optim"] = HF_OPTIM[job.optimizer]
    c["bf16"] = True
    if job.mixed_precision == "pure_bf16":
        c["pure_bf16"] = True
    c["disable_gradient_checkpointing"] = not job.gradient_checkpointing
    c["flash_attn"] = "fa2" if job.flash_attention else "disabled"
    if job.fused_loss:
        c["enable_liger_kernel"] = True
    if job.sharding in ("zero2", "zero3"):
        path = LF_DS.get((job.sharding, job.offload))
        c["deepspeed"] = path
    elif job.sharding in ("zero1", "fsdp"):
        notes.append(f"not_expressible:sharding={job.sharding} (LLaMA-Factory ships ZeRO-2/3 configs)")
    elif job.offload:
        notes.append("not_expressible:offload without zero")
    if job.context_parallel and job.context_parallel > 1:
        notes.append("not_expressible:context_parallel")
    text = "\n".join(header(job, "LLaMA-Factory")) + "\n" + dump(c)
    cmd = "llamafactory-cli train llama_factory.yaml"
    if job.gpu_count > 1:
        cmd = f"FORCE_TORCHRUN=1 NPROC_PER_NODE={job.gpu_count} {cmd}"
    return ConfigOutput(framework="llama-factory", files=[ConfigFile(name="llama_factory.yaml", text=text)],
                        command=cmd, estimate_gib=job.estimate_gib, notes=notes)

"""torchtune: `tune run <recipe> --config <config> key=value ...` (recipes, configs and keys: options/torchtune.txt)."""

from __future__ import annotations

import re

from engine.configs.common import header, target_tokens
from engine.configs.model import ConfigJob, ConfigOutput
from engine.configs.options import known

# Hugging Face model-name fragments → torchtune config folder (recipes/configs/<folder>/)
FAMILIES = (("llama-3.3", "llama3_3"), ("llama-3.2", "llama3_2"), ("llama-3.1", "llama3_1"), ("llama-3", "llama3"),
            ("llama-2", "llama2"), ("qwen2.5", "qwen2_5"), ("qwen3", "qwen3"), ("qwen2", "qwen2"),
            ("gemma-2", "gemma2"), ("gemma", "gemma"), ("mistral", "mistral"), ("phi-4", "phi4"), ("phi-3", "phi3"))
OPTIMIZERS = {"adamw": "torch.optim.AdamW", "adamw_fused": "torch.optim.AdamW",
              "adamw_8bit": "bitsandbytes.optim.AdamW8bit", "paged_adamw": "bitsandbytes.optim.PagedAdamW",
              "paged_adamw_8bit": "bitsandbytes.optim.PagedAdamW8bit",
              "sgd": "torch.optim.SGD", "lion": "bitsandbytes.optim.Lion"}
FUSED_LOSS = "torchtune.modules.loss.LinearCrossEntropyLoss"
# the recipes' own loss (recipes/configs/*: loss._component_), the chunked cross-entropy the estimate assumes for
# torchtune (engine/frameworks/torchtune.toml loss_kernel); plain torch.nn.CrossEntropyLoss upcasts every logit
CHUNKED_LOSS = "torchtune.modules.loss.CEWithChunkedOutputLoss"
ATTN = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "output_proj"}


def _family_size(model: str) -> tuple[str | None, str | None]:
    name = model.lower().replace("meta-llama-3", "llama-3").replace("llama3", "llama-3").replace("llama2", "llama-2")
    family = next((f for frag, f in FAMILIES if frag in name), None)
    m = re.search(r"(\d+(?:\.\d+)?)b\b", name)
    size = f"{m.group(1)}B" if m else ("mini" if "mini" in name else None)
    return family, size


def recipe_and_config(job: ConfigJob) -> tuple[str, str | None]:
    single = job.gpu_count == 1
    if job.stage == "grpo" and not job.peft:
        recipe = "dev/grpo_full_finetune_distributed"
    elif job.stage == "dpo":
        lora_dpo = "lora_dpo_single_device" if single else "lora_dpo_distributed"
        recipe = lora_dpo if job.peft else "full_dpo_distributed"
    elif job.peft:
        recipe = "lora_finetune_single_device" if single else "lora_finetune_distributed"
    else:
        recipe = "full_finetune_single_device" if single else "full_finetune_distributed"
    family, size = _family_size(job.model)
    kind = {"qlora": "qlora", "lora": "lora", "full": "full"}.get(job.method, "full")
    if job.stage == "dpo":
        kind += "_dpo"
    configs = known("torchtune")
    for name in ([f"{family}/{size}_{kind}_single_device", f"{family}/{size}_{kind}"] if single
                 else [f"{family}/{size}_{kind}"]):
        if f"config:{name}" in configs:
            return recipe, name
    return recipe, None


def overrides(job: ConfigJob, recipe: str, config: str | None, notes: list[str]) -> list[str]:
    o = [f"batch_size={job.batch_size}", f"gradient_accumulation_steps={job.grad_accum}",
         f"tokenizer.max_seq_len={job.seq_len}", f"enable_activation_checkpointing={job.gradient_checkpointing}",
         "dtype=bf16", f"loss._component_={FUSED_LOSS if job.fused_loss else CHUNKED_LOSS}"]
    if job.mixed_precision == "amp":
        notes.append("not_expressible:mixed_precision=amp (torchtune trains in pure bf16)")
    if job.optimizer in OPTIMIZERS:
        o.append(f"optimizer._component_={OPTIMIZERS[job.optimizer]}")
        if not OPTIMIZERS[job.optimizer].startswith("torch.") and f"optimizer_fused:{config}" in known("torchtune"):
            o.append("~optimizer.fused")  # `fused` is torch.optim's; bitsandbytes optimizers refuse it
        if job.optimizer == "adamw_fused":  # torch.optim.AdamW(fused=True): the step in place
            has = f"optimizer_fused:{config}" in known("torchtune")
            o.append(("" if has else "+") + "optimizer.fused=True")
    elif job.optimizer:
        notes.append(f"not_expressible:optimizer={job.optimizer}")
    if job.peft:
        tokens = set(target_tokens(job.lora_targets))
        attn = [ATTN[t] for t in ("q", "k", "v", "o") if t in tokens]
        mlp = tokens & {"gate", "up", "down"}
        if mlp and mlp != {"gate", "up", "down"}:
            notes.append("not_expressible:lora on part of the MLP (torchtune: all MLP projections or none)")
        o += [f"model.lora_rank={job.lora_rank}", f"model.lora_alpha={job.lora_rank * 2}",
              f"model.lora_attn_modules=[{','.join(attn)}]", f"model.apply_lora_to_mlp={bool(mlp)}",
              f"model.apply_lora_to_output={'lm_head' in tokens}"]
    if job.method == "qlora" and job.bits != 4:
        notes.append("not_expressible:qlora 8-bit (torchtune QLoRA is NF4)")
    if job.gpu_count > 1 and not job.peft:
        o.append(f"fsdp_cpu_offload={job.offload}")
    elif job.offload:
        notes.append("not_expressible:offload (torchtune offloads parameters only with FSDP, fsdp_cpu_offload)")
    if job.sharding in ("zero1", "zero2", "zero3"):
        notes.append(f"not_expressible:sharding={job.sharding} (torchtune shards with FSDP2)")
    if job.context_parallel and job.context_parallel > 1:
        if f"cp_recipe:{recipe}" in known("torchtune"):
            o.append(f"context_parallel_dim={job.context_parallel}")
        else:
            notes.append(f"not_expressible:context_parallel in {recipe}")
    return o


def torchtune(job: ConfigJob) -> ConfigOutput:
    notes: list[str] = []
    if job.stage == "grpo" and job.peft:
        notes.append("not_expressible:stage=grpo with LoRA (torchtune's GRPO recipe is full fine-tuning)")
    elif job.stage not in ("sft", "dpo", "grpo", "pretrain"):
        notes.append(f"not_expressible:stage={job.stage}")
    recipe, config = recipe_and_config(job)
    if config is None:
        family, size = _family_size(job.model)
        config = f"{family or 'MODEL'}/{size or 'SIZE'}_{job.method}"
        notes.append(f"torchtune_no_config:{job.model}")
    argv = ["tune", "run"]
    if job.gpu_count > 1:
        argv += ["--nproc_per_node", str(job.gpu_count)]
    argv += [recipe, "--config", config, *overrides(job, recipe, config, notes)]
    cmd = " \\\n  ".join([" ".join(argv[: argv.index("--config") + 2]), *argv[argv.index("--config") + 2:]])
    text = "\n".join(header(job, "torchtune")) + "\n" + cmd + "\n"
    from engine.configs.model import ConfigFile

    return ConfigOutput(framework="torchtune", files=[ConfigFile(name="tune_run.sh", text=text)], command=cmd,
                        estimate_gib=job.estimate_gib, notes=notes)

"""ArcticTraining's recipe (DeepSpeed's ALST): one YAML file and the `arctic_training` launcher, as the recipes of
snowflakedb/ArcticTraining b28638e6 projects/sequence-parallelism/run-*.yml are written and run (README: `export
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`, `arctic_training run-h100-sp8-llama-8b.yml`, `--num_gpus 1` for one
GPU). Keys: arctic_training/config/trainer.py (sequence_parallel_size, activation_checkpoint_cpu_offload,
tiled_mlp_compute, micro_batch_size, gradient_accumulation_steps), arctic_training/config/model.py (type, name_or_path,
attn_implementation), arctic_training/config/data.py (max_length, sources)."""

from __future__ import annotations

from engine.configs.model import ConfigFile, ConfigJob, ConfigOutput

RECIPE = "alst.yml"


def trainer_lines(batch: int, accum: int, activation_offload: bool, tiled_mlp: bool, sp: int) -> list[str]:
    """The trainer's own keys of a recipe (arctic_training/config/trainer.py), as the answer's settings and the
    config write them."""
    out = ["type: sft", f"micro_batch_size: {batch}"]
    if accum > 1:
        out.append(f"gradient_accumulation_steps: {accum}")
    if activation_offload:
        out.append("activation_checkpoint_cpu_offload: true")
    if tiled_mlp:
        out.append("tiled_mlp_compute: true")
    return [*out, f"sequence_parallel_size: {sp}"]


def deepspeed_lines(offload_optimizer: bool, offload_params: bool) -> list[str]:
    """The recipe's `deepspeed:` block: ZeRO-3, the optimizer (and on one GPU the parameters) in CPU RAM."""
    out = ["deepspeed:", "  zero_optimization:", "    stage: 3"]
    if offload_optimizer:
        out += ["    offload_optimizer:", "      device: cpu"]
        if offload_params:
            out += ["    offload_param:", "      device: cpu"]  # the single-GPU recipes offload the parameters too
    return out


def _lines(job: ConfigJob) -> list[str]:
    model = ["model:"]
    if job.fused_loss:
        model.append('  type: "liger"')  # AutoLigerKernelForCausalLM: Liger's fused loss, RMSNorm, RoPE (SwiGLU off
        # under tiled_mlp_compute: arctic_training/model/liger_factory.py)
    model += [f"  name_or_path: {job.model}",
              f"  attn_implementation: {'flash_attention_2' if job.flash_attention else 'sdpa'}"]
    if not job.gradient_checkpointing:
        model.append("  disable_activation_checkpoint: true")
    out = [f"# gpu-advisor: ArcticTraining (ALST) config for {job.model}, full fine-tuning, {job.seq_len} tokens, "
           f"micro-batch {job.batch_size}",
           f"# gpu-advisor: made for {job.gpu_count}x {job.gpu_name or 'GPU'}; estimated peak {job.estimate_gib} GiB "
           "per GPU",
           "# gpu-advisor: every setting below is one the estimate assumed; change one and the memory changes",
           *trainer_lines(job.batch_size, job.grad_accum, job.activation_offload, job.tiled_mlp,
                          job.context_parallel or 1),
           *deepspeed_lines(job.offload, job.gpu_count <= 1)]
    out += ["optimizer:", f"  type: {'cpu_adam' if job.offload else 'fused_adam'}", "  learning_rate: 0.00001"]
    out += model
    out += ["data:", "  sources:", "    - type: huggingface_instruct",
            "      name_or_path: HuggingFaceH4/ultrachat_200k  # your data here", "      split: train_sft",
            f"  max_length: {job.seq_len}"]
    return out


def arctictraining(job: ConfigJob) -> ConfigOutput:
    """The recipe and its launch line; what ArcticTraining cannot say is noted."""
    notes: list[str] = []
    if job.method != "full":
        notes.append(f"not_expressible:method={job.method} (the ALST recipes fine-tune fully)")
    if job.tensor_parallel and job.tensor_parallel > 1:
        notes.append(f"not_expressible:tensor_parallel={job.tensor_parallel} (ArcticTraining has ZeRO-3 and Ulysses)")
    if job.gpu_count <= 8:
        launch = f"--num_gpus {job.gpu_count}"
    else:
        # several nodes: the DeepSpeed launcher's hostfile (README "2+ nodes": `arctic_training recipe.yml -H
        # /etc/hostfile`), the same environment on every node (.deepspeed_env)
        launch = "-H /etc/hostfile"
        notes.append("multi_node:hostfile")
    cmd = f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True arctic_training {RECIPE} {launch}"
    return ConfigOutput(framework="arctictraining", files=[ConfigFile(name=RECIPE, text="\n".join(_lines(job)) + "\n")],
                        command=cmd, estimate_gib=job.estimate_gib, notes=notes)

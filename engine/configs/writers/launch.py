"""Multi-GPU: DeepSpeed JSON, accelerate config (FSDP or DeepSpeed) and the launch command lines.

Key names: options/deepspeed.txt (JSON keys, `deepspeed` launcher flags), options/accelerate.txt (config file keys,
`accelerate launch` flags).
"""

from __future__ import annotations

import json
from typing import Any

from engine.configs.common import header
from engine.configs.model import ConfigFile, ConfigJob, ConfigOutput
from engine.configs.writers.yaml_tools import dump

ZERO_STAGE = {"zero1": 1, "zero2": 2, "zero3": 3}


def train_gpus(job: ConfigJob) -> int:
    """The GPUs that train: all of them, less those a vLLM server holds in server mode (TRL `trl vllm-serve` on
    GPUs of its own, engine.posttrain's setup)."""
    tp = job.rollout_tensor_parallel or 1
    return job.gpu_count - tp if job.rollout_mode == "server" and job.gpu_count > tp else job.gpu_count


def vllm_server(job: ConfigJob) -> str:
    """`trl vllm-serve` on the GPUs after the trainers' (options: trl/scripts/vllm_serve.py ScriptArguments)."""
    first, tp = train_gpus(job), job.rollout_tensor_parallel or 1
    devices = ",".join(str(i) for i in range(first, first + tp)) if first < job.gpu_count else "0"
    util = job.rollout_gpu_memory_utilization or 0.9
    return (f"CUDA_VISIBLE_DEVICES={devices} trl vllm-serve --model {job.model} --tensor_parallel_size {tp} "
            f"--gpu_memory_utilization {util:g}")


def ds_file(job: ConfigJob) -> str:
    """The DeepSpeed JSON's name says its stage and offload, so a script that names it says them too."""
    stage = ZERO_STAGE.get(job.sharding, 2 if job.gpu_count > 1 else 0)
    return f"ds_zero{stage}{'_offload' if job.offload and stage else ''}.json"


def deepspeed_json(job: ConfigJob) -> dict[str, Any]:
    stage = ZERO_STAGE.get(job.sharding, 0)
    zero: dict[str, Any] = {"stage": stage, "overlap_comm": True, "contiguous_gradients": True}
    if job.offload and stage:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        if stage == 3:
            zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    if stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    return {"train_micro_batch_size_per_gpu": job.batch_size, "gradient_accumulation_steps": job.grad_accum,
            "gradient_clipping": 1.0, "bf16": {"enabled": True}, "zero_optimization": zero}


def accelerate_config(job: ConfigJob) -> dict[str, Any]:
    c: dict[str, Any] = {"compute_environment": "LOCAL_MACHINE", "debug": False}
    if job.sharding == "fsdp":
        c["distributed_type"] = "FSDP"
        c["fsdp_config"] = {"fsdp_version": 2, "fsdp_offload_params": job.offload,
                            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                            "fsdp_activation_checkpointing": job.gradient_checkpointing,
                            "fsdp_reshard_after_forward": True, "fsdp_state_dict_type": "SHARDED_STATE_DICT",
                            "fsdp_cpu_ram_efficient_loading": True}
    elif job.sharding in ZERO_STAGE:
        c["distributed_type"] = "DEEPSPEED"
        c["deepspeed_config"] = {"deepspeed_config_file": ds_file(job),
                                 "zero3_init_flag": job.sharding == "zero3"}
    else:
        c["distributed_type"] = "MULTI_GPU" if job.gpu_count > 1 else "NO"
    c.update(machine_rank=0, num_machines=1, num_processes=train_gpus(job),
             mixed_precision="bf16", rdzv_backend="static", same_network=True, use_cpu=False)
    if job.context_parallel and job.context_parallel > 1 and job.sharding == "fsdp":
        c["parallelism_config"] = {"parallelism_config_cp_size": job.context_parallel,
                                   "parallelism_config_dp_shard_size": max(1, job.gpu_count // job.context_parallel)}
    return c


def accelerate_files(job: ConfigJob) -> list[ConfigFile]:
    """The files a multi-GPU launch of a script needs besides the script (none on one GPU)."""
    if train_gpus(job) <= 1 and job.sharding == "none":
        return []
    files = [ConfigFile(name="accelerate.yaml",
                        text="\n".join(header(job, "accelerate")) + "\n" + dump(accelerate_config(job)))]
    if job.sharding in ZERO_STAGE:
        files.append(ConfigFile(name=ds_file(job), text=json.dumps(deepspeed_json(job), indent=2) + "\n"))
    return files


def launcher(job: ConfigJob, script: str) -> str:
    """The command that runs the script; in vLLM server mode the server starts first on its own GPUs (the trainer
    waits for it, GRPOConfig vllm_server_timeout) and the trainers see only theirs."""
    n = train_gpus(job)
    run = f"python {script}" if n <= 1 and job.sharding == "none" else \
        f"accelerate launch --config_file accelerate.yaml {script}"
    if job.rollout_mode != "server" or n == job.gpu_count:
        return run
    trainers = ",".join(str(i) for i in range(n))
    return f"{vllm_server(job)} & CUDA_VISIBLE_DEVICES={trainers} {run}"


def with_context_parallel(job: ConfigJob) -> tuple[ConfigJob, list[str]]:
    """Context parallel in accelerate runs on FSDP2 (accelerate ParallelismConfig cp_size): a ZeRO-3 plan with CP is
    written as FSDP full sharding, which shards the same states (ZeRO-1/2 keep their stage and lose CP, said)."""
    if not (job.context_parallel and job.context_parallel > 1) or job.sharding not in ZERO_STAGE:
        return job, []
    if job.sharding == "zero3":
        return job.model_copy(update={"sharding": "fsdp"}), [
            "changed:sharding=zero3->fsdp (accelerate's context parallel runs on FSDP2; the same states sharded)"]
    return job, [f"not_expressible:context_parallel with {job.sharding} (accelerate runs CP on FSDP2)"]


def accelerate(job: ConfigJob) -> ConfigOutput:
    from engine.configs.writers.hf import trl_script

    job, cp_notes = with_context_parallel(job)
    out = trl_script(job)
    out.notes = cp_notes + out.notes
    files = [f for f in out.files if f.name != "train.py"] or [
        ConfigFile(name="accelerate.yaml", text="\n".join(header(job, "accelerate")) + "\n"
                   + dump(accelerate_config(job)))]
    script = next(f for f in out.files if f.name == "train.py")
    return ConfigOutput(framework="accelerate", files=[*files, script],
                        command=f"accelerate launch --config_file accelerate.yaml {script.name}",
                        estimate_gib=job.estimate_gib, notes=out.notes)


def deepspeed(job: ConfigJob) -> ConfigOutput:
    """DeepSpeed JSON and the `deepspeed` launcher running the TRL script with it (HF Trainer's --deepspeed)."""
    from engine.configs.writers.hf import trl_script

    notes = []
    if job.sharding not in ZERO_STAGE and job.gpu_count > 1:
        notes.append(f"changed:sharding={job.sharding}->zero2 (DeepSpeed is ZeRO)")
        job = job.model_copy(update={"sharding": "zero2"})
    elif job.sharding not in ZERO_STAGE and job.offload and job.method == "full":
        # one GPU whose plan moves the optimizer states to CPU RAM: that is ZeRO-Offload, ZeRO stage 2 with
        # offload_optimizer, which DeepSpeed runs on a single GPU (microsoft/DeepSpeed docs/_tutorials/zero-offload.md
        # "ZeRO-Offload ... on a single GPU"); without it stage 2 would shard nothing
        job = job.model_copy(update={"sharding": "zero2"})
    elif job.sharding not in ZERO_STAGE:
        # one GPU: ZeRO partitions across GPUs, so stage 2 would shard nothing (it saves memory on one GPU only
        # with CPU offload, which the plan did not need): ZeRO stage 0, DeepSpeed's plain data-parallel engine
        notes.append("changed:zero_optimization.stage=0 (one GPU: ZeRO has nothing to partition)")
    ds = deepspeed_json(job)
    script = trl_script(job)
    train = next(f for f in script.files if f.name == "train.py")
    cmd = f"deepspeed --num_gpus {job.gpu_count} train.py"
    return ConfigOutput(framework="deepspeed", files=[ConfigFile(name=ds_file(job),
                        text=json.dumps(ds, indent=2) + "\n"), train], command=cmd,
                        estimate_gib=job.estimate_gib, notes=notes + script.notes)

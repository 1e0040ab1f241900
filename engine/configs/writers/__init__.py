"""One writer per framework: ConfigJob → ConfigOutput (files, the command to run, notes on what cannot be said)."""

from __future__ import annotations

from collections.abc import Callable

from engine.configs.model import ConfigJob, ConfigOutput, Target
from engine.configs.writers.arctic import arctictraining
from engine.configs.writers.hf import CLI, trl_command, trl_script, unsloth
from engine.configs.writers.launch import accelerate, deepspeed, with_context_parallel
from engine.configs.writers.serving import llama_cpp, sglang, vllm
from engine.configs.writers.torchtune import torchtune
from engine.configs.writers.yaml_tools import axolotl, llama_factory


def _trl(job: ConfigJob) -> ConfigOutput:
    job, cp_notes = with_context_parallel(job)
    out = trl_script(job)
    out.notes = cp_notes + out.notes
    if job.gpu_count <= 1 and job.sharding == "none" and job.stage in CLI:  # one GPU, no vLLM server beside it
        out.command = trl_command(job)  # the same settings without the script; the script is in files
    return out


WRITERS: dict[str, Callable[[ConfigJob], ConfigOutput]] = {
    "axolotl": axolotl, "llama-factory": llama_factory, "trl": _trl, "unsloth": unsloth, "torchtune": torchtune,
    "deepspeed": deepspeed, "arctictraining": arctictraining, "accelerate": accelerate, "vllm": vllm, "sglang": sglang,
    "llama.cpp": llama_cpp,
}
TRAINING: tuple[Target, ...] = ("axolotl", "llama-factory", "trl", "unsloth", "torchtune", "deepspeed",
                                "arctictraining", "accelerate")
SERVING: tuple[Target, ...] = ("vllm", "sglang", "llama.cpp")

__all__ = ["SERVING", "TRAINING", "WRITERS"]

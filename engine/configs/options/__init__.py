"""Option lists read from the tools' own source (headers in each file say where): the keys writers may emit and
readers understand. `known(tool)` gives the keys of one list, without its header lines."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

HERE = files(__name__)
TOOLS = ("peft", "axolotl", "llama_factory", "trl", "transformers", "torchtune", "deepspeed", "accelerate", "unsloth",
         "vllm", "sglang", "llama_cpp", "torchrun", "tgi")


@cache
def known(tool: str) -> frozenset[str]:
    lines = (HERE / f"{tool}.txt").read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def header(tool: str) -> list[str]:
    lines = (HERE / f"{tool}.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.startswith("#")]

"""Names shared by writers and readers: optimizers, LoRA targets, the comment header every written file carries."""

from __future__ import annotations

import math
import re
from typing import Any

from engine.configs.model import ConfigJob
from engine.schema import Optimizer

# transformers OptimizerNames values (options/transformers.txt `optim:`) for the engine's optimizers
HF_OPTIM: dict[str, str] = {
    "adamw": "adamw_torch", "adamw_fused": "adamw_torch_fused", "adamw_8bit": "adamw_bnb_8bit",
    "paged_adamw": "paged_adamw_32bit", "paged_adamw_8bit": "paged_adamw_8bit", "sgd": "sgd", "adafactor": "adafactor",
    "lion": "lion_32bit",
}
HF_OPTIM_BACK: dict[str, Optimizer] = {
    "adamw_torch": "adamw", "adamw_torch_fused": "adamw_fused", "adamw_hf": "adamw", "adamw_apex_fused": "adamw",
    "adamw_anyprecision": "adamw", "adamw_bnb_8bit": "adamw_8bit", "adamw_8bit": "adamw_8bit",
    "paged_adamw_32bit": "paged_adamw", "paged_adamw_8bit": "paged_adamw_8bit", "sgd": "sgd",
    "adafactor": "adafactor", "lion_32bit": "lion",
}

# LoRA target tokens of CONTRACT.md `lora_targets` and the Hugging Face (Llama-style) module names
TOKEN_MODULE = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "gate": "gate_proj", "up": "up_proj",
                "down": "down_proj", "fc1": "fc1", "fc2": "fc2", "lm_head": "lm_head", "qkv_fused": "qkv_proj"}
MODULE_TOKEN = {m: t for t, m in TOKEN_MODULE.items()}
ALL_LINEAR = ("q", "k", "v", "o", "gate", "up", "down")
TOKEN_ORDER = (*ALL_LINEAR, "fc1", "fc2", "qkv_fused", "lm_head")


def target_tokens(targets: str) -> tuple[str, ...]:
    if targets == "all_linear":
        return ALL_LINEAR
    if targets == "qv":
        return ("q", "v")
    if targets == "qkvo":
        return ("q", "k", "v", "o")
    if targets.startswith("attn_mlp_custom:"):
        return tuple(t for t in targets.split(":", 1)[1].split(",") if t in TOKEN_MODULE)
    return ALL_LINEAR


def target_modules(targets: str) -> list[str]:
    return [TOKEN_MODULE[t] for t in target_tokens(targets)]


def targets_from_tokens(tokens: set[str]) -> str:
    if tokens == set(ALL_LINEAR):
        return "all_linear"
    if tokens == {"q", "v"}:
        return "qv"
    if tokens == {"q", "k", "v", "o"}:
        return "qkvo"
    return "attn_mlp_custom:" + ",".join(t for t in TOKEN_ORDER if t in tokens)


def targets_from_modules(modules: list[str] | str) -> str | None:
    """`lora_targets` for a list of module names (or "all-linear"); None when a name is not a known projection."""
    if isinstance(modules, str):
        if modules.strip().lower() in ("all-linear", "all_linear", "all"):
            return "all_linear"
        modules = [m.strip() for m in modules.split(",") if m.strip()]
    tokens = set()
    for m in modules:
        name = str(m).rsplit(".", 1)[-1]
        if name == "output_proj":  # torchtune's name for o_proj
            name = "o_proj"
        if name not in MODULE_TOKEN:
            return None
        tokens.add(MODULE_TOKEN[name])
    return targets_from_tokens(tokens) if tokens else None


def method_words(job: ConfigJob) -> str:
    if job.serving:
        quant = f", {job.quantization}" if job.quantization else ""
        return f"serving{quant}, context {job.seq_len} tokens, {job.concurrency or 1} concurrent sequences"
    name = {"full": "full fine-tuning", "lora": "LoRA", "qlora": f"QLoRA {job.bits}-bit"}[job.method]
    rank = f" rank {job.lora_rank}" if job.peft else ""
    return (f"{job.stage.upper()} {name}{rank}, {job.seq_len} tokens, micro-batch {job.batch_size} x "
            f"{job.grad_accum} accumulation")


def header(job: ConfigJob, tool: str, mark: str = "#") -> list[str]:
    """Comment lines: what the file is, the estimate it was made for and on which GPU (English)."""
    gpu = job.gpu_name or "GPU"
    est = f"; estimated peak {job.estimate_gib:.1f} GiB per GPU" if job.estimate_gib is not None else ""
    return [f"{mark} gpu-advisor: {tool} config for {job.model}, {method_words(job)}",
            f"{mark} gpu-advisor: made for {job.gpu_count}x {gpu}{est}",
            f"{mark} gpu-advisor: every setting below is one the estimate assumed; change one and the memory changes"]


MADE_FOR = re.compile(r"gpu-advisor: made for (\d{1,6})x ([^;\n]{1,100}?)(?:;|$)", re.M)


def made_for(text: str) -> tuple[int, str | None] | None:
    """(count, GPU name) from a header this project wrote, if the text carries one."""
    m = MADE_FOR.search(text)
    if not m:
        return None
    name = m.group(2).strip()
    return int(m.group(1)), (None if name == "GPU" else name)


def quant_word(job: ConfigJob) -> str | None:
    """The serving engines' --quantization value for the job's weight format (None: unquantized / from the model)."""
    q = (job.quantization or "").lower()
    if q in ("awq", "gptq", "fp8", "mxfp4"):
        return q
    if q in ("nf4", "int8") or (job.bits in (4, 8) and not q):
        return "bitsandbytes"
    return None


# Numbers from YAML/CLI text, shared by the readers and the serving flag tables (engine/configs/serving_flags.py).
def as_int(value: Any) -> int | None:
    """An int from YAML/CLI text: 8, "8", "32k" (vLLM's human-readable ints), never bool."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d{1,12})\s*([kKmM]?)\s*", value)
        if m:
            n = int(m.group(1))
            return n * {"": 1, "k": 1000, "K": 1024, "m": 1_000_000, "M": 1024 * 1024}[m.group(2)]
        # YAML 1.1 reads 1e308 or 2.048e3 as text: a number all the same (out of range, it is said so later)
        if re.fullmatch(r"\s*\d{1,20}(?:\.\d{0,20})?[eE][+]?\d{1,3}\s*", value):
            number = float(value)
            if math.isfinite(number) and number.is_integer():
                return int(number)
    return None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None

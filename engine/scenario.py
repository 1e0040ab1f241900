"""Request → Scenario: fill every default the user did not state, and say which ones were used.

The defaults are what a typical team runs today (Hugging Face Trainer + PEFT, FlashAttention/SDPA,
gradient checkpointing on for parameter-efficient recipes as TRL, Axolotl and Unsloth ship them).
Each default used becomes an assumption (key and value) that the answer shows.
"""

from __future__ import annotations

from typing import TypeVar

from engine.catalog import architecture, shape_reference
from engine.schema import Assumption, Method, Request, Scenario, Sharding

T = TypeVar("T")

DEFAULT_METHOD: Method = "lora"
DEFAULT_SEQ_LEN = {"full": 2048, "lora": 2048, "qlora": 2048, "inference": 4096}
DEFAULT_LORA_RANK = 16
DEFAULT_LORA_TARGETS = "all_linear"
DEFAULT_BITS = {"full": 16, "lora": 16, "qlora": 4, "inference": 16}


class ScenarioError(ValueError):
    """The request cannot be estimated; the message says why, for a person."""


def gpu_count(request: Request) -> int:
    """The GPUs of the job: the largest count named (a comparison names several single GPUs)."""
    return max((g.count for g in request.gpus), default=1)


def build_scenario(request: Request, count: int | None = None) -> Scenario:
    assumptions: list[Assumption] = []

    def pick(key: str, said: T | None, fallback: T) -> T:
        """What the user said, else the default, which then becomes an assumption."""
        if said is not None:
            return said
        shown = ("on" if fallback else "off") if isinstance(fallback, bool) else fallback
        assumptions.append(Assumption(key=key, value=shown))
        return fallback

    if request.model is None or (request.model.params_b is None and request.model.config is None
                                 and not request.model.name):
        raise ScenarioError("no model size: say e.g. '7B' or a model name")
    try:
        arch = architecture(request.model)
    except ValueError as exc:
        raise ScenarioError(f"unknown model {request.model.name!r} and no size given") from exc
    if not arch.known:
        assumptions.append(Assumption(key="architecture", value=shape_reference(arch.params)))

    method: Method = pick("method", request.method, DEFAULT_METHOD)
    training = method != "inference"
    peft = method in ("lora", "qlora")
    bits = pick("bits", request.bits, DEFAULT_BITS[method])
    if method == "qlora" and bits not in (4, 8):
        bits = 4
    n = count or gpu_count(request)
    sharding: Sharding = "none"
    if request.sharding is not None:
        sharding = request.sharding
    elif n > 1 and training:
        sharding = pick("sharding", None, "zero3" if method == "full" else "ddp")

    return Scenario(
        arch=arch, method=method, bits=bits,
        optimizer=pick("optimizer", request.optimizer, "paged_adamw" if method == "qlora" else "adamw")
        if training else None,
        mixed_precision=pick("mixed_precision", request.mixed_precision, "amp") if training else "amp",
        lora_rank=pick("lora_rank", request.lora_rank, DEFAULT_LORA_RANK) if peft else 0,
        lora_targets=pick("lora_targets", request.lora_targets, DEFAULT_LORA_TARGETS) if peft else "",
        seq_len=pick("seq_len", request.seq_len, DEFAULT_SEQ_LEN[method]),
        batch_size=pick("batch_size", request.batch_size, 1),
        gradient_checkpointing=pick("gradient_checkpointing", request.gradient_checkpointing, True)
        if training else False,
        flash_attention=pick("flash_attention", request.flash_attention, True),
        fused_loss=pick("fused_loss", request.fused_loss, False) if training else False,
        sharding=sharding, offload=bool(request.offload), gpu_count=n, assumptions=assumptions,
    )

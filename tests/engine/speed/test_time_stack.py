"""Every training time says which stack and precision it is for: a published MFU names its stack, the fine-tuning
step model names the stack its utilisation was fitted on and the 16-bit type (and 4-bit base) it runs."""

from __future__ import annotations

from typing import Any

from engine.contract import estimate_request


def said(**kw: Any) -> dict[str, str]:
    q: dict[str, Any] = {"model": {"name": "Llama-3.1-8B"}, "method": "lora", "gpus": [{"name": "A100 80GB"}]}
    q.update(kw)
    out = estimate_request(q)
    return dict(a.split("=", 1) for a in out["assumptions"])


def test_the_step_model_names_stack_and_precision() -> None:
    a = said()
    assert a["training_time_stack"] == "Hugging Face TRL + PEFT, bf16"
    assert "training_speed" not in a
    assert said(framework="unsloth", method="qlora")["training_time_stack"] == "Unsloth, 4-bit base, bf16"


def test_a_card_without_bf16_times_fp16() -> None:
    assert said(method="qlora", gpus=[{"name": "T4"}])["training_time_stack"].endswith("4-bit base, fp16")


def test_a_published_mfu_names_its_own_stack_instead() -> None:
    a = said(framework="nemo", quantization="fp8", gpus=[{"name": "H100", "count": 8}])
    assert "fp8" in a["training_speed"] and "NeMo" in a["training_speed"]
    assert "training_time_stack" not in a

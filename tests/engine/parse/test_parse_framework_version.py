"""A training stack's release written by its name (framework_version, CONTRACT v2.1), and what it changes: TRL's
trainers stopped holding the whole logits in 1.7.0 (SFT, chunked_nll) and 1.15.0 (DPO and GRPO, a fused LM head).
Phrasings written for these tests."""

from __future__ import annotations

import pytest

from engine.contract import estimate_request
from engine.frameworks import profile, release
from engine.parse import parse


@pytest.mark.parametrize(("text", "stack", "version"), [
    ("dpo qwen 7b на trl 1.16, хватит h100?", "trl", "1.16"),
    ("trl==1.14.0 sft llama 8b on an h100", "trl", "1.14.0"),
    ("TRL v1.15, DPO for an 8B on two 4090s", "trl", "1.15"),
    ("лора 8b через trl версии 1.16 контекст 8к", "trl", "1.16"),
    ("qlora 70b on axolotl 0.9.2 with 2x a100", "axolotl", "0.9.2"),
])
def test_the_release_after_the_stack_is_the_requests_framework_version(text: str, stack: str, version: str) -> None:
    r = parse(text)
    assert (r.framework, r.framework_version) == (stack, version)


def test_the_release_number_is_no_model_size_context_or_gpu_count() -> None:
    r = parse("лора 8b на trl 1.16 на 4090")
    assert r.model is not None and r.model.params_b == 8
    assert r.seq_len is None and [(g.name, g.count) for g in r.gpus] == [("RTX 4090", 1)]


def test_a_stack_without_a_release_has_none() -> None:
    assert parse("лора 8b на trl, 4090").framework_version is None
    assert parse("vllm 0.7.3 llama 8b").framework_version is None  # a serving engine's release is its own field


def test_releases_compare_as_numbers() -> None:
    assert release("1.16") > release("1.7.0") > release("1.6.9") and release("1.15") == release("1.15.0")
    trl = profile("trl")
    assert trl.since("fused_loss_sft", "1.7") and not trl.since("fused_loss_sft", "1.6.1")
    assert trl.since("fused_loss_dpo", "1.15.0") and not trl.since("fused_loss_dpo", "1.14")
    assert not trl.since("fused_loss_sft", None) and not profile("hf").since("fused_loss_sft", "5.17")


BASE = {"model": {"name": "Qwen2.5-7B"}, "method": "lora", "seq_len": 8192, "batch_size": 2,
        "mixed_precision": "pure_bf16", "gpus": [{"name": "H200"}]}


def logits(**kw: object) -> float:
    return float(estimate_request({**BASE, **kw})["per_gpu"]["logits"])


def test_trl_sft_holds_the_logits_before_1_7_and_chunks_them_from_1_7() -> None:
    whole = 2 * 8192 * 152064 * 12 / 2**30  # transformers' ForCausalLMLoss, 12 bytes a logit
    assert logits(framework="trl") == pytest.approx(whole, rel=0.01)
    assert logits(framework="trl", framework_version="1.6.0") == pytest.approx(whole, rel=0.01)
    assert logits(framework="trl", framework_version="1.7.0") < whole / 20


def test_trl_dpo_and_grpo_hold_the_logits_before_1_15() -> None:
    for stage in ("dpo", "grpo"):
        old, new = (logits(framework="trl", framework_version=v, stage=stage) for v in ("1.14.0", "1.15.0"))
        assert new < old / 20, stage


def test_a_stated_fused_loss_wins_over_the_release() -> None:
    assert logits(framework="trl", framework_version="1.16", fused_loss=False) == logits(framework="trl")
    assert logits(framework="trl", framework_version="1.0", fused_loss=True) < 1


def test_a_release_needs_its_stack_named() -> None:
    # no framework named: the default stack, whose release is not known
    assert logits(framework_version="1.16") == logits()

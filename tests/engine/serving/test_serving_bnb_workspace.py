"""bitsandbytes 4-bit in vLLM dequantizes what it runs: a dense linear one shard at a time, a MoE layer every
expert at once (vllm quantization/bitsandbytes.py; serving.toml [formats] bitsandbytes)."""

from __future__ import annotations

import pytest

from engine.catalog.shapes import architecture
from engine.schema import ModelRef, Request
from engine.serving import serve
from engine.serving.budget import GIB, bnb_workspace, moe_workspace


def ask(model: str, quantization: str | None, seq_len: int = 8192, version: str = "0.19.0", gpu: str = "L40S"):
    data = {"method": "inference", "serving_engine": "vllm", "model": {"name": model}, "seq_len": seq_len,
            "gpus": [{"name": gpu}], "engine_options": {"engine_version": version}}
    if quantization:
        data["quantization"] = quantization
    return serve(Request.model_validate(data))


def test_a_moe_layer_dequantizes_every_expert_before_fused_experts():
    arch = architecture(ModelRef(name="Qwen3-30B-A3B"))
    assert bnb_workspace(arch, 2048, 1) == pytest.approx(arch.experts * 3 * arch.expert_ffn * arch.hidden * 2)
    assert bnb_workspace(arch, 2048, 2) == pytest.approx(bnb_workspace(arch, 2048, 1) / 2)
    bnb, awq = ask("Qwen3-30B-A3B", "bitsandbytes"), ask("Qwen3-30B-A3B", "awq")
    tokens = bnb.settings.max_num_batched_tokens
    # the dequantized experts are live with the fused-MoE workspace; their sum outgrows the sampler's logits
    floor = bnb_workspace(arch, tokens, 1) + moe_workspace(arch, tokens, 1)
    assert bnb.memory.activation_peak_gib * GIB >= floor > awq.memory.activation_peak_gib * GIB


def test_a_dense_shard_workspace_grows_a_forward_bound_peak_and_hides_under_the_sampler():
    arch = architecture(ModelRef(name="Llama-3.1-8B"))
    shard = arch.ffn * arch.hidden * 2 + 32768 * arch.ffn * 2
    assert bnb_workspace(arch, 32768, 1) == pytest.approx(shard)
    # V0 without chunked prefill profiles max_model_len tokens: the forward, not the sampler, sets the peak
    long_bnb, long_awq = (ask("Llama-3.1-8B", q, seq_len=32768, version="0.6.6", gpu="A100 80GB SXM")
                          for q in ("bitsandbytes", "awq"))
    assert long_bnb.settings.family == "vllm-v0" and long_bnb.settings.max_num_batched_tokens == 32768
    assert long_bnb.memory.activation_peak_gib - long_awq.memory.activation_peak_gib == pytest.approx(
        shard / GIB, abs=0.02)
    # V1 at 2048 batched tokens: the sampler's logits are larger, the transient sits under them
    short_bnb, short_awq = ask("Llama-3.1-8B", "bitsandbytes"), ask("Llama-3.1-8B", "awq")
    assert short_bnb.memory.activation_peak_gib == pytest.approx(short_awq.memory.activation_peak_gib)

"""Framework profiles: every switch is data with its source, and each switch changes what the code says."""

from __future__ import annotations

from typing import get_args

import pytest

from engine.contract import estimate_request
from engine.frameworks import SWITCHES, profile, profiles
from engine.schema import Framework, Request


def per_gpu(**request: object) -> dict[str, float]:
    result = estimate_request(request)
    assert "per_gpu" in result, result
    return result["per_gpu"]


def test_every_named_framework_has_a_profile_and_every_switch_cites_code() -> None:
    assert set(get_args(Framework)) <= set(profiles())
    for name, prof in profiles().items():
        assert prof.label, name
        missing = [k for k in SWITCHES if not prof.sources.get(k, "").strip()]
        assert not missing, (name, missing)


def test_no_framework_means_hf_trl_and_says_so() -> None:
    from engine.scenario import build_scenario
    from engine.schema import Request

    s = build_scenario(Request.model_validate({"model": {"params_b": 7}, "method": "lora"}))
    assert s.framework == "trl" and s.framework_assumed
    named = build_scenario(Request.model_validate({"model": {"params_b": 7}, "method": "lora", "framework": "trl"}))
    assert not named.framework_assumed
    assert profile(None) is profile("trl")


def test_torchtune_chunked_loss_and_del_logits_cost_less_than_transformers_loss() -> None:
    base = {"model": {"name": "Llama-3.1-8B"}, "method": "lora", "seq_len": 8192, "mixed_precision": "pure_bf16"}
    trl, tune = per_gpu(**base, framework="trl"), per_gpu(**base, framework="torchtune")
    # the chunked loss keeps the 16-bit logits and one chunk's fp32 work (memory.toml [loss] chunked, 5 B a logit);
    # transformers' ForCausalLMLoss the saved log-softmax and two fp32 gradients (12 B)
    assert tune["logits"] < trl["logits"] / 2
    assert tune["total"] < trl["total"]


def test_litgpt_keeps_its_logit_chunks_through_backward() -> None:
    # same chunked kernel; litgpt's loop keeps `logits` bound through fabric.backward (2 B per entry): with a 32K
    # vocabulary the held logits and the layer's backward together outweigh the loss phase
    base = {"model": {"name": "Llama-2-7B"}, "method": "lora", "seq_len": 4096, "mixed_precision": "pure_bf16",
            "gradient_checkpointing": True}
    lit, tune = per_gpu(**base, framework="litgpt"), per_gpu(**base, framework="torchtune")
    assert lit["total"] > tune["total"]


def test_quantized_lm_head_is_dequantized_whole_for_its_matmul() -> None:
    # litgpt's bitsandbytes plugin quantizes lm_head too: fewer stored bytes, but its 16-bit copy
    # (V x h) is made for the matmul, larger than any block matrix of Llama-2-7B
    base = {"model": {"name": "Llama-2-7B"}, "method": "inference", "bits": 4, "seq_len": 64}
    hf, lit = per_gpu(**base, framework="hf"), per_gpu(**base, framework="litgpt")
    lm_head = 32000 * 4096
    assert hf["weights"] - lit["weights"] == pytest.approx(lm_head * (2 - 0.5625) / 2**30, abs=2e-3)
    assert lit["activations"] - hf["activations"] == pytest.approx(lm_head * 2 / 2**30 - 4096 * 11008 * 2 / 2**30,
                                                                   abs=2e-3)


def test_old_bitsandbytes_keeps_4bit_inputs_outside_non_reentrant_checkpointing() -> None:
    base = {"model": {"name": "Llama-2-7B"}, "method": "qlora", "seq_len": 4096, "gradient_checkpointing": True,
            "mixed_precision": "pure_bf16", "fused_loss": True}
    lit = per_gpu(**base, framework="litgpt")  # bitsandbytes 0.41: MatMul4Bit ctx.tensors = (A, B)
    tune = per_gpu(**base, framework="torchtune")  # torchao NF4: saved through autograd
    # q/k/v + o + gate/up + down inputs of 32 layers, 16-bit, and litgpt's lm_head dequantized instead of
    # the largest block matrix
    kept = 4096 * 32 * 2 * (4096 + 4096 + 4096 + 11008) / 2**30
    dequant = (32000 - 11008) * 4096 * 2 / 2**30
    assert lit["activations"] - tune["activations"] == pytest.approx(kept + dequant, abs=2e-3)


def test_fsdp_qlora_gathers_4bit_units() -> None:
    base = {"model": {"name": "Llama-2-70B"}, "method": "qlora", "sharding": "fsdp",
            "gpus": [{"name": "RTX 4090", "count": 2}], "seq_len": 512}
    assert per_gpu(**base, framework="fsdp-qlora")["total"] < per_gpu(**base, framework="axolotl")["total"]


def test_fused_adam_has_no_step_temporaries() -> None:
    base = {"model": {"params_b": 7}, "method": "full", "seq_len": 256, "sharding": "zero3",
            "gpus": [{"name": "H100", "count": 8}]}
    assert per_gpu(**base, framework="deepspeed")["total"] < per_gpu(**base, framework="trl")["total"]


def test_unsloth_offload_means_its_checkpointer_offloading_layer_inputs_not_states() -> None:
    base = {"model": {"name": "Llama-3.1-8B"}, "method": "qlora", "seq_len": 16384}
    uns = estimate_request({**base, "framework": "unsloth", "offload": True})
    on_gpu = estimate_request({**base, "framework": "unsloth"})
    trl = estimate_request({**base, "framework": "trl"})
    inputs = 16384 * 32 * 4096 * 2 / 2**30
    # all layer inputs but two: the last layer's and the GPU buffer the others come back into (unsloth-zoo)
    assert uns["cpu_ram_gb"] - on_gpu["cpu_ram_gb"] == pytest.approx(inputs * 30 / 32, abs=0.01)
    # the 4-bit base stays on the GPU: Unsloth has no parameter offload
    assert uns["per_gpu"]["weights"] == on_gpu["per_gpu"]["weights"] > 4
    assert on_gpu["per_gpu"]["total"] - uns["per_gpu"]["total"] > inputs * 30 / 32
    assert on_gpu["per_gpu"]["total"] < trl["per_gpu"]["total"]


def test_unsloth_fused_lora_kernels_keep_less_per_token_than_peft() -> None:
    # LoRA_MLP saves X, e, g; LoRA_QKV and LoRA_W their inputs; no dropout copies (unsloth/kernels/fast_lora.py)
    from engine.memory import LoraTargets, activation_bytes_per_token_layer
    from engine.scenario import build_scenario
    from engine.schema import Request

    req = {"model": {"name": "Llama-2-7B"}, "method": "qlora", "seq_len": 4096, "flash_attention": True}
    uns = build_scenario(Request.model_validate({**req, "framework": "unsloth"}))
    hf = build_scenario(Request.model_validate({**req, "framework": "hf"}))
    targets = LoraTargets.parse("all_linear")
    h, f = 4096, 11008
    expected = 2 * (2 * h + 4) + 2 * h + 2 * (4 * h) + 2 * h + 2 * 2 * f
    assert activation_bytes_per_token_layer(uns, targets) == pytest.approx(expected)
    assert activation_bytes_per_token_layer(hf, targets) > 2.5 * expected


def test_framework_default_precision_applies_only_when_named() -> None:
    full = {"model": {"params_b": 3}, "method": "full", "seq_len": 256}
    assert estimate_request(full)["request"]["mixed_precision"] == "amp"
    assert estimate_request({**full, "framework": "torchtune"})["request"]["mixed_precision"] == "pure_bf16"


def test_lora_dropout_keeps_a_16_bit_copy_and_a_mask_per_adapter() -> None:
    # PEFT casts x to the fp32 adapter's dtype, but under autocast lora_A saves its 16-bit cast and dropout its
    # bool mask: 2 + 1 bytes per element and adapter, in AMP as in pure bf16
    from engine.memory import LoraTargets, activation_bytes_per_token_layer
    from engine.scenario import build_scenario

    def per_layer(targets: str, precision: str) -> float:
        s = build_scenario(Request.model_validate({"model": {"name": "Llama-3.1-8B"}, "method": "lora",
                                                   "lora_targets": targets, "mixed_precision": precision}))
        return activation_bytes_per_token_layer(s, LoraTargets.parse(s.lora_targets))

    assert per_layer("qv", "amp") == per_layer("qv", "pure_bf16")
    assert per_layer("qv", "amp") - per_layer("attn_mlp_custom:v", "amp") == 3 * 4096

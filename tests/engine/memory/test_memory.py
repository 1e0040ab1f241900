"""The memory model: physics of each component, and every memory claim of the seed articles."""

from __future__ import annotations

import pytest

from engine.catalog import architecture, find_gpu
from engine.contract import estimate_request
from engine.memory import LoraTargets, lora_parameters
from engine.schema import ModelRef

GB_PER_GIB = 2**30 / 1e9


def per_gpu(**request: object) -> dict[str, float]:
    result = estimate_request(request)
    assert "per_gpu" in result, result
    return result["per_gpu"]


def total(**request: object) -> float:
    return per_gpu(**request)["total"]


def fits(gpu: str, count: int = 1, **request: object) -> bool:
    result = estimate_request({**request, "gpus": [{"name": gpu, "count": count}]})
    return result["fits"][0]["fits"]


# --- components -------------------------------------------------------------------------------

def test_lora_parameters_use_real_gqa_shapes() -> None:
    llama3 = architecture(ModelRef(name="Llama-3.1-8B"))
    # q: 4096x4096, v: 4096x1024 (8 KV heads x 128): r*(in+out) per layer, 32 layers
    expected = 8 * ((4096 + 4096) + (4096 + 1024)) * 32
    assert lora_parameters(llama3, LoraTargets.parse("qv"), 8) == expected


def test_lora_all_linear_is_under_one_percent_of_a_7b_model() -> None:  # S3
    arch = architecture(ModelRef(name="Llama-2-7B"))
    trainable = lora_parameters(arch, LoraTargets.parse("all_linear"), 16)
    assert 0.001 < trainable / arch.params < 0.01


def test_unknown_lora_target_is_an_error() -> None:
    result = estimate_request({"model": {"params_b": 7}, "method": "lora", "lora_targets": "attn_mlp_custom:zz"})
    assert "zz" in result["error"]


def test_kv_cache_follows_layers_kv_heads_and_length() -> None:
    # Llama-3.1-8B: 2 * 32 layers * 8 kv heads * 128 * 2 bytes = 128 KiB per token
    one = per_gpu(model={"name": "Llama-3.1-8B"}, method="inference", seq_len=8192, batch_size=1)
    four = per_gpu(model={"name": "Llama-3.1-8B"}, method="inference", seq_len=8192, batch_size=4)
    assert one["kv_cache"] == pytest.approx(8192 * 128 * 1024 / 2**30, rel=1e-3)
    assert four["kv_cache"] == pytest.approx(4 * one["kv_cache"], rel=1e-3)


def test_kv_cache_fragments_like_long_lived_state() -> None:
    # the cache grows in place and lives to the last token: 10 % slack (weights' class), not the
    # 30 % of the prefill working set that is made and freed layer by layer
    b = per_gpu(model={"name": "Llama-3.1-8B"}, method="inference", seq_len=32768, batch_size=1)
    live = b["weights"] + b["kv_cache"] + b["activations"] + b["logits"]
    expected = 0.1 * (b["weights"] + b["kv_cache"]) + 0.3 * (b["activations"] + b["logits"])
    assert b["overhead"] == pytest.approx(expected, abs=2e-3)
    assert b["total"] == pytest.approx(live + expected, abs=2e-3)


def test_bitsandbytes_dequantizes_the_largest_block_linear() -> None:
    # Llama-2-7B: the MLP matrices, 4096 x 11008, in 16 bits while a 4-bit layer multiplies
    dequant = 4096 * 11008 * 2 / 2**30
    prompt = {"model": {"name": "Llama-2-7B"}, "method": "inference", "seq_len": 512}
    bf16 = per_gpu(**prompt, bits=16)["activations"]
    assert per_gpu(**prompt, bits=4)["activations"] - bf16 == pytest.approx(dequant, abs=2e-3)
    assert per_gpu(**prompt, bits=8)["activations"] == pytest.approx(bf16, abs=1e-3)  # int8: only in backward
    train = {"model": {"name": "Llama-2-7B"}, "lora_targets": "qv", "seq_len": 512}
    int8_base = per_gpu(**train, method="qlora", bits=8)["activations"]  # LLM.int8 backward dequantizes
    assert int8_base - per_gpu(**train, method="lora", bits=16)["activations"] == pytest.approx(dequant, abs=2e-3)


def test_checkpointing_and_flash_attention_reduce_activations() -> None:
    base = {"model": {"name": "Llama-2-7B"}, "method": "lora", "seq_len": 2048}
    ckpt = per_gpu(**base, gradient_checkpointing=True)
    plain = per_gpu(**base, gradient_checkpointing=False)
    eager = per_gpu(**base, gradient_checkpointing=False, flash_attention=False)
    assert ckpt["activations"] < plain["activations"] / 4
    assert eager["activations"] > plain["activations"]


def test_fused_loss_shrinks_the_logits_peak() -> None:
    base = {"model": {"name": "Llama-3.1-8B"}, "method": "lora", "seq_len": 8192}
    assert per_gpu(**base, fused_loss=True)["logits"] < per_gpu(**base, fused_loss=False)["logits"] / 3


def test_zero3_divides_training_state_by_gpu_count() -> None:
    one = per_gpu(model={"params_b": 13}, method="full", sharding="zero3", gpus=[{"name": "H100", "count": 1}])
    eight = per_gpu(model={"params_b": 13}, method="full", sharding="zero3", gpus=[{"name": "H100", "count": 8}])
    assert eight["optimizer"] == pytest.approx(one["optimizer"] / 8, rel=1e-3)
    assert eight["gradients"] == pytest.approx(one["gradients"] / 8, rel=1e-3)


def test_offload_moves_optimizer_state_to_cpu_ram() -> None:
    request = {"model": {"params_b": 13}, "method": "full", "gpus": [{"name": "A100", "memory_gb": 80, "count": 2}]}
    on = estimate_request({**request, "offload": True})
    off = estimate_request(request)
    assert on["per_gpu"]["optimizer"] == 0
    assert on["cpu_ram_gb"] > off["per_gpu"]["optimizer"]
    assert on["per_gpu"]["total"] < off["per_gpu"]["total"]


def test_moe_keeps_all_experts_in_memory() -> None:
    mixtral = per_gpu(model={"name": "Mixtral-8x7B"}, method="inference", bits=16, seq_len=128)
    assert mixtral["weights"] == pytest.approx(46.7028e9 * 2 / 2**30, rel=1e-3)


def test_pasted_config_wins_over_catalog_size() -> None:
    config = {"num_hidden_layers": 2, "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
              "vocab_size": 1000}
    small = per_gpu(model={"name": "Llama-3.1-70B", "config": config}, method="inference", bits=16, seq_len=16)
    assert small["weights"] < 0.01


def test_cuda_context_is_reported_and_counted_in_fit() -> None:
    result = estimate_request({"model": {"params_b": 7}, "method": "qlora", "gpus": [{"name": "RTX 4090"}]})
    assert result["per_gpu"]["cuda_context"] > 0
    fit = result["fits"][0]
    assert fit["headroom_gb"] < 24 - result["per_gpu"]["total"]


@pytest.mark.parametrize("bad", [
    {"model": {"params_b": 1e100}},
    {"model": {"params_b": -7}},
    {"model": {"params_b": 7}, "seq_len": 10**12},
    {"model": {"params_b": 7}, "unknown_field": 1},
    {"model": {"name": "x", "config": {"num_hidden_layers": 0, "hidden_size": 8, "num_attention_heads": 1,
                                       "vocab_size": 10}}},
    {"model": {"name": "no-such-model"}},
    {"gpus": [{"name": "H100", "count": 0}], "model": {"params_b": 7}},
    [1, 2, 3],
    "text",
])
def test_impossible_requests_give_a_reason(bad: object) -> None:
    result = estimate_request(bad)
    assert set(result) == {"error"} and result["error"]


# --- seed claims (../shared/seed-claims.md) ------------------------------------------------

def test_s1_full_adamw_mixed_precision_is_16_bytes_per_parameter() -> None:
    b = per_gpu(model={"params_b": 7}, method="full", seq_len=64)
    state_bytes = (b["weights"] + b["gradients"] + b["optimizer"]) * 2**30
    assert 15.9 <= state_bytes / 7e9 <= 20


def test_s2_eight_bit_optimizer_saves_six_bytes_per_parameter() -> None:
    adam = per_gpu(model={"params_b": 7}, method="full", seq_len=64)["optimizer"]
    adam8 = per_gpu(model={"params_b": 7}, method="full", seq_len=64, optimizer="adamw_8bit")["optimizer"]
    assert (adam - adam8) * 2**30 / 7e9 == pytest.approx(6, abs=0.5)


def test_s3_lora_7b() -> None:
    b = per_gpu(model={"name": "Llama-2-7B"}, method="lora")
    assert 13 <= b["weights"] * GB_PER_GIB <= 15
    assert 15 <= b["total"] * GB_PER_GIB <= 20


def test_s4_qlora_7b() -> None:
    b = per_gpu(model={"name": "Llama-2-7B"}, method="qlora")
    assert 3.3 <= b["weights"] * GB_PER_GIB <= 4.4  # 0.5 B/param + 16-bit embeddings and scales
    assert 5 <= b["total"] * GB_PER_GIB <= 10


SEED_TABLE = {  # S5: method settings -> {size: GB}
    ("full", 16, "pure_bf16"): {1: 10, 7: 67, 14: 134, 70: 672},
    ("lora", 16, "amp"): {1: 2, 7: 15, 14: 30, 70: 146},
    ("qlora", 8, "amp"): {1: 1.3, 7: 9, 14: 18, 70: 88},
    ("qlora", 4, "amp"): {1: 0.7, 7: 5, 14: 10, 70: 46},
}


@pytest.mark.parametrize("settings", list(SEED_TABLE))
def test_s5_seed_table_within_25_percent(settings: tuple[str, int, str]) -> None:
    method, bits, precision = settings
    # the seed's QLoRA cells count the non-quantized parameters in 16 bits ("0.5 B/param + a small
    # overhead"), as stacks without PEFT's prepare_model_for_kbit_training keep them (LLaMA-Factory,
    # Unsloth, torchtune); the default TRL stack casts them to fp32 on top (checked below)
    stack = {"framework": "llama-factory"} if method == "qlora" else {}
    for size, gb in SEED_TABLE[settings].items():
        got = total(model={"params_b": size}, method=method, bits=bits, mixed_precision=precision,
                    seq_len=64, batch_size=1, **stack)
        if size == 1:
            assert abs(got - gb) <= 0.7, (settings, size, got)
        else:
            assert abs(got / gb - 1) <= 0.25, (settings, size, got)


def test_trl_qlora_adds_the_fp32_upcast_of_the_16_bit_parameters() -> None:
    request = {"model": {"name": "Llama-2-7B"}, "method": "qlora", "seq_len": 64}
    trl, kept = per_gpu(**request), per_gpu(**request, framework="llama-factory")
    embeddings = 2 * 32000 * 4096  # embed_tokens + lm_head, bf16 -> fp32: 2 more bytes each
    assert trl["upcast"] == pytest.approx(embeddings * 2 / 2**30, abs=1e-3)
    assert trl["weights"] == kept["weights"] and kept["upcast"] == 0
    assert trl["total"] > kept["total"] + trl["upcast"]


def test_trl_named_prepares_a_quantized_model_without_the_upcast_and_the_peft_recipe_with_it() -> None:
    """TRL since 2af35fb0d wraps a 4-bit model with get_peft_model only; the PEFT recipe (no stack named, or the HF
    Trainer) calls prepare_model_for_kbit_training, which makes the 16-bit embeddings fp32."""
    request = {"model": {"name": "Llama-2-7B"}, "method": "qlora", "seq_len": 64}
    assert per_gpu(**request, framework="trl")["upcast"] == 0
    assert per_gpu(**request, framework="hf")["upcast"] == pytest.approx(2 * 32000 * 4096 * 2 / 2**30, abs=1e-3)
    assert per_gpu(**request)["upcast"] > 0


def test_s7_one_h100() -> None:
    assert fits("H100", model={"params_b": 70}, method="qlora")
    assert fits("H100", model={"params_b": 14}, method="lora")
    assert fits("H100", model={"params_b": 3}, method="full")
    assert not fits("H100", model={"params_b": 7}, method="full")


def test_s8_one_h200() -> None:
    assert fits("H200", model={"params_b": 70}, method="qlora", seq_len=8192)
    assert fits("H200", model={"params_b": 32}, method="lora")
    assert fits("H200", model={"params_b": 8}, method="full", optimizer="adamw_8bit")


def test_s9_one_b200() -> None:
    b = per_gpu(model={"params_b": 70}, method="lora")
    assert 125 <= b["weights"] * GB_PER_GIB <= 155  # about 140 GB of weights
    assert fits("B200", model={"params_b": 70}, method="lora")
    assert fits("B200", model={"params_b": 8}, method="full")


def test_s10_one_b300_lora_70b_long_context() -> None:
    assert fits("B300", model={"params_b": 70}, method="lora", seq_len=16384)
    assert not fits("B200", model={"params_b": 70}, method="lora", seq_len=16384)


def test_s11_full_32b_and_70b_on_a_node() -> None:
    b = per_gpu(model={"params_b": 32}, method="full", seq_len=64)
    state_gb = (b["weights"] + b["gradients"] + b["optimizer"]) * GB_PER_GIB
    assert 480 <= state_gb <= 680
    assert fits("H200", 8, model={"params_b": 32}, method="full", sharding="zero3")
    assert fits("B300", 8, model={"params_b": 70}, method="full", sharding="zero3")
    assert fits("B200", 8, model={"params_b": 70}, method="full", sharding="zero3", offload=True)


def test_s12_checkpointing_halves_and_flash_saves_ten_to_twenty_percent() -> None:
    base = {"model": {"name": "Llama-2-7B"}, "method": "lora", "seq_len": 2048}
    plain = total(**base, gradient_checkpointing=False)
    ckpt = total(**base, gradient_checkpointing=True)
    assert 0.35 <= 1 - ckpt / plain <= 0.6
    short = {**base, "seq_len": 768, "gradient_checkpointing": False}
    saving = 1 - total(**short) / total(**short, flash_attention=False)
    assert 0.08 <= saving <= 0.25


def test_s18_70b_bf16_weights() -> None:
    assert per_gpu(model={"params_b": 70}, method="inference", bits=16, seq_len=64)["weights"] * GB_PER_GIB == \
        pytest.approx(140, rel=0.05)


def test_s19_long_context_is_mostly_activations() -> None:
    b = per_gpu(model={"name": "Llama-3.1-8B"}, method="lora", seq_len=65536)
    assert b["activations"] + b["logits"] > 0.5 * b["total"]


def test_s20_full_70b_needs_about_1_1_tb() -> None:
    b = per_gpu(model={"params_b": 70}, method="full", seq_len=64)
    assert 1050 <= (b["weights"] + b["gradients"] + b["optimizer"]) * GB_PER_GIB <= 1400


def test_gpu_variants() -> None:
    assert find_gpu("A100").name == "A100 80GB SXM"  # type: ignore[union-attr]
    assert find_gpu("a100", 40).name == "A100 40GB SXM"  # type: ignore[union-attr]
    assert find_gpu("H100 PCIe").name == "H100 PCIe"  # type: ignore[union-attr]

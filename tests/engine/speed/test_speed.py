"""The FLOPs time model and the bandwidth-bound decode model, with seed claims S13, S15, S16, S17."""

from __future__ import annotations

import math
from typing import Any

import pytest

from engine import pricing, speed
from engine.catalog import architecture, find_gpu
from engine.plan import plan
from engine.schema import GpuRef, ModelRef, PriceOptions, Request, Scenario

LLAMA2_7B = architecture(ModelRef(name="Llama-2-7B"))  # 6.7384e9 params, 32 layers, 32 × 128 heads


def scenario(method: str = "full", *, model: str | None = None, **changes: Any) -> Scenario:
    fields: dict[str, Any] = dict(
        arch=architecture(ModelRef(name=model)) if model else LLAMA2_7B, method=method,
        bits=16, optimizer=None if method == "inference" else "adamw", mixed_precision="amp", lora_rank=8,
        lora_targets="all_linear", seq_len=2048, batch_size=4, gradient_checkpointing=False,
        flash_attention=True, fused_loss=False, sharding="none", offload=False, gpu_count=1, assumptions=[],
    )
    fields.update(changes)
    return Scenario(**fields)


# ---- FLOPs ----------------------------------------------------------------------------------------------

P = LLAMA2_7B.params
P_MATMUL = P - 32000 * 4096  # Llama-2's input embedding is untied: a lookup, not a matmul
ATTN_FWD_2K = 4 * 32 * 2048 * (32 * 128)  # 4 · L · s · h_attn per token


def test_full_fine_tuning_flops_are_6p_plus_attention() -> None:
    hardware, model = speed.training_flops_per_token(scenario("full"))
    assert hardware == model == pytest.approx(6 * P_MATMUL + 3 * ATTN_FWD_2K)


def test_a_tied_embedding_is_the_lm_head_and_counts_once() -> None:
    tied = scenario("full", model="Gemma-2-2B")
    assert tied.arch.tied and speed.matmul_params(tied) == tied.arch.params
    assert speed.matmul_params(scenario("full")) == pytest.approx(P - LLAMA2_7B.vocab * LLAMA2_7B.hidden)


def test_checkpointing_adds_a_recomputed_forward_to_hardware_flops_only() -> None:
    hardware, model = speed.training_flops_per_token(scenario("full", gradient_checkpointing=True))
    assert hardware == pytest.approx(8 * P_MATMUL + 4 * ATTN_FWD_2K)
    assert model == pytest.approx(6 * P_MATMUL + 3 * ATTN_FWD_2K)


def test_lora_and_qlora_skip_weight_gradients_but_not_attention_backward() -> None:
    for method in ("lora", "qlora"):
        hardware, _ = speed.training_flops_per_token(scenario(method))
        assert hardware == pytest.approx(4 * P_MATMUL + 3 * ATTN_FWD_2K)


def test_moe_training_counts_active_parameters_only() -> None:
    moe = scenario("full", model="Mixtral-8x7B")
    dense, _ = speed.training_flops_per_token(moe)
    active_matmul = moe.arch.active_params - moe.arch.vocab * moe.arch.hidden
    assert dense == pytest.approx(6 * active_matmul + 3 * 4 * 32 * 2048 * 32 * 128)
    assert moe.arch.active_params < moe.arch.params / 3


def test_attention_dominates_at_long_context() -> None:
    short = speed.attention_flops_per_token(scenario(seq_len=2048), recompute=False)
    long = speed.attention_flops_per_token(scenario(seq_len=65536), recompute=False)
    assert long == pytest.approx(32 * short)
    assert short < 0.1 * 6 * P  # under 10% at 2k for 7B (throughput.md)
    assert long > 6 * P  # more than the dense part at 64k


# ---- time ------------------------------------------------------------------------------------------------


def test_time_is_flops_over_peak_times_utilisation_plus_memory_bound_work_when_the_gpu_sets_the_pace() -> None:
    sc = scenario("full")  # one GPU, 4 × 2,048 tokens per micro-batch: the GPU's own work sets the pace
    t = speed.training_time(sc, "A100 80GB SXM", 1, tokens=1e9)
    hardware, _ = speed.training_flops_per_token(sc)
    step = t.step
    assert step.compute / step.tokens * 1e9 == pytest.approx(1e9 * hardware / (312e12 * t.utilisation))
    assert step.busy == pytest.approx(step.compute + step.elementwise) and step.dispatch < step.compute
    assert step.total == pytest.approx(step.busy + step.optimizer)
    assert t.hours * 3600 == pytest.approx(1e9 * step.total / step.tokens)
    assert 0.05 < step.elementwise / step.compute < 0.25  # norms, activations, residuals: bandwidth-bound
    assert t.mfu < t.utilisation  # what the matmuls reach while the elementwise work waits on memory
    assert t.hours_fast < t.hours < t.hours_slow


def test_elementwise_work_weighs_more_on_small_models_and_on_gpus_with_more_flops_per_byte() -> None:
    def share(model: str, gpu: str) -> float:
        step = speed.training_time(scenario("full", model=model), gpu, 1).step
        return step.elementwise / step.busy

    assert share("Qwen2.5-0.5B", "A100") > share("Llama-2-7B", "A100")  # ∝ hidden, matmuls ∝ hidden²
    assert share("Llama-2-7B", "H100") > share("Llama-2-7B", "A100")  # 295 vs 153 FLOPs per byte


def test_checkpointing_slows_by_the_recompute_and_lowers_mfu() -> None:
    plain = speed.training_time(scenario("full"), "H100", 1)
    gc = speed.training_time(scenario("full", gradient_checkpointing=True), "H100", 1)
    ratio = (8 * P_MATMUL + 4 * ATTN_FWD_2K) / (6 * P_MATMUL + 3 * ATTN_FWD_2K)
    assert gc.hours / plain.hours == pytest.approx(ratio, rel=0.02)
    assert gc.mfu == pytest.approx(plain.mfu / ratio, rel=0.02)


def test_hours_scale_with_tokens_and_100m_is_the_default_yardstick() -> None:
    sc = scenario("lora")
    per_100m = speed.training_time(sc, "A100")  # 100M tokens unless told
    assert per_100m.tokens == 1e8
    assert speed.training_time(sc, "A100", tokens=3e8).hours == pytest.approx(3 * per_100m.hours)


def test_qlora_is_slower_than_lora_by_dequantisation() -> None:
    for gpu in ("A100", "RTX 4090"):
        lora = speed.training_time(scenario("lora"), gpu)
        qlora = speed.training_time(scenario("qlora", bits=4), gpu)
        assert 1.0 < qlora.hours / lora.hours < 1.3  # litgpt +15-16 %, torchtune +28 %, LLaMA-Factory +1 %
        assert qlora.step.dequantisation > 0 == lora.step.dequantisation


def test_dequantisation_weighs_less_as_the_micro_batch_grows() -> None:
    def extra(batch: int) -> float:
        lora = speed.training_time(scenario("lora", batch_size=batch), "A100")
        qlora = speed.training_time(scenario("qlora", bits=4, batch_size=batch), "A100")
        return qlora.hours / lora.hours

    assert extra(1) > extra(4) > extra(16) > 1.0  # the same weights are expanded once per micro-batch


def test_small_micro_batches_hit_the_dispatch_floor() -> None:
    big = speed.training_time(scenario("lora", batch_size=4, seq_len=1024), "A100")
    small = speed.training_time(scenario("lora", batch_size=1, seq_len=256), "A100")
    assert small.tokens_per_second < big.tokens_per_second / 2
    assert small.mfu < big.mfu
    assert small.step.busy == small.step.dispatch > small.step.compute  # the CPU sets the pace
    assert big.step.busy == pytest.approx(big.step.compute + big.step.elementwise + big.step.adapters)


def test_consumer_boards_sustain_lower_full_fine_tuning_utilisation_than_a100() -> None:
    a100 = speed.training_time(scenario("full"), "A100")
    rtx = speed.training_time(scenario("full"), "RTX 4090")
    assert rtx.utilisation < a100.utilisation


def test_several_gpus_are_faster_but_not_linearly() -> None:
    sc = scenario("full", sharding="ddp")
    one = speed.training_time(sc, "H100", 1)
    eight = speed.training_time(sc, "H100", 8)
    sixteen = speed.training_time(sc, "H100", 16)
    assert 7.0 < one.hours / eight.hours < 8.0  # the gradient all-reduce is only partly hidden
    assert one.scaling == 1.0 and eight.scaling < 1.0
    assert one.hours / sixteen.hours < 2 * one.hours / eight.hours


def test_pcie_boards_scale_worse_than_nvlink() -> None:
    assert speed.link_kind(find_gpu("RTX 4090")) == "pcie"  # type: ignore[arg-type]
    assert speed.link_kind(find_gpu("H100 SXM")) == "nvlink"  # type: ignore[arg-type]
    assert speed.scaling(find_gpu("RTX 4090"), 4) < speed.scaling(find_gpu("H100 SXM"), 4)  # type: ignore[arg-type]
    ddp = scenario("full", sharding="ddp")
    assert (speed.training_time(ddp, "RTX 4090", 4).scaling
            < speed.training_time(ddp, "RTX 6000 Ada", 1).scaling == 1.0)


def test_gpu_count_defaults_to_the_scenario() -> None:
    t = speed.training_time(scenario("full", gpu_count=4), "A100")
    assert t.count == 4


def test_cpu_offload_costs_time_and_parameter_offload_more() -> None:
    base = speed.training_time(scenario("full", gradient_checkpointing=True), "RTX 4090")
    optimizer_offload = speed.training_time(
        scenario("full", gradient_checkpointing=True, offload=True), "RTX 4090")
    zero3 = scenario("full", gradient_checkpointing=True, offload=True, sharding="zero3", batch_size=1)
    param_offload = speed.training_time(zero3, "RTX 4090")
    assert optimizer_offload.hours > base.hours
    assert param_offload.hours > optimizer_offload.hours
    assert not optimizer_offload.offload_bound
    # On an H100, 3 passes of 13.5 GB of weights over ~50 GB/s per 2k-token micro-batch outrun its compute.
    assert speed.training_time(zero3, "H100").offload_bound


def test_invalid_training_requests_are_rejected() -> None:
    with pytest.raises(ValueError, match="training method"):
        speed.training_time(scenario("inference"), "A100")
    with pytest.raises(ValueError, match="tokens"):
        speed.training_time(scenario("full"), "A100", tokens=0)
    with pytest.raises(ValueError, match="tokens"):
        speed.training_time(scenario("full"), "A100", tokens=math.nan)
    with pytest.raises(ValueError, match="unknown GPU"):
        speed.training_time(scenario("full"), "Voodoo 3")
    with pytest.raises(ValueError, match="count"):
        speed.training_time(scenario("full"), "A100", 0)


# ---- seed claims -------------------------------------------------------------------------------------------


def test_s15_h100_over_a100_throughput_full_fine_tuning_at_2k() -> None:
    sc = scenario("full", seq_len=2048)
    a100 = speed.training_time(sc, "A100 80GB SXM", 8)
    h100 = speed.training_time(sc, "H100 SXM", 8)
    ratio = h100.tokens_per_second / a100.tokens_per_second
    assert 2.0 <= ratio <= 2.6  # llm-foundry BF16: 2.12–2.53×; the seed's 4× only with FP8


def test_s15_h100_peft_speed_up_is_smaller_than_the_peak_ratio() -> None:
    sc = scenario("lora")
    h100, a100 = speed.training_time(sc, "H100"), speed.training_time(sc, "A100")
    ratio = h100.tokens_per_second / a100.tokens_per_second
    assert 1.6 <= ratio <= 2.3  # throughput.md expectation for 7–8B PEFT
    assert ratio < 989 / 312


def test_s15_h100_costs_more_per_hour_but_less_per_token() -> None:
    h100 = pricing.price_range("H100 SXM")
    a100 = pricing.price_range("A100 80GB SXM")
    premium = h100.typical / a100.typical
    assert premium >= 1.5  # seed: 50–80% more; the data: about double
    sc = scenario("full")
    speed_ratio = (speed.training_time(sc, "H100", 8).tokens_per_second
                   / speed.training_time(sc, "A100", 8).tokens_per_second)
    assert speed_ratio > premium  # so the H100 is cheaper per token at typical prices


def test_s16_7b_lora_of_60m_tokens_on_one_a100_takes_about_6_hours_for_7_to_12_dollars() -> None:
    # LLaMA-Factory's setting: batch 4 × 1,024 tokens, gradient checkpointing on.
    request = Request(model=ModelRef(name="Llama-2-7B"), method="lora", lora_rank=8, batch_size=4, seq_len=1024,
                      gradient_checkpointing=True, tokens=60e6, gpus=[GpuRef(name="A100")])
    run = plan(request).plans[0]
    assert (run.count, run.techniques) == (1, [])
    assert run.hours is not None and 5.0 <= run.hours <= 7.0
    assert run.usd is not None and 7.0 <= run.usd["typical"] <= 12.0
    low_end = [plan(request, PriceOptions(overrides={"A100": p})).plans[0].cost for p in (1.19, 1.99)]
    assert low_end[0] is not None and low_end[1] is not None
    assert 6.5 <= low_end[0]["typical"] < low_end[1]["typical"] <= 12.5


def test_s13_a6000_real_speed_up_is_about_three_quarters_of_its_core_advantage() -> None:
    a5000, a6000 = find_gpu("RTX A5000"), find_gpu("RTX A6000")
    assert a5000 is not None and a6000 is not None
    sc = scenario("lora")
    gain = (speed.training_time(sc, a6000).tokens_per_second
            / speed.training_time(sc, a5000).tokens_per_second) - 1
    cores = 10752 / 8192 - 1  # 31 % more CUDA cores (the seed's figures)
    assert gain == pytest.approx(0.75 * cores, abs=0.03)


def test_s13_a5000_is_the_better_buy_at_half_the_price_and_at_same_provider_prices() -> None:
    sc = scenario("lora")
    tps = {g: speed.training_time(sc, g).tokens_per_second for g in ("RTX A5000", "RTX A6000")}
    # the seed's premise: the A5000 at half the A6000's price
    assert 0.5 / tps["RTX A5000"] < 1.0 / tps["RTX A6000"]
    # providers in the price data that list both
    a5000 = {o.provider: o.price for o in pricing.offers() if o.gpu == "RTX A5000" and not o.weak}
    a6000 = {o.provider: o.price for o in pricing.offers() if o.gpu == "RTX A6000" and not o.weak}
    both = sorted(set(a5000) & set(a6000))
    assert both  # RunPod, Paperspace
    for provider in both:
        assert a5000[provider] / tps["RTX A5000"] < a6000[provider] / tps["RTX A6000"], provider


def test_s17_catalog_bandwidths() -> None:
    bandwidth = {n: find_gpu(n).bandwidth_tbs for n in ("H100 SXM", "H200 SXM", "B200")}  # type: ignore[union-attr]
    assert bandwidth == {"H100 SXM": 3.35, "H200 SXM": 4.8, "B200": 8.0}


def test_s17_when_everything_fits_bandwidth_sets_decode_speed() -> None:
    sc = scenario("inference", batch_size=1, seq_len=1024)
    tps = {n: speed.inference_speed(sc, n).tokens_per_second for n in ("H100 SXM", "H200 SXM", "B200")}
    assert tps["H200 SXM"] / tps["H100 SXM"] == pytest.approx(4.8 / 3.35)
    assert tps["B200"] / tps["H100 SXM"] == pytest.approx(8.0 / 3.35)
    assert speed.inference_speed(sc, "H100").bound == "memory"


# ---- inference --------------------------------------------------------------------------------------------


def test_decode_speed_is_bandwidth_times_efficiency_over_bytes_per_step() -> None:
    sc = scenario("inference", batch_size=1, seq_len=1000)
    result = speed.inference_speed(sc, "A100 80GB SXM")
    kv = 2 * 32 * 32 * 128 * 2 * 1000  # 2 · L · kv_heads · head_dim · 2 bytes · context
    expected_bytes = 2 * P + kv
    assert result.bytes_per_step == pytest.approx(expected_bytes)
    assert result.tokens_per_second == pytest.approx(2.039e12 * 0.67 / expected_bytes)


def test_decode_matches_the_calibration_point() -> None:
    # Qwen2.5-14B-Instruct BF16, vLLM, one A100 80GB, batch 1: 46.3 tok/s measured.
    sc = scenario("inference", model="Qwen2.5-14B", batch_size=1, seq_len=2048)
    assert speed.inference_speed(sc, "A100 80GB SXM").tokens_per_second == pytest.approx(46.3, rel=0.1)


def test_batching_raises_throughput_and_lowers_per_sequence_speed() -> None:
    one = speed.inference_speed(scenario("inference", batch_size=1), "H100")
    many = speed.inference_speed(scenario("inference", batch_size=32), "H100")
    assert many.tokens_per_second > 3 * one.tokens_per_second
    assert many.tokens_per_second_per_sequence < one.tokens_per_second_per_sequence


def test_long_kv_cache_slows_decode() -> None:
    short = speed.inference_speed(scenario("inference", batch_size=8, seq_len=1024), "H100")
    long = speed.inference_speed(scenario("inference", batch_size=8, seq_len=32768), "H100")
    assert long.tokens_per_second < short.tokens_per_second / 2


def test_huge_batches_become_compute_bound() -> None:
    sc = scenario("inference", batch_size=4096, seq_len=16)
    assert speed.inference_speed(sc, "H100").bound == "compute"


def test_quantized_weights_decode_faster_but_less_than_their_size_ratio() -> None:
    bf16 = speed.inference_speed(scenario("inference", batch_size=1, seq_len=16), "A100")
    int4 = speed.inference_speed(scenario("inference", bits=4, batch_size=1, seq_len=16), "A100")
    assert 1.5 < int4.tokens_per_second / bf16.tokens_per_second < 4.0


def test_moe_decode_reads_more_experts_as_the_batch_grows() -> None:
    arch = architecture(ModelRef(name="Mixtral-8x7B"))
    one = speed.weight_params_read(arch, 1)
    assert one == pytest.approx(arch.active_params)
    assert speed.weight_params_read(arch, 64) == pytest.approx(arch.params, rel=1e-6)
    assert one < speed.weight_params_read(arch, 4) < arch.params


def test_tensor_parallel_adds_bandwidth_with_a_loss() -> None:
    sc = scenario("inference", model="Llama-3.1-70B", batch_size=1, seq_len=1024)
    one = speed.inference_speed(sc, "H100", 1)
    four = speed.inference_speed(sc, "H100", 4)
    assert 3.0 < four.tokens_per_second / one.tokens_per_second < 4.0


def test_s12_checkpointing_costs_a_fifth_to_a_third_more_time_in_full_fine_tuning() -> None:
    # the recompute is 2 · P of 6 · P (+33 % of FLOPs); communication and the step's fixed costs dilute it
    for gpu, sharding, batch in (("A100", "fsdp", 1), ("A100", "fsdp", 4), ("H100", "fsdp", 4)):
        plain = speed.training_time(scenario("full", sharding=sharding, batch_size=batch), gpu, 8)
        gc = speed.training_time(scenario("full", sharding=sharding, batch_size=batch,
                                          gradient_checkpointing=True), gpu, 8)
        assert 1.2 <= gc.hours / plain.hours <= 1.34, (gpu, batch)

"""The training mechanisms read from framework code (docs/training.md): packing, fused losses, sharded gathers,
SDPA on cards without FlashAttention-2, verl's packed log-probs, the CONTRACT v2.1 fields and published-MFU time."""

from __future__ import annotations

from typing import Any

import pytest

from engine.catalog import find_gpu
from engine.contract import estimate_request
from engine.memory import breakdown
from engine.posttrain import posttrain_result
from engine.scenario import build_scenario, for_gpu
from engine.schema import Request
from engine.speed import training_time

GIB = float(2**30)


def _total(request: dict[str, object]) -> float:
    out = estimate_request(request)
    assert "error" not in out, out
    return float(out["per_gpu"]["total"])


def test_padding_free_dpo_does_not_double_the_packed_row() -> None:
    base = {"model": {"name": "Qwen2.5-7B"}, "method": "lora", "stage": "dpo", "seq_len": 8192,
            "framework": "trl", "gpus": [{"name": "H100 SXM"}]}
    padded = posttrain_result(Request.model_validate(base))
    packed = posttrain_result(Request.model_validate({**base, "padding_free": True}))
    assert padded.sequences_per_micro_step == 2 and packed.sequences_per_micro_step == 1
    assert packed.policy["logits"] < 0.6 * padded.policy["logits"]
    assert packed.per_gpu_total < padded.per_gpu_total


def test_a_fused_loss_leaves_no_whole_logits() -> None:
    base = {"model": {"name": "Llama-3.1-8B"}, "method": "qlora", "seq_len": 8192, "framework": "trl"}
    plain = estimate_request(base)["per_gpu"]
    fused = estimate_request({**base, "fused_loss": True})["per_gpu"]
    tokens_vocab = 8192 * 128256
    assert plain["logits"] * GIB >= 8 * tokens_vocab  # fp32 upcast and its gradient
    assert fused["logits"] * GIB < 0.5 * tokens_vocab  # under a byte per logit: never materialised whole
    assert fused["total"] < plain["total"] - 5


def test_zero3_on_four_gpus_holds_the_gathered_lm_head_and_layers() -> None:
    request = Request.model_validate({"model": {"name": "Llama-3.1-8B"}, "method": "lora", "sharding": "zero3",
                                      "seq_len": 2048, "gpus": [{"name": "H100 SXM", "count": 4}]})
    s = build_scenario(request)
    b = breakdown(s)
    arch = s.arch
    lm_head = arch.vocab * arch.hidden * 2.0 / GIB
    layer = arch.linear_params / arch.layers * 2.0 / GIB
    # the shards, lm_head and the last layer stay gathered at the turn from forward to backward
    assert b.total >= b.weights + lm_head + layer
    fsdp = breakdown(build_scenario(request.model_copy(update={"sharding": "fsdp"})))
    assert fsdp.total >= fsdp.weights + arch.embedding_params * 2.0 / GIB + 2 * layer


def test_t4_with_flash_attention_said_runs_sdpa_and_fits() -> None:
    said = {"model": {"name": "Llama-3.2-3B"}, "method": "qlora", "seq_len": 2048, "flash_attention": True,
            "gpus": [{"name": "T4"}]}
    out = estimate_request(said)
    assert "error" not in out and out["fits"][0]["fits"]
    s = build_scenario(Request.model_validate(said))
    assert s.attention == "sdpa"
    eager = estimate_request({**said, "flash_attention": False})
    assert out["per_gpu"]["total"] <= eager["per_gpu"]["total"]


def test_verl_grpo_logprobs_cover_the_packed_micro_batch_in_bf16() -> None:
    base = {"model": {"name": "Qwen2.5-3B"}, "method": "lora", "stage": "grpo", "prompt_len": 512,
            "output_len": 3584, "num_generations": 16, "gpus": [{"name": "H100 SXM"}]}
    verl = posttrain_result(Request.model_validate({**base, "framework": "verl"}))
    trl = posttrain_result(Request.model_validate({**base, "framework": "trl"}))
    # verl: micro-batches of ppo_max_token_len_per_gpu (16384) tokens, 2 bytes per packed token x vocab entry
    assert verl.sequences_per_micro_step == 16384 // 4096
    assert abs(verl.policy["logits"] - 4 * 4096 * 151936 * 2 / GIB) < 0.05
    assert verl.policy["logits"] < trl.policy["logits"] / 4


def test_v21_fields_are_taken_and_change_the_estimate() -> None:
    long = {"model": {"name": "Llama-3.1-8B"}, "method": "full", "seq_len": 65536, "sharding": "zero3",
            "gpus": [{"name": "H100 SXM", "count": 8}], "context_parallel": 8}
    plain = _total(long)
    assert _total({**long, "activation_offload": True}) < plain
    assert _total({**long, "tiled_mlp": True}) < plain
    moe = {"model": {"name": "Mixtral-8x7B"}, "method": "full", "sharding": "ddp",
           "gpus": [{"name": "H100 SXM", "count": 8}]}
    assert estimate_request({**moe, "expert_parallel": 8})["per_gpu"]["weights"] < 0.4 * estimate_request(moe)[
        "per_gpu"]["weights"]
    assert "error" in estimate_request({**moe, "expert_parallel": 16})


def _hours(request: dict[str, object], gpu: str, count: int, tokens: float) -> tuple[float, list[str]]:
    g = find_gpu(gpu)
    assert g is not None
    s = for_gpu(build_scenario(Request.model_validate(request)), g)
    return training_time(s, g, count, tokens).hours, [str(a) for a in s.assumptions]


def test_pretraining_is_timed_at_a_published_mfu_and_says_so() -> None:
    hours, assumed = _hours({"model": {"name": "Llama-3.2-1B"}, "pretraining": True,
                             "gpus": [{"name": "H100 SXM", "count": 8}]}, "H100 SXM", 8, 1e11)
    assert 50 <= hours <= 80
    assert any(a.startswith("training_speed=40% MFU bf16") for a in assumed)


def test_nemo_fp8_lora_is_within_30_percent_of_mlperf() -> None:
    # MLPerf Training Llama-2-70B LoRA: ~28 min on 8xH100, ~13 min on 8xB200 (NeMo, FP8; docs/training.md)
    job = {"model": {"name": "Llama-2-70B"}, "method": "lora", "framework": "nemo", "quantization": "fp8",
           "seq_len": 8192, "lora_rank": 16, "lora_targets": "qkvo"}
    for gpu, minutes in (("H100 SXM", 28.0), ("B200", 13.0)):
        hours, assumed = _hours(job, gpu, 8, 28.8e6)
        assert abs(hours * 60 / minutes - 1) <= 0.30
        assert any("fp8" in a and "NeMo" in a for a in assumed)


def test_v21_fields_are_heard_in_questions() -> None:
    from engine.parse import parse

    ru = parse("full 8B 128k контекст на 8xH100 с оффлоадом активаций и tiled mlp")
    assert ru.activation_offload is True and ru.tiled_mlp is True and ru.offload is None
    assert parse("Qwen3-30B-A3B full на 8xH100 EP 8").expert_parallel == 8
    assert parse("expert parallel 4 Mixtral on 4xH100").expert_parallel == 4
    plain = parse("LoRA 8B с оффлоадом на 4090")
    assert plain.offload is True and plain.activation_offload is None


def test_pretraining_is_said_as_pretraining_and_timed_from_the_mfu() -> None:
    import contextlib
    import io

    from bot.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["ask", "pretrain 1b с нуля на 8xh100 на 100B токенов"])
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0].startswith("⏱ ") and "8×H100" in lines[0]  # the tokens are given: how long leads
    assert "предобучение с нуля" in lines[3] and "полное дообучение" not in text
    assert "MFU" in text and "QLoRA" not in text


@pytest.fixture
def optimizer_only_offload(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ZeRO-3 preset with offload_optimizer cpu and offload_param none (Accelerate's default, not our config)."""
    from engine.memory import state

    real = state.constants

    def params_on_the_gpu() -> dict[str, Any]:
        c = dict(real())
        c["sharding"] = {**c["sharding"], "zero3_offload_params": 0}
        return c

    monkeypatch.setattr(state, "constants", params_on_the_gpu)


@pytest.mark.usefixtures("optimizer_only_offload")
def test_zero3_optimizer_offload_keeps_the_16bit_parameter_shards_on_the_gpu() -> None:
    base = {"model": {"name": "Qwen3-4B"}, "method": "full", "sharding": "zero3", "seq_len": 4096,
            "framework": "trl", "gpus": [{"name": "H100 SXM", "count": 4}]}
    s = build_scenario(Request.model_validate({**base, "offload": True}))
    b = breakdown(s)
    # DeepSpeed offload_optimizer: fp32 master, moments and fp32 gradient partitions in host RAM, bf16 shards stay
    assert abs(b.weights - s.arch.params * 2.0 / 4 / GIB) < 0.05
    assert b.optimizer == 0.0 and b.gradients < 0.1
    assert b.cpu_ram * GIB >= s.arch.params * (4 + 8 + 4) / 4 * 0.99
    plain = breakdown(build_scenario(Request.model_validate(base)))
    assert b.total < plain.total - 5


def test_our_zero3_offload_moves_parameters_and_optimizer_as_the_config_written() -> None:
    base = {"model": {"name": "Qwen3-4B"}, "method": "full", "sharding": "zero3", "seq_len": 4096, "offload": True,
            "framework": "trl", "gpus": [{"name": "H100 SXM", "count": 4}]}
    b = breakdown(build_scenario(Request.model_validate(base)))
    # engine/configs/writers/launch.py writes offload_optimizer and offload_param on the CPU: the estimate is that
    assert b.weights == 0.0 and b.optimizer == 0.0
    assert b.cpu_ram * GIB >= 4.0225e9 * (2 + 4 + 8 + 4) / 4 * 0.99


def test_ms_swift_zero3_offload_preset_offloads_parameters_not_the_optimizer() -> None:
    base = {"model": {"name": "Qwen3-4B"}, "method": "full", "sharding": "zero3", "seq_len": 4096, "offload": True,
            "gpus": [{"name": "H100 SXM", "count": 4}]}
    swift = breakdown(build_scenario(Request.model_validate({**base, "framework": "ms-swift"})))
    trl = breakdown(build_scenario(Request.model_validate({**base, "framework": "trl"})))
    # swift/llm/ds_config/zero3_offload.json: offload_param cpu, offload_optimizer none
    assert swift.weights == 0.0 and swift.optimizer > 3
    assert trl.weights == 0.0 and trl.optimizer == 0.0  # ours: both, as the config this tool writes


def test_a_loss_phase_beyond_the_card_keeps_only_its_live_tensors() -> None:
    base = {"model": {"name": "Llama-3.1-8B"}, "method": "qlora", "seq_len": 28454, "framework": "torchtitan",
            "flash_attention": True, "gradient_checkpointing": True}
    roomy = estimate_request({**base, "gpus": [{"memory_gb": 192}]})["per_gpu"]
    tight = estimate_request({**base, "gpus": [{"memory_gb": 60}]})["per_gpu"]
    tokens_vocab = 28454 * 128256
    # torchtitan's loss: the 16-bit logits' freed block stays cached beside the live set (14 B); past the card's
    # memory the allocator gives its cache back and retries, leaving the live 12 B (saved log-softmax, its
    # gradient, the input gradient)
    assert abs(roomy["logits"] * GIB / tokens_vocab - 14) < 0.5
    assert abs(tight["logits"] * GIB / tokens_vocab - 12) < 0.5
    assert tight["total"] < roomy["total"] - 5


def test_the_transformers_loss_is_its_live_set_on_any_card() -> None:
    base = {"model": {"name": "Llama-3.1-8B"}, "method": "qlora", "seq_len": 28454, "framework": "trl",
            "flash_attention": True, "gradient_checkpointing": True}
    tokens_vocab = 28454 * 128256
    for memory_gb in (192, 80):
        logits = estimate_request({**base, "gpus": [{"memory_gb": memory_gb}]})["per_gpu"]["logits"]
        assert abs(logits * GIB / tokens_vocab - 12) < 0.5


def test_ms_swift_liger_kernel_keeps_two_mlp_tensors_and_a_16bit_norm_input() -> None:
    from engine.memory import activation_bytes_per_token_layer
    from engine.memory.lora import LoraTargets

    base = {"model": {"name": "Qwen2.5-7B"}, "method": "full", "seq_len": 4096, "gpus": [{"name": "H100 SXM"}]}
    swift = build_scenario(Request.model_validate({**base, "framework": "ms-swift", "fused_loss": True}))
    trl = build_scenario(Request.model_validate({**base, "framework": "trl", "fused_loss": True}))
    none = LoraTargets(frozenset())
    arch = swift.arch
    saved = activation_bytes_per_token_layer(trl, none) - activation_bytes_per_token_layer(swift, none)
    # LigerSiLUMulFunction saves gate and up (not the SiLU output); Liger's RMSNorm its 16-bit input, not an fp32 copy
    assert abs(saved - (2.0 * arch.ffn + 2 * (2.0 * arch.hidden - 4))) < 1


def test_unsloth_fused_loss_never_materialises_the_logits() -> None:
    base = {"model": {"name": "Llama-3.1-8B"}, "method": "qlora", "seq_len": 16384, "framework": "unsloth",
            "gpus": [{"name": "H100 SXM"}]}
    plain = estimate_request({**base, "fused_loss": False})["per_gpu"]
    fused = estimate_request({**base, "fused_loss": True})["per_gpu"]
    tokens_vocab = 16384 * 128256
    assert plain["logits"] * GIB >= 2 * tokens_vocab  # at least the 16-bit logits
    assert fused["logits"] * GIB < 0.5 * tokens_vocab  # unsloth_fused_ce_loss / CCE: chunks of hidden x lm_head


@pytest.mark.usefixtures("optimizer_only_offload")
def test_zero3_optimizer_offload_time_fetches_no_parameters_over_the_host_link() -> None:
    from engine.speed.training import step_time

    base = {"model": {"name": "Llama-3.1-8B"}, "method": "full", "sharding": "zero3", "offload": True,
            "seq_len": 2048, "gpus": [{"name": "H100 SXM", "count": 4}]}
    trl = build_scenario(Request.model_validate({**base, "framework": "trl"}))
    swift = build_scenario(Request.model_validate({**base, "framework": "ms-swift"}))
    params = trl.arch.params
    # optimizer offload: the 16-bit gradient partition out and back; parameter offload adds a shard per gather
    # (and the updated 16-bit shard back): 2 x 2 bytes x params / 4 GPUs
    assert step_time(trl, "H100 SXM", 4, accumulation=1).pcie_bytes < 1.01 * params
    assert step_time(swift, "H100 SXM", 4, accumulation=1).pcie_bytes > 2 * params


def test_axolotl_and_llama_factory_zero3_offload_presets_offload_the_parameters_too() -> None:
    base = {"model": {"name": "Qwen3-4B"}, "method": "full", "sharding": "zero3", "seq_len": 4096, "offload": True,
            "gpus": [{"name": "H100 SXM", "count": 4}]}
    for fw in ("axolotl", "llama-factory"):
        b = breakdown(build_scenario(Request.model_validate({**base, "framework": fw})))
        assert b.weights == 0.0 and b.optimizer == 0.0, fw

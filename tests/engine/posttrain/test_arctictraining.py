"""DeepSpeed's ALST as ArcticTraining runs it (engine/frameworks/arctictraining.toml): the stack a DeepSpeed job with
sequence parallelism, checkpoint offload or TiledMLP is read as, its tiled logits + loss, TiledMLP's saving counted
against what the layer keeps, Ulysses' KV replication, the residual stream's precision under DeepSpeed, and the lines
of an answer that offloads to CPU."""

from __future__ import annotations

from typing import Any

from engine import memory
from engine.contract import estimate_json as estimate
from engine.parts import posttrain_parts
from engine.posttrain import posttrain_result
from engine.scenario import build_scenario, stack_of
from engine.schema import Request


def req(**kw: Any) -> Request:
    base: dict[str, Any] = {"model": {"name": "Llama-3.1-8B"}, "method": "full", "stage": "sft",
                            "framework": "deepspeed", "gradient_checkpointing": True, "flash_attention": True,
                            "batch_size": 1, "gpus": [{"name": "H100", "count": 8}]}
    base.update(kw)
    return Request.model_validate(base)


def test_deepspeed_with_alst_switches_is_arctictraining_and_plain_deepspeed_is_not() -> None:
    assert stack_of(req(context_parallel=8, seq_len=131_072)) == "arctictraining"
    assert stack_of(req(activation_offload=True, seq_len=65_536)) == "arctictraining"
    assert stack_of(req(tiled_mlp=True, seq_len=65_536, gpus=[{"name": "H100", "count": 1}])) == "arctictraining"
    assert stack_of(req(seq_len=4096)) == "deepspeed"
    assert stack_of(req(framework="trl", context_parallel=8, seq_len=131_072)) == "trl"
    r = posttrain_result(req(context_parallel=8, seq_len=131_072))
    assert r.settings.stack == "arctictraining"
    assert any("ArcticTraining" in str(a) for a in r.assumptions)


def test_arctictraining_runs_zero3_even_on_one_gpu_and_offloads_its_parameters_there() -> None:
    one = build_scenario(req(offload=True, tiled_mlp=True, seq_len=65_536, gpus=[{"name": "H100", "count": 1}]))
    assert one.sharding == "zero3"
    assert memory.breakdown(one).weights == 0.0  # the single-GPU recipes' offload_param
    eight = build_scenario(req(offload=True, context_parallel=8, seq_len=131_072))
    assert memory.breakdown(eight).weights > 0.0  # the multi-GPU recipes offload the optimizer only


def test_tiled_logits_loss_keeps_one_shard_of_logits_where_transformers_keeps_them_all() -> None:
    # Qwen3-4B at 96K over 4 ranks without Liger: ArcticTraining's TiledFusedLogitsLoss vs TRL's ForCausalLMLoss
    kw: dict[str, Any] = {"model": {"name": "Qwen3-4B"}, "seq_len": 98_304, "context_parallel": 4,
                          "fused_loss": False, "gpus": [{"name": "H100", "count": 4}]}
    arctic = posttrain_result(req(**kw)).policy["logits"]
    trl = posttrain_result(req(framework="trl", **kw)).policy["logits"]
    local_tokens = 98_304 // 4
    hidden_grad_gib = local_tokens * 2560 * 2 / 2**30
    assert trl > 30  # 24K tokens x 152K vocabulary x 12 bytes
    assert arctic < 0.25 * trl
    assert arctic > hidden_grad_gib  # the shard's loss plus the hidden states' gradient


def test_tiled_mlp_saves_the_mlp_tensors_only() -> None:
    """With Liger's SwiGLU the memory model already counts no f-wide gradients: TiledMLP cannot take off more than
    the MLP's kept tensors, so the layer keeps its attention part and the attention's gradients."""
    kw: dict[str, Any] = {"model": {"name": "Qwen3-32B"}, "seq_len": 7_000_000, "context_parallel": 32,
                          "fused_loss": True, "activation_offload": True, "offload": True,
                          "gpus": [{"name": "H100", "count": 32}]}
    tiled = estimate(req(tiled_mlp=True, **kw))["per_gpu"]
    plain = estimate(req(tiled_mlp=False, **kw))["per_gpu"]
    s = build_scenario(req(tiled_mlp=True, **{**kw, "seq_len": 7_000_000 // 32}))
    targets = memory.LoraTargets(frozenset())
    tokens = 7_000_000 // 32
    non_mlp = (memory.activation_bytes_per_token_layer(s, targets) - memory.mlp_wide_bytes_per_token(s, targets))
    assert tiled["total"] < plain["total"]
    assert tiled["activations"] >= tokens * non_mlp / 2**30  # the recomputed layer's attention part stays


def test_ulysses_repeats_kv_heads_when_there_are_fewer_than_ranks() -> None:
    """Qwen3-32B has 8 KV heads: at SP 32 each rank's k and v are repeated to 32 heads' width, at SP 8 they are not."""
    def buffers(sp: int) -> float:
        r = posttrain_result(req(model={"name": "Qwen3-32B"}, seq_len=sp * 65_536, context_parallel=sp,
                                 fused_loss=True, gpus=[{"name": "H100", "count": sp}]))
        return next(x.gib for x in r.lines if x.key == "cp_buffers")
    # the same local tokens (65,536 a rank): without replication the buffers would be equal
    assert buffers(32) > 1.2 * buffers(8)


def test_deepspeed_keeps_16_bit_layer_inputs_and_hf_amp_fp32() -> None:
    tokens = 8192.0
    ds = build_scenario(req(framework="deepspeed", sharding="zero3", seq_len=8192))
    amp = build_scenario(req(framework="trl", sharding="none", seq_len=8192, gpus=[{"name": "H100", "count": 1}]))
    per = tokens * ds.arch.layers * ds.arch.hidden
    assert memory.checkpointed_inputs(ds, tokens) == per * 2.0
    assert memory.checkpointed_inputs(amp, tokens) == per * 4.0


def test_offloaded_checkpoints_are_host_ram_not_a_gpu_line_and_lines_add_up() -> None:
    r = posttrain_result(req(seq_len=3_800_000, context_parallel=8, fused_loss=True, activation_offload=True,
                             tiled_mlp=True, offload=True))
    assert r.host_ram_gib > 50
    parts = posttrain_parts(r)
    assert "host_ram" not in parts
    assert abs(sum(v for k, v in parts.items() if k != "cuda_context") - r.per_gpu_total) < 1e-6
    # the activations line is what the GPU holds, after the offload
    assert r.policy["activations"] < r.per_gpu_total


def test_a_job_never_peaks_below_its_largest_phase() -> None:
    r = estimate(req(seq_len=3_984_589, context_parallel=8, tensor_parallel=2, fused_loss=True,
                     activation_offload=True, tiled_mlp=True, offload=True, gpus=[{"name": "H100", "count": 16}]))
    per_gpu = r["per_gpu"]
    assert per_gpu["total"] >= per_gpu["activations"] + per_gpu["cp_buffers"]
    assert per_gpu["total"] > 10


def test_an_alst_question_gets_arctictraining_settings_and_says_what_it_assumed() -> None:
    from bot.pipeline import AnswerOptions, ask_text

    ru = ask_text("ALST llama 8b 500k контекст на 1 h100", AnswerOptions(lang="ru"), fmt="text")
    first = ru.splitlines()[0]
    assert "помещается на 1×H100" in first, first
    assert "Настройки для ArcticTraining" in ru
    for key in ("activation_checkpoint_cpu_offload: true", "tiled_mlp_compute: true", "type: liger", "stage: 3",
                "max_length: 512000"):
        assert key in ru, key
    assert "ALST как в рецептах ArcticTraining" in ru
    en = ask_text("arctictraining qwen3 32b 1M context on 8xh100", AnswerOptions(lang="en"), fmt="text")
    assert "sequence_parallel_size: 8" in en
    assert "context parallel ×8 over all GPUs of the job" in en
    trl = ask_text("full llama 8b 128k context trl ulysses on 8 h100", AnswerOptions(lang="en"), fmt="text")
    assert "Settings to use (TRL)" in trl and "ArcticTraining" not in trl.split("Settings to use")[1]


def test_the_config_of_an_alst_answer_is_arctictrainings_recipe_and_reads_back_as_the_same_job() -> None:
    from engine.configs import check, config_for
    from engine.parse import parse

    out = config_for(parse("ALST llama 8b 500k контекст на 1 h100"))
    assert out.framework == "arctictraining"
    assert out.command == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True arctic_training alst.yml --num_gpus 1"
    recipe = out.files[0].text
    for line in ("activation_checkpoint_cpu_offload: true", "tiled_mlp_compute: true", "sequence_parallel_size: 1",
                 'type: "liger"', "stage: 3", "offload_param:", "max_length: 512000"):
        assert line in recipe, line
    back = check(recipe, "alst.yml")
    assert back["format"] == "arctictraining"
    r = back["request"]
    assert (r["framework"], r["method"], r["seq_len"], r["activation_offload"], r["tiled_mlp"], r["fused_loss"]) == (
        "arctictraining", "full", 512_000, True, True, True)
    assert abs(back["estimate"]["per_gpu"]["total"] + back["estimate"]["per_gpu"]["cuda_context"]
               - out.estimate_gib) < 0.2  # the recipe read back is the job the answer estimated


def test_an_arctictraining_recipe_as_its_repository_writes_it_is_read() -> None:
    from engine.configs import check

    recipe = """type: sft
micro_batch_size: 1
activation_checkpoint_cpu_offload: true
tiled_mlp_compute: true
sequence_parallel_size: 8
deepspeed:
  zero_optimization:
    stage: 3
    offload_optimizer:
      device: cpu
  seq_parallel_communication_data_type: bf16
optimizer:
  type: cpu_adam
  learning_rate: 0.00001
model:
  type: "liger"
  name_or_path: meta-llama/Llama-3.1-8B-Instruct
  attn_implementation: flash_attention_2
data:
  max_length: 3800000
logger:
  level: WARNING
"""
    back = check(recipe, "run-h100-sp8-llama-8b.yml")
    r = back["request"]
    assert back["format"] == "arctictraining" and not back.get("error")
    assert (r["context_parallel"], r["gpus"][0]["count"], r["sharding"], r["offload"]) == (8, 8, "zero3", True)
    assert r["seq_len"] == 3_800_000 and r["fused_loss"] is True
    assert back["estimate"]["posttrain"]["settings"]["stack"] == "arctictraining"


def test_arctictraining_named_runs_its_profile_without_any_alst_switch() -> None:
    """The single-GPU baseline recipes (run-h200-sp1-llama-8b-baseline.yml: no SP, no offload of checkpoints, no
    TiledMLP) are still ArcticTraining: ZeRO-3 with the parameters offloaded, the allocator's expandable segments."""
    one = [{"name": "H200", "count": 1}]
    arctic = build_scenario(req(framework="arctictraining", offload=True, seq_len=65_000, gpus=one))
    plain = build_scenario(req(offload=True, seq_len=65_000, gpus=one))
    assert arctic.framework == "arctictraining" and plain.framework == "deepspeed"
    assert arctic.sharding == "zero3" and memory.breakdown(arctic).weights == 0.0
    assert memory.breakdown(arctic).total < memory.breakdown(plain).total


def test_transformers_loss_in_one_expandable_segment_holds_14_bytes_a_logit_with_the_floor_slack_only() -> None:
    """The freed 16-bit logits and fp32 upcast form one range the nll gradient and the 16-bit gradient take again
    (catalog memory.toml [loss.expandable]: 14 mapped); the classic allocator counts the live 12 with its dynamic
    slack over them (12 x 1.3, the H200 runs of bench/data/measured_device.jsonl)."""
    from engine.frameworks import profile
    from engine.memory import allocator_slack_fractions
    from engine.memory.loss import loss_bytes_per_logit

    def reserved(stack: str) -> float:
        return loss_bytes_per_logit("hf", profile(stack)) * (1 + allocator_slack_fractions(stack)[1])

    expandable, classic = reserved("arctictraining"), reserved("deepspeed")
    assert loss_bytes_per_logit("hf", profile("arctictraining")) == 14.0
    assert loss_bytes_per_logit("hf", profile("deepspeed")) == 12.0
    assert expandable < classic
    assert loss_bytes_per_logit("fused_linear", profile("arctictraining")) == 0.0


def test_the_baseline_recipe_that_ran_on_one_h200_is_told_it_fits() -> None:
    """run-h200-sp1-llama-8b-baseline.yml ran at 65K tokens ("NV 137.36 GB"); read back by check, it fits."""
    from engine.configs import check

    recipe = """type: sft
micro_batch_size: 1
sequence_parallel_size: 1
deepspeed:
  zero_optimization:
    stage: 3
    offload_optimizer:
      device: cpu
    offload_param:
      device: cpu
optimizer:
  type: cpu_adam
model:
  name_or_path: meta-llama/Llama-3.1-8B-Instruct
  attn_implementation: flash_attention_2
data:
  max_length: 65000
"""
    from engine.contract import estimate_request

    back = check(recipe, "run-h200-sp1-llama-8b-baseline.yml")
    assert back["format"] == "arctictraining"
    assert back["request"]["framework"] == "arctictraining"
    out = estimate_request(dict(back["request"], gpus=[{"name": "H200", "count": 1}]))
    assert out["verdict"] in ("fits", "tight"), out["verdict"]
    total = out["per_gpu"]["total"] + out["per_gpu"]["cuda_context"]
    assert 0.85 * 137.36 < total < 1.1 * 137.36

"""Post-training stages: what each one adds to the policy's memory, and the estimate() hook."""

from __future__ import annotations

import pytest

from engine.contract import estimate_json as estimate
from engine.contract import estimate_request
from engine.posttrain import applies, breakdown_for, posttrain_result
from engine.scenario import ScenarioError
from engine.schema import Request
from engine.schema.posttrain import PostTrainOptions


def req(**kw: object) -> Request:
    base: dict[str, object] = {"model": {"name": "Llama-3.1-8B"}, "gpus": [{"name": "H100", "count": 1}]}
    base.update(kw)
    return Request.model_validate(base)


def line(result: object, key: str) -> float:
    return next((x.gib for x in result.lines if x.key == key), 0.0)  # type: ignore[attr-defined]


def test_dpo_runs_chosen_and_rejected_through_the_policy() -> None:
    sft = estimate(req(seq_len=2048, method="lora"))
    dpo = posttrain_result(req(stage="dpo", seq_len=2048, method="lora"))
    assert dpo.sequences_per_micro_step == 2
    assert dpo.policy["logits"] == pytest.approx(2 * sft["per_gpu"]["logits"], rel=1e-3)
    assert dpo.per_gpu_total > sft["per_gpu"]["total"]


def test_reference_model_only_when_the_policy_is_fully_trained() -> None:
    full = posttrain_result(req(stage="dpo", method="full", gpus=[{"name": "H100", "count": 8}]))
    lora = posttrain_result(req(stage="dpo", method="lora"))
    pre = posttrain_result(req(stage="dpo", method="full", gpus=[{"name": "H100", "count": 8}]),
                           PostTrainOptions(precompute_ref_log_probs=True))
    orpo = posttrain_result(req(stage="orpo", method="full", gpus=[{"name": "H100", "count": 8}]))
    assert line(full, "reference_model") > 0
    assert line(lora, "reference_model") == 0 and line(pre, "reference_model") == 0
    assert line(orpo, "reference_model") == 0
    assert pre.per_gpu_total < full.per_gpu_total
    assert pre.settings.precompute_ref_log_probs is True


def test_kto_is_unpaired_and_simpo_reference_free() -> None:
    kto = posttrain_result(req(stage="kto", method="full", gpus=[{"name": "H100", "count": 8}]))
    simpo = posttrain_result(req(stage="simpo", method="full", gpus=[{"name": "H100", "count": 8}]))
    assert kto.sequences_per_micro_step == 1 and line(kto, "reference_model") > 0
    assert simpo.sequences_per_micro_step == 2 and line(simpo, "reference_model") == 0
    assert "max_length=1024" in {str(x) for x in kto.assumptions}


def test_reward_model_has_a_value_head_not_logits() -> None:
    rm = posttrain_result(req(stage="rm", seq_len=4096, method="lora"))
    dpo = posttrain_result(req(stage="dpo", seq_len=4096, method="lora"))
    assert rm.sequences_per_micro_step == 2
    assert rm.policy["logits"] < 0.01 < dpo.policy["logits"]


def test_ppo_keeps_four_models_and_trains_two() -> None:
    ppo = posttrain_result(req(stage="ppo", method="full", gpus=[{"name": "H100", "count": 8}], sharding="zero3"))
    grpo = posttrain_result(req(stage="grpo", method="full", gpus=[{"name": "H100", "count": 8}], sharding="zero3",
                                reference_model=True))
    for key in ("reference_model", "reward_model", "value_model"):
        assert line(ppo, key) > 0
    # the value model is trained: its optimizer states make it far larger than the frozen reward model
    assert line(ppo, "value_model") > 3 * line(ppo, "reward_model")
    assert ppo.per_gpu_total > grpo.per_gpu_total


def test_grpo_logits_follow_generations_and_completions() -> None:
    small = posttrain_result(req(stage="grpo", num_generations=4, output_len=512))
    many = posttrain_result(req(stage="grpo", num_generations=16, output_len=512))
    longer = posttrain_result(req(stage="grpo", num_generations=4, output_len=2048))
    assert many.sequences_per_micro_step == 16 and small.sequences_per_micro_step == 4
    assert many.policy["logits"] == pytest.approx(4 * small.policy["logits"], rel=1e-3)
    assert longer.policy["logits"] == pytest.approx(4 * small.policy["logits"], rel=1e-3)
    # prompt tokens go through the model but only completion tokens get logits (logits_to_keep)
    assert small.tokens_per_sequence == 512 + 512


def test_grpo_reference_only_with_beta() -> None:
    full = {"method": "full", "gpus": [{"name": "H100", "count": 8}], "sharding": "zero3"}
    no_beta = posttrain_result(req(stage="grpo", **full))
    beta = posttrain_result(req(stage="grpo", **full), PostTrainOptions(beta=0.04))
    assert no_beta.settings.beta == 0.0 and "beta=0" in {str(x) for x in no_beta.assumptions}
    assert line(no_beta, "reference_model") == 0 < line(beta, "reference_model")


def test_colocated_vllm_share_stays_unless_it_sleeps() -> None:
    rollout = {"engine": "vllm", "mode": "colocate", "gpu_memory_utilization": 0.3}
    awake = posttrain_result(req(stage="grpo", method="lora", rollout=rollout))
    asleep = posttrain_result(req(stage="grpo", method="lora", rollout={**rollout, "sleep": True}))
    share = line(awake, "vllm_share")
    assert share == pytest.approx(0.3 * 79.19, rel=0.02)  # of the driver-reported memory of an H100
    assert awake.per_gpu_total == pytest.approx(awake.trainer_peak + share, rel=1e-6)
    assert asleep.per_gpu_total < awake.per_gpu_total
    assert asleep.settings.vllm_enable_sleep_mode is True
    assert any(c.key == "posttrain.change.sleep_mode" for c in awake.changes)


def test_server_mode_takes_gpus_from_training() -> None:
    r = posttrain_result(req(stage="grpo", gpus=[{"name": "H100", "count": 8}],
                             rollout={"engine": "vllm", "mode": "server", "tensor_parallel": 2}))
    assert (r.train_gpus, r.rollout_gpus) == (6, 2)
    assert r.rollout_gpu_total == pytest.approx(0.9 * 79.19, rel=0.02)
    assert line(r, "vllm_share") == 0
    one = posttrain_result(req(stage="grpo", rollout={"engine": "vllm", "mode": "server"}))
    assert "posttrain.note.server_needs_more_gpus" in one.notes and one.rollout_gpus == 1


def test_recommended_vllm_utilisation_covers_weights_and_kv() -> None:
    r = posttrain_result(req(stage="grpo", model={"name": "Qwen2.5-7B"}, rollout={"engine": "vllm"}))
    util = r.settings.vllm_gpu_memory_utilization
    assert util is not None
    weights = 7.6e9 * 2 / 2**30
    assert weights / 79.19 < util < 0.95


def test_grpo_time_and_hours() -> None:
    r = posttrain_result(req(stage="grpo", rollout={"engine": "vllm"}), steps=500)
    assert r.time is not None and r.time.steps == 500
    assert r.time.generation_s > 0 and r.time.training_s > 0
    assert r.time.hours == pytest.approx(r.time.step_s * 500 / 3600)
    assert r.time.cost is not None and float(r.time.cost["typical"]) > 0
    slow = posttrain_result(req(stage="grpo"), steps=500)  # HF generate
    assert slow.time is not None and slow.time.generation_s > r.time.generation_s


def test_estimate_hook_replaces_total_and_adds_block() -> None:
    plain = estimate(req(method="lora"))
    assert "posttrain" not in plain and not applies(req(method="lora"))
    out = estimate_request({"model": {"name": "Llama-3.1-8B"}, "stage": "grpo", "gpus": [{"name": "H100"}],
                            "rollout": {"engine": "vllm", "mode": "colocate", "gpu_memory_utilization": 0.3}})
    share = out["per_gpu"]["total"] - out["posttrain"]["trainer_peak"]
    assert share == pytest.approx(0.3 * 79.19, rel=0.02)
    assert out["fits"][0]["headroom_gb"] == pytest.approx(79.19 - out["per_gpu"]["total"] - 0.4, abs=0.02)


def test_bad_parallel_settings_are_errors_not_tracebacks() -> None:
    out = estimate_request({"model": {"name": "Llama-3.1-8B"}, "context_parallel": 8, "gpus": [{"count": 4}]})
    assert "error" in out and "8" in out["error"]
    with pytest.raises(ScenarioError):
        posttrain_result(req(context_parallel=3, gpus=[{"name": "H100", "count": 4}]),
                         PostTrainOptions(cp_kind="ulysses"))  # 32 heads do not divide by 3
    out = estimate_request({"model": {"name": "Llama-3.1-8B"}, "stage": "grpo", "method": "inference"})
    assert "error" in out and "training" in out["error"]
    ring = posttrain_result(req(context_parallel=3, gpus=[{"name": "H100", "count": 4}]))
    assert ring.settings.cp_kind == "ring"


def test_breakdown_for_one_arrangement_of_the_plan_search() -> None:
    r = req(stage="grpo", method="full", sharding="zero3", gpus=[{"name": "H100", "count": 8}])
    eight = breakdown_for(r)
    four = breakdown_for(r, count=4)
    assert eight.total == pytest.approx(posttrain_result(r).per_gpu_total)
    assert four.total > eight.total  # states shard over fewer GPUs
    small = breakdown_for(req(stage="grpo", rollout={"engine": "vllm"}), gpu_name="A100", memory_gb=40)
    big = breakdown_for(req(stage="grpo", rollout={"engine": "vllm"}), gpu_name="H100", memory_gb=80)
    assert small.total < big.total  # the colocated vLLM share is a fraction of the card


def test_grpo_completion_logits_and_the_layers_backward_peak_one_after_the_other() -> None:
    # the loss phase ends before the last layer's backward starts (engine/memory/training.py): with completion
    # logits smaller than one recomputed layer, the trainer's peak is the layers' backward, as for a fused loss
    common = {"model": {"name": "Llama-3.1-8B"}, "method": "lora", "framework": "trl", "batch_size": 8,
              "gradient_checkpointing": True, "gpus": [{"name": "A100", "count": 1}]}
    grpo = estimate_request({**common, "stage": "grpo", "output_len": 64, "prompt_len": 960, "num_generations": 8})
    sft = estimate_request({**common, "seq_len": 1024, "fused_loss": True})
    fused_hidden = 8 * 1024 * 4096 * 8.0 / 2**30 * 1.3  # the fused kernel's own b·s·h term, with its slack
    assert grpo["posttrain"]["policy"]["logits"] < sft["per_gpu"]["activations"]
    assert grpo["posttrain"]["trainer_peak"] == pytest.approx(sft["per_gpu"]["total"] - fused_hidden, abs=0.05)


def test_unsloth_grpo_runs_rows_one_at_a_time_with_chunked_logprobs_and_standby() -> None:
    # docs.unsloth.ai/basics/memory-efficient-rl: Llama-3.1-8B QLoRA GRPO reaches 47,500 tokens on one H100 80GB
    # (unsloth_zoo/rl_replacements.py grpo_accumulated_loss: autotuned mini-batches, chunked log-softmax)
    q = {"model": {"name": "Llama-3.1-8B"}, "stage": "grpo", "method": "qlora", "seq_len": 47500,
         "gradient_checkpointing": True, "gpus": [{"name": "H100", "count": 1}],
         "rollout": {"engine": "vllm", "mode": "colocate", "gpu_memory_utilization": 0.95}}
    uns = estimate_request({**q, "framework": "unsloth"})
    trl = estimate_request({**q, "framework": "trl"})
    assert uns["posttrain"]["policy"]["logits"] < 2 < trl["posttrain"]["policy"]["logits"]
    assert uns["per_gpu"]["total"] <= 80 * 0.986 < trl["per_gpu"]["total"]
    assert uns["fits"][0]["fits"] and not trl["fits"][0]["fits"]


def test_preference_logits_are_the_kernels_log_probs_not_a_stacks_sft_loss_and_orpo_adds_the_chosen_nll() -> None:
    q = {"model": {"name": "Qwen2.5-7B"}, "method": "lora", "framework": "ms-swift", "seq_len": 2048,
         "batch_size": 1, "gpus": [{"name": "A100", "count": 1}]}
    dpo = estimate_request({**q, "stage": "dpo"})["posttrain"]["policy"]["logits"]
    orpo = estimate_request({**q, "stage": "orpo"})["posttrain"]["policy"]["logits"]
    traced = 2 * 2048 * 152064 * 14.0 / 2**30  # ms-swift's kernel hf_legacy (memory.toml), both sequences of a pair
    assert dpo == pytest.approx(traced, rel=1e-3)
    assert orpo == pytest.approx(1.5 * dpo, rel=1e-3)

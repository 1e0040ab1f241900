"""PyTorch-native N-D parallelism (FSDP2 with DTensor tensor parallelism and torch.distributed.pipelining, the
torchtitan way): not Megatron-Core, the gathered sequence-parallel inputs, and the busiest 1F1B stage."""

from __future__ import annotations

from typing import Any

import pytest

from engine.contract import estimate_request
from engine.frameworks import megatron_core
from engine.posttrain.compose import compose, dtensor_gathered_inputs_gib, policy_scenario
from engine.posttrain.setup import build_setup
from engine.scenario import ScenarioError, build_scenario
from engine.schema import Request

GIB = 2**30


def job(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"model": {"name": "Llama-3.1-70B"}, "stage": "sft", "method": "full", "seq_len": 4096,
                            "batch_size": 4, "sharding": "fsdp", "gradient_checkpointing": True,
                            "flash_attention": True, "tensor_parallel": 8,
                            "gpus": [{"name": "H100", "memory_gb": 80, "count": 64}]}
    base.update(kw)
    return base


def test_fsdp_with_tensor_parallelism_is_not_megatron_core() -> None:
    assert megatron_core("trl", 8, 1, "fsdp") is False
    assert megatron_core("axolotl", 1, 4, "fsdp") is False
    assert megatron_core("trl", 8, 1, "none") is True  # TP with no FSDP: the Megatron stacks (Megatron-SWIFT)
    assert megatron_core("trl", 1, 2, None) is True
    assert megatron_core("nemo", 8, 1, "fsdp") is True  # NeMo is Megatron-Core whatever shards it
    s = build_scenario(Request.model_validate(job()))
    assert s.loss_kernel != "megatron"
    c = compose(build_setup(Request.model_validate(job())))
    assert c.policy.grads > 0.0  # FSDP's reduce-scattered gradients, made during backward: no persistent buffer


def test_the_gathered_sequence_parallel_inputs_are_whole_per_layer_kept() -> None:
    setup = build_setup(Request.model_validate(job(seq_len=2048, batch_size=3)))
    s = policy_scenario(setup)
    tokens, hidden = 2048 * 3, 8192  # Llama-3.1-70B
    assert dtensor_gathered_inputs_gib(s) == pytest.approx(2 * tokens * hidden * 2 / GIB)
    no_ckpt = s.model_copy(update={"gradient_checkpointing": False})
    assert dtensor_gathered_inputs_gib(no_ckpt) == pytest.approx(80 * 2 * tokens * hidden * 2 / GIB)


def test_an_fsdp_tp_job_is_not_estimated_below_its_own_floor() -> None:
    # states 16 B a parameter over all 256 GPUs, checkpoints 2 B a token x hidden x layer over TP, and the gathered
    # inputs of the recomputed layer, whole: what any estimate of this job must at least hold
    q = job(seq_len=8192, batch_size=16, gpus=[{"name": "H100", "memory_gb": 96, "count": 256}])
    out = estimate_request(q)
    tokens = 8192 * 16
    floor = (70.55e9 * 16 / 256 + 80 * tokens * 8192 * 2 / 8 + 2 * tokens * 8192 * 2) / GIB
    assert out["per_gpu"]["total"] > floor * 1.1
    assert out["verdict"] in ("fits", "tight")  # torchtitan ran it (71.9 GiB on 96 GB cards)


def test_a_request_without_a_stage_splits_by_tp_as_fine_tuning_does() -> None:
    with_stage = estimate_request(job())
    without = estimate_request({k: v for k, v in job().items() if k != "stage"})
    assert without["per_gpu"]["total"] == pytest.approx(with_stage["per_gpu"]["total"])


def test_pipeline_stages_split_the_states_and_keep_pp_micro_batches_in_flight() -> None:
    big = {"model": {"name": "Llama-3.1-405B"}, "gpus": [{"name": "H100", "memory_gb": 96, "count": 512}],
           "seq_len": 8192, "batch_size": 1}
    totals = {pp: estimate_request(job(**big, pipeline_parallel=pp))["per_gpu"]["total"] for pp in (2, 4, 8)}
    assert totals[2] > totals[4] > totals[8]
    # the first stage keeps pp micro-batches' checkpoints of its layers/pp: the whole model's for one micro-batch,
    # whatever pp is; the sharded states stay 16 B a parameter over all 512 GPUs, and the stage's gathered
    # parameters and unsharded gradients (6 B a parameter of the stage, over TP 8) halve with every doubling
    s4 = build_setup(Request.model_validate(job(**big, pipeline_parallel=4)))
    c4, c8 = compose(s4), compose(build_setup(Request.model_validate(job(**big, pipeline_parallel=8))))
    assert c4.policy.activations == pytest.approx(c8.policy.activations, rel=0.05)
    params = s4.scenario.arch.params
    assert c4.policy.static - c8.policy.static == pytest.approx(6 * params / (8 * 8) / GIB, rel=0.05)


def test_a_torch_native_stage_keeps_its_parameters_gathered_and_its_gradients_unsharded() -> None:
    # 16-bit parameters and fp32 accumulated gradients of the stage, over TP: 6 B a parameter / (tp x pp), beside
    # the sharded states; Megatron's pipeline (no FSDP) has neither
    fsdp = compose(build_setup(Request.model_validate(job(pipeline_parallel=4))))
    sharded = compose(build_setup(Request.model_validate(job(pipeline_parallel=4, gpus=[
        {"name": "H100", "memory_gb": 80, "count": 64}], sharding="none"))))
    stage_params = 70.55e9 / (8 * 4)
    assert fsdp.policy.static > stage_params * 6 / GIB
    assert fsdp.policy.static < sharded.policy.static  # the replicated states of no-FSDP Megatron dwarf it


def test_too_few_gpus_for_the_pipeline_is_a_clear_error() -> None:
    out = estimate_request(job(pipeline_parallel=4, gpus=[{"name": "H100", "count": 16}]))
    assert "needs 32 GPUs, 16 given" in out["error"]
    with pytest.raises(ScenarioError) as caught:
        build_setup(Request.model_validate(job(pipeline_parallel=4, gpus=[{"name": "H100", "count": 16}])))
    assert caught.value.key == "pp_needs_gpus" and caught.value.params["needs"] == 32

"""Megatron-Core keeps its gradients in one buffer allocated with the model (param_and_grad_buffer.py): they are
there beside the activations, not made while autograd frees them."""

from __future__ import annotations

import pytest

from engine.memory import breakdown
from engine.posttrain.compose import compose
from engine.posttrain.setup import build_setup
from engine.scenario import build_scenario
from engine.schema import Request


def test_a_megatron_core_stack_holds_gradients_beside_the_activations() -> None:
    # full AMP training at 64K (a 32K vocabulary: the layers' activations, not the logits, set the backward peak,
    # and they outweigh the gradients)
    req = {"model": {"name": "Llama-2-7B"}, "method": "full", "seq_len": 65536, "fused_loss": True,
           "gpus": [{"name": "H100 SXM"}]}
    nemo = breakdown(build_scenario(Request.model_validate({**req, "framework": "nemo"})))
    trl = breakdown(build_scenario(Request.model_validate({**req, "framework": "trl"})))
    autocast = trl.trainable_params * 2.0 / 2**30  # HF AMP's 16-bit copies of the fp32 weights
    states = nemo.weights + nemo.gradients + nemo.optimizer
    # Megatron-Core: 16-bit parameters, fp32 gradient buffer, fp32 master + Adam: 18 bytes, no autocast copies
    assert states == pytest.approx(nemo.trainable_params * 18 / 2**30, rel=1e-3)
    assert nemo.weights == pytest.approx(nemo.trainable_params * 2 / 2**30, rel=1e-3)
    assert nemo.total - nemo.overhead == pytest.approx(states + nemo.activations, rel=1e-3)
    # autograd's .grad tensors are made as the activations are freed: the larger of the two, never both
    trl_states = trl.weights + trl.gradients + trl.optimizer
    assert trl.total - trl.overhead < trl_states + autocast + trl.activations - 0.5 * trl.gradients


def test_tensor_parallel_runs_megatron_cores_gradient_buffer() -> None:
    req = Request.model_validate({"model": {"name": "Qwen2.5-7B"}, "method": "full", "framework": "ms-swift",
                                  "seq_len": 32768, "tensor_parallel": 4, "fused_loss": True,
                                  "gpus": [{"name": "A100 SXM4 80GB", "count": 4}]})
    c = compose(build_setup(req))
    b = c.policy.b
    assert c.policy.grads == 0.0  # none made during backward: all of them are in the static set
    assert c.policy.static >= (b.weights + b.gradients + b.optimizer) / 4 - 0.01
    assert c.total > c.policy.static + c.policy.activations + c.policy.logits


def test_megatron_cores_cross_entropy_keeps_its_logits_fused_or_not() -> None:
    # vocab-parallel cross-entropy: 16-bit logits + one fp32 copy that becomes the softmax and the gradient, whether
    # cross_entropy_loss_fusion is on or not; Liger's fused loss on a plain stack never makes the whole logits
    req = {"model": {"name": "Qwen2.5-7B"}, "method": "full", "seq_len": 8192, "tensor_parallel": 4,
           "framework": "ms-swift", "gpus": [{"name": "A100 SXM4 80GB", "count": 4}]}
    entries = 8192 * 152064 / 2**30
    for fused in (True, False, None):
        s = build_scenario(Request.model_validate({**req, "fused_loss": fused}))
        assert s.loss_kernel == "megatron"
        assert breakdown(s).logits == pytest.approx(6 * entries, rel=1e-3)
    plain = build_scenario(Request.model_validate({**req, "tensor_parallel": None, "fused_loss": True}))
    assert breakdown(plain).logits < entries


def test_the_distributed_optimizer_splits_master_weights_and_moments_over_data_parallel_ranks() -> None:
    # Megatron-SWIFT: 6 + 12/d bytes a parameter (16-bit params and the fp32 grad buffer whole, the rest over DP)
    def states(gpus: int, framework: str | None = "ms-swift") -> float:
        q: dict[str, object] = {"model": {"name": "Qwen2.5-72B"}, "stage": "sft", "method": "full",
                                "seq_len": 4096, "tensor_parallel": 8, "pipeline_parallel": 2,
                                "gpus": [{"name": "H100", "count": gpus}]}
        q.update({"framework": framework} if framework else {"sharding": "none"})
        return compose(build_setup(Request.model_validate(q))).policy.static

    whole = build_setup(Request.model_validate({"model": {"name": "Qwen2.5-72B"}, "method": "full"}))
    params = whole.scenario.arch.params
    per_gpu = params / (8 * 2) / 2**30
    assert states(16) == pytest.approx(per_gpu * 18, rel=0.03)  # d = 1: the non-distributed 18 bytes
    assert states(64) == pytest.approx(per_gpu * (6 + 12 / 4), rel=0.03)
    # Megatron-LM's own default keeps the optimizer replicated: no stack named, no ZeRO, no split
    assert states(64, None) == pytest.approx(states(16, None), rel=1e-6)

"""Megatron-Core keeps its gradients in one buffer allocated with the model (param_and_grad_buffer.py): they are
there beside the activations, not made while autograd frees them."""

from __future__ import annotations

from engine.memory import breakdown
from engine.posttrain.compose import compose
from engine.posttrain.setup import build_setup
from engine.scenario import build_scenario
from engine.schema import Request


def test_a_megatron_core_stack_holds_gradients_beside_the_activations() -> None:
    req = {"model": {"name": "Llama-3.1-8B"}, "method": "full", "seq_len": 16384, "gpus": [{"name": "H100 SXM"}]}
    nemo = breakdown(build_scenario(Request.model_validate({**req, "framework": "nemo"})))
    trl = breakdown(build_scenario(Request.model_validate({**req, "framework": "trl"})))
    nemo_live, trl_live = nemo.total - nemo.overhead, trl.total - trl.overhead
    assert nemo_live >= nemo.weights + nemo.gradients + nemo.optimizer + nemo.activations - 0.01
    # autograd's .grad tensors appear as the layers' activations are freed: the larger of the two counts there,
    # both in Megatron-Core
    assert nemo_live - trl_live >= 0.99 * min(trl.gradients, trl.activations + trl.logits)


def test_tensor_parallel_runs_megatron_cores_gradient_buffer() -> None:
    req = Request.model_validate({"model": {"name": "Qwen2.5-7B"}, "method": "full", "framework": "ms-swift",
                                  "seq_len": 32768, "tensor_parallel": 4, "fused_loss": True,
                                  "gpus": [{"name": "A100 SXM4 80GB", "count": 4}]})
    c = compose(build_setup(req))
    b = c.policy.b
    assert c.policy.grads == 0.0  # none made during backward: all of them are in the static set
    assert c.policy.static >= (b.weights + b.gradients + b.optimizer) / 4 - 0.01
    assert c.total > c.policy.static + c.policy.activations + c.policy.logits

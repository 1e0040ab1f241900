"""Unsloth at long context, from its code: the fused LoRA MLP's backward works in place, and the offloaded
checkpointer keeps two layer inputs on the GPU (engine/memory/activations.py)."""

from __future__ import annotations

from engine.contract import estimate_request
from engine.frameworks import profile
from engine.memory.activations import activation_bytes_per_token_layer
from engine.memory.lora import LoraTargets
from engine.memory.state import training_state
from engine.memory.training import training_phases
from engine.scenario import build_scenario
from engine.schema import Request

BASE = {"model": {"name": "Llama-3.1-8B"}, "method": "qlora", "lora_rank": 32, "lora_targets": "all_linear",
        "batch_size": 1, "gradient_checkpointing": True, "optimizer": "adamw_8bit", "flash_attention": True}


def _phases(**request: object):  # type: ignore[no-untyped-def]
    s = build_scenario(Request.model_validate({**BASE, **request}))
    targets = LoraTargets.parse(s.lora_targets)
    return s, training_phases(s, training_state(s, targets), targets, profile(s.framework))


def test_unsloths_layer_backward_adds_one_f_wide_tensor_and_two_gradients() -> None:
    s, ph = _phases(seq_len=65536, framework="unsloth")
    tokens = 65536.0
    per_layer = activation_bytes_per_token_layer(s, LoraTargets.parse(s.lora_targets))
    # the recomputed layer's saved tensors, then DW (f wide), dY and the residual's gradient, 16-bit
    assert ph.layer == tokens * (per_layer + 2.0 * (s.arch.ffn + 2 * s.arch.hidden))
    # PyTorch autograd over the same layer (TRL + PEFT) needs about a layer's worth more
    _, hf = _phases(seq_len=65536, framework="trl")
    assert hf.layer > ph.layer


def test_offloaded_checkpoints_leave_two_layer_inputs_on_the_gpu() -> None:
    s, ph = _phases(seq_len=65536, framework="unsloth", offload=True)
    one_input = 65536.0 * s.arch.hidden * 2.0
    assert ph.stored == 2 * one_input  # the last layer's input and the buffer the others come back into
    assert ph.cpu_extra == (s.arch.layers - 2) * one_input
    _, kept = _phases(seq_len=65536, framework="unsloth")
    assert kept.stored == s.arch.layers * one_input and kept.cpu_extra == 0


def test_unsloths_published_context_fits_its_card() -> None:
    # docs.unsloth.ai/basics/unsloth-benchmarks: Llama 3.1 8B QLoRA trains at 342,733 tokens on an 80 GB card
    # with the offloaded checkpointing and the fused loss; twice that does not fit
    req = {**BASE, "seq_len": 342733, "gpus": [{"name": "H100 SXM"}], "framework": "unsloth", "offload": True,
           "fused_loss": True}
    assert estimate_request(req)["verdict"] in ("fits", "tight")
    assert estimate_request({**req, "seq_len": 2 * 342733})["verdict"] not in ("fits", "tight")

"""CONTRACT v2.1 PyTorch-native switches (selective checkpointing, Float8, AsyncTP, torch.compile), the torchtitan
profile, Megatron-Core states on NeMo, the post-training lines per GPU and the post-training phases under capacity
pressure: each asserted on what the mechanism changes, not on a row's figure."""

from __future__ import annotations

from typing import Any

import pytest

from engine.contract import estimate_request
from engine.memory import breakdown, constants
from engine.memory.activations import backward_gradients_per_token, selective_saved_per_token_layer
from engine.memory.lora import LoraTargets
from engine.parse import parse
from engine.scenario import build_scenario
from engine.schema import Request
from engine.speed.flops import assumed_speed, published_mfu

GIB = 2.0**30
TITAN = {"model": {"name": "Llama-3.1-8B"}, "method": "full", "framework": "torchtitan", "seq_len": 8192,
         "batch_size": 2, "gpus": [{"name": "H100", "memory_gb": 96, "count": 8}]}


def _scenario(**extra: Any):  # type: ignore[no-untyped-def]
    return build_scenario(Request.model_validate({**TITAN, **extra}))


def test_selective_op_checkpointing_keeps_every_other_matmul_and_the_attention_output() -> None:
    s = _scenario(selective_checkpointing=True)
    a = s.arch
    q, kv = a.heads * a.head_dim, a.kv_heads * a.head_dim
    # wq, wv, w1, w2 outputs and the attention output (16-bit), the logsumexp (fp32 a head)
    assert selective_saved_per_token_layer(s) == 2 * (q + kv + a.ffn + a.hidden + q) + 4 * a.heads
    full, sac = breakdown(_scenario()), breakdown(s)
    tokens = 8192 * 2
    kept = tokens * a.layers * selective_saved_per_token_layer(s) / GIB
    # more is stored than with full checkpointing, less is recomputed in the layer's backward
    assert sac.activations > full.activations + 0.7 * kept
    assert sac.activations < full.activations + kept


def test_torch_compile_keeps_only_the_inputs_of_the_fused_norm_and_silu_mul() -> None:
    eager, compiled = _scenario(gradient_checkpointing=False), _scenario(gradient_checkpointing=False,
                                                                         torch_compile=True)
    assert compiled.compiled and not eager.compiled
    assert breakdown(compiled).activations < breakdown(eager).activations
    t = LoraTargets(frozenset())
    # one f-wide 16-bit tensor fewer in the SiLU·mul backward
    assert backward_gradients_per_token(compiled, t)[0] == pytest.approx(
        backward_gradients_per_token(eager, t)[0] - 2.0 * compiled.arch.ffn)


def test_torchtitan_loss_and_expandable_segments() -> None:
    s = _scenario(gradient_checkpointing=True)
    assert s.loss_kernel == "torchtitan" and s.sharding == "fsdp"  # FSDP2 by default, its own loss
    b = breakdown(s)
    assert b.logits == pytest.approx(8192 * 2 * s.arch.vocab * 14 / GIB, rel=1e-3)
    # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the slack is the split-block floor over the live set
    floor = float(constants()["overhead"]["fragmentation_floor"])
    assert b.overhead == pytest.approx(floor / (1 + floor) * b.total, rel=1e-3)
    hf = breakdown(_scenario(framework="trl", gradient_checkpointing=True))
    assert hf.overhead > 3 * b.overhead


def test_async_tp_needs_compile_and_float8_needs_fp8_tensor_cores() -> None:
    on = _scenario(tensor_parallel=2, async_tp=True)
    assert on.async_tp and on.compiled and "torch_compile=on" in [str(x) for x in on.assumptions]
    off = _scenario(tensor_parallel=2, async_tp=True, torch_compile=False)
    assert not off.async_tp and "async_tp=off" in [str(x) for x in off.assumptions]
    assert not _scenario(async_tp=True).async_tp  # no tensor parallelism: nothing to overlap
    a100 = _scenario(float8=True, gpus=[{"name": "A100 SXM4 80GB", "count": 8}])
    assert not a100.float8 and "float8=off" in [str(x) for x in a100.assumptions]
    assert _scenario(float8=True).float8


def test_async_tp_drops_the_gathered_inputs_of_dtensor_sequence_parallelism() -> None:
    q = {**TITAN, "model": {"name": "Llama-3.1-70B"}, "tensor_parallel": 8, "torch_compile": True,
         "gpus": [{"name": "H100", "memory_gb": 96, "count": 64}]}
    plain = estimate_request(q)["per_gpu"]
    fused = estimate_request({**q, "async_tp": True})["per_gpu"]
    assert fused["activations"] < plain["activations"]


def test_torchtitan_time_takes_its_published_mfu_times_the_measured_speed_ups() -> None:
    from engine.catalog import find_gpu

    gpu = find_gpu("H100")
    assert gpu is not None
    base = published_mfu(_scenario(), gpu)
    fast = published_mfu(_scenario(torch_compile=True, float8=True), gpu)
    assert base is not None and fast is not None
    assert base[0] == pytest.approx(0.33)
    assert fast[0] == pytest.approx(0.33 * 1.157 * 1.28)
    said = assumed_speed(_scenario(torch_compile=True, float8=True), gpu)
    assert said is not None and "torch.compile" in said and "Float8" in said and "torchtitan" in said


def test_nemo_trains_on_megatron_core_states_with_the_distributed_optimizer() -> None:
    q = {"model": {"name": "Llama-3.1-8B"}, "method": "full", "framework": "nemo", "seq_len": 4096,
         "gpus": [{"name": "H100", "count": 8}]}
    out = estimate_request(q)
    s = build_scenario(Request.model_validate(q))
    p = s.arch.params / GIB
    assert s.sharding == "ddp"  # Megatron's data parallelism, not ZeRO-3
    g = out["per_gpu"]
    assert g["weights"] == pytest.approx(2 * p, rel=1e-3)
    assert g["gradients"] == pytest.approx(4 * p, rel=1e-3)
    assert g["optimizer"] == pytest.approx(12 * p / 8, rel=1e-3)


def test_tensor_parallel_lines_are_the_busiest_gpus_and_add_up() -> None:
    q = {"model": {"name": "Llama-3.1-8B"}, "method": "full", "framework": "nemo", "seq_len": 4096,
         "tensor_parallel": 2, "gpus": [{"name": "H100", "count": 8}]}
    g = estimate_request(q)["per_gpu"]
    p = build_scenario(Request.model_validate(q)).arch.params / GIB
    assert g["weights"] == pytest.approx(2 * p / 2, rel=1e-3)  # 16-bit parameters over TP 2
    assert g["optimizer"] == pytest.approx(12 * p / 4 / 2, rel=1e-3)  # over DP 4, then TP 2
    lines = sum(v for k, v in g.items() if k not in ("total", "cuda_context", "upcast", "pressure", "shape_margin"))
    assert lines == pytest.approx(g["total"], abs=0.01)


def test_a_colocated_rl_step_at_the_cards_edge_gives_its_cached_blocks_back() -> None:
    # full GRPO of a small model beside a colocated vLLM at 15 % of a 40 GB card: weights, gradients, Adam and
    # vLLM's share leave little room; the allocator releases its cache and retries before it fails
    q = {"model": {"name": "Qwen3-1.7B", "params_b": 1.7}, "stage": "grpo", "method": "full", "framework": "trl",
         "output_len": 1024, "num_generations": 2, "batch_size": 1, "optimizer": "adamw",
         "gpus": [{"name": "A100", "memory_gb": 40, "count": 1}],
         "rollout": {"engine": "vllm", "mode": "colocate", "gpu_memory_utilization": 0.15}}
    out = estimate_request(q)
    assert out["verdict"] in ("fits", "tight")
    assert out["per_gpu"]["total"] + out["per_gpu"]["cuda_context"] <= 39.6


def test_liger_swiglu_backward_works_in_place() -> None:
    q = {"model": {"name": "Qwen2.5-7B"}, "method": "lora", "framework": "ms-swift", "seq_len": 4096,
         "gpus": [{"name": "A100 SXM4 80GB"}]}
    liger, plain = (build_scenario(Request.model_validate({**q, "fused_loss": f})) for f in (True, False))
    t = LoraTargets.parse(liger.lora_targets)
    h, f = liger.arch.hidden, liger.arch.ffn
    # autograd: dY, dX and three f-wide gradients at once; Liger: down_proj's input gradient only
    assert backward_gradients_per_token(plain, t)[0] == pytest.approx(2.0 * (2 * h + 3 * f))
    assert backward_gradients_per_token(liger, t)[0] == pytest.approx(2.0 * (2 * h + f))


@pytest.mark.parametrize(("text", "field", "value"), [
    ("llama 8b full fine-tune in torchtitan on 8xh100 with selective activation checkpointing",
     "selective_checkpointing", True),
    ("70б на 64 h100, tp 8, выборочный чекпоинтинг", "selective_checkpointing", True),
    ("8B FSDP on 8 H100 with float8 linears", "float8", True),
    ("qwen 14b torchtitan, float8, h200", "float8", True),
    ("70B, TP 8, async TP, 32 nodes of H100", "async_tp", True),
    ("70б tp 8 с асинхронным TP на h100", "async_tp", True),
    ("llama 8b pretraining with torch.compile on 8 h100", "torch_compile", True),
    ("llama 8b на 8 h100 без torch.compile", "torch_compile", False),
    ("llama 8b на 8 h100 с компиляцией", "torch_compile", True),
    ("full fine-tune of llama 8b in torchtitan", "framework", "torchtitan"),
])
def test_native_switches_are_heard(text: str, field: str, value: object) -> None:
    assert getattr(parse(text), field) == value


def test_float8_is_not_an_8_bit_base() -> None:
    r = parse("llama 8b full fine-tune with float8 on 8 h100")
    assert r.float8 is True and r.bits is None

"""Long sequences: S19 (activations or logits dominate at 32K+; CP over 8 GPUs fits the 8B 128K case), context
and tensor parallelism, ALST offload and TiledMLP."""

from __future__ import annotations

import pytest

from engine.contract import estimate_json as estimate
from engine.posttrain import long_context_options, pick_long_context, posttrain_result
from engine.schema import Request
from engine.schema.posttrain import PostTrainOptions


def llama8b(**kw: object) -> Request:
    base: dict[str, object] = {"model": {"name": "Llama-3.1-8B"}, "gpus": [{"name": "H100", "count": 8}]}
    base.update(kw)
    return Request.model_validate(base)


# full fine-tuning of 8B in AMP holds 16 bytes a parameter (119.6 GiB) of states: at 32k its 72 GiB of sequence
# lines are the smaller part, from 64k on the larger
@pytest.mark.parametrize("seq_len, method", [(32_768, "lora"), (65_536, "lora"), (131_072, "lora"),
                                             (65_536, "full"), (131_072, "full")])
def test_s19_sequence_lines_are_the_largest_at_32k_and_more(seq_len: int, method: str) -> None:
    per_gpu = estimate(llama8b(seq_len=seq_len, method=method, gpus=[{"name": "H100", "count": 1}]))["per_gpu"]
    states = {k: per_gpu[k] for k in ("weights", "adapters", "gradients", "optimizer")}
    assert max(per_gpu["activations"], per_gpu["logits"]) > max(states.values())


def test_s19_context_parallel_over_8_gpus_makes_8b_128k_fit() -> None:
    plain = estimate(llama8b(seq_len=131_072))
    assert not plain["fits"][0]["fits"]
    cp = estimate(llama8b(seq_len=131_072, context_parallel=8))
    assert cp["fits"][0]["fits"], cp["per_gpu"]["total"]
    assert cp["posttrain"]["tokens_per_gpu"] == 131_072 // 8
    # and the planner's helper proposes exactly that
    options = long_context_options(llama8b(seq_len=131_072))
    first = options[0]
    assert first.kind == "context_parallel" and first.fits and first.degree <= 8


def test_context_parallel_divides_sequence_lines() -> None:
    two = posttrain_result(llama8b(seq_len=65_536, context_parallel=2, sharding="zero3"))
    eight = posttrain_result(llama8b(seq_len=65_536, context_parallel=8, sharding="zero3"))
    assert two.policy["logits"] == pytest.approx(4 * eight.policy["logits"], rel=1e-3)
    assert two.policy["activations"] > 3 * eight.policy["activations"]
    # model states shard over all 8 GPUs either way
    assert two.policy["weights"] == pytest.approx(eight.policy["weights"])


def test_ulysses_needs_heads_to_divide_ring_does_not() -> None:
    # Qwen2.5-7B: 28 query heads, 4 KV heads: Ulysses over 8 does not divide, ring attention does
    r = posttrain_result(Request.model_validate({"model": {"name": "Qwen2.5-7B"}, "seq_len": 65_536,
                                                 "context_parallel": 8, "gpus": [{"name": "H100", "count": 8}]}))
    assert r.settings.cp_kind == "ring"
    ok = posttrain_result(llama8b(seq_len=65_536, context_parallel=8))
    assert ok.settings.cp_kind == "ulysses" and ok.settings.sequence_parallel_size == 8


def test_tensor_parallel_splits_states_and_activations() -> None:
    one = posttrain_result(llama8b(stage="sft", method="full", seq_len=8192, sharding="none",
                                   gpus=[{"name": "H100", "count": 4}]))
    tp = posttrain_result(llama8b(stage="sft", method="full", seq_len=8192, sharding="none", tensor_parallel=4,
                                  gpus=[{"name": "H100", "count": 4}]))
    assert tp.per_gpu_total < one.per_gpu_total / 3
    assert tp.settings.tensor_parallel_size == 4


def test_alst_offload_and_tiled_mlp_trade_host_ram_and_time_for_gpu_memory() -> None:
    r = llama8b(seq_len=131_072, context_parallel=8)
    base = posttrain_result(r)
    off = posttrain_result(r, PostTrainOptions(activation_offload=True))
    tiled = posttrain_result(r, PostTrainOptions(tiled_mlp=True))
    assert off.per_gpu_total < base.per_gpu_total and off.host_ram_gib > base.host_ram_gib + 1
    assert tiled.per_gpu_total < base.per_gpu_total
    opts = {o.kind: o for o in long_context_options(r)}
    assert opts["activation_offload"].time_factor > 1.0
    assert opts["activation_offload"].host_ram_gib > 1


def test_options_say_when_tensor_parallel_cannot_split_heads() -> None:
    r = Request.model_validate({"model": {"name": "Qwen2.5-7B"}, "seq_len": 65_536,
                                "gpus": [{"name": "H100", "count": 8}]})  # 28 heads
    tp8 = [o for o in long_context_options(r) if o.kind == "tensor_parallel" and o.degree == 8]
    assert tp8 and tp8[0].blocked == "posttrain.blocked.heads_do_not_divide" and not tp8[0].fits


def test_planner_picks_cp_only_when_the_sequence_is_what_does_not_fit() -> None:
    long = pick_long_context(llama8b(seq_len=131_072))
    assert long is not None and long.kind == "context_parallel" and long.fits
    # a 70B full fine-tune at 2K does not fit because of its states, not its sequence: no CP proposed
    states = Request.model_validate({"model": {"name": "Llama-3.1-70B"}, "method": "full", "seq_len": 2048,
                                     "gpus": [{"name": "H100", "count": 1}]})
    assert pick_long_context(states) is None


def test_options_without_a_gpu_fit_nothing_and_skip_the_degree_in_use() -> None:
    r = Request.model_validate({"model": {"name": "Llama-3.1-8B"}, "seq_len": 131_072, "context_parallel": 4,
                                "gpus": [{"count": 4}]})
    opts = long_context_options(r)
    assert opts and not any(o.fits for o in opts)  # no GPU memory to compare with
    assert all(o.degree > 4 for o in opts if o.kind == "context_parallel")
    assert long_context_options(r, memory_gib=141 * 0.98)[0].fits


def test_ms_swift_sequence_parallel_loss_runs_on_the_16_bit_logits() -> None:
    # loss_scale_sp_func: CrossEntropyLoss on the model's bf16 logits (labels popped before the forward), 6 bytes a
    # token x vocabulary entry; TRL + Ulysses goes through transformers' ForCausalLMLoss (fp32 upcast), 12
    req = {"model": {"name": "Qwen2.5-7B"}, "method": "full", "seq_len": 65536, "context_parallel": 4,
           "sharding": "zero3", "gpus": [{"name": "A100 SXM4 80GB", "count": 4}]}
    swift = posttrain_result(Request.model_validate({**req, "framework": "ms-swift"}))
    trl = posttrain_result(Request.model_validate({**req, "framework": "trl"}))
    entries = 65536 / 4 * 152064 / 2**30
    assert swift.policy["logits"] == pytest.approx(6 * entries, rel=1e-3)
    assert trl.policy["logits"] == pytest.approx(12 * entries, rel=1e-3)

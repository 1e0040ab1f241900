"""The serving search: which arrangements a team is offered for the asked load and in what order. Ranked by what the
load costs (per 1M output tokens at the asked users, then per hour), one node first; desktop cards only within one
machine; TP only where vLLM's head rules allow it (vllm/config.py, vllm/model_executor/layers/linear.py)."""

from __future__ import annotations

import pytest

from bot.pipeline import AnswerOptions, render_request
from bot.views.render import plain
from engine.catalog import architecture
from engine.schema import ModelRef, Request
from engine.serving import serve
from engine.serving.capacity import valid_tp
from engine.serving.profile import data


def req(name: str, users: int, ctx: int = 8192, engine: str = "vllm", **kw: object) -> Request:
    return Request.model_validate({"model": ModelRef(name=name), "method": "inference", "serving_engine": engine,
                                   "concurrency": users, "seq_len": ctx, **kw})


def offered(r):  # type: ignore[no-untyped-def]
    return [a for a in [r.arrangement, *r.alternatives] if a is not None]


def test_seventy_b_for_32_users_is_never_offered_two_dozen_desktop_cards() -> None:
    r = serve(req("Llama 3.1 70B", 32))
    single = set(data()["limits"]["single_machine_gpus"])
    per_node = int(data()["limits"]["gpus_per_node"])
    shown = offered(r)
    assert len(shown) >= 3
    for a in shown:
        assert a.nodes == 1  # a node of any card serves 32 users of a 70B: nothing spans machines
        assert a.gpu not in single or (a.count <= per_node and a.pipeline_parallel == 1)
        assert a.per_million_output_tokens is not None and a.per_hour is not None


def test_offers_are_ranked_by_cost_per_million_output_tokens_then_per_hour() -> None:
    for question in (req("Llama 3.1 70B", 32), req("Llama 3.1 8B", 16), req("Qwen2.5-Coder-32B", 16, 32768),
                     req("Mixtral 8x7B", 32), req("Qwen3-30B-A3B", 64, 16384)):
        shown = offered(serve(question))
        keys = [(a.nodes > 1, a.per_million_output_tokens, a.per_hour) for a in shown]
        assert keys == sorted(keys), keys


def test_cost_per_million_is_the_hourly_price_over_the_tokens_of_the_asked_load() -> None:
    for a in offered(serve(req("Llama 3.1 70B", 32))):
        assert a.per_user_tokens_s and a.per_hour and a.per_million_output_tokens
        tokens_s = a.per_user_tokens_s * a.users  # every asked user decoding at once
        assert a.per_million_output_tokens == pytest.approx(a.per_hour / (tokens_s * 3600) * 1e6, rel=0.02)


def test_many_users_on_datacenter_cards_span_nodes_only_when_one_node_cannot_serve_them() -> None:
    shown = offered(serve(req("Llama 3.1 70B", 500)))
    single = set(data()["limits"]["single_machine_gpus"])
    assert shown and all(a.gpu not in single for a in shown if a.nodes > 1)
    assert all(a.nodes > 1 for a in shown)  # 500 users of 8k on a 70B in bf16 need more than 8 of any card


def test_tp_follows_vllms_head_rules() -> None:
    llama70 = architecture(ModelRef(name="Llama 3.1 70B"))  # 64 heads, 8 KV heads
    assert valid_tp(llama70, "vllm", 16) == [1, 2, 4, 8, 16]  # 16 > 8 KV heads: each replicated twice
    qwen05 = architecture(ModelRef(name="Qwen2.5 0.5B"))  # 14 heads, 2 KV heads
    assert valid_tp(qwen05, "vllm", 8) == [1, 2]  # 14 % 4 != 0
    for a in offered(serve(req("Llama 3.1 70B", 32))):
        assert a.tensor_parallel in valid_tp(llama70, "vllm", 8)


def test_each_alternative_line_says_its_cost_per_million_tokens() -> None:
    text = plain(render_request(req("Llama 3.1 70B", 32), AnswerOptions(lang="en")).html)
    lines = [x for x in text.splitlines() if x.startswith("• ") and "such requests, $" in x]
    assert len(lines) >= 2 and all(" per 1M output tokens ✓" in x for x in lines), lines
    assert "24×" not in text and "3 × TP" not in text
    ru = plain(render_request(req("Llama 3.1 70B", 32), AnswerOptions(lang="ru")).html)
    assert "за 1\u00a0млн выходных токенов ✓" in ru


def test_ollama_splits_a_70b_over_two_3090s_instead_of_two_offloaded_copies() -> None:
    from engine.schema import GpuRef

    def on(count: int):  # type: ignore[no-untyped-def]
        return serve(Request.model_validate({"model": ModelRef(name="Llama 3.1 70B"), "method": "inference",
                                             "serving_engine": "ollama",
                                             "gpus": [GpuRef(name="RTX 3090", count=count)]}))

    one, two = on(1), on(2)
    assert one.settings is not None and two.settings is not None and one.memory and two.memory
    assert one.settings.gpu_layers is not None and one.settings.gpu_layers < 80  # one card: half the layers in RAM
    assert two.settings.gpu_layers == 80 and two.replicas == 1  # llama.cpp's layer split: one process, both cards
    assert two.memory.host_ram_gib < 1.0  # only the token embeddings stay in host RAM
    assert two.memory.weights_gib < 23.7 * 0.95 and two.memory.weights_gib == pytest.approx(
        one.memory.weights_gib * 80 / one.settings.gpu_layers / 2, rel=0.05)  # per GPU: half of the 80 layers
    assert one.speed is not None and two.speed is not None
    assert two.speed.per_user_tokens_s > 3 * one.speed.per_user_tokens_s  # no layers read from host RAM
    text = plain(render_request(Request.model_validate({"model": ModelRef(name="Llama 3.1 70B"),
                                                        "method": "inference", "serving_engine": "ollama",
                                                        "gpus": [GpuRef(name="RTX 3090", count=2)]}),
                                AnswerOptions(lang="en")).html)
    assert "2×RTX 3090" in text and "TP" not in text.split("\n")[0] and "tensor parallel" not in text
    assert "non-torch" not in text  # llama.cpp has no CUDA graphs or NCCL buffers to list


def test_fp8_on_a_gpu_without_fp8_tensor_cores_is_said_to_run_weight_only() -> None:
    from engine.schema import GpuRef

    def fp8_on(gpu: str) -> list[str]:
        r = serve(Request.model_validate({"model": ModelRef(name="Mixtral 8x7B"), "method": "inference",
                                          "serving_engine": "vllm", "quantization": "fp8", "concurrency": 16,
                                          "gpus": [GpuRef(name=gpu, count=1)]}))
        assert r.settings is not None and r.settings.weight_format == "fp8" and r.fits
        return [str(x) for x in r.assumptions]

    assert "fp8_compute=weight-only" in fp8_on("A100 80GB SXM")  # Ampere: FP8 Marlin, W8A16
    assert "fp8_compute=weight-only" not in fp8_on("H100 SXM")  # Hopper computes in FP8


def test_the_serving_mark_is_the_answers_verdict_as_in_training_answers() -> None:
    from bot.views.view import verdict_mark
    from engine.answer import answer
    from engine.parse import parse

    for question, verdict in (("Llama 3.1 70B vLLM 32 users 8k on 2xH100", "fits_with_changes"),
                              ("Llama 3.1 70B vLLM 32 users 8k on 4xH100", "fits")):
        a = answer(parse(question))
        assert a.verdict == verdict
        html = render_request(parse(question), AnswerOptions(lang="en")).html
        assert html.startswith(verdict_mark(verdict) + " <b>")
    searched = render_request(req("Llama 3.1 70B", 32), AnswerOptions(lang="en")).html
    assert searched.startswith("✅ <b>32 users at 8k on ")  # the GPUs the search picked serve them


def test_pcie_cards_get_replicas_of_a_narrow_tp_not_one_wide_tp() -> None:
    # vLLM's custom all-reduce stops at 2 PCIe-only GPUs: an 8B for 200 users is 4 copies of TP 2, not TP 8
    shown = {a.gpu: a for a in offered(serve(req("Llama 3.1 8B", 200, 4096)))}
    a = shown["RTX 3090"]
    assert (a.count, a.tensor_parallel, a.replicas) == (8, 2, 4)
    # a model that needs them all still gets the wide TP: Mixtral's 93 GB over eight 24 GB cards
    mixtral = {x.gpu: x for x in offered(serve(req("Mixtral 8x7B", 32)))}
    assert mixtral["RTX 3090"].tensor_parallel == 8 and mixtral["RTX 3090"].replicas == 1


def test_the_room_left_on_a_card_counts_everything_the_engine_holds_including_cuda_graphs() -> None:
    r = serve(req("Llama 3.1 70B", 64))
    a = r.arrangement
    assert a is not None and a.cuda_graph_gib > 0
    held = a.weights_gib + a.activation_peak_gib + a.non_torch_gib + max(0.0, a.kv_pool_gib)  # non-torch has graphs
    assert abs(a.total_gib - held - a.headroom_gib) < 0.05
    from engine.answer import answer
    from engine.contract import serving_estimate_json
    fits = serving_estimate_json(answer(req("Llama 3.1 70B", 64)))["fits"]
    assert any(abs(f["headroom_gb"] - a.headroom_gib) < 1e-9 for f in fits[1:])  # the arrangement's own figure

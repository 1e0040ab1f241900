"""How the engines' schedulers place a new prompt (engine/serving/load.py, loadplan.prefill_scheduling): SGLang and
vLLM V0 without chunked prefill run it as a step of its own, vLLM V0 multi-step makes it wait for the running group
of steps, vLLM V1 mixes it into a decode step; and the mean TTFT beside the median."""

from __future__ import annotations

import pytest

from engine.schema import EngineOptions, GpuRef, ModelRef, Request
from engine.serving import serve
from engine.serving.profile import v0_chunked_prefill


def load_of(engine: str, rate: float | None = 4.0, concurrency: int | None = None, prompt: int = 227,
            **opts: object) -> object:
    q = Request(model=ModelRef(name="Llama-3.1-8B"), method="inference", serving_engine=engine,  # type: ignore[arg-type]
                gpus=[GpuRef(name="A100 80GB SXM", count=1)], prompt_len=prompt, output_len=188,
                request_rate=rate, concurrency=concurrency,
                engine_options=EngineOptions(**opts) if opts else None)  # type: ignore[arg-type]
    r = serve(q)
    assert r.load is not None and r.load.point.stable
    return r.load.point


def test_multi_step_makes_a_new_prompt_wait_for_the_running_group_of_steps() -> None:
    one = load_of("vllm", engine_version="0.6.0", num_scheduler_steps=1)
    ten = load_of("vllm", engine_version="0.6.0", num_scheduler_steps=10)
    assert one.step_ms and ten.step_ms
    # the wait grows by about (10 - 1) / 2 decode steps; the decode speed itself does not change
    assert ten.ttft_ms["p50"] - one.ttft_ms["p50"] == pytest.approx(4.5 * ten.step_ms, rel=0.15)
    assert ten.tpot_ms["p50"] == pytest.approx(one.tpot_ms["p50"], rel=0.02)


def test_a_chunk_rides_in_a_decode_step_and_a_lone_prefill_does_not() -> None:
    # a short prompt: its compute is less than a decode step, so riding in one (vLLM V1) costs the whole step,
    # while a prefill step of its own (SGLang, vLLM V0 without chunked prefill) costs only the prompt's compute
    v1, v0 = load_of("vllm", prompt=16, engine_version="0.19.0"), load_of("vllm", prompt=16, engine_version="0.6.0")
    assert v1.step_ms and v1.prefill_ms and v0.prefill_ms and v1.prefill_ms < v1.step_ms
    assert v1.ttft_ms["p50"] - v0.ttft_ms["p50"] == pytest.approx(v1.step_ms - v0.prefill_ms, rel=0.2)
    # a long prompt: the forward is compute-bound and reads the weights once with the decodes: no step on top
    long_v1, long_v0 = (load_of("vllm", prompt=2000, engine_version=v) for v in ("0.19.0", "0.6.0"))
    assert long_v1.prefill_ms and long_v1.step_ms and long_v1.prefill_ms > long_v1.step_ms
    assert long_v1.ttft_ms["p50"] == pytest.approx(long_v0.ttft_ms["p50"], rel=0.05)


def test_one_user_in_a_closed_loop_finds_the_engine_idle() -> None:
    alone = load_of("sglang", rate=None, concurrency=1)
    busy = load_of("sglang", rate=None, concurrency=16)
    assert alone.prefill_ms and alone.step_ms
    floor = alone.ttft_ms["p50"] - alone.prefill_ms  # nothing to wait for but the engine's own floor
    assert busy.ttft_ms["p50"] - busy.prefill_ms == pytest.approx(floor + busy.step_ms / 2, rel=0.1)


def test_the_mean_ttft_counts_the_queue_the_median_can_miss() -> None:
    r = serve(Request(model=ModelRef(name="Llama-3.3-70B"), method="inference", serving_engine="nim",
                      gpus=[GpuRef(name="H100 SXM", count=2)], tensor_parallel=2, quantization="fp8",
                      prompt_len=5000, output_len=500, kv_cache_dtype="fp8", concurrency=25))
    assert r.load is not None
    p = r.load.point
    assert p.ttft_mean_ms is not None and p.ttft_mean_ms > 1.2 * p.ttft_ms["p50"]
    alone = serve(Request(model=ModelRef(name="Llama-3.3-70B"), method="inference", serving_engine="nim",
                          gpus=[GpuRef(name="H100 SXM", count=2)], tensor_parallel=2, quantization="fp8",
                          prompt_len=5000, output_len=500, kv_cache_dtype="fp8", concurrency=1))
    assert alone.load is not None and alone.load.point.ttft_mean_ms is not None
    assert alone.load.point.ttft_mean_ms == pytest.approx(alone.load.point.ttft_ms["p50"], rel=0.05)


def test_v0_chunked_prefill_follows_the_context_and_the_token_budget() -> None:
    assert not v0_chunked_prefill(4096)
    assert v0_chunked_prefill(65536)
    assert v0_chunked_prefill(8192, 2048)  # a budget below max_model_len is refused without chunked prefill
    assert not v0_chunked_prefill(2048, 4096)


def test_the_reply_says_how_prefill_is_scheduled() -> None:
    r = serve(Request(model=ModelRef(name="Llama-3.1-8B"), method="inference", serving_engine="vllm",
                      gpus=[GpuRef(name="A100 80GB SXM", count=1)], prompt_len=227, output_len=188, request_rate=4.0,
                      engine_options=EngineOptions(engine_version="0.6.0", num_scheduler_steps=10)))
    assert r.load is not None
    said = [str(a) for a in r.load.assumptions]
    assert "prefill_scheduling=prefill steps alone, 10 decode steps per scheduler call" in said

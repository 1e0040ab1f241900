"""An engine's release written by its name in a question, and vLLM's V0/V1 switch: into engine_options (phrasings
written for these tests)."""

from __future__ import annotations

import pytest

from engine.contract import estimate_request
from engine.parse import parse


@pytest.mark.parametrize(("text", "engine", "version"), [
    ("сколько влезет контекста для llama 8b на vllm 0.7.3 и одной 4090?", "vllm", "0.7.3"),
    ("Qwen2.5 7B on vLLM 0.6.6 with an A100, how many users?", "vllm", "0.6.6"),
    ("sglang 0.4.1, llama 70b на двух h100", "sglang", "0.4.1"),
    ("запускаю через vllm==0.10.1 qwen3 8b на L4", "vllm", "0.10.1"),
    ("vllm версии 0.8.5, mistral 7b, 3090", "vllm", "0.8.5"),
    ("mistral 7b behind tgi 2.2 on an a10g", "tgi", "2.2"),
    ("llama 70b vllm v0.9 на 2 h100", "vllm", "0.9"),
    ("sglang 0.4.6.post1 qwen3 32b h200", "sglang", "0.4.6.post1"),
])
def test_the_release_after_the_engine_is_the_requests_engine_version(text: str, engine: str, version: str) -> None:
    r = parse(text)
    assert r.serving_engine == engine
    assert r.engine_options is not None and r.engine_options.engine_version == version


def test_the_release_number_is_no_model_size_context_or_gpu_count() -> None:
    r = parse("llama 8b на vllm 0.7.3 на 4090")
    assert r.model is not None and r.model.name == "Llama-3.1-8B"
    assert r.seq_len is None and [(g.name, g.count) for g in r.gpus] == [("RTX 4090", 1)]


def test_a_bare_share_after_vllm_is_not_a_release() -> None:
    # «vllm 0.9» may be gpu_memory_utilization 0.9: without a "v", «версии» or "==" it is no version
    r = parse("llama 70b vllm 0.9 2 h100")
    assert r.engine_options is None or r.engine_options.engine_version is None


@pytest.mark.parametrize(("text", "v1"), [
    ("qwen 14b vllm 0.7.3 VLLM_USE_V1=1 на h100", True),
    ("qwen 14b on vllm 0.8.4 with VLLM_USE_V1=0, h100", False),
    ("llama 8b на vllm версии 0.8.5 движок v0, 4090", False),
    ("llama 8b, vllm 0.7.2 with the V1 engine on a 4090", True),
])
def test_the_v0_v1_switch_is_read(text: str, v1: bool) -> None:
    r = parse(text)
    assert r.engine_options is not None and r.engine_options.vllm_use_v1 is v1


def test_flags_and_release_share_the_engine_options() -> None:
    r = parse("qwen 14b vllm 0.7.3 VLLM_USE_V1=1 на h100 --max-model-len 8192")
    assert r.engine_options is not None
    assert (r.engine_options.engine_version, r.engine_options.vllm_use_v1, r.engine_options.max_model_len) == \
        ("0.7.3", True, 8192)


def test_the_v1_switch_on_07_changes_the_profile_the_answer_uses() -> None:
    def family(text: str) -> str:
        s = estimate_request(parse(text).model_dump(mode="json", exclude_none=True))["serving"]
        assert s["engine_version"] == "0.7.3"
        return str(s["engine_family"])

    assert family("qwen 14b vllm 0.7.3 VLLM_USE_V1=1 на h100 --max-model-len 8192") == "vllm-v1"
    assert family("qwen 14b vllm 0.7.3 на h100 --max-model-len 8192") == "vllm-v0"

"""Model ids added for hybrid / attention-free / vision checkpoints: Granite-4.0-H (Mamba-2 + attention), Falcon-Mamba
(no attention), DeepSeek-V3.1 (MLA as V3), Qwen2.5-VL (vision tower in the weights). Setups written for these tests."""

from __future__ import annotations

from typing import Any

import pytest

from engine.catalog import architecture, find_model
from engine.contract import estimate_request
from engine.schema import ModelRef

GIB = 1024**3


def _serve(model: str, engine: str = "vllm", version: str = "0.10.1", max_len: int = 8192) -> dict[str, Any]:
    q = {"model": {"name": model}, "method": "inference", "serving_engine": engine,
         "gpus": [{"name": "H100", "memory_gb": 80, "count": 1}],
         "engine_options": {"max_model_len": max_len, "engine_version": version}, "seq_len": max_len}
    s: dict[str, Any] = estimate_request(q)["serving"]
    return s


@pytest.mark.parametrize(("repo", "name"), [
    ("ibm-granite/granite-4.0-h-small", "Granite-4.0-H-Small"),
    ("ibm-granite/granite-4.0-h-tiny", "Granite-4.0-H-Tiny"),
    ("ibm-granite/granite-4.0-h-micro", "Granite-4.0-H-Micro"),
    ("tiiuae/falcon-mamba-7b-instruct", "Falcon-Mamba-7B"),
    ("deepseek-ai/DeepSeek-V3.1-Terminus", "DeepSeek-V3.1"),
    ("Qwen/Qwen2.5-VL-72B-Instruct-AWQ", "Qwen2.5-VL-72B"),
])
def test_new_ids_resolve_to_their_own_entry(repo: str, name: str) -> None:
    found = find_model(repo)
    assert found is not None and found.name == name


def test_granite_h_keeps_kv_on_its_four_attention_layers_and_a_state_per_sequence() -> None:
    s = _serve("ibm-granite/granite-4.0-h-small")
    # 4 attention layers x K and V x 8 KV heads x 128 x 2 bytes: the 36 Mamba-2 layers add no per-token bytes
    assert s["kv_bytes_per_token"] == 4 * 2 * 8 * 128 * 2
    # each request also holds 36 Mamba-2 states (2.1 MB each): fewer requests than the attention bytes alone allow
    attention_only = s["kv_pool_gib"] * GIB / (4 * 2 * 8 * 128 * 2 * 8192)
    assert 0 < s["max_concurrency"] < attention_only * 0.75
    assert s["kv_tokens"] == pytest.approx(s["max_concurrency"] * 8192, rel=0.01)


def test_falcon_mamba_has_no_per_token_kv_and_a_fixed_state_per_request() -> None:
    arch = architecture(ModelRef(name="tiiuae/falcon-mamba-7b"))
    assert arch.known and arch.attention_layers == 0
    s = _serve("tiiuae/falcon-mamba-7b")
    assert s["kv_bytes_per_token"] == 0
    state = 64 * 8192 * (3 + 16) * 2  # 64 layers x inner 8192 x (conv 3 + state 16) x bf16
    assert s["max_concurrency"] == int(s["kv_pool_gib"] * GIB // state) or \
        abs(s["max_concurrency"] - s["kv_pool_gib"] * GIB / state) < 2
    # the same setup twice as long: the state does not grow, the request count stays
    assert _serve("tiiuae/falcon-mamba-7b", max_len=4096)["max_concurrency"] == pytest.approx(
        s["max_concurrency"], rel=0.01)


def test_falcon_mamba_on_sglang_is_answered_with_the_state_rule_too() -> None:
    s = _serve("tiiuae/falcon-mamba-7b", engine="sglang", version="0.4.6")
    assert s["kv_bytes_per_token"] == 0 and s["max_concurrency"] > 100


def test_deepseek_v31_is_mla_like_v3() -> None:
    v31, v3 = architecture(ModelRef(name="DeepSeek-V3.1")), architecture(ModelRef(name="DeepSeek-V3"))
    assert (v31.kv_lora_rank, v31.qk_rope_head_dim, v31.layers) == (v3.kv_lora_rank, v3.qk_rope_head_dim, v3.layers)
    assert v31.params == v3.params


def test_qwen25_vl_loads_its_vision_tower_beside_the_decoder() -> None:
    vl, text = _serve("Qwen/Qwen2.5-VL-7B-Instruct"), _serve("Qwen/Qwen2.5-7B-Instruct")
    assert vl["weights_gib"] - text["weights_gib"] == pytest.approx(0.6766e9 * 2 / GIB, abs=0.02)
    assert vl["kv_bytes_per_token"] == text["kv_bytes_per_token"]  # the KV cache is the language model's

"""Serving model: KV bytes from first principles, weights by format, capacity, bad inputs (engine/serving)."""

from __future__ import annotations

import pytest

from engine.catalog import architecture
from engine.contract import estimate_request
from engine.schema import ModelRef, Request
from engine.serving import is_serving_request, serve, serving_block
from engine.serving.kv import capacity, layer_kinds, plain_bytes_per_token, token_layer_bytes
from engine.serving.weights import rank_weights

GIB = 2**30


def arch(name: str):
    return architecture(ModelRef(name=name))


def ask(**fields):
    data = {"method": "inference", "serving_engine": "vllm", **fields}
    if isinstance(data.get("model"), str):
        data["model"] = {"name": data["model"]}
    return serve(Request.model_validate(data))


# ---- KV bytes per token ---------------------------------------------------------------------------------------


def test_gqa_kv_bytes_per_token_from_the_config():
    a = arch("Llama-3.1-8B")  # 32 layers, 8 KV heads of 128
    assert plain_bytes_per_token(a, 1, a.layers, 2.0) == 32 * 2 * 8 * 128 * 2
    assert plain_bytes_per_token(a, 2, a.layers, 2.0) == 32 * 2 * 4 * 128 * 2  # KV heads split over TP
    assert plain_bytes_per_token(a, 8, a.layers, 2.0) == 32 * 2 * 1 * 128 * 2
    assert plain_bytes_per_token(a, 16, a.layers, 2.0) == 32 * 2 * 1 * 128 * 2  # replicated past 8 ranks
    assert plain_bytes_per_token(a, 1, a.layers, 1.0) == 32 * 2 * 8 * 128  # fp8 KV halves it


def test_mla_caches_one_latent_per_token_on_every_rank():
    a = arch("DeepSeek-V2-Lite")  # kv_lora_rank 512 + rope 64, 27 layers
    assert token_layer_bytes(a, 1, 2.0) == (512 + 64) * 2
    assert token_layer_bytes(a, 4, 2.0) == token_layer_bytes(a, 1, 2.0)  # not split by TP
    v3 = arch("DeepSeek-V3")
    assert plain_bytes_per_token(v3, 8, v3.layers, 2.0) == 61 * 576 * 2


def test_sliding_window_layers_follow_the_pattern():
    kinds = {k.kind: k for k in layer_kinds(arch("Gemma-3-27B"), 62)}  # one global layer in 6
    assert kinds["full"].count == 10 and kinds["sliding"].count == 52 and kinds["sliding"].window == 1024
    g2 = {k.kind: k.count for k in layer_kinds(arch("Gemma-2-9B"), 42)}
    assert g2 == {"full": 21, "sliding": 21}
    scout = {k.kind: k.count for k in layer_kinds(arch("Llama-4-Scout-17B-16E"), 48)}
    assert scout == {"full": 12, "chunked": 36}
    assert [k.kind for k in layer_kinds(arch("Llama-3.1-8B"), 32)] == ["full"]


def test_hybrid_groups_and_sliding_blocks_as_vllm_v1_counts_them():
    a = arch("Gemma-3-27B")
    per_group_layer = 2 * 16 * 128 * 2  # one token, one layer: K and V of 16 KV heads of 128
    pool = 20 * GIB
    cap = capacity(a, "vllm-v1", pool, 1, 62, 2.0, 16, 8192, 8192, 8192)
    blocks = int(pool // (per_group_layer * 16 * 10))  # groups of 10 layers (the full layers' count)
    assert cap.groups == 7 and cap.blocks == blocks
    assert cap.tokens == blocks // 7 * 16
    # a full group needs 8192/16 blocks; a sliding group min(1024 - 1 + 8192, 8192)/16 + 1
    assert cap.max_concurrency == pytest.approx(blocks / (512 + 6 * 513), abs=0.01)
    # V0 holds every layer for every token
    v0 = capacity(a, "vllm-v0", pool, 1, 62, 2.0, 16, 8192, 8192, 8192)
    assert v0.groups == 1 and v0.tokens == int(pool // (62 * per_group_layer * 16)) * 16


def test_kv_capacity_grows_with_memory_and_shrinks_with_context():
    tokens = [ask(model="Llama-3.1-8B", seq_len=8192, gpus=[{"name": "H100 SXM", "total_gib": g}]).kv.tokens
              for g in (30, 40, 60, 80, 120)]
    assert tokens == sorted(tokens) and tokens[0] < tokens[-1]
    conc = [ask(model="Llama-3.1-8B", seq_len=s, gpus=[{"name": "H100 SXM"}]).kv.max_concurrency
            for s in (2048, 8192, 32768)]
    assert conc == sorted(conc, reverse=True)


# ---- weights by format ----------------------------------------------------------------------------------------


def test_weights_by_format_keep_embeddings_in_16_bits():
    a = arch("Llama-3.1-8B")
    emb = a.embedding_params * 2  # embed + untied lm_head in bf16
    bf16 = rank_weights(a, "bf16", 1, 1, "vllm").first
    fp8 = rank_weights(a, "fp8", 1, 1, "vllm").first
    awq = rank_weights(a, "awq", 1, 1, "vllm").first
    assert bf16 == pytest.approx(a.params * 2, rel=1e-3)
    assert fp8 == pytest.approx(a.linear_params * 1.0 + emb, rel=1e-3)
    assert awq == pytest.approx(a.linear_params * (0.5 + 2 / 128 + 0.5 / 128) + emb, rel=1e-3)
    assert awq < fp8 < bf16


def test_weights_split_over_tp_and_pp():
    a = arch("Llama-3.1-8B")
    one = rank_weights(a, "bf16", 1, 1, "vllm").first
    assert rank_weights(a, "bf16", 2, 1, "vllm").first == pytest.approx(one / 2, rel=1e-3)
    pp = rank_weights(a, "bf16", 1, 2, "vllm")
    assert pp.first == pytest.approx(pp.embedding + 16 * pp.per_layer)  # first stage: embedding
    assert pp.last == pytest.approx(pp.head + 16 * pp.per_layer)  # last stage: lm_head
    assert pp.first + pp.last == pytest.approx(one, rel=1e-3)


def test_mxfp4_quantizes_only_the_experts_and_gguf_uses_bits_per_weight():
    a = arch("gpt-oss-20b")
    mx = rank_weights(a, "mxfp4", 1, 1, "vllm").first
    assert a.params * 0.5 < mx < a.params * 1.0  # experts ~4.25 bits, attention and embeddings 16 bits
    b = arch("Llama-3.1-8B")
    q4 = rank_weights(b, "gguf:q4_k_m", 1, 1, "llama.cpp").first
    assert q4 == pytest.approx(b.params * 4.90 / 8, rel=1e-3)


# ---- answers --------------------------------------------------------------------------------------------------


def test_a_serving_answer_has_the_contract_block():
    out = estimate_request({"model": {"name": "Llama-3.1-70B"}, "method": "inference", "serving_engine": "vllm",
                            "concurrency": 32, "seq_len": 8192, "gpus": [{"name": "H100 SXM", "count": 4}]})
    s = out["serving"]
    for key in ("tensor_parallel", "pipeline_parallel", "weights_gib", "activation_peak_gib", "non_torch_gib",
                "cuda_graph_gib", "kv_pool_gib", "kv_bytes_per_token", "kv_tokens", "max_concurrency",
                "max_model_len_that_fits", "decode_tokens_per_s", "ttft_s"):
        assert key in s
    assert s["tensor_parallel"] == 4 and s["kv_bytes_per_token"] == 80 * 2 * 2 * 128 * 2
    assert s["fits"] and s["concurrency_at_context"] >= 32
    assert s["decode_tokens_per_s"]["total"] > s["decode_tokens_per_s"]["per_user"] > 0
    assert s["command"][:3] == ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct"]
    assert "--tensor-parallel-size" in s["command"]


def test_not_a_serving_request_gets_no_block():
    assert not is_serving_request(Request.model_validate({"model": {"name": "Llama-3.1-8B"}, "method": "lora"}))
    assert "serving" not in estimate_request({"model": {"name": "Llama-3.1-8B"}, "method": "lora"})


def test_too_small_a_gpu_suggests_changes_with_their_numbers():
    r = ask(model="Qwen2.5-32B", concurrency=16, seq_len=32768, gpus=[{"name": "H100 SXM"}])
    assert not r.fits
    keys = {c.key: c for c in r.changes}
    assert keys["serving.change.fp8_weights"].effect["kv_pool_gib"] > r.memory.kv_pool_gib
    assert r.arrangement is not None and r.arrangement.count > 1
    assert r.arrangement.replicas * r.arrangement.users_per_instance >= 16


def test_no_gpu_named_searches_the_candidates():
    r = ask(model="Llama-3.1-70B", concurrency=32, seq_len=8192)
    assert r.fits and r.arrangement is not None
    assert r.arrangement.gpu in {"L40S", "A100 80GB SXM", "H100 SXM", "H200 SXM", "B200", "MI300X"}
    assert r.cost is not None and r.cost.per_million_output_tokens > 0


# ---- bad input ------------------------------------------------------------------------------------------------


def test_a_million_users_is_an_error_with_the_most_served():
    r = ask(model="Llama-3.1-8B", concurrency=1_000_000)
    assert r.errors[0].key == "serving.error.users_too_many"
    assert 0 < r.errors[0].params["max_users"] < 1_000_000
    assert serving_block(r)["error"] == "serving.error.users_too_many"


def test_context_beyond_the_model_says_its_limit():
    r = ask(model="Llama-2-7B", seq_len=32768)
    assert r.errors[0].key == "serving.error.context_beyond_model"
    assert r.errors[0].params["limit"] == 4096


def test_tp_that_does_not_divide_the_heads():
    r = ask(model="Llama-3.1-8B", tensor_parallel=3, gpus=[{"name": "H100 SXM", "count": 4}])
    assert r.errors[0].key == "serving.error.tp_not_divisor"
    assert r.errors[0].params["valid"] == [1, 2, 4, 8]


def test_engine_that_cannot_load_the_format():
    r = ask(model="Llama-3.1-8B", serving_engine="llama.cpp", quantization="awq")
    assert r.errors[0].key == "serving.error.format_not_supported"
    assert "vllm" in r.errors[0].params["engines"]


def test_unknown_model_and_format_are_errors_not_tracebacks():
    assert ask(model="no-such-model-xyz").errors[0].key == "serving.error.unknown_model"
    assert ask(model="Llama-3.1-8B", quantization="zzz").errors[0].key == "serving.error.unknown_format"


def test_repository_names_resolve_without_publisher_and_format_tails():
    from engine.catalog import find_model

    assert find_model("RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic").name == "Llama-3.3-70B"
    assert find_model("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16").name == "Llama-3.1-8B"
    assert find_model("Qwen/Qwen3-235B-A22B-FP8").name == "Qwen3-235B-A22B"
    assert find_model("microsoft/Phi-4-mini-instruct (LoRA-merged fine-tune)").name == "Phi-4-mini"
    assert find_model("nvidia/Gemma-4-31B-IT-NVFP4") is None  # not in the catalog: no near match
    assert arch("Llama-3.1-8B").max_position_embeddings == 131072


def test_an_explicit_max_model_len_past_the_limit_is_a_warning():
    r = ask(model="Qwen3-30B-A3B", seq_len=131072, engine_options={"max_model_len": 131072},
            gpus=[{"name": "H100 SXM", "count": 2}], tensor_parallel=2)
    assert r.errors[0].key == "serving.warning.beyond_model_context" and r.errors[0].params["limit"] == 40960
    assert r.kv is not None and r.settings.max_model_len == 131072

"""SGLang's and TGI's rules by release (engine/serving/engines.py, serving.toml [sglang.*] / [tgi])."""

from __future__ import annotations

import pytest

from engine.catalog import find_gpu
from engine.configs.logcheck import check_log
from engine.configs.readers.logs import read_log
from engine.schema import Request
from engine.serving import serve
from engine.serving.engines import (
    sglang_bucket,
    sglang_default_fraction,
    tgi_defaults,
    tgi_era,
    tgi_pool,
    tgi_warmup_tokens,
)

GIB = 2**30


def ask(**fields):
    data = {"method": "inference", **fields}
    data["model"] = {"name": data["model"]}
    return serve(Request.model_validate(data))


def test_sglang_default_fraction_follows_the_tp_table_then_the_gpu_memory():
    h200 = find_gpu("H200 SXM", None)
    assert h200 is not None
    assert sglang_default_fraction("0.4.4", h200.driver_gib, 8, 1) == 0.81  # the TP table
    # _handle_gpu_memory_settings: reserved = 512 + 8192 x 1.5 + 512 x 2 + 8 / 8 x 1024 MiB on a 140 GiB card
    total_mib = h200.driver_gib * 1024
    assert sglang_default_fraction("0.5.3", h200.driver_gib, 8, 1) == round((total_mib - 14848) / total_mib, 3)
    assert sglang_default_fraction(None, h200.driver_gib, 8, 1) == sglang_default_fraction("0.5.3", h200.driver_gib,
                                                                                          8, 1)
    # small cards: the floor of 10 GiB only applies over 60 GiB; a 24 GB card reserves 512 + 3072 + 48 + 128
    assert sglang_bucket(23.6, 1) == (2048, 24) and sglang_bucket(23.6, 4) == (2048, 80)
    assert sglang_default_fraction("0.5.4", 23.6, 1, 1) == round((23.6 * 1024 - 3760) / (23.6 * 1024), 3)


def test_sglang_heuristic_picks_the_chunked_prefill_of_the_gpu():
    b200 = ask(model="Qwen3-32B", serving_engine="sglang", tensor_parallel=4, gpus=[{"name": "B200", "count": 4}])
    assert b200.settings.max_num_batched_tokens == 16384
    old = ask(model="Qwen3-32B", serving_engine="sglang", tensor_parallel=4, gpus=[{"name": "B200", "count": 4}],
              engine_options={"engine_version": "0.4.6"})
    assert old.settings.max_num_batched_tokens == 8192 and old.settings.gpu_memory_utilization == 0.85
    assert b200.settings.gpu_memory_utilization != old.settings.gpu_memory_utilization


@pytest.mark.parametrize(("version", "factor"), [("0.4.4", 0.95), ("0.4.5", 0.90), ("0.4.7", 0.95 * (1 - 0.1 * (
    27 * 1152**2 / (24 * 1024**2) - 1)))])
def test_sglang_lowers_the_fraction_of_a_multimodal_model_by_release(version, factor):
    kwargs = {"serving_engine": "sglang", "gpus": [{"name": "H200 SXM"}], "seq_len": 8192}
    vlm = ask(model="Gemma-3-4B", engine_options={"engine_version": version, "gpu_memory_utilization": 0.88},
              **kwargs)
    m = vlm.memory
    held = m.non_torch_gib
    assert m.budget_gib == pytest.approx(held + (vlm.gpu.total_gib - held) * round(0.88 * factor, 4), abs=1e-6)
    text = ask(model="Qwen2.5-7B", engine_options={"engine_version": version, "gpu_memory_utilization": 0.88},
               **kwargs)
    assert text.memory.budget_gib == pytest.approx(held + (text.gpu.total_gib - held) * 0.88, abs=1e-6)


def test_sglang_keeps_a_fraction_the_launch_set_once_the_reduction_is_in_the_heuristic():
    set_ = ask(model="Gemma-3-4B", serving_engine="sglang", gpus=[{"name": "H200 SXM"}], seq_len=8192,
               engine_options={"engine_version": "0.5.3", "gpu_memory_utilization": 0.88})
    held = set_.memory.non_torch_gib
    assert set_.memory.budget_gib == pytest.approx(held + (set_.gpu.total_gib - held) * 0.88, abs=1e-6)
    default = ask(model="Gemma-3-4B", serving_engine="sglang", gpus=[{"name": "H200 SXM"}], seq_len=8192,
                  engine_options={"engine_version": "0.5.3"})
    assert default.memory.budget_gib < set_.memory.budget_gib


def test_tgi_margin_moved_from_free_memory_to_the_card_in_3_0():
    assert tgi_era("1.4.5") == (0.95, "scaled") and tgi_era("2.2.0") == (0.95, "scaled")
    assert tgi_era("2.4.1") == (0.90, "scaled") and tgi_era("3.0.1") == (0.90, "of_total") == tgi_era(None)
    total, used, warm = 80 * GIB, 20 * GIB, 1 * GIB
    assert tgi_pool(total, used, warm, 1.0, "2.2.0") == pytest.approx(0.95 * 59 * GIB + warm)
    assert tgi_pool(total, used, warm, 1.0, "2.4.0") == pytest.approx(0.90 * 59 * GIB + warm)
    assert tgi_pool(total, used, warm, 1.0, "3.0.0") == pytest.approx((59 - 8) * GIB + warm)
    # cuda_memory_fraction leaves (1 - f) of the card out in every release
    assert tgi_pool(total, used, warm, 0.5, "2.2.0") == pytest.approx(0.95 * 19 * GIB + warm)


def test_tgi_warmup_batch_follows_the_launcher_defaults():
    assert tgi_defaults("1.4.5") == (2048, 1024, 4096) and tgi_defaults("2.2.0") == (4096, 4095, 4145)
    # 2.x: requests of 4095 tokens until 4145 prefill tokens (two), each holding max_total_tokens 4096
    assert tgi_warmup_tokens("2.2.0", 4145, 131072) == 2 * 4096
    assert tgi_warmup_tokens("1.4.5", 4096, 131072) == 4 * 2048  # four requests of 1024 reach 4096
    assert tgi_warmup_tokens("3.0.0", 4096, 131072) == 4097  # 3.x: the prefill and one new token


def test_tgi_warmup_peak_holds_the_logits_of_every_prefill_token():
    small = ask(model="Llama-3.1-8B", serving_engine="tgi", gpus=[{"name": "A100 80GB SXM"}],
                engine_options={"engine_version": "2.2.0", "max_num_batched_tokens": 2048})
    large = ask(model="Llama-3.1-8B", serving_engine="tgi", gpus=[{"name": "A100 80GB SXM"}],
                engine_options={"engine_version": "2.2.0", "max_num_batched_tokens": 8192})
    logits = 4.0 * (8192 - 2048) * 128256 / GIB  # two 16-bit copies (lm_head output and its log_softmax)
    assert large.memory.activation_peak_gib - small.memory.activation_peak_gib > logits
    assert large.memory.kv_pool_gib < small.memory.kv_pool_gib


def test_kimi_vl_resolves_to_the_moonlight_decoder_and_its_tower():
    r = ask(model="moonshotai/Kimi-VL-A3B-Instruct", serving_engine="vllm", gpus=[{"name": "H100 SXM"}],
            seq_len=8192)
    assert r.model_known and r.layers == 27
    moonlight = ask(model="moonshotai/Moonlight-16B-A3B", serving_engine="vllm", gpus=[{"name": "H100 SXM"}],
                    seq_len=8192)
    assert r.memory.weights_gib - moonlight.memory.weights_gib == pytest.approx(0.4476e9 * 2 / GIB, rel=0.01)


SGLANG_TP = """[2025-10-16 09:06:10 TP7] Load weight begin. avail mem=137.52 GB
[2025-10-16 09:06:22 TP0] KV Cache is allocated. #tokens: 2795207, K size: 53.31 GB, V size: 53.31 GB
[2025-10-16 09:06:22 TP3] Memory pool end. avail mem=11.87 GB"""

SGLANG_OLD = """[2025-01-23 19:35:15 TP0] Load weight begin. avail mem=78.81 GB
[2025-01-23 19:35:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.72 GB
[2025-01-23 19:35:20 TP0] KV Cache is allocated. K size: 27.13 GB, V size: 27.13 GB."""


def test_sglang_log_gives_its_tp_by_the_ranks_and_weights_by_the_free_memory():
    r = read_log(SGLANG_TP)
    assert r is not None and r.settings["tp"] == 8
    old = read_log(SGLANG_OLD)
    assert old is not None and old.measured["weights_gib"] == pytest.approx(15.09)


def test_check_takes_the_model_from_the_user_when_the_log_does_not_name_it():
    assert check_log(SGLANG_TP, "H200")["error"] == "the log does not name the model"
    out = check_log(SGLANG_TP, "H200", "meta-llama/Llama-3.1-70B-Instruct")
    assert out["request"]["tensor_parallel"] == 8 and out["components"]
    named = SGLANG_TP.replace("Load weight begin", "server_args=ServerArgs(model_path='Qwen/Qwen2.5-72B') Load "
                                                   "weight begin")
    assert check_log(named, "H200", "meta-llama/Llama-3.1-70B")["request"]["model"]["name"] == "Qwen/Qwen2.5-72B"


def test_tgi_log_gives_its_release_by_the_image_tag():
    r = read_log("Status: Downloaded newer image for ghcr.io/huggingface/text-generation-inference:2.2.0\n"
                 "2024-09-03T04:40:19.370247Z  INFO text_generation_router::server: Setting max batch total tokens "
                 "to 19056")
    assert r is not None and r.kind == "tgi" and r.version == "2.2.0" and r.measured["kv_tokens"] == 19056


def test_llama_cpp_compute_buffer_is_the_largest_live_set_not_a_sum():
    def buffer(n_ctx: int) -> float:
        r = ask(model="Meta-Llama-3-8B-Instruct", serving_engine="llama.cpp", quantization="gguf:q4_k_m",
                seq_len=n_ctx, gpus=[{"name": "RTX 4090"}],
                engine_options={"max_model_len": n_ctx, "max_num_seqs": 1})
        return r.memory.activation_peak_gib * 1024

    # short context: the f32 logits of 512 outputs and the final norm's output (258.5 MiB in llama.cpp's log)
    assert buffer(512) == pytest.approx(512 * (128256 + 4096) * 4 / 2**20, abs=0.01)
    # long context without flash attention: one layer's f32 KQ (n_ctx x 512 x 32 heads) takes over
    assert buffer(8192) == pytest.approx(560, rel=0.02) and buffer(16384) > 2 * buffer(8192) * 0.9


def test_llama_cpp_log_gives_the_format_and_name_of_print_meta():
    r = read_log("llm_load_print_meta: model ftype      = Q4_K - Medium\n"
                 "llm_load_print_meta: general.name     = Meta Llama 3.1 8B Instruct\n"
                 "llama_new_context_with_model: n_ctx      = 8192\n"
                 "llama_kv_cache_init:      CUDA0 KV buffer size =  1024.00 MiB\n"
                 "llama_new_context_with_model:      CUDA0 compute buffer size =   560.00 MiB")
    assert r is not None and r.kind == "llama.cpp"
    assert r.settings["quantization"] == "gguf:q4_k_m" and r.settings["model"] == "Meta Llama 3.1 8B Instruct"
    assert r.measured["kv_cache_gib"] == 1.0 and r.measured["activation_peak_gib"] == pytest.approx(0.547, abs=1e-3)


def test_a_v0_log_is_known_by_its_cpu_swap_blocks():
    r = read_log("INFO 02-26 09:54:02 model_runner.py:1115] Loading model weights took 5.2032 GB\n"
                 "INFO 02-26 09:54:05 worker.py:267] the current vLLM instance can use total_gpu_memory (8.00GiB) x "
                 "gpu_memory_utilization (0.70) = 5.60GiB\n"
                 "INFO 02-26 09:54:05 executor_base.py:111] # cuda blocks: 0, # CPU blocks: 4681")
    assert r is not None and r.kind == "vllm" and r.settings["vllm_use_v1"] is False


def test_tgi_before_3_caps_the_context_at_its_launcher_default():
    old = ask(model="Llama-3.1-8B", serving_engine="tgi", gpus=[{"name": "A100 80GB SXM"}],
              engine_options={"engine_version": "2.2.0"})
    new = ask(model="Llama-3.1-8B", serving_engine="tgi", gpus=[{"name": "A100 80GB SXM"}],
              engine_options={"engine_version": "3.0.1"})
    assert old.settings.max_model_len == 4096 and new.settings.max_model_len == 131072


WSL_3090 = ("[2025-02-04 05:21:33] server_args=ServerArgs(model_path='/m/DeepSeek-R1-Distill-Qwen-7B', "
            "mem_fraction_static=0.88)\n") + """[2025-02-04 05:21:40 TP0] Load weight begin. avail mem=22.76 GB
[2025-02-04 05:29:17 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=8.37 GB
[2025-02-04 05:29:17 TP0] KV Cache is allocated. K size: 2.82 GB, V size: 2.82 GB.
[2025-02-04 05:29:20 TP0] max_total_num_tokens=105531, context_len=131072"""


def test_sglang_log_without_a_version_gets_the_rules_of_its_date():
    assert read_log(WSL_3090).version.startswith("0.4.4")  # type: ignore[union-attr]
    assert read_log(SGLANG_TP).version.startswith("0.5.3")  # type: ignore[union-attr]  # October 2025
    assert read_log(WSL_3090.replace("2025-02-04", "2025-07-14")).version.startswith("0.4.7")  # type: ignore[union-attr]


def test_check_of_an_sglang_log_starts_from_the_free_memory_it_logged():
    # a desktop holds part of this 3090: the pool is (free at load) x 0.88 - weights, as profile_max_num_token has it
    out = check_log(WSL_3090, "RTX 3090")
    pool = next(c for c in out["components"] if c["component"] == "KV pool")
    assert out["measured"]["kv_cache_gib"] == 5.64 and out["measured"]["weights_gib"] == 14.39
    assert pool["ours"] == pytest.approx(22.76 * 0.88 - out["estimate"]["weights_gib"], abs=0.02)
    named_only = ask(model="deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", serving_engine="sglang",
                     gpus=[{"name": "RTX 3090"}], engine_options={"engine_version": "0.4.2",
                                                                  "gpu_memory_utilization": 0.88})
    assert named_only.memory.kv_pool_gib > pool["ours"] + 0.3  # the card's total, less what SGLang itself holds


def test_tgi_3_warmup_keeps_only_the_last_tokens_logits():
    def peak(version: str) -> float:
        r = ask(model="Llama-3.1-8B", serving_engine="tgi", gpus=[{"name": "A100 80GB SXM"}],
                engine_options={"engine_version": version, "max_num_batched_tokens": 8192})
        return r.memory.activation_peak_gib

    # REQUEST_LOGPROBS off by default from 3.0: no full-vocabulary logits of the 8192 warm-up tokens
    assert peak("2.4.1") - peak("3.0.0") == pytest.approx(4.0 * 8192 * 128256 / GIB, rel=0.01)


def test_bitsandbytes_weights_are_double_quantized_as_vllm_loads_them():
    bnb = ask(model="Qwen2.5-7B", serving_engine="vllm", quantization="bitsandbytes", gpus=[{"name": "RTX 4090"}],
              seq_len=4096)
    # 6.53e9 linear weights at 0.5 + 1/64 + 4/16384 B and 16-bit embeddings / lm_head (2 x 152064 x 3584):
    # vllm #13882 logs 5.20 GiB for Qwen2.5-7B-Instruct-bnb-4bit (5.45 at a single fp32 absmax per 64)
    assert bnb.memory.weights_gib == pytest.approx(5.20, abs=0.06)


def test_tgi_loads_a_tied_lm_head_as_a_second_copy():
    kwargs = {"model": "Gemma-3-27B", "gpus": [{"name": "H100 SXM"}], "seq_len": 4096}
    tgi = ask(serving_engine="tgi", engine_options={"engine_version": "3.3.4"}, **kwargs)
    vllm = ask(serving_engine="vllm", **kwargs)
    embedding = 262208 * 5376 * 2 / GIB  # Gemma 3's vocabulary x hidden, 16-bit
    assert tgi.memory.weights_gib - vllm.memory.weights_gib == pytest.approx(embedding, rel=0.01)


def test_v0_profiles_its_forward_eagerly_with_less_than_v1s_compiled_buffers():
    v0 = ask(model="Llama-3.1-8B", serving_engine="vllm", gpus=[{"name": "RTX 3090"}], seq_len=20000,
             engine_options={"engine_version": "0.6.4", "max_num_batched_tokens": 20000, "max_model_len": 20000})
    # the MLP's live set: residual and norm output beside gate_up and SiLU-and-mul's output (2 hidden + 3 ffn)
    assert v0.memory.activation_peak_gib == pytest.approx(20000 * 2 * (2 * 4096 + 3 * 14336) / GIB, rel=0.01)


def test_tensorrt_llm_sizes_its_kv_cache_from_the_memory_free_after_loading() -> None:
    """KvCacheConfig.free_gpu_memory_fraction (0.9) of what the loaded engine leaves, not vLLM's share of the card:
    a 70B in 16 bits on 2×A100 80GB leaves ~8 GiB a card, of which vLLM's rule keeps ~0 and TensorRT-LLM 90 %."""
    from engine.contract import estimate_request

    base = {"model": {"name": "Llama-3.1-70B"}, "method": "inference", "gpus": [{"name": "A100 80GB SXM", "count": 2}],
            "concurrency": 1, "prompt_len": 1024, "output_len": 256}
    out = estimate_request({**base, "serving_engine": "tensorrt-llm"})
    trt, card = out["serving"], out["fits"][0]["memory_gb"]
    vllm = estimate_request({**base, "serving_engine": "vllm"})["serving"]
    free = card - trt["weights_gib"] - trt["activation_peak_gib"] - trt["cuda_graph_gib"] - trt["non_torch_gib"]
    assert trt["kv_pool_gib"] == pytest.approx(0.9 * free, abs=0.1)
    assert trt["kv_pool_gib"] > vllm["kv_pool_gib"] + 3


def test_enforce_eager_captures_no_cuda_graphs() -> None:
    from engine.contract import estimate_request

    base = {"model": {"name": "Llama-3.1-8B"}, "method": "inference", "serving_engine": "vllm",
            "gpus": [{"name": "H100 SXM", "count": 1}]}
    graphs = estimate_request(base)["serving"]["cuda_graph_gib"]
    eager = estimate_request({**base, "enforce_eager": True})["serving"]
    assert graphs > 0.3 and eager["cuda_graph_gib"] == 0.0

"""Serving engines: vLLM V0/V1 defaults, SGLang's static fraction, TGI, llama.cpp offload, HF generate."""

from __future__ import annotations

import pytest

from engine.schema import Request
from engine.serving import serve
from engine.serving.profile import batch_defaults, family, weight_format


def ask(**fields):
    data = {"method": "inference", "serving_engine": "vllm", **fields}
    if isinstance(data.get("model"), str):
        data["model"] = {"name": data["model"]}
    return serve(Request.model_validate(data))


def test_engine_version_picks_v0_or_v1():
    assert family("vllm", "0.6.6") == "vllm-v0"
    assert family("vllm", "0.19.0 (V1)") == "vllm-v1"
    assert family("vllm", "0.8.5 (V0 path)") == "vllm-v0"
    assert family("vllm", None) == "vllm-v1"
    assert family("vllm", "0.9.0", 7.5) == "vllm-v0"  # a T4 falls back to V0 before V0's removal


def test_vllm_batch_defaults_by_memory_and_name():
    assert batch_defaults("vllm-v1", 79.19, "H100 SXM", 8192) == (8192, 1024)
    assert batch_defaults("vllm-v1", 79.19, "A100 80GB SXM", 8192) == (2048, 256)  # A100 excluded
    assert batch_defaults("vllm-v1", 23.6, "RTX 4090", 8192) == (2048, 256)
    assert batch_defaults("vllm-v0", 79.19, "H100 SXM", 8192) == (8192, 256)  # max(max_model_len, 2048)
    assert batch_defaults("vllm-v0", 79.19, "H100 SXM", 65536) == (2048, 256)  # chunked prefill past 32k


def test_formats_from_what_requests_say():
    assert weight_format("fp8 (compressed-tensors, fp8-dynamic)", None, "vllm") == "fp8"
    assert weight_format("int4 w4a16", None, "vllm") == "gptq"
    assert weight_format("int8 w8a8 (compressed-tensors)", None, "vllm") == "int8"
    assert weight_format("gguf:q4_k_m", None, "llama.cpp") == "gguf:q4_k_m"
    assert weight_format(None, None, "ollama") == "gguf:q4_k_m"
    assert weight_format(None, 4, "vllm") == "awq"


def test_vllm_kv_pool_is_the_budget_less_weights_peak_and_non_torch():
    r = ask(model="Llama-3.1-8B", seq_len=8192, gpus=[{"name": "H100 SXM", "total_gib": 79.19}],
            engine_options={"gpu_memory_utilization": 0.95, "engine_version": "0.19.0"})
    m = r.memory
    assert m.budget_gib == pytest.approx(0.95 * 79.19)
    assert m.kv_pool_gib == pytest.approx(m.budget_gib - m.weights_gib - m.activation_peak_gib - m.non_torch_gib)
    assert not m.cuda_graphs_in_budget  # outside the budget before 0.21
    newer = ask(model="Llama-3.1-8B", seq_len=8192, gpus=[{"name": "H100 SXM", "total_gib": 79.19}],
                engine_options={"gpu_memory_utilization": 0.95, "engine_version": "0.21.0"})
    assert newer.memory.cuda_graphs_in_budget
    assert newer.memory.kv_pool_gib == pytest.approx(m.kv_pool_gib - m.cuda_graph_gib)


def test_activation_peak_follows_the_batch_and_the_vocabulary_not_the_size():
    small = ask(model="Llama-3.1-8B", seq_len=8192, gpus=[{"name": "H100 SXM"}]).memory.activation_peak_gib
    big = ask(model="Llama-3.1-70B", seq_len=8192, tensor_parallel=4,
              gpus=[{"name": "H100 SXM", "count": 4}]).memory.activation_peak_gib
    assert big == pytest.approx(small, rel=0.1)  # same vocabulary, same profiled batch
    gemma = ask(model="Gemma-2-9B", seq_len=8192, gpus=[{"name": "H100 SXM"}]).memory.activation_peak_gib
    assert gemma > 1.5 * small  # 256k vocabulary
    fewer = ask(model="Llama-3.1-8B", seq_len=8192, gpus=[{"name": "H100 SXM"}],
                engine_options={"max_num_seqs": 128}).memory.activation_peak_gib
    assert fewer < small


def test_non_torch_memory_grows_with_tensor_parallelism():
    one = ask(model="Llama-3.1-8B", gpus=[{"name": "H100 SXM"}]).memory.non_torch_gib
    two = ask(model="Llama-3.1-8B", tensor_parallel=2, gpus=[{"name": "H100 SXM", "count": 2}]).memory.non_torch_gib
    assert two > one


def test_sglang_static_fraction_covers_weights_and_kv():
    r = ask(model="Qwen2.5-32B", serving_engine="sglang", tensor_parallel=4, seq_len=8192,
            gpus=[{"name": "H100 SXM", "count": 4}], engine_options={"engine_version": "0.4.6"})
    assert r.settings.gpu_memory_utilization == 0.85  # server_args.py default at TP 4 (before the heuristic)
    m = r.memory
    # profile_max_num_token: (free before loading) x mem_fraction_static - weights; what the process held before
    # loading (CUDA context, NCCL) is not in the fraction's base
    assert m.budget_gib == pytest.approx(m.non_torch_gib + (r.gpu.total_gib - m.non_torch_gib) * 0.85)
    assert m.kv_pool_gib == pytest.approx(m.budget_gib - m.weights_gib - m.non_torch_gib)
    assert r.command[:3] == ["python", "-m", "sglang.launch_server"]


def test_tgi_answers_with_its_launcher():
    r = ask(model="Llama-3.1-8B", serving_engine="tgi", seq_len=4096, gpus=[{"name": "A100 80GB SXM"}])
    assert r.memory.kv_pool_gib > 0 and r.command[0] == "text-generation-launcher"


def test_llama_cpp_puts_layers_on_the_gpu_and_the_rest_in_host_ram():
    fits = ask(model="Llama-3.1-8B", serving_engine="llama.cpp", quantization="gguf:q4_k_m", seq_len=8192,
               gpus=[{"name": "RTX 4090"}])
    assert fits.settings.gpu_layers == 32 and fits.fits
    big = ask(model="Llama-3.1-70B", serving_engine="llama.cpp", quantization="gguf:q4_k_m", seq_len=8192,
              gpus=[{"name": "RTX 4090"}])
    assert 0 < big.settings.gpu_layers < 80 and big.memory.host_ram_gib > 20
    assert big.command[0] == "llama-server" and "-ngl" in big.command


def test_hf_generate_is_todays_memory_model():
    r = ask(model="Llama-3.1-8B", serving_engine="hf", concurrency=4, seq_len=4096,
            gpus=[{"name": "A100 80GB SXM"}])
    assert r.fits and r.memory.kv_pool_gib == pytest.approx(4 * 4096 * 32 * 2 * 8 * 128 * 2 / 2**30, rel=1e-3)


def test_apple_unified_memory_holds_everything_in_one_ram():
    def mac(gb):
        return ask(model="Llama-3.1-70B", serving_engine="ollama", concurrency=2, seq_len=8192,
                   gpus=[{"name": "M2 Max", "memory_gb": gb}])
    small, big = mac(32), mac(192)
    assert small.gpu.unified_memory and not small.fits  # 40 GiB of Q4_K_M weights do not fit in 32 GB of RAM
    assert big.fits and big.settings.gpu_layers == 80


def test_hf_generate_is_slower_than_vllm_by_its_per_token_overhead():
    def speed(engine):
        return ask(model="Qwen2.5-14B", serving_engine=engine, concurrency=1, prompt_len=1, output_len=2048,
                   gpus=[{"name": "A100 80GB SXM"}]).speed.per_user_tokens_s
    vllm, hf = speed("vllm"), speed("hf")
    assert hf < vllm
    assert 1 / hf - 1 / vllm == pytest.approx(0.019, rel=0.05)  # serving.toml hf_step_overhead_ms


def test_every_serving_table_says_where_its_figures_come_from():
    from engine.serving.profile import data

    tables = [(k, v) for k, v in data().items() if isinstance(v, dict) and k != "formats"]
    tables += [(f"vllm.{k}", data()["vllm"][k]) for k in ("v0", "v1", "forward", "non_torch", "cuda_graphs",
                                                           "batch_defaults")]
    missing = [name for name, table in tables if isinstance(table, dict) and "source" not in table]
    missing += [f"formats.{k}" for k, spec in data()["formats"].items() if "source" not in spec]
    assert tables and not missing, missing


def test_a_multimodal_checkpoint_loads_its_vision_tower_beside_the_decoder() -> None:
    from engine.catalog import architecture
    from engine.schema import ModelRef
    from engine.serving.weights import rank_weights, vision_tower_bytes

    gemma = architecture(ModelRef(name="google/gemma-3-27b-it"))
    tower = vision_tower_bytes(gemma, "bf16", 1, "vllm")
    assert 0.75 * 2**30 < tower < 0.85 * 2**30  # SigLIP so400m + projector, 16-bit
    assert vision_tower_bytes(gemma, "bf16", 2, "vllm") == tower / 2  # sharded over TP
    assert vision_tower_bytes(gemma, "fp8", 1, "vllm") == tower  # the tower stays 16-bit
    assert vision_tower_bytes(gemma, "gguf:q4_k_m", 1, "llama.cpp") == 0.0  # only with an mmproj file
    text_only = architecture(ModelRef(name="google/gemma-3-1b-it"))
    assert vision_tower_bytes(text_only, "bf16", 1, "vllm") == 0.0
    with_tower = rank_weights(gemma, "bf16", 1, 1, "vllm").first
    assert with_tower - rank_weights(gemma, "bf16", 1, 1, "hf").first > 0.7 * 2**30

"""vLLM V1 by release: the 0.7.x V1 engine (VLLM_USE_V1=1) profiles without the sampler and with its own batch
defaults; before 0.9.1 the KV budget also pays for the CUDA context (serving.toml [vllm.v1])."""

from __future__ import annotations

import pytest

from engine.catalog.shapes import architecture
from engine.schema import ModelRef, Request
from engine.serving import serve
from engine.serving.budget import GIB, forward_bytes
from engine.serving.profile import batch_defaults, data, family

H100 = [{"name": "H100 SXM", "total_gib": 79.19}]


def ask(version: str, use_v1: bool | None = True, gpus=H100, model: str = "Llama-3.1-8B", **options):
    opts = {"engine_version": version, "gpu_memory_utilization": 0.9, **options}
    if use_v1 is not None:
        opts["vllm_use_v1"] = use_v1
    return serve(Request.model_validate({"method": "inference", "serving_engine": "vllm", "model": {"name": model},
                                         "seq_len": 8192, "gpus": gpus, "engine_options": opts}))


def test_vllm_use_v1_on_0_7_is_the_v1_engine_and_0_7_alone_is_v0():
    assert family("vllm", "0.7.3", 9.0, True) == "vllm-v1"
    assert family("vllm", "0.7.3", 9.0) == "vllm-v0"
    assert family("vllm", "0.8.2", 9.0, False) == "vllm-v0"  # VLLM_USE_V1=0 on a release where V1 is the default


def test_0_7_v1_defaults_follow_the_device_name_and_take_1024_sequences():
    assert batch_defaults("vllm-v1", 79.19, "H100 SXM", 8192, "0.7.3") == (8192, 1024)
    assert batch_defaults("vllm-v1", 79.19, "A100 80GB SXM", 8192, "0.7.3") == (2048, 1024)
    assert batch_defaults("vllm-v1", 23.6, "RTX 4090", 8192, "0.7.2") == (2048, 1024)
    assert batch_defaults("vllm-v1", 23.6, "RTX 4090", 8192, "0.8.5") == (2048, 256)  # by memory from 0.8
    r = ask("0.7.3", gpus=[{"name": "L40S"}])
    assert (r.settings.max_num_batched_tokens, r.settings.max_num_seqs) == (2048, 1024)


def test_0_7_v1_profiles_the_forward_and_one_logit_row_per_request_not_the_sampler():
    old, new = ask("0.7.3"), ask("0.8.0")
    arch = architecture(ModelRef(name="Llama-3.1-8B"))
    # 0.8.0 ran the dummy sampler over 1024 rows of fp32 logits, sorted whole for top-k/top-p as V0's sampler does:
    # V0's copies of 1024 x vocab x 4 B
    copies = float(data()["vllm"]["v0"]["sampler_fp32_copies"])
    assert new.memory.activation_peak_gib * GIB == pytest.approx(copies * 4 * 1024 * arch.vocab, rel=0.01)
    # 0.7.3: the larger of the forward over 8192 tokens and 1024 16-bit logit rows (here the forward)
    forward = forward_bytes(arch, 8192, 1)
    assert forward > 2.0 * 1024 * arch.vocab
    assert old.memory.activation_peak_gib * GIB == pytest.approx(forward, rel=0.01)
    assert old.memory.activation_peak_gib < new.memory.activation_peak_gib


def test_v1_before_0_9_1_counts_the_cuda_context_against_the_budget():
    context = float(data()["sglang"]["held_at_load_gib"])
    old, new = ask("0.9.0"), ask("0.9.1")
    assert old.memory.non_torch_gib == pytest.approx(new.memory.non_torch_gib + context)
    assert old.memory.kv_pool_gib == pytest.approx(new.memory.kv_pool_gib - context, abs=0.01)
    assert ask("0.8.5", use_v1=False).memory.non_torch_gib == pytest.approx(new.memory.non_torch_gib)  # V0: not


def test_a_v1_log_of_0_7_is_read_as_v1_and_sized_by_the_0_7_rules():
    from engine.configs.logcheck import check_log

    log = ("INFO 03-05 19:35:10 core.py:50] Initializing a V1 LLM engine (v0.7.3) with config: "
           "model='meta-llama/Llama-3.1-8B-Instruct', dtype=torch.bfloat16, max_seq_len=8192, "
           "tensor_parallel_size=1, pipeline_parallel_size=1\n"
           "INFO 03-05 19:36:05 gpu_model_runner.py:1100] Loading model weights took 14.99 GB\n")
    out = check_log(log, "H100")
    assert out is not None and out["estimate"]["engine_family"] == "vllm-v1"
    ours = ask("0.7.3")
    assert out["estimate"]["activation_peak_gib"] == pytest.approx(ours.memory.activation_peak_gib, abs=0.02)


def test_tensorrt_llm_versions_are_not_read_as_vllm_releases():
    trt = serve(Request.model_validate({"method": "inference", "serving_engine": "tensorrt-llm",
                                        "model": {"name": "Llama-3.1-8B"}, "seq_len": 8192, "gpus": H100,
                                        "engine_options": {"engine_version": "0.17.0"}}))
    newest = serve(Request.model_validate({"method": "inference", "serving_engine": "tensorrt-llm",
                                           "model": {"name": "Llama-3.1-8B"}, "seq_len": 8192, "gpus": H100}))
    assert trt.memory.activation_peak_gib == pytest.approx(newest.memory.activation_peak_gib)
    assert trt.settings.max_num_seqs == newest.settings.max_num_seqs


def test_a_pasted_launch_line_with_vllm_use_v1_says_which_engine():
    from engine.configs import read_config

    on = read_config("VLLM_USE_V1=1 vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192")
    off = read_config("VLLM_USE_V1=0 HF_TOKEN=hf_abcdefghijklmnopqrs vllm serve Qwen/Qwen2.5-7B-Instruct")
    plain = read_config("vllm serve Qwen/Qwen2.5-7B-Instruct")
    assert on.request is not None and on.request.engine_options is not None
    assert on.request.engine_options.vllm_use_v1 is True and not on.ignored
    assert off.request is not None and off.request.engine_options is not None
    assert off.request.engine_options.vllm_use_v1 is False
    assert off.secrets == 1 and "hf_abcdefghijklmnopqrs" not in repr(off)
    assert plain.request is not None and (plain.request.engine_options is None
                                          or plain.request.engine_options.vllm_use_v1 is None)


def test_on_rocm_the_graphs_stay_outside_the_budget_in_every_release():
    mi300x = [{"name": "MI300X"}]
    cuda, rocm = ask("0.21.0", use_v1=None), ask("0.21.0", use_v1=None, gpus=mi300x)
    assert cuda.memory.cuda_graphs_in_budget and not rocm.memory.cuda_graphs_in_budget
    assert rocm.gpu is not None and rocm.gpu.rocm and not (cuda.gpu and cuda.gpu.rocm)
    m = rocm.memory
    assert m.kv_pool_gib == pytest.approx(m.budget_gib - m.weights_gib - m.activation_peak_gib - m.non_torch_gib)


@pytest.mark.parametrize(("version", "sorted_whole"), [("0.9.2", True), ("0.15.1", True), ("0.16.0", True),
                                                       ("0.17.0", False), ("0.19.0", False), (None, False)])
def test_the_dummy_sampler_sorts_the_vocabulary_until_the_triton_top_k_top_p_kernel(version: str | None,
                                                                                    sorted_whole: bool) -> None:
    """Before 0.17 the profile's top-k/top-p ran PyTorch's sort (V0's copies); from 0.17 the Triton kernel
    (#33538), the 0.19 copies; no version is the newest release."""
    r = ask(version, use_v1=None, model="Qwen3-14B") if version else serve(Request.model_validate(
        {"method": "inference", "serving_engine": "vllm", "model": {"name": "Qwen3-14B"}, "seq_len": 8192,
         "gpus": H100, "engine_options": {"gpu_memory_utilization": 0.9}}))
    arch = architecture(ModelRef(name="Qwen3-14B"))
    rows = min(r.settings.max_num_seqs, r.settings.max_num_batched_tokens)
    copies = float(data()["vllm"]["v0" if sorted_whole else "v1"]["sampler_fp32_copies"])
    assert r.memory.activation_peak_gib * GIB >= copies * 4 * rows * arch.vocab * 0.99
    if not sorted_whole:
        v0 = float(data()["vllm"]["v0"]["sampler_fp32_copies"])
        assert r.memory.activation_peak_gib * GIB < v0 * 4 * rows * arch.vocab

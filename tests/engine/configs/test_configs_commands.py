"""Commands and configs run as pasted: the checkpoint in the format asked, the flags the GPU needs, and `check`
reads real launch lines (format from the repository name, caps that are not demand, the engines' short flags)."""

from __future__ import annotations

import json

import pytest

from engine.catalog import find_model
from engine.catalog.checkpoints import checkpoints, format_of_repo
from engine.configs import check, config_for, read_config
from engine.parse import parse


def _config(question: str, target: str | None = None):
    return config_for(parse(question), target)


def test_every_checkpoint_is_a_catalog_model_with_its_hub_page():
    for c in checkpoints():
        assert find_model(c.base) is not None and find_model(c.base).name == c.base, c
        assert c.source == f"https://huggingface.co/{c.repo}", c
        assert format_of_repo(c.repo) == ("gguf" if c.format == "gguf" else c.format), c


@pytest.mark.parametrize("question, repo", [
    ("инфер llama 3.1 70b awq на 2х4090 vllm", "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4"),
    ("serve Qwen2.5-72B AWQ on 2x A100 80GB with vllm", "Qwen/Qwen2.5-72B-Instruct-AWQ"),
    ("vllm llama-3.1-8b gptq на 3090", "hugging-quants/Meta-Llama-3.1-8B-Instruct-GPTQ-INT4"),
    ("sglang qwen2.5 32b awq на l40s", "Qwen/Qwen2.5-32B-Instruct-AWQ"),
])
def test_a_quantized_serving_config_loads_a_checkpoint_in_that_format(question, repo):
    out = _config(question)
    assert repo in out.command.split()
    assert "--quantization awq" not in out.command and "--quantization gptq" not in out.command
    assert any(n.startswith(f"checkpoint:{repo}") for n in out.notes)


def test_no_known_checkpoint_gives_a_placeholder_and_says_so():
    out = _config("инфер llama 2 13b awq на 4090 vllm")
    assert out.command.split()[2].startswith("your-org/") and "--quantization" not in out.command
    assert any(n.startswith("checkpoint_missing:awq") for n in out.notes)


def test_fp8_without_a_checkpoint_quantizes_on_load():
    out = _config("serve Llama-2-7B fp8 on H100 vllm")
    assert "meta-llama/Llama-2-7b-chat-hf" in out.command and "--quantization fp8" in out.command


@pytest.mark.parametrize("question", ["vllm llama 3.1 8b на t4", "serve Qwen2.5-7B on V100 32GB with sglang"])
def test_gpus_without_bf16_get_dtype_half(question):
    assert "--dtype half" in _config(question).command


def test_gpus_with_bf16_get_no_dtype_flag():
    assert "--dtype" not in _config("vllm llama 3.1 8b на h100").command


def test_llama_cpp_config_names_a_gguf_repository():
    out = _config("инфер llama 3.1 70b на 2х4090 llama.cpp q4")
    assert "-hf bartowski/Meta-Llama-3.1-70B-Instruct-GGUF:Q4_K_M" in out.command and "-ngl 999" in out.command


def test_serving_answer_command_offloads_every_layer_and_keeps_file_names():
    from engine.serving import serve

    r = serve(parse("llama.cpp llama 3.1 8b q4 на 4090"))
    argv = r.command
    assert argv[argv.index("-ngl") + 1] == "999"
    assert argv[argv.index("-hf") + 1] == "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M"
    r = serve(parse("llama.cpp models/qwen2.5-7b-instruct-q4_k_m.gguf на 4090"))
    if "-m" in r.command:
        assert not any(".gguf-" in a for a in r.command)


@pytest.mark.parametrize("question, repo", [
    ("vllm llama 3.1 70b awq на h100", "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4"),
    ("инфер qwen2.5 72b awq на 2 a100 vllm", "Qwen/Qwen2.5-72B-Instruct-AWQ"),
])
def test_serving_answer_command_names_the_checkpoint(question, repo):
    from engine.serving import serve

    argv = serve(parse(question)).command
    assert repo in argv and "awq" not in [a.lower() for a in argv if not a.startswith(("Qwen/", "hugging"))]


def _request(line: str) -> dict:
    return check(line)["request"]


@pytest.mark.parametrize("line, quant, bits", [
    ("vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ -tp 2 --max-model-len 32768", "awq", 4),
    ("vllm serve Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "gptq", 4),
    ("vllm serve RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic --tensor-parallel-size 2", "fp8", 8),
    ("python -m sglang.launch_server --model-path unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit", "nf4", 4),
    ("llama-server -m models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 8192 -ngl 99", "gguf:q4_k_m", 4),
    ("llama-server -hf bartowski/Qwen2.5-7B-Instruct-GGUF:Q8_0", "gguf:q8_0", 8),
])
def test_check_reads_the_weight_format_from_the_repository(line, quant, bits):
    r = _request(line)
    assert (r.get("quantization"), r.get("bits")) == (quant, bits)


def test_check_of_awq_72b_counts_4bit_weights():
    answer = check("vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ -tp 2 --max-model-len 32768")
    assert answer["estimate"]["per_gpu"]["weights"] < 25  # 72B at 4 bits over 2 GPUs, not 67 GiB of bf16


def test_max_num_seqs_is_a_cap_not_a_demand():
    """vLLM starts when the pool holds ONE request of max-model-len (vllm/v1/core/kv_cache_utils.py
    check_enough_kv_cache_memory); max-num-seqs only caps the batch."""
    capped = check("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768 --max-num-seqs 256")
    plain = check("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768")
    assert capped["request"].get("concurrency") is None
    assert capped["request"]["engine_options"]["max_num_seqs"] == 256
    # the cap moves only vLLM's profiling run (its sampler over max-num-seqs), never the KV demand: within 5 %
    kv_capped, kv_plain = capped["estimate"]["per_gpu"]["kv_cache"], plain["estimate"]["per_gpu"]["kv_cache"]
    assert abs(kv_capped - kv_plain) <= 0.05 * kv_plain


def test_sglang_short_tp_flag():
    r = _request("python -m sglang.launch_server --model-path Qwen/Qwen2.5-32B-Instruct --tp 4")
    assert r["tensor_parallel"] == 4 and r["gpus"][0]["count"] == 4
    assert not check("python -m sglang.launch_server --model-path Qwen/Qwen2.5-32B-Instruct --tp 4")["ignored"]


@pytest.mark.parametrize("line, model, method", [
    ("tune run lora_finetune_single_device --config llama3_1/8B_lora", "Llama-3.1-8B", "lora"),
    ("tune run --nproc_per_node 4 full_finetune_distributed --config qwen2_5/7B_full", "Qwen2.5-7B", "full"),
    ("tune run lora_finetune_single_device --config llama3_2/3B_qlora_single_device", "Llama-3.2-3B", "qlora"),
])
def test_tune_run_config_names_the_model(line, model, method):
    answer = check(line)
    assert answer["estimate"] is not None, answer
    assert answer["estimate"]["request"]["model"]["name"] == model and answer["request"]["method"] == method


def test_auth_switch_is_not_a_secret_but_a_token_is():
    switch = check("base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nhf_use_auth_token: true\n", "a.yaml")
    assert "secrets_dropped" not in switch and "hf_use_auth_token" in switch["no_effect"]
    token = check("base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nhf_token: hf_" + "a" * 30 + "\n", "a.yaml")
    assert token["secrets_dropped"] == 1


@pytest.mark.parametrize("question, template", [
    ("lora llama 3.1 8b на a100 llama-factory", "llama3"),
    ("лора qwen2.5 7b на 4090 llamafactory", "qwen"),
    ("lora mistral 7b on a100 with llama-factory", "mistral"),
])
def test_llama_factory_template_follows_the_model_family(question, template):
    text = _config(question, "llama-factory").files[0].text
    assert f"template: {template}\n" in text


def test_llama_factory_dpo_names_a_preference_dataset():
    text = _config("dpo lora llama 3.1 8b на a100", "llama-factory").files[0].text
    assert "stage: dpo" in text and "dataset: dpo_en_demo" in text


def test_torchtune_uses_the_recipes_chunked_loss():
    out = _config("lora llama 3.1 8b на 4090 torchtune", "torchtune")
    assert "torch.nn.CrossEntropyLoss" not in out.command
    assert "CEWithChunkedOutputLoss" in out.command or "LinearCrossEntropyLoss" in out.command
    read = read_config(out.files[0].text, out.files[0].name).request
    assert read is not None and read.model.name


def test_deepspeed_on_one_gpu_partitions_nothing():
    out = _config("full qwen2.5 0.5b на 4090 deepspeed", "deepspeed")
    ds = json.loads(next(f.text for f in out.files if f.name.endswith(".json")))
    zero = ds["zero_optimization"]
    assert zero["stage"] in (0,) or "offload_optimizer" in zero


def test_accelerate_config_keeps_the_context_parallel_the_answer_assumed():
    out = _config("full 8b 64k контекст cp 4 на 8 h100", "accelerate")
    text = next(f.text for f in out.files if f.name == "accelerate.yaml")
    assert "distributed_type: FSDP" in text and "parallelism_config_cp_size: 4" in text
    read = read_config(text + "\n", "accelerate.yaml")
    assert read.request is not None

"""Readers on configs as users write them, hostile input, secrets, and the keys each reader accepts against the
tools' own option lists."""

from __future__ import annotations

import ast
import inspect

import pytest
from configs_golden_cases import AXOLOTL, DEEPSPEED, HF_JSON, LLAMA_FACTORY, PY_TRL, TORCHTUNE_YAML, TRL_YAML
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.configs import check, read_config
from engine.configs.options import known
from engine.configs.readers import cmdline, keys, mappings, python, serving
from engine.configs.safety import ERROR_KEYS, MAX_BYTES
from engine.configs.serving_flags import LLAMA_SERVER, SGLANG, TGI, VLLM


def test_axolotl_as_users_write_it():
    r = read_config(AXOLOTL, "config.yml")
    q = r.request
    assert r.format == "axolotl" and q.framework == "axolotl"
    assert (q.model.name, q.method, q.bits, q.lora_rank, q.lora_targets) == (
        "NousResearch/Meta-Llama-3-8B", "qlora", 4, 32, "qv")
    assert (q.seq_len, q.batch_size, q.optimizer, q.sharding, q.mixed_precision) == (
        4096, 2, "paged_adamw_8bit", "zero2", "amp")
    assert q.gradient_checkpointing is True and q.flash_attention is True and q.fused_loss is False
    assert "some_new_option" in r.ignored
    assert "sample_packing" not in r.ignored  # no bearing on the estimate's memory
    assert r.secrets == 1 and any("wandb_api_key" in i for i in r.ignored)
    assert "0123456789abcdef" not in repr(r)


def test_llama_factory_as_users_write_it():
    r = read_config(LLAMA_FACTORY, "train.yaml")
    q = r.request
    assert r.format == "llama-factory"
    assert (q.method, q.stage, q.lora_rank, q.lora_targets, q.seq_len) == ("lora", "dpo", 8, "all_linear", 2048)
    assert (q.sharding, q.offload, q.fused_loss, q.gradient_checkpointing) == ("zero3", True, True, True)
    assert r.secrets == 1 and "hf_AbCd" not in repr(r)


def test_hf_arguments_json():
    q = read_config(HF_JSON, "args.json").request
    assert (q.model.name, q.method, q.batch_size, q.optimizer, q.seq_len) == (
        "mistralai/Mistral-7B-v0.1", "full", 4, "adamw_fused", 1024)  # "optim": "adamw_torch_fused"
    assert (q.sharding, q.offload, q.gradient_checkpointing) == ("fsdp", True, True)


def test_deepspeed_json_auto_values_and_unknown_keys():
    r = read_config(DEEPSPEED, "ds_config.json")
    q = r.request
    assert r.format == "deepspeed" and q.framework == "deepspeed"
    assert (q.sharding, q.offload, q.batch_size) == ("zero3", True, None)  # "auto": the Trainer decides
    assert "made_up_option" in r.ignored and "wall_clock_breakdown" not in r.ignored
    assert "wall_clock_breakdown" in r.no_effect  # timing logs: no bearing on memory


@pytest.mark.parametrize(("line", "want"), [
    ("accelerate launch --num_processes 4 --use_fsdp --fsdp_offload_params true --mixed_precision bf16 train.py "
     "--model_name_or_path meta-llama/Llama-3.1-8B --per_device_train_batch_size 2 --max_length 4096",
     {"sharding": "fsdp", "offload": True, "batch_size": 2, "seq_len": 4096, "gpus": [{"name": None, "count": 4,
                                                                                         "memory_gb": None,
                                                                                         "total_gib": None}]}),
    ("torchrun --nproc-per-node=8 --nnodes 2 train.py --deepspeed ds_zero3.json --per_device_train_batch_size 1",
     {"sharding": "zero3", "batch_size": 1}),
    ("deepspeed --num_gpus 4 train.py --deepspeed zero3_bf16_cpuoffload_all.json --optim adamw_bnb_8bit",
     {"sharding": "zero3", "offload": True, "optimizer": "adamw_8bit", "framework": "deepspeed"}),
    ("trl dpo --model_name_or_path Qwen/Qwen2.5-0.5B --use_peft --lora_r 8 --load_in_4bit",
     {"stage": "dpo", "method": "qlora", "bits": 4, "lora_rank": 8, "framework": "trl"}),
    ("tune run --nproc_per_node 2 lora_finetune_distributed --config llama3_1/8B_lora batch_size=4 "
     "model.lora_rank=32 model.apply_lora_to_mlp=False", {"method": "lora", "sharding": "fsdp", "batch_size": 4,
                                                          "lora_rank": 32, "mixed_precision": "pure_bf16"}),
    ("vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ --tensor-parallel-size 4 --max-model-len 32768 "
     "--gpu-memory-utilization 0.92 --kv-cache-dtype fp8_e4m3 --quantization awq --max-num-seqs 64",
     {"method": "inference", "serving_engine": "vllm", "tensor_parallel": 4, "seq_len": 32768,
      "kv_cache_dtype": "fp8", "quantization": "awq", "concurrency": None}),
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp-size 2 --context-length 8192",
     {"serving_engine": "sglang", "tensor_parallel": 2, "seq_len": 8192}),
    ("llama-server -m models/qwen2.5-7b-instruct-q4_k_m.gguf -c 16384 -np 4 -ngl 99 -ctk q8_0 -ctv q8_0",
     {"serving_engine": "llama.cpp", "quantization": "gguf:q4_k_m", "seq_len": 4096, "concurrency": 4,
      "kv_cache_dtype": "int8"}),
])
def test_command_lines(line, want):
    q = read_config(line).request
    got = q.model_dump()
    assert {k: got[k] for k in want} == want


def test_torchrun_counts_gpus_across_nodes():
    q = read_config("torchrun --nproc-per-node=8 --nnodes 2 train.py --bf16").request
    assert q.gpus[0].count == 16


def test_multiline_command_with_comment_and_continuations():
    text = ("# my launch\nCUDA_VISIBLE_DEVICES=0,1 vllm serve org/m \\\n  --tensor-parallel-size 2 \\\n"
            "  --max-model-len 4096\n")
    q = read_config(text, "serve.sh").request
    assert (q.tensor_parallel, q.seq_len, q.model.name) == (2, 4096, "org/m")


def test_python_script_literals_only():
    script = PY_TRL
    r = read_config(script, "train.py")
    q = r.request
    assert (q.model.name, q.method, q.lora_targets, q.batch_size, q.seq_len, q.optimizer) == (
        "meta-llama/Llama-3.2-1B", "lora", "qkvo", 8, 512, "adamw_8bit")
    assert q.lora_rank is None and "LoraConfig.r (not a literal)" in r.ignored




def test_torchtune_recipe_config_yaml():
    r = read_config(TORCHTUNE_YAML, "8B_qlora_single_device.yaml")
    q = r.request
    assert r.format == "torchtune" and q.framework == "torchtune"
    assert (q.method, q.bits, q.lora_rank, q.lora_targets, q.batch_size) == (
        "qlora", 4, 8, "attn_mlp_custom:q,v,o,gate,up,down", 2)
    assert (q.fused_loss, q.mixed_precision, q.optimizer, q.gradient_checkpointing) == (
        True, "pure_bf16", "adamw", True)
    assert "enable_activation_offloading" in r.ignored and "tokenizer.path" not in r.ignored


def test_a_token_where_a_model_name_goes_is_dropped():
    r = read_config("vllm serve hf_AAAABBBBCCCCDDDDEEEEFFFF1234 --max-model-len 4096")
    assert r.secrets == 1 and r.request.model is None and "hf_AAAA" not in repr(r)


# ---------------------------------------------------------------- hostile input


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9))


@pytest.mark.parametrize(("data", "error"), [
    ("", "empty"),
    ("   \n\n", "empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR", "binary"),
    (b"\xff\xfe\xfa not utf-8", "binary"),
    ("x: " + "a" * (MAX_BYTES + 10), "too_large"),
    (BOMB, "yaml_bomb"),
    ("[" * 5000 + "]" * 5000, "too_deep"),
    ("a:\n" + "".join("  " * i + f"b{i}:\n" for i in range(1, 60)) + "  " * 60 + "c: 1", "too_deep"),
    ("micro_batch_size: " + "9" * 5000, "huge_number"),
    ("base_model: x\nmicro_batch_size: 99999999999999999999999", "huge_number"),
    ('{"train_micro_batch_size_per_gpu": ' + "9" * 5000 + "}", "huge_number"),
    ("!!python/object/apply:os.system ['echo hi']", "invalid_yaml"),
    ("key: [unclosed", "invalid_yaml"),
    ("- just\n- a list", "not_a_mapping"),
    ("colour: blue\nsize: 3", "unknown_format"),
    ("{not json", "invalid_json"),
])
def test_bad_input_gives_an_error_key(data, error):
    r = read_config(data)
    assert r.error == error and r.request is None


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.binary(max_size=400), st.text(max_size=400),
                 st.lists(st.sampled_from(["vllm serve", "--tensor-parallel-size", "-c", "0", "1e9", "x", "=", "'",
                                           "base_model:", "adapter: lora", "{", "}", "[", "&a", "*a", "\\\n",
                                           "torchrun", "--nproc-per-node", "import trl", "SFTConfig(", ")"]),
                          max_size=30).map(" ".join)))
def test_any_input_gives_a_result_or_an_error_key(data):
    r = read_config(data)
    assert (r.request is None) == (r.error is not None) or r.request is not None
    if r.error:
        assert r.error in ERROR_KEYS


def test_a_few_aliases_are_fine():
    text = "base_model: x\nlora_r: &r 16\nlora_alpha: *r\nmicro_batch_size: 1\n"
    assert read_config(text).request.lora_rank == 16


def test_out_of_range_values_are_listed_not_used():
    r = read_config("base_model: x\nsequence_len: 0\nmicro_batch_size: 2\n")
    assert r.request.seq_len is None and r.request.batch_size == 2
    assert "seq_len (value out of range)" in r.ignored


def test_secrets_are_never_echoed():
    token = "hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa987654"
    texts = [f"base_model: x\nhf_token: {token}\n", f"HF_TOKEN={token} vllm serve org/m --api-key {token}",
             f'{{"model_name_or_path": "x", "hub_token": "{token}", "{token}": 1}}',
             f"llama-server -m a.gguf --hf-token {token} -c 4096",
             f"from trl import SFTConfig\nargs = SFTConfig(hub_token='{token}', max_length=128)\n"]
    for text in texts:
        out = check(text)
        assert token not in repr(out), text
        assert out["secrets_dropped"] >= 1, text


# ---------------------------------------------------------------- accepted keys against the option lists


def _compared_strings(func) -> set[str]:
    """String constants a reader compares a key with (`key == "x"`, `key in ("x", ...)`) or gets (`d.get("x")`)."""
    tree = ast.parse(_dedent(func))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id in ("key", "k"):
            for comp in node.comparators:
                for c in ast.walk(comp):
                    if isinstance(c, ast.Constant) and isinstance(c.value, str):
                        out.add(c.value)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and not (isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "fields")
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.add(node.args[0].value)
    return out


def _dedent(func) -> str:
    import textwrap

    return textwrap.dedent(inspect.getsource(func))


def _flags(tool: str) -> set[str]:
    return {k[5:] for k in known(tool) if k.startswith("flag:")}


HF = known("transformers") | known("trl")
ACCEPTED = [
    (mappings.axolotl, known("axolotl") | {"trl." + k for k in known("axolotl")}),
    (mappings.llama_factory, known("llama_factory") | known("transformers")),
    *[(f, known("axolotl")) for f in (mappings._ax_checkpointing, mappings._ax_flash, mappings._ax_fsdp,
                                      mappings._ax_targets, mappings._ax_trl)],  # keys the handlers look up
    (mappings._lf_precision, known("llama_factory")),
    (mappings.hf_args, HF),
    (mappings.deepspeed, known("deepspeed")),
    (mappings.accelerate_config, known("accelerate")),
    (cmdline._accelerate, _flags("accelerate")),
    (cmdline._tune, known("torchtune")),
    (cmdline.tune_overrides, known("torchtune")),
    (mappings.torchtune_config, known("torchtune")),
    (python.read, {k.split(":", 1)[1] for k in known("unsloth") | known("peft")} | HF),
]


@pytest.mark.parametrize(("func", "allowed"), ACCEPTED, ids=[f.__name__ for f, _ in ACCEPTED])
def test_reader_keys_are_the_tools_own(func, allowed):
    keys = _compared_strings(func)
    if func.__name__ != "_tune":  # `tune run` hands every key to tune_overrides
        assert keys, func.__name__
    # values compared against (not keys): recognised by their shape
    values = {"lora", "qlora", "full", "auto", "none", "cpu", "nvme", "bf16", "fp16", "fp8", "disabled", "false",
              "False", "run", "launch", "serve", "eager", "bnb", "bitsandbytes"}
    missing = sorted(k for k in keys - values - allowed if not k.startswith(("-m",)))
    assert not missing, f"{func.__name__}: {missing}"


KEY_TABLES = [
    ("axolotl", mappings.AXOLOTL_KEYS, known("axolotl")),
    ("llama-factory", mappings.LF_KEYS, known("llama_factory") | known("transformers")),
    ("hf", mappings.HF_KEYS, HF),
    ("deepspeed", mappings.DEEPSPEED_KEYS, known("deepspeed")),
    ("accelerate", mappings.ACCELERATE_KEYS, known("accelerate")),
    ("torchrun", {**cmdline.TORCHRUN_GPUS, **dict.fromkeys(cmdline.TORCHRUN_SWITCHES)}, known("torchrun")),
    ("deepspeed launcher", {**cmdline.DEEPSPEED_GPUS, **dict.fromkeys(cmdline.DEEPSPEED_SWITCHES)},
     _flags("deepspeed")),
    ("accelerate launch", dict.fromkeys(cmdline.ACCELERATE_SWITCHES), _flags("accelerate")),
]


@pytest.mark.parametrize(("table", "allowed"), [t[1:] for t in KEY_TABLES], ids=[t[0] for t in KEY_TABLES])
def test_key_tables_are_the_tools_own(table, allowed):
    """Each framework's key table holds only keys its own source defines, and the loop that applies the tables
    names no key of its own."""
    assert len(table) >= 5
    _assert_known(table, allowed, "table")
    assert _compared_strings(keys.apply) == set()


def test_a_key_table_is_what_the_reader_does():
    """The table is used: a key it maps sets the field, the same key dropped from the table is listed instead."""
    text = "base_model: x\nadapter: lora\nlora_r: 8\nmicro_batch_size: 2\n"
    assert read_config(text).request.lora_rank == 8
    table = dict(mappings.AXOLOTL_KEYS)
    del table["lora_r"]
    from unittest import mock

    with mock.patch.object(mappings, "AXOLOTL_KEYS", table):
        r = read_config(text)
    assert r.request.lora_rank is None and "lora_r" in r.ignored


@pytest.mark.parametrize("engine", [VLLM, SGLANG, LLAMA_SERVER, TGI], ids=lambda e: e.name)
def test_serving_flag_tables_are_the_engines_own(engine):
    """Every flag a serving reader reads and its writer writes is declared once, in the engine's table, under names
    the engine's own parser defines; the readers use nothing else."""
    names = [n for flag in engine.flags for n in flag.names]
    assert len(names) == len(set(names)), engine.name
    _assert_known(names, known(engine.tool), engine.name)
    assert _compared_strings(serving._read) == set(), "flag names belong in the tables"


def _assert_known(keys, allowed, where):
    missing = sorted(set(keys) - set(allowed))
    assert not missing, f"{where}: {missing}"




def test_trl_config_yaml_and_a_model_the_catalog_does_not_know():
    out = check(TRL_YAML, "sft.yaml")
    assert out["request"]["framework"] == "trl" and out["request"]["lora_targets"] == "all_linear"
    assert out["request"]["gradient_checkpointing"] is True  # TRL's default (trl/trainer/base_config.py)
    assert out["ignored"] == ["packing"]  # memory-relevant and not modelled; logging, Hub, eval keys are not listed
    assert "params_b=0.5 (from the model name)" in out["estimate"]["assumptions"]
    assert out["estimate"]["request"]["model"]["params_b"] == 0.5


def test_vllm_section_without_use_vllm_is_no_rollout():
    text = "base_model: x\nadapter: lora\nrl: grpo\nvllm:\n  gpu_memory_utilization: 0.4\ntrl:\n  use_vllm: false\n"
    assert read_config(text).request.rollout is None
    on = text.replace("use_vllm: false", "use_vllm: true\n  vllm_mode: colocate")
    r = read_config(on).request.rollout
    assert (r.mode, r.gpu_memory_utilization) == ("colocate", 0.4)


def test_absurd_values_are_named_not_dropped() -> None:
    """YAML reads 1e308 as text; such values were dropped and the answer said every key was understood."""
    from engine.configs.readers import read_config

    read = read_config("base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nsequence_len: 1e308\n"
                       "micro_batch_size: 1e308\n", "absurd.yaml")
    assert read.request is not None and read.request.seq_len is None and read.request.batch_size is None
    assert "seq_len (value out of range)" in read.ignored and "batch_size (value out of range)" in read.ignored
    odd = read_config("base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nsequence_len: lots\n", "odd.yaml")
    assert "sequence_len (value not understood)" in odd.ignored
    fine = read_config("base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nsequence_len: 4.096e3\n", "ok.yaml")
    assert fine.request is not None and fine.request.seq_len == 4096 and fine.ignored == []


def test_a_model_config_of_absurd_size_gets_the_out_of_range_answer() -> None:
    import json

    from engine.configs.readers import read_config

    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 10**15, "num_hidden_layers": 32,
              "num_attention_heads": 32, "vocab_size": 128256, "intermediate_size": 14336}
    read = read_config(json.dumps(config), "config.json")
    assert read.error == "model_out_of_range" and read.request is None
    args = read_config(json.dumps({"per_device_train_batch_size": 4, "num_train_epochs": 1}), "args.json")
    assert args.error is None and args.format == "hf-args"  # TrainingArguments JSON still reads as such


@pytest.mark.parametrize(("text", "expect"), [
    ("text-generation-launcher --model-id Qwen/Qwen2.5-72B-Instruct-AWQ --num-shard 2 --quantize awq "
     "--max-total-tokens 16384 --cuda-memory-fraction 0.9",
     {"serving_engine": "tgi", "quantization": "awq", "bits": 4, "tensor_parallel": 2, "seq_len": 16384}),
    ("ollama run qwen2.5:32b", {"serving_engine": "ollama", "quantization": "gguf:q4_k_m", "bits": 4}),
    ("OLLAMA_NUM_PARALLEL=4 OLLAMA_CONTEXT_LENGTH=8192 ollama run llama3.1:70b-instruct-q8_0",
     {"serving_engine": "ollama", "quantization": "gguf:q8_0", "seq_len": 8192, "concurrency": 4}),
    ("vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ -tp 2 --max-model-len 32768 --enforce-eager",
     {"serving_engine": "vllm", "enforce_eager": True, "tensor_parallel": 2}),
    ("python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp 2 --disable-cuda-graph",
     {"serving_engine": "sglang", "enforce_eager": True, "tensor_parallel": 2}),
])
def test_tgi_ollama_and_eager_launch_lines_are_read(text, expect):
    r = read_config(text)
    assert r.error is None and r.format == "command", (text, r.error)
    got = r.request.model_dump()
    assert {k: got[k] for k in expect} == expect, text
    assert not [k for k in r.ignored if "OLLAMA" in k or "eager" in k or "cuda_graph" in k], r.ignored


OLD_TRL_SCRIPT = '''
from trl import SFTConfig, SFTTrainer
args = SFTConfig(output_dir="out", per_device_train_batch_size=2, max_seq_length=4096, bf16=True)
trainer = SFTTrainer(model="meta-llama/Llama-3.1-8B", args=args, train_dataset=ds)
'''
OLD_TRL_TRAINER = '''
from transformers import TrainingArguments
from trl import SFTTrainer
trainer = SFTTrainer(model="Qwen/Qwen2.5-7B", args=TrainingArguments(output_dir="o", per_device_train_batch_size=1),
                     max_seq_length=2048, dataset_text_field="text")
'''
OLD_TRL_YAML = ("model_name_or_path: Qwen/Qwen2.5-1.5B\nmax_seq_length: 8192\nper_device_train_batch_size: 4\n"
                "use_peft: true\n")


@pytest.mark.parametrize(("text", "name", "seq", "model"), [
    (OLD_TRL_SCRIPT, "train.py", 4096, "meta-llama/Llama-3.1-8B"),
    (OLD_TRL_TRAINER, "sft.py", 2048, "Qwen/Qwen2.5-7B"),
    (OLD_TRL_YAML, "sft.yaml", 8192, "Qwen/Qwen2.5-1.5B"),
])
def test_trls_old_max_seq_length_is_the_context_and_the_trainers_model_is_read(text: str, name: str, seq: int,
                                                                                model: str) -> None:
    read = read_config(text, name)
    assert read.request is not None and read.request.seq_len == seq, read
    assert read.request.model is not None and read.request.model.name == model
    assert not any("max_seq_length" in k for k in read.ignored), read.ignored


@pytest.mark.parametrize(("line", "engine", "model"), [
    ("docker run --runtime nvidia --gpus all -v ~/.cache/huggingface:/root/.cache/huggingface -p 8000:8000 --ipc=host "
     "vllm/vllm-openai:latest --model mistralai/Mistral-7B-v0.1 --tensor-parallel-size 2", "vllm",
     "mistralai/Mistral-7B-v0.1"),
    ("docker run --gpus all --shm-size 1g -p 8080:80 -v $volume:/data "
     "ghcr.io/huggingface/text-generation-inference:3.0 "
     "--model-id Qwen/Qwen2.5-7B-Instruct --max-total-tokens 8192", "tgi", "Qwen/Qwen2.5-7B-Instruct"),
    ("docker run --gpus all --ipc=host lmsysorg/sglang:latest python3 -m sglang.launch_server "
     "--model-path meta-llama/Llama-3.1-8B-Instruct --tp 2", "sglang", "meta-llama/Llama-3.1-8B-Instruct"),
    ("docker run -it --rm -p 8080:8080 ghcr.io/ggml-org/llama.cpp:server -m /models/qwen2.5-7b-q4_k_m.gguf -c 8192",
     "llama.cpp", None),
])
def test_docker_run_is_the_image_s_engine(line: str, engine: str, model: str | None) -> None:
    read = read_config(line, None)
    assert read.error is None and read.request is not None and read.request.serving_engine == engine, read
    if model:
        assert read.request.model is not None and read.request.model.name == model
    assert not any(k.startswith("command:") for k in read.ignored)

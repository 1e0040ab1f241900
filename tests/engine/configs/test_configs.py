"""Writers: every key they emit is one the tool's own source defines (options/*.txt), and reading what a writer
wrote gives back the request the job stands for (the round trip), for every framework."""

from __future__ import annotations

import ast
import json
import shlex

import pytest
import yaml

from engine.configs import TARGETS, read_bundle, read_config, write_config
from engine.configs.model import ConfigJob
from engine.configs.options import header, known
from engine.configs.safety import flatten
from engine.configs.writers.hf import trl_command

HF = known("transformers") | known("trl")

TRAIN_JOBS = {
    "qlora_1gpu": ConfigJob(model="meta-llama/Llama-3.1-8B", method="qlora", bits=4, optimizer="paged_adamw",
                            fused_loss=True, gpu_name="RTX 4090", estimate_gib=14.2, grad_accum=8),
    "full_zero3_offload": ConfigJob(model="meta-llama/Llama-3.1-8B", method="full", optimizer="adamw_8bit",
                                    sharding="zero3", offload=True, gpu_count=4, gpu_name="H100 SXM", batch_size=2),
    "lora_fsdp_cp_dpo": ConfigJob(model="Qwen/Qwen2.5-7B", method="lora", lora_targets="qv", sharding="fsdp",
                                  gpu_count=8, gpu_name="A100 80GB", context_parallel=2, stage="dpo",
                                  gradient_checkpointing=False, flash_attention=False),
    "lora_grpo": ConfigJob(model="Qwen/Qwen2.5-7B", method="lora", stage="grpo", num_generations=8, output_len=512,
                           lora_targets="attn_mlp_custom:q,k,v,o,gate,up,down,lm_head", lora_rank=64),
    "grpo_vllm_colocate": ConfigJob(model="Qwen/Qwen2.5-7B", method="full", stage="grpo", num_generations=4,
                                    gpu_count=2, sharding="zero3", rollout_mode="colocate",
                                    rollout_gpu_memory_utilization=0.3, rollout_sleep=True, batch_size=2),
    "full_fsdp_checkpointed": ConfigJob(model="meta-llama/Llama-3.1-8B", method="full", sharding="fsdp",
                                        gpu_count=4, gpu_name="H100 SXM", gradient_checkpointing=True),
    "qlora8_ddp": ConfigJob(model="mistralai/Mistral-7B-v0.1", method="qlora", bits=8, optimizer="adamw",
                            gpu_count=2, sharding="ddp", mixed_precision="pure_bf16", seq_len=4096),
}
SERVE_JOBS = {
    "tp4_awq_fp8kv": ConfigJob(model="meta-llama/Llama-3.1-70B", method="inference", seq_len=8192, concurrency=16,
                               gpu_count=4, gpu_name="H100 SXM", kv_cache_dtype="fp8", quantization="awq"),
    "gguf_int8kv": ConfigJob(model="Qwen/Qwen2.5-7B", method="inference", seq_len=4096, kv_cache_dtype="int8",
                             quantization="gguf:q5_k_m", concurrency=4),
    "pp2": ConfigJob(model="Qwen/Qwen2.5-7B", method="inference", seq_len=4096, gpu_count=2, pipeline_parallel=2,
                     gpu_memory_utilization=0.85),
}
TRAINING_TARGETS = ("axolotl", "llama-factory", "trl", "unsloth", "torchtune", "deepspeed", "accelerate")
SERVING_TARGETS = ("vllm", "sglang", "llama.cpp")


def _diff(got, want) -> dict:
    a, b = got.model_dump(exclude_none=True), want.model_dump(exclude_none=True)
    return {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("target", TRAINING_TARGETS)
@pytest.mark.parametrize("name", list(TRAIN_JOBS))
def test_training_round_trip(target, name):
    job = TRAIN_JOBS[name]
    out = write_config(job, target)
    read = read_bundle([(f.name, f.text) for f in out.files])
    assert read.request is not None, read
    assert _diff(read.request, job.request(target)) == {}
    assert read.secrets == 0


@pytest.mark.parametrize("target", SERVING_TARGETS)
@pytest.mark.parametrize("name", list(SERVE_JOBS))
def test_serving_round_trip_file_and_command(target, name):
    job = SERVE_JOBS[name]
    out = write_config(job, target)
    from_file = read_config(out.files[0].text, out.files[0].name)
    assert _diff(from_file.request, job.request(target)) == {}
    # the bare command has no header: the same request less the GPU model name
    from_cmd = read_config(out.command)
    want = job.request(target)
    want.gpus[0].name = None
    assert _diff(from_cmd.request, want) == {}


def test_trl_command_line_round_trip():
    job = TRAIN_JOBS["qlora_1gpu"]
    read = read_config(trl_command(job))
    want = job.request("trl")
    want.gpus = []  # a `trl sft` line names no GPU
    assert _diff(read.request, want) == {}
    assert read.ignored == []


def test_the_changed_settings_change_the_request():
    """The round trip is not vacuous: a different job reads back as a different request."""
    a = TRAIN_JOBS["qlora_1gpu"]
    b = a.model_copy(update={"lora_rank": 64, "seq_len": 8192, "optimizer": "adamw_8bit"})
    for target in TRAINING_TARGETS:
        ra = read_bundle([(f.name, f.text) for f in write_config(a, target).files]).request
        rb = read_bundle([(f.name, f.text) for f in write_config(b, target).files]).request
        assert {"lora_rank", "seq_len", "optimizer"} <= set(_diff(ra, rb)), target


def test_every_file_states_the_estimate_and_the_gpu():
    for job in [*TRAIN_JOBS.values(), *SERVE_JOBS.values()]:
        for target in TARGETS:
            for f in write_config(job, target).files:
                if f.name.endswith(".json"):
                    continue  # JSON has no comments; the script or command beside it carries the header
                assert "gpu-advisor: made for" in f.text, (target, f.name)
                assert f.text.isascii()
    out = write_config(TRAIN_JOBS["qlora_1gpu"], "axolotl")
    assert "made for 1x RTX 4090; estimated peak 14.2 GiB per GPU" in out.files[0].text


def test_what_a_tool_cannot_say_is_noted():
    job = TRAIN_JOBS["qlora8_ddp"]
    assert any("pure_bf16" in n for n in write_config(job, "axolotl").notes)
    assert any("qlora 8-bit" in n for n in write_config(job, "torchtune").notes)
    assert any("stage=grpo" in n for n in write_config(TRAIN_JOBS["lora_grpo"], "llama-factory").notes)
    assert write_config(TRAIN_JOBS["qlora_1gpu"], "axolotl").notes == []


# ---------------------------------------------------------------- keys against the tools' own option lists


def _yaml_keys(text: str) -> list[str]:
    return list(flatten(yaml.safe_load(text)))


def _py_calls(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            out.setdefault(name, []).extend(k.arg for k in node.keywords if k.arg)
    return out


def _assert_in(keys, allowed, where):
    missing = sorted(set(keys) - set(allowed))
    assert not missing, f"{where}: {missing}"


ALL_JOBS = [*TRAIN_JOBS.values(), *SERVE_JOBS.values()]


@pytest.mark.parametrize("job", ALL_JOBS, ids=[*TRAIN_JOBS, *SERVE_JOBS])
def test_written_keys_are_the_tools_own(job):
    ax = write_config(job, "axolotl").files[0].text
    data = yaml.safe_load(ax)
    _assert_in(_yaml_keys(ax), known("axolotl"), "axolotl")
    for entry in data["datasets"]:
        _assert_in(entry, known("axolotl"), "axolotl datasets")
    if "deepspeed" in data:
        assert f"file:{data['deepspeed']}" in known("axolotl")
    if "optimizer" in data:
        assert f"optim:{data['optimizer']}" in known("transformers")

    lf = write_config(job, "llama-factory").files[0].text
    data = yaml.safe_load(lf)
    _assert_in(_yaml_keys(lf), known("llama_factory") | known("transformers"), "llama-factory")
    if "deepspeed" in data:
        assert f"file:{data['deepspeed']}" in known("llama_factory")
    if "optim" in data:
        assert f"optim:{data['optim']}" in known("transformers")

    for target in ("trl", "unsloth", "deepspeed", "accelerate"):
        for f in write_config(job, target).files:
            if f.name.endswith(".py"):
                calls = _py_calls(f.text)
                for cls in ("SFTConfig", "DPOConfig", "GRPOConfig", "KTOConfig", "RewardConfig"):
                    _assert_in(calls.get(cls, []), HF, f"{target} {cls}")
                _assert_in(calls.get("LoraConfig", []), {k[11:] for k in known("peft") if k.startswith("LoraConfig:")},
                           "LoraConfig")
                _assert_in(calls.get("BitsAndBytesConfig", []),
                           {k[19:] for k in known("peft") if k.startswith("BitsAndBytesConfig:")}, "bnb")
                if target == "unsloth":
                    _assert_in(calls.get("from_pretrained", []), {k[16:] for k in known("unsloth")
                                                                 if k.startswith("from_pretrained:")}, "unsloth")
                    _assert_in(calls.get("get_peft_model", []), {k[15:] for k in known("unsloth")
                                                                if k.startswith("get_peft_model:")}, "unsloth peft")
            elif f.name.endswith(".json"):
                _assert_in(flatten(json.loads(f.text)), known("deepspeed"), "deepspeed json")
            elif f.name == "accelerate.yaml":
                _assert_in(_yaml_keys(f.text), known("accelerate"), "accelerate")

    argv = shlex.split(trl_command(job))
    assert f"command:{argv[1]}" in known("trl")
    if "--optim" in argv:
        assert f"optim:{argv[argv.index('--optim') + 1]}" in known("transformers")
    _assert_in([a[2:] for a in argv if a.startswith("--")], HF, "trl command")

    tune = shlex.split(write_config(job, "torchtune").command.replace("\\\n", " "))
    rest = tune[2:]
    if rest[0] == "--nproc_per_node":
        rest = rest[2:]
    assert f"recipe:{rest[0]}" in known("torchtune")
    if f"config:{rest[2]}" not in known("torchtune"):
        assert any(n.startswith("torchtune_no_config") for n in write_config(job, "torchtune").notes)
    _assert_in([o.split("=", 1)[0].lstrip("~") for o in rest[3:]], known("torchtune"), "tune run overrides")
    assert all(o.count("=") == 1 or o.startswith("~") for o in rest[3:])  # torchtune splits on the one "="

    for target, tool in (("vllm", "vllm"), ("sglang", "sglang"), ("llama.cpp", "llama_cpp")):
        argv = shlex.split(write_config(job, target).command)
        if target == "sglang":
            assert argv[:3] == ["python", "-m", "sglang.launch_server"]
            argv = argv[3:]
        _assert_in([a for a in argv if a.startswith("-")], known(tool), target)


def test_launch_commands_use_the_launchers_flags():
    job = TRAIN_JOBS["full_zero3_offload"]
    ds = shlex.split(write_config(job, "deepspeed").command)
    _assert_in([a for a in ds if a.startswith("-")], {k[5:] for k in known("deepspeed") if k.startswith("flag:")},
               "deepspeed launcher")
    acc = shlex.split(write_config(job, "accelerate").command)
    _assert_in([a for a in acc if a.startswith("-")], {k[5:] for k in known("accelerate") if k.startswith("flag:")},
               "accelerate launch")
    ax = shlex.split(write_config(job, "axolotl").command)
    _assert_in([a for a in ax if a.startswith("--")], {k[5:] for k in known("accelerate") if k.startswith("flag:")},
               "axolotl launch")


def test_option_lists_say_where_they_were_read():
    from engine.configs.options import TOOLS

    for tool in TOOLS:
        lines = header(tool)
        assert any(line.startswith("# repository: ") for line in lines), tool
        assert any(line.startswith("# commit: ") for line in lines), tool
        assert any(line.startswith("# file: ") for line in lines), tool
        assert len(known(tool)) >= 20, tool


def test_sharded_qlora_stores_4bit_weights_as_bf16():
    """FSDP and ZeRO-3 flatten parameters: 4-bit weights must be stored in bf16 (bnb_4bit_quant_storage)."""
    job = ConfigJob(model="meta-llama/Llama-3.1-70B", method="qlora", bits=4, sharding="fsdp", gpu_count=2)
    script = write_config(job, "trl").files[0].text
    assert "bnb_4bit_quant_storage='bfloat16'" in script
    assert "--bnb_4bit_quant_storage bfloat16" in trl_command(job)
    single = job.model_copy(update={"sharding": "none", "gpu_count": 1})
    assert "quant_storage" not in write_config(single, "trl").files[0].text


def test_fsdp_checkpointing_is_fsdps_own_not_the_trainers():
    """transformers refuses fsdp activation_checkpointing together with the Trainer's (trainer.py)."""
    job = TRAIN_JOBS["full_fsdp_checkpointed"]
    out = write_config(job, "accelerate")
    acc = yaml.safe_load(next(f.text for f in out.files if f.name == "accelerate.yaml"))
    script = next(f.text for f in out.files if f.name == "train.py")
    assert acc["fsdp_config"]["fsdp_activation_checkpointing"] is True
    assert "gradient_checkpointing=False" in script
    ax = yaml.safe_load(write_config(job, "axolotl").files[0].text)
    assert ax["fsdp_config"]["activation_checkpointing"] is True and ax["gradient_checkpointing"] is False


def test_a_gpu_without_bf16_gets_an_fp16_trl_config() -> None:
    from engine.configs import config_for
    from engine.parse import parse

    out = config_for(parse("qlora llama 3.2 3b on T4"), "trl")
    text = "\n".join(f.text for f in out.files) + "\n" + (out.command or "")
    assert "bf16" not in text and "bfloat16" not in text  # T4 (sm_75) has no bf16: the Trainer refuses bf16=True
    assert "fp16=True" in text and "bnb_4bit_compute_dtype='float16'" in text
    full = config_for(parse("full finetune qwen2.5 0.5b on T4"), "trl")
    assert "dtype='float32'" in "\n".join(f.text for f in full.files)  # fp16 AMP unscales fp32 gradients only
    on_h100 = config_for(parse("qlora llama 3.2 3b on H100"), "trl")
    assert "bf16=True" in "\n".join(f.text for f in on_h100.files)


@pytest.mark.parametrize("stage", ["dpo", "orpo", "kto", "simpo"])
def test_a_preference_method_gets_a_preference_dataset_in_every_writer(stage):
    """DPO / ORPO / SimPO read chosen-rejected pairs, KTO unpaired labels: never an SFT dataset (issue 21 #11)."""
    job = ConfigJob(model="meta-llama/Llama-3.1-8B", stage=stage)
    sft = ("trl-lib/Capybara", "alpaca_en_demo", "your-org/your-dataset", "type: alpaca")
    pairs = ("dpo_en_demo", "dpo_test", "ultrafeedback")  # the writers' preference datasets (pairs)
    for target in ("axolotl", "llama-factory", "trl", "unsloth", "accelerate", "deepspeed"):
        out = write_config(job, target)
        text = "\n".join(f.text for f in out.files) + "\n" + out.command
        assert not any(s in text for s in sft), (stage, target)
        assert any(p in text for p in (("kto_en_demo", "kto-mix", "cleaned-kto") if stage == "kto" else pairs)), target
        assert not any(n.startswith("not_expressible:stage") for n in out.notes), (stage, target, out.notes)
        assert read_bundle([(f.name, f.text) for f in out.files]).request.stage == stage, (stage, target)
    assert "pref_loss: orpo" in write_config(ConfigJob(model="Qwen/Qwen2.5-7B", stage="orpo"), "llama-factory") \
        .files[0].text
    trl = write_config(ConfigJob(model="Qwen/Qwen2.5-7B", stage="simpo"), "trl")
    assert "from trl.experimental.cpo import CPOTrainer, CPOConfig" in trl.files[0].text
    assert "loss_type='simpo'" in trl.files[0].text and not trl.command.startswith("trl ")

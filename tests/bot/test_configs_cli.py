"""`gpu-advisor config` and `gpu-advisor check` (CONTRACT.md v2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Ran, run_cli

from engine.configs import TARGETS


def run(*args: str, stdin: str | bytes = "") -> Ran:
    return run_cli(*args, stdin=stdin)  # in process: bot.cli.main(argv) with its streams captured


def test_config_json_lines_one_per_question_in_order():
    lines = ["QLoRA Llama-3.1-8B on an RTX 4090, context 4k", "", "\x00\x01 garbage",
             "serve Llama-3.1-70B on 4 H100 with vllm, 32 users"]
    p = run("config", stdin="\n".join(lines) + "\n")
    assert p.returncode == 0, p.stderr
    out = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(out) == len(lines)
    first, last = out[0], out[3]
    assert set(first) >= {"framework", "files", "command", "estimate_gib"}
    assert first["framework"] == "trl" and first["files"][0]["name"] == "train.py"
    assert "error" in out[1] and "error" in out[2]
    assert last["framework"] == "vllm" and "--tensor-parallel-size" in last["command"]
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("framework", TARGETS)
def test_config_every_framework_and_check_reads_it_back(framework, tmp_path: Path):
    question = ("serve Llama-3.1-8B on 2 L40S, 16 users" if framework in ("vllm", "sglang", "llama.cpp")
                else "LoRA Llama-3.1-8B on 2 A100 80GB, context 4096")
    p = run("config", "--json", "--framework", framework, question)
    assert p.returncode == 0, p.stderr
    answer = json.loads(p.stdout)
    assert answer["framework"] == framework and answer["files"] and answer["command"]
    assert answer["estimate_gib"] is not None and answer["estimate_gib"] > 0
    main = answer["files"][-1] if framework in ("deepspeed", "accelerate") else answer["files"][0]
    path = tmp_path / main["name"]
    path.write_text(main["text"], encoding="utf-8")
    c = run("check", "--json", str(path))
    checked = json.loads(c.stdout)
    # a serving command names the checkpoint it loads (a GGUF/AWQ repository of the model, or a placeholder for one)
    from engine.catalog import find_model

    read_model = find_model(checked["request"]["model"]["name"])
    assert read_model is not None and read_model.name == "Llama-3.1-8B", checked
    assert checked["estimate"]["per_gpu"]["total"] > 0
    assert set(checked) >= {"request", "estimate", "changes", "ignored"}


def test_config_plain_text_shows_files_and_command():
    p = run("config", "--framework", "axolotl", "QLoRA Llama-3.1-8B on an RTX 4090")
    assert p.returncode == 0
    assert "==> axolotl.yaml <==" in p.stdout and "adapter: qlora" in p.stdout
    assert "$ python -m axolotl.cli.train axolotl.yaml" in p.stdout


def test_config_unknown_framework_is_a_bad_flag():
    p = run("config", "--framework", "keras", "LoRA 7B")
    assert p.returncode == 2


def test_check_stdin_and_summary():
    line = "vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 2 --max-model-len 131072\n"
    p = run("check", "-", stdin=line)
    assert p.returncode == 0
    assert "peak per GPU" in p.stdout and "on 2 GPU(s)" in p.stdout and "fits: " in p.stdout
    j = json.loads(run("check", "--json", "-", stdin=line).stdout)
    assert j["request"]["tensor_parallel"] == 2 and j["estimate"]["gpu_count"] == 2
    # judged by the serving engine: a 128k request does not fit the KV pool of 2 cards, more of them serve it
    first, *served = j["estimate"]["fits"]
    assert first["count"] == 2 and not first["fits"] and j["estimate"]["verdict"] in ("fits_with_changes", "no_fit")
    assert served and all(f["fits"] and f["count"] > 2 for f in served)
    # the summary says the verdict as written and each fit with its count: "fits: 80 GB GPU" never reads as the 2 asked
    assert "verdict: " + j["estimate"]["verdict"] + " as written" in p.stdout
    assert f"fits: {served[0]['count']}×" in p.stdout


def test_check_of_a_post_training_command_and_of_a_docker_run() -> None:
    # a GRPO command has its own fits[] (engine.posttrain): checked, never an internal error
    grpo = "trl grpo --model_name_or_path Qwen/Qwen2.5-7B-Instruct --use_vllm --num_generations 8\n"
    p = run("check", "-", stdin=grpo)
    assert p.returncode == 0 and "error" not in p.stdout and "grpo" in p.stdout and "fits: 1×" in p.stdout
    # `docker run … IMAGE ARGS`: the image's engine with the flags after it, its -e secrets never echoed
    line = ("docker run --gpus all --shm-size 32g -p 8000:8000 -e HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 "
            "--ipc=host vllm/vllm-openai:v0.8.5 --model meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192\n")
    j = json.loads(run("check", "--json", "-", stdin=line).stdout)
    assert j["request"]["serving_engine"] == "vllm" and j["request"]["engine_options"]["max_model_len"] == 8192
    assert "hf_abcdef" not in json.dumps(j)


def test_check_names_keys_without_effect_and_unknown_keys(tmp_path: Path):
    config = tmp_path / "axolotl.yaml"
    config.write_text("base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nmicro_batch_size: 2\n"
                      "wandb_project: p\nwandb_entity: me\nreport_to: wandb\nlogging_steps: 10\nsave_steps: 500\n"
                      "frobnicate_level: 3\n", encoding="utf-8")
    p = run("check", str(config))
    assert "not understood: frobnicate_level\n" in p.stdout
    assert ("ignored, don't affect memory: wandb_project, wandb_entity, report_to, logging_steps, save_steps"
            in p.stdout)
    j = json.loads(run("check", "--json", str(config)).stdout)
    assert j["ignored"] == ["frobnicate_level"]
    assert j["no_effect"] == ["wandb_project", "wandb_entity", "report_to", "logging_steps", "save_steps"]
    ds = tmp_path / "ds_config.json"
    ds.write_text(json.dumps({"zero_optimization": {"stage": 3}, "steps_per_print": 10, "wandb": {"enabled": True},
                              "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}}, "made_up": 1}), encoding="utf-8")
    j = json.loads(run("check", "--json", str(ds)).stdout)
    assert j["ignored"] == ["made_up"]
    assert set(j["no_effect"]) == {"steps_per_print", "wandb.enabled", "optimizer.params.lr"}


def test_check_changes_when_the_named_gpu_is_too_small(tmp_path: Path):
    text = ("# gpu-advisor: made for 1x RTX 4090\nbase_model: meta-llama/Llama-3.1-8B\nadapter: lora\n"
            "lora_r: 16\nsequence_len: 8192\nmicro_batch_size: 4\ngradient_checkpointing: false\n")
    path = tmp_path / "axolotl.yml"
    path.write_text(text)
    j = json.loads(run("check", "--json", str(path)).stdout)
    assert j["request"]["gpus"][0]["name"] == "RTX 4090"
    assert not any(f["fits"] for f in j["estimate"]["fits"])
    keys = [c["key"] for c in j["changes"]]
    assert "gradient_checkpointing" in keys


@pytest.mark.parametrize(("data", "error"), [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary"),
    (b"x: " + b"a" * (300 * 1024), "too_large"),
    (b"a: &a [x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b]\n"
     b"d: &d [*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e]\n"
     b"g: &g [*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h]\n",
     "yaml_bomb"),
    (b"colour: blue\n", "unknown_format"),
])
def test_check_bad_files_answer_with_an_error_key(data, error, tmp_path: Path):
    path = tmp_path / "cfg.yaml"
    path.write_bytes(data)
    p = run("check", "--json", str(path))
    assert p.returncode == 0 and "Traceback" not in p.stderr
    assert json.loads(p.stdout)["error"] == error


def test_check_in_plain_text_words_its_errors_and_names_the_serving_engine(tmp_path: Path) -> None:
    broken = tmp_path / "bad.yaml"
    broken.write_text("model: [unclosed\n  bad: : yaml\n")
    p = run("check", str(broken))
    assert "That YAML does not parse" in p.stdout and "invalid_yaml" not in p.stdout
    line = tmp_path / "serve.txt"
    line.write_text("llama-server -m model-Q5_K_M.gguf -c 8192 -ngl 99\n")
    p = run("check", str(line))
    assert "engine: llama.cpp" in p.stdout
    assert "serving.error" not in p.stdout and "I do not know the model model-Q5_K_M.gguf" in p.stdout


def test_check_missing_file_and_secret_never_printed(tmp_path: Path):
    p = run("check", "--json", str(tmp_path / "nope.yaml"))
    assert p.returncode == 0 and "cannot read" in json.loads(p.stdout)["error"]
    token = "hf_QwErTyUiOpAsDfGhJkLzXcVbNm123456"
    path = tmp_path / "a.yaml"
    path.write_text(f"base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nhf_token: {token}\n")
    for flag in ((), ("--json",)):
        p = run("check", *flag, str(path))
        assert token not in p.stdout and token not in p.stderr


def test_config_refuses_a_framework_that_does_not_do_the_job():
    j = json.loads(run("config", "--json", "--framework", "vllm", "LoRA Llama-3.1-8B on an A100").stdout)
    assert j["error"] == "framework_mismatch:vllm:training"
    j = json.loads(run("config", "--json", "--framework", "axolotl", "serve Llama-3.1-8B with vllm, 8 users").stdout)
    assert j["error"] == "framework_mismatch:axolotl:serving"


def test_config_says_when_the_named_framework_has_no_writer():
    from engine.configs import config_for
    from engine.schema import GpuRef, ModelRef, Request

    r = Request(model=ModelRef(name="Llama-3.1-8B"), method="lora", framework="ms-swift",
                gpus=[GpuRef(name="A100 80GB")])
    out = config_for(r)
    assert out.framework == "trl" and out.notes[0] == "no_writer:ms-swift"
    assert config_for(r.model_copy(update={"framework": "axolotl"})).framework == "axolotl"


def test_check_several_files_of_one_job(tmp_path: Path):
    p = run("config", "--json", "--framework", "accelerate", "full fine-tune Llama-3.1-8B on 8 H100 with zero3")
    answer = json.loads(p.stdout)
    paths = []
    for f in answer["files"]:
        path = tmp_path / f["name"]
        path.write_text(f["text"])
        paths.append(str(path))
    alone = json.loads(run("check", "--json", paths[-1]).stdout)  # train.py alone: no sharding said
    together = json.loads(run("check", "--json", *paths).stdout)
    assert together["request"]["sharding"] == answer_sharding(answer) == alone["request"]["sharding"]
    assert together["request"]["gpus"][0]["count"] == alone["request"]["gpus"][0]["count"]
    assert "+" in together["format"]


def answer_sharding(answer: dict) -> str:
    names = [f["name"] for f in answer["files"]]
    return "zero3" if any(n.startswith("ds_zero3") for n in names) else "fsdp" if "accelerate.yaml" in names else "none"


def test_a_bare_size_loads_the_reference_model_it_was_estimated_as() -> None:
    from engine.configs import config_for
    from engine.parse import parse

    out = config_for(parse("лора 8b на 4090"), "trl")
    text = "\n".join(f.text for f in out.files) + (out.command or "")
    assert "meta-llama/Llama-3.1-8B" in text
    assert "'8B'" not in text and "model_name_or_path 8B" not in text
    assert "model_assumed:meta-llama/Llama-3.1-8B" in out.notes


def test_the_config_is_for_the_gpus_the_user_named() -> None:
    from engine.configs import config_for
    from engine.parse import parse

    out = config_for(parse("qlora llama 3.1 70b on 2 h100"), "axolotl")
    assert "made for 2x H100 SXM" in out.files[0].text


@pytest.mark.parametrize("question", ["QLoRA Llama-3.1-8B on 2 RTX 4090", "full fine-tune Llama-3.1-8B on 1 RTX 4090"])
def test_check_says_one_unit_in_one_output(question: str, tmp_path: Path) -> None:
    """The peak, the headroom of the GPUs that fit and the savings of a change are all GiB (2^30 bytes), said so on
    every line (was: "peak per GPU: 16.0 GiB" then "fits: RTX 4090 (+7.3 GB)")."""
    import re

    answer = json.loads(run("config", "--json", "--framework", "axolotl", question).stdout)
    path = tmp_path / answer["files"][0]["name"]
    path.write_text(answer["files"][0]["text"], encoding="utf-8")
    text = run("check", str(path)).stdout
    units = re.findall(r"\d (GiB|GB|MB|MiB)\b", text)
    assert units and set(units) == {"GiB"}, text
    assert "fits:" in text or "change:" in text


def test_config_notes_are_worded_not_raw_keys(capsys) -> None:  # type: ignore[no-untyped-def]
    """`gpu-advisor config` text mode says its notes in words (raw `model_assumed:…` keys were printed)."""
    from bot.cli import main

    main(["config", "qlora 70b на 2 4090"])
    notes = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("note: ")]
    assert notes and not any("model_assumed:" in ln or "changed:" in ln for ln in notes), notes


@pytest.mark.parametrize(("line", "wanted"), [
    ("torchrun --nproc_per_node 8 train.py --deepspeed ds_z3.json --model_name_or_path meta-llama/Llama-3.1-8B "
     "--per_device_train_batch_size 4 --max_seq_length 4096", "full fine-tuning"),
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --tp 4", "(TP 4)"),
    ("tune run lora_finetune_single_device --config llama3_2/3B_lora", "Llama-3.2-3B"),
])
def test_ask_of_a_pasted_launch_line_is_checked_as_the_bot_checks_it(line: str, wanted: str) -> None:
    p = run("ask", line)
    out = p.stdout.replace("\xa0", " ")
    assert p.returncode == 0 and out.startswith("🔎 ")  # the bot's check header: what it was read as
    assert wanted in out and "not in the catalog" not in out, out[:600]
    if "torchrun" in line:
        back = json.loads(run("check", "--json", "-", stdin=line).stdout)
        assert back["request"]["method"] == "full" and back["request"]["gpus"][0]["count"] == 8
        assert "8 GPUs" in out and "LoRA" not in out

"""Start-up logs read back (engine/configs/readers/logs.py, engine/configs/logcheck.py) and model ids resolved
(engine/catalog/ids.py): fixtures under tests/data/logs are written for these tests, not copied from the data."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fake_hub import configs_hub

from bot.cli import main
from engine.catalog import architecture, find_model
from engine.catalog.ids import base_candidates, name_format, size_from_name
from engine.configs import check
from engine.configs.readers.logs import looks_like_log, read_log
from engine.contract import estimate_request
from engine.schema import ModelRef

LOGS = Path(__file__).parents[2] / "data" / "logs"


def log(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(("repo", "base", "fmt"), [
    ("unsloth/Llama-3.2-3B-Instruct-bnb-4bit", "Llama-3.2-3B", "bitsandbytes"),
    ("Qwen/Qwen2.5-32B-Instruct-AWQ", "Qwen2.5-32B", "awq"),
    ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "Qwen2.5-7B", "gptq"),
    ("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", "Llama-3.1-8B", "fp8"),
    ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "Llama-3.1-70B", "awq"),
    ("Intel/Qwen3-8B-int4-AutoRound", "Qwen3-8B", "gptq"),
    ("bartowski/Qwen2.5-7B-Instruct-GGUF", "Qwen2.5-7B", "gguf:q4_k_m"),
    ("google/gemma-3-27b-it-qat-q4_0-gguf", "Gemma-3-27B", "gguf:q4_0"),
    ("TheBloke/Llama-2-13B-chat-AWQ", "Llama-2-13B", "awq"),
    ("mlx-community/Qwen3-4B-8bit", "Qwen3-4B", "int8"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "Qwen3-235B-A22B", "fp8"),
    ("mistralai/Devstral-Small-2505", "Mistral-Small-24B", None),
])
def test_derivative_ids_resolve_to_base_and_format(repo: str, base: str, fmt: str | None) -> None:
    entry = find_model(repo)
    assert entry is not None and entry.name == base
    assert name_format(repo) == fmt


def test_base_candidates_drop_tune_and_format_words_only() -> None:
    assert "Llama-3.2-3B" in base_candidates("unsloth/Llama-3.2-3B-Instruct-bnb-4bit")
    assert "Mistral-7B" in base_candidates("mistralai/Mistral-7B-Instruct-v0.3")
    assert find_model("someone/Totally-Unknown-Model") is None


@pytest.mark.parametrize(("name", "sized"), [
    ("01-ai/Yi-1.5-34B-Chat", (34.0, None)), ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", (9.0, None)),
    ("foo/Bar-48B-A3B-Instruct", (48.0, 3.0)), ("x/SmolLM-135M", (0.135, None)), ("x/MoE-8x7B", (56.0, None)),
    ("unsloth/foo-bnb-4bit", None), ("x/no-size-here", None),
])
def test_size_from_name(name: str, sized: tuple[float, float | None] | None) -> None:
    assert size_from_name(name) == sized


def test_sized_ids_are_answered_as_that_size_with_an_assumed_shape() -> None:
    dense = architecture(ModelRef(name="someorg/Brand-New-34B-Chat"))
    assert not dense.known and abs(dense.params / 1e9 - 34) < 0.01 and dense.reference is None
    moe = architecture(ModelRef(name="foo/Bar-48B-A3B-Instruct"))
    assert moe.experts > 0 and abs(moe.params / 1e9 - 48) < 0.01 and 2 < moe.active_params / 1e9 < 4.5
    out = estimate_request({"model": {"name": "foo/Bar-48B-A3B-Instruct"}, "method": "inference",
                            "serving_engine": "vllm", "gpus": [{"name": "H100", "count": 1}]})
    assert any(a.startswith("architecture=like Qwen3-30B-A3B") for a in out["serving"]["assumptions"])


def test_name_format_sets_the_weights_when_the_request_names_none() -> None:
    def weights(name: str) -> float:
        out = estimate_request({"model": {"name": name}, "method": "inference", "serving_engine": "vllm",
                                "gpus": [{"name": "H100", "count": 1}]})
        return float(out["serving"]["weights_gib"])
    assert weights("Qwen/Qwen2.5-32B-Instruct-AWQ") < 0.35 * weights("Qwen/Qwen2.5-32B-Instruct")


def test_hybrid_model_keeps_kv_in_its_attention_layers_only() -> None:
    out = estimate_request({"model": {"name": "Qwen/Qwen3-Next-80B-A3B-Instruct"}, "method": "inference",
                            "serving_engine": "vllm", "tensor_parallel": 4, "gpus": [{"name": "H100", "count": 4}],
                            "engine_options": {"max_model_len": 32768}})
    # 12 attention layers x 2 KV heads (one per rank at TP4 is 2/4 -> replicated to 1) x 256 x K+V x 2 B
    assert out["serving"]["kv_bytes_per_token"] == 12 * 1 * 256 * 2 * 2


def test_hub_config_layer_types_give_attention_layers() -> None:
    from bot.hub.configs import config_from_json

    cfg = config_from_json({"num_hidden_layers": 8, "hidden_size": 1024, "num_attention_heads": 8,
                            "num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 2048,
                            "layer_types": ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3
                            + ["full_attention"]})
    assert cfg is not None and cfg.attention_layers == 2
    nemotron = config_from_json({"num_hidden_layers": 6, "hidden_size": 1024, "num_attention_heads": 8,
                                 "vocab_size": 1000, "hybrid_override_pattern": "M-M*-M"})
    assert nemotron is not None and nemotron.attention_layers == 1


def test_vllm_v1_log_settings_and_components() -> None:
    r = read_log(log("vllm-v1-qwen14b-awq-l40s.log"))
    assert r is not None and r.kind == "vllm" and r.version == "0.10.1.1 (V1)"
    assert r.settings["model"] == "Qwen/Qwen2.5-14B-Instruct-AWQ" and r.settings["gpu_memory_utilization"] == 0.92
    assert r.settings["max_model_len"] == 16384 and r.settings["gpu_total_gib"] == pytest.approx(44.39, abs=0.01)
    assert r.measured["kv_tokens"] == 163072 and r.measured["weights_gib"] == 9.37
    out = check(log("vllm-v1-qwen14b-awq-l40s.log"))
    rows = {c["component"]: c for c in out["components"]}
    assert abs(rows["weights"]["diff_pct"]) < 5 and abs(rows["KV pool"]["diff_pct"]) < 10
    assert all(c["reason"] for c in out["components"])


def test_vllm_v0_log_and_secrets_and_paths_never_echoed() -> None:
    text = log("vllm-v0-llama8b-a10g.log")
    out = check(text)
    assert out["format"] == "log:vllm" and "(V0)" in out["engine_version"]
    assert out["settings"]["model"] == "llama-3.1-8b-instruct"
    assert out["measured"]["activation_peak_gib"] == pytest.approx(16.21 - 14.9888, abs=1e-3)
    dumped = json.dumps(out)
    assert "sk-live" not in dumped and "/mnt/models" not in dumped
    v1 = json.dumps(check(log("vllm-v1-qwen14b-awq-l40s.log")))
    assert "hf_AbCd" not in v1


def test_sglang_tgi_llamacpp_logs() -> None:
    sg = read_log(log("sglang-llama70b-fp8-h100x4.log"))
    assert sg is not None and sg.kind == "sglang" and sg.settings["tp"] == 4
    assert sg.measured["kv_tokens"] == 638582 and sg.measured["kv_cache_gib"] == pytest.approx(48.72)
    tgi = read_log(log("tgi-mistral7b-a100.log"))
    assert tgi is not None and tgi.kind == "tgi" and tgi.measured["kv_tokens"] == 428784
    assert tgi.settings["max_model_len"] == 8192
    cpp = read_log(log("llamacpp-qwen7b-q4km-4090.log"))
    assert cpp is not None and cpp.settings["quantization"] == "gguf:q4_k_m" and cpp.settings["parallel"] == 4
    assert cpp.measured["kv_cache_gib"] == pytest.approx(0.875) and "alice" not in json.dumps(cpp.settings)


def test_memory_printouts_are_read_and_say_what_is_missing() -> None:
    smi = check(log("nvidia-smi-h100x2.txt"))
    assert smi["format"] == "log:nvidia-smi" and smi["settings"]["gpu_count"] == 2
    assert smi["measured"]["used_gib"] == pytest.approx(74521 / 1024, abs=0.01) and smi["note"]
    torch = check(log("torch-memory.txt"))
    assert torch["measured"] == {"max_allocated_gib": 18.42, "max_reserved_gib": 19.87}


def test_configs_and_commands_are_not_logs() -> None:
    assert not looks_like_log('{"model": "x", "gpu_memory_utilization": 0.9}')
    assert not looks_like_log("vllm serve Qwen/Qwen2.5-7B --max-model-len 8192")
    assert looks_like_log(log("sglang-llama70b-fp8-h100x4.log"))


def test_cli_check_record_appends_a_calibration_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = tmp_path / "rows.jsonl"
    path = str(LOGS / "tgi-mistral7b-a100.log")
    assert main(["check", "--gpu", "A100", "--record", str(record), path]) == 0
    assert main(["check", "--gpu", "A100", "--record", str(record), path]) == 0
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(rows) == 2 and rows[0]["engine"] == "tgi" and rows[0]["measured"]["kv_tokens"] == 428784
    assert {"id", "model", "tp", "pp", "measured", "source"} <= set(rows[0])
    assert "KV tokens" in capsys.readouterr().out


def test_cli_estimate_offline_says_so(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setenv("GPU_ADVISOR_OFFLINE", "1")
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(
        {"model": {"name": "someorg/Brand-New-9B-Chat"}, "method": "inference", "serving_engine": "vllm",
         "gpus": [{"name": "H100", "count": 1}]}) + "\n"))
    assert main(["estimate", "--json", "--request"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "offline" in out["model_source"] and out["serving"]["weights_gib"] > 15


def test_vllm_use_v1_on_0_7_is_profiled_as_v1() -> None:
    def block(opts: dict[str, object]) -> dict[str, object]:
        out = estimate_request({"model": {"name": "Qwen/Qwen2.5-7B-Instruct"}, "method": "inference",
                                "serving_engine": "vllm", "gpus": [{"name": "H100", "count": 1}],
                                "engine_options": {"engine_version": "0.7.3", "max_model_len": 8192, **opts}})
        return dict(out["serving"])
    assert block({})["engine_family"] == "vllm-v0"
    v1 = block({"vllm_use_v1": True})
    assert v1["engine_family"] == "vllm-v1"
    assert block({"vllm_use_v1": False, "engine_version": "0.8.5"})["engine_family"] == "vllm-v0"
    assert v1["activation_peak_gib"] != block({})["activation_peak_gib"]


def test_a_v1_log_of_0_7_carries_the_switch_into_the_request() -> None:
    text = ("INFO 02-10 10:00:00 [core.py:50] Initializing a V1 LLM engine (v0.7.2) with config: "
            "model='Qwen/Qwen2.5-7B-Instruct', dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=1\n"
            "INFO 02-10 10:00:30 [gpu_model_runner.py:900] Model loading took 14.25 GiB and 20.1 seconds\n")
    out = check(text)
    assert out["request"]["engine_options"]["vllm_use_v1"] is True
    assert out["request"]["engine_options"]["engine_version"].startswith("0.7.2")


@pytest.mark.parametrize(("name", "reference", "scaled"), [
    ("Qwen/Qwen2.5-Math-7B-Instruct", "Qwen2.5-7B", False),  # 7B names a 7.6B model: that member as it is
    ("01-ai/Yi-1.5-34B-Chat", "Yi-34B", False),
    ("meta-llama/Llama-3.2-11B-Vision-Instruct", "Llama-3.1-8B", True),  # nearest version, then size; layers scaled
])
def test_a_sized_id_of_a_known_family_borrows_that_family(name: str, reference: str, scaled: bool) -> None:
    arch = architecture(ModelRef(name=name))
    ref = find_model(reference)
    assert ref is not None and not arch.known and arch.reference == reference
    assert (arch.layers != ref.config.num_hidden_layers) == scaled
    assert arch.kv_heads == (ref.config.num_key_value_heads or ref.config.num_attention_heads)
    out = estimate_request({"model": {"name": name}, "method": "inference", "serving_engine": "vllm",
                            "gpus": [{"name": "H100", "count": 1}]})
    assert f"architecture=like {reference}" in out["serving"]["assumptions"]


async def test_cli_hub_lookup_uses_the_fake_hub_and_stops_after_an_unreachable_hub(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.hub import cli as hub_cli

    config = {"num_hidden_layers": 12, "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2,
              "vocab_size": 32000, "intermediate_size": 4096, "model_type": "llama",
              "layer_types": ["linear_attention", "linear_attention", "full_attention"] * 4}

    monkeypatch.delenv("GPU_ADVISOR_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("GPU_ADVISOR_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(hub_cli, "_unreachable", [])
    request = {"model": {"name": "someorg/Hybrid-Tiny"}, "method": "inference"}
    async with configs_hub({"someorg/Hybrid-Tiny": config}) as endpoint:
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        data, note = await asyncio.to_thread(hub_cli.with_hub_config, request)
        assert note is not None and "config.json of someorg/Hybrid-Tiny" in note
        assert data["model"]["config"]["attention_layers"] == 4
        assert list(tmp_path.iterdir())  # kept for the next run
    monkeypatch.setenv("HF_ENDPOINT", endpoint)  # nothing listens there now
    _, down = await asyncio.to_thread(hub_cli.with_hub_config, {**request, "model": {"name": "someorg/Other-1B"}})
    assert down is not None and "answered from its name" in down
    _, skipped = await asyncio.to_thread(hub_cli.with_hub_config, {**request, "model": {"name": "someorg/Third-1B"}})
    assert skipped is not None and skipped.startswith("offline")


def test_questions_naming_engines_or_torch_calls_are_not_logs() -> None:
    assert not looks_like_log("why does max_memory_allocated say so much for Llama 8B on vllm?")
    assert not looks_like_log("How many users can vLLM serve with Qwen2.5-7B on an L4?")
    assert looks_like_log("torch.cuda.max_memory_allocated() = 18.42 GiB")


@pytest.mark.parametrize(("repo", "name", "kv_bytes_tp1"), [
    # MHA Llama-architecture models that the size in the name used to shape like a GQA model
    ("codellama/CodeLlama-7b-hf", "CodeLlama-7B", 32 * 32 * 128 * 2 * 2),
    ("codellama/CodeLlama-13b-Instruct-hf", "CodeLlama-13B", 40 * 40 * 128 * 2 * 2),
    ("deepseek-ai/deepseek-coder-6.7b-instruct", "DeepSeek-Coder-6.7B", 32 * 32 * 128 * 2 * 2),
    ("TheBloke/deepseek-coder-6.7B-instruct-AWQ", "DeepSeek-Coder-6.7B", 32 * 32 * 128 * 2 * 2),
    ("ibm-granite/granite-3.1-2b-instruct", "Granite-3.1-2B", 40 * 8 * 64 * 2 * 2),
    ("ibm-granite/granite-3.3-8b-instruct", "Granite-3.1-8B", 40 * 8 * 128 * 2 * 2),
    ("Qwen/Qwen1.5-MoE-A2.7B-Chat", "Qwen1.5-MoE-A2.7B", 24 * 16 * 128 * 2 * 2),
    # hybrids: only the attention layers keep a per-token KV (4 of Nemotron-H's 56 blocks, 16 of Qwen3.5's 64)
    ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "Nemotron-Nano-9B-v2", 4 * 8 * 128 * 2 * 2),
    ("Qwen/Qwen3.5-27B", "Qwen3.5-27B", 16 * 4 * 256 * 2 * 2),
    ("Qwen/Qwen3.5-35B-A3B", "Qwen3.5-35B-A3B", 10 * 2 * 256 * 2 * 2),
])
def test_ids_that_carry_no_usable_size_resolve_to_their_own_architecture(repo: str, name: str,
                                                                         kv_bytes_tp1: int) -> None:
    found = find_model(repo)
    assert found is not None and found.name == name
    out = estimate_request({"model": {"name": repo}, "method": "inference", "serving_engine": "vllm",
                            "gpus": [{"name": "H100", "count": 1}], "engine_options": {"max_model_len": 4096}})
    s = out["serving"]
    assert s["kv_bytes_per_token"] == kv_bytes_tp1
    assert not any(a.startswith("architecture=like") for a in s["assumptions"])


def test_a_moe_id_with_only_its_active_size_is_answered_from_the_catalog() -> None:
    # "A2.7B" names the active parameters only: without a catalog row there was no total to size
    arch = architecture(ModelRef(name="Qwen/Qwen1.5-MoE-A2.7B"))
    assert arch.experts == 60 and arch.experts_per_token == 4
    assert 14.0e9 < arch.params < 14.6e9


def test_hybrid_state_pages_come_from_the_kv_pool() -> None:
    from engine.serving.kv import capacity, state_bytes

    arch = architecture(ModelRef(name="Qwen/Qwen3-Next-80B-A3B-Instruct"))
    # Gated DeltaNet state per layer and rank at TP4: conv 3 x (2 x 16 x 128 + 32 x 128) / 4 + 32 / 4 x 128 x 128
    assert state_bytes(arch, 4) == (3 * (2 * 16 * 128 + 32 * 128) / 4 + 8 * 128 * 128) * 2
    pool = 20 * 2**30
    cap = capacity(arch, "vllm-v1", pool, 4, arch.layers, 2.0, 16, 32768, 8192, 32768)
    # the attention block grows to hold one state page (16 x cdiv(274432, 16 x 1024) = 272 tokens); 12 attention
    # layers and 36 state layers make 1 + 3 groups of 12; a request: cdiv(32768, 272) blocks + one per state group
    blocks = int(pool // (272 * 1024 * 12))
    assert cap.blocks == blocks and cap.groups == 4
    assert cap.max_concurrency == round(blocks / (121 + 3), 2)
    plain = capacity(arch, "vllm-v0", pool, 4, arch.layers, 2.0, 16, 32768, 8192, 32768)
    assert cap.tokens < plain.tokens  # the state pages are taken from the same pool
    nemotron = architecture(ModelRef(name="nvidia/NVIDIA-Nemotron-Nano-9B-v2"))
    mamba = state_bytes(nemotron, 1)
    assert mamba == (3 * (128 * 80 + 2 * 8 * 128) + 128 * 80 * 128) * 2  # Mamba-2: conv + SSM state
    assert state_bytes(architecture(ModelRef(name="Qwen/Qwen3.5-27B")), 1) is None  # no sourced state shape


def test_an_excerpt_without_timestamps_is_read_as_a_v0_log() -> None:
    # as logs are quoted in issues: no INFO prefix, no timestamps, "GPU blocks" without its '#'
    text = ("Loading model weights took 7.1 GB\n"
            "Memory profiling results: total_gpu_memory=22.00GiB initial_memory_usage=7.50GiB "
            "peak_torch_memory=8.10GiB memory_usage_post_profile=7.51GiB non_torch_memory=0.30GiB "
            "kv_cache_size=11.40GiB gpu_memory_utilization=0.85\n"
            "GPU blocks: 1000, # CPU blocks: 2048\n"
            "Maximum concurrency for 8000 tokens per request: 2.00x\n")
    assert looks_like_log(text)
    reading = read_log(text)
    assert reading is not None and reading.kind == "vllm" and reading.version == "(V0)"
    assert reading.settings["gpu_memory_utilization"] == 0.85 and reading.settings["gpu_total_gib"] == 22.0
    assert reading.settings["max_model_len"] == 8000
    assert reading.measured["activation_peak_gib"] == 1.0  # the 0.6.4 peak includes the weights
    assert reading.measured["kv_tokens"] == 16000 and reading.measured["kv_cache_gib"] == 11.4
    assert not looks_like_log("GPU blocks are a vLLM idea")  # words alone are not a log

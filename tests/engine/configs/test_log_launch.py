"""A launch command pasted with a start-up log: its flags fill what the log lines leave out (logs written for these
tests)."""

from __future__ import annotations

import json

from engine.configs.logcheck import check_log
from engine.configs.readers.logs import read_log

VLLM_LINES = ("INFO 05-02 10:11:12 [gpu_worker.py:227] Available KV cache memory: 20.00 GiB\n"
              "INFO 05-02 10:11:12 [kv_cache_utils.py:634] GPU KV cache size: 163,840 tokens\n")


def test_a_vllm_serve_line_gives_tp_context_and_memory_share() -> None:
    text = ("HF_TOKEN=hf_abcdefghijklmnop vllm serve meta-llama/Llama-3.1-70B-Instruct \\\n"
            "    -tp 2 --max-model-len 16384 \\\n    --gpu-memory-utilization 0.85 --kv-cache-dtype fp8\n" + VLLM_LINES)
    r = read_log(text)
    assert r is not None and r.kind == "vllm"
    s = r.settings
    assert (s["model"], s["tp"], s["max_model_len"], s["gpu_memory_utilization"], s["kv_cache_dtype"]) == \
        ("meta-llama/Llama-3.1-70B-Instruct", 2, 16384, 0.85, "fp8")
    out = check_log(text, "H100")
    assert out is not None and out["request"]["tensor_parallel"] == 2
    assert "hf_abcdefghijklmnop" not in json.dumps(out)  # the token in the paste is never echoed


def test_the_logs_own_lines_win_over_the_command() -> None:
    text = ("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768\n"
            "INFO 05-02 10:11:12 [kv_cache_utils.py:637] Maximum concurrency for 8,192 tokens per request: 12.50x\n")
    r = read_log(text)
    assert r is not None and r.settings["max_model_len"] == 8192  # what ran, as the log printed it


def test_an_sglang_launch_line_gives_tp_and_mem_fraction_static() -> None:
    text = ("python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 2 --mem-fraction-static 0.8 "
            "--api-key sk-secretsecret123\n"
            "[2025-06-01 09:00:00 TP0] KV Cache is allocated. #tokens: 300000, K size: 18.31 GB, V size: 18.31 GB\n")
    r = read_log(text)
    assert r is not None and r.kind == "sglang"
    assert (r.settings["tp"], r.settings["gpu_memory_utilization"]) == (2, 0.8)
    assert "sk-secretsecret123" not in json.dumps(check_log(text, "H100"))


def test_no_launch_line_leaves_the_reading_as_it_was() -> None:
    r = read_log(VLLM_LINES)
    assert r is not None and "tp" not in r.settings and "gpu_memory_utilization" not in r.settings

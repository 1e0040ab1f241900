"""`gpu-advisor ask` for serving questions: the serving answer (not the training planner's HF-generate estimate),
as text and as HTML, and a clear answer for bad input."""

from __future__ import annotations

import json
import re

import pytest
from cli_support import Ran, run_cli

from bot.pipeline import ask_text
from engine.parse import parse

QUESTIONS = [
    "Llama 3.1 70B on vLLM for 32 users at 8k?",
    "Qwen2.5-Coder-32B vLLM на 1×H100, 32k, 16 пользователей",
    "Llama 3.1 70B on vLLM for 1000000 users at 8k",
    "Llama 3.1 8B на vLLM, 8 пользователей, контекст 1M",
    "Llama 3.1 70B vLLM TP 3, 8 users",
    "Llama 3.1 8B AWQ on llama.cpp",
]


def run(*args: str, stdin: str | bytes = "") -> Ran:
    return run_cli(*args, stdin=stdin)  # in process: bot.cli.main(argv) with its streams captured


def test_llama_70b_on_vllm_gets_the_serving_answer() -> None:
    p = run("ask", "Llama 3.1 70B on vLLM for 32 users at 8k?")
    assert p.returncode == 0 and "Traceback" not in p.stderr
    text = p.stdout
    first = text.split("\n")[0]
    assert first.startswith("✅ 32 users at 8k on ") and "room for" in first and "such requests" in first
    assert "activation peak" in text and "KV pool" in text and "vllm serve meta-llama/Llama-3.1-70B" in text
    assert "activations" not in text  # not the HF-generate breakdown
    html = ask_text("Llama 3.1 70B on vLLM for 32 users at 8k?", fmt="html")
    assert html.startswith("✅ <b>32 users at 8k on ") and '<pre><code class="language-bash">vllm serve' in html


def test_qwen_coder_on_one_h100_is_not_told_to_rent_eight() -> None:
    p = run("ask", "Qwen2.5-Coder-32B vLLM на 1×H100, 32k, 16 пользователей")
    assert p.returncode == 0 and "Traceback" not in p.stderr
    text = p.stdout
    assert "Qwen2.5-Coder-32B (32,8B)" in text  # the Coder model's shape, not the family's 7B
    assert "vllm serve Qwen/Qwen2.5-Coder-32B-Instruct " in text  # the variant's Hub id, not the base model's
    assert text.startswith("❌ Qwen2.5-Coder-32B не запускается на 1×H100 SXM (TP\u00a01): в пуле KV-кэша "
                           "31\u00a0536\u00a0токенов, меньше одного запроса с max_model_len 32\u00a0768")
    assert "8×H100" not in text
    prices = re.findall(r"([\d\u00a0]+,\d\d)\u00a0\$/ч", text)
    hourly = [float(x.replace("\u00a0", "").replace(",", ".")) for x in prices]
    assert hourly and max(hourly) < 26  # the biggest arrangement it names costs less than 8×H100's 26 $/h
    assert "хватает на" in text and "Команда запуска" in text


@pytest.mark.parametrize(("question", "words"), [
    ("Llama 3.1 70B on vLLM for 1000000 users at 8k", "1,000,000 users at once is more than"),
    ("Llama 3.1 8B на vLLM, 8 пользователей, контекст 1M", "длиннее, чем допускает Llama-3.1-8B "
                                                           "(max_position_embeddings = 131\u00a0072)"),
    ("Llama 3.1 70B vLLM TP 3, 8 users", "TP 3 does not divide the attention heads (64, KV heads 8): valid degrees "
                                         "are 1, 2, 4, 8"),
    ("Llama 3.1 8B AWQ on llama.cpp", "llama.cpp cannot load AWQ weights; engines that can: vLLM, SGLang, TGI"),
])
def test_bad_serving_input_gets_a_clear_answer(question: str, words: str) -> None:
    text = ask_text(question)
    assert text.startswith("❌ ") and words in text.split("\n")[0], text
    assert "Traceback" not in text


def test_ask_estimate_request_serving_lines_never_trace() -> None:
    lines = [json.dumps(parse(q).model_dump(mode="json")) for q in QUESTIONS]
    p = run("estimate", "--json", "--request", stdin="\n".join(lines) + "\n")
    assert p.returncode == 0 and "Traceback" not in p.stderr
    out = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(out) == len(lines)
    assert out[0]["serving"]["tensor_parallel"] >= 1 and out[0]["verdict"] is None  # no GPU named
    assert out[1]["verdict"] in ("no_fit", "fits_with_changes")
    assert [o["serving"]["errors"][0]["key"] for o in out[2:]] == [
        "serving.error.users_too_many", "serving.error.context_beyond_model", "serving.error.tp_not_divisor",
        "serving.error.format_not_supported"]


def test_what_the_question_said_that_cannot_be_used_is_said() -> None:
    text = ask_text("Llama 70B vLLM 1000000000 users")
    assert "⚠️ number of users out of range (1–1,000,000): ignored" in text.split("\n")[2]
    text = ask_text("Llama 8B на vLLM 8 пользователей контекст 0")
    assert "длина контекста вне разумных пределов: беру 4\u00a0096 по умолчанию" in text

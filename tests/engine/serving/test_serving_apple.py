"""A Mac serves through llama.cpp (vLLM, SGLang and TGI have no Metal backend), whatever engine the question
assumed or named; Apple's chip tiers are heard in Russian too; on unified memory a model that does not fit says so
in those words, and the smaller GGUF type that fits is offered."""

from __future__ import annotations

import pytest

from bot.pipeline import ask_text
from engine.answer import answer
from engine.parse import parse
from engine.schema import ServingAnswer


@pytest.mark.parametrize(("question", "gpu"), [
    ("gpt-oss-20b на макбуке м3 про 36гб", "M3 Pro"),
    ("qwen2.5 14b на m4 max 64gb 4 юзера", "M4 Max"),
    ("vllm llama 8b на mac studio м2 ультра", "M2 Ultra"),
    ("sglang qwen 7b on a macbook pro m3 max 48gb, 2 users", "M3 Max"),
])
def test_a_mac_is_served_by_llama_cpp(question: str, gpu: str) -> None:
    r = parse(question)
    assert r.gpus and r.gpus[0].name == gpu
    a = answer(r)
    assert isinstance(a, ServingAnswer) and a.serving.settings is not None
    assert a.serving.settings.engine == "llama.cpp"
    assert any(x.key == "serving_engine_apple" for x in a.serving.assumptions)
    assert a.serving.command[0] == "llama-server"  # never `vllm serve` for a Mac
    text = ask_text(question)
    assert "vllm serve" not in text and ("нет бэкенда Metal" in text or "no Metal backend" in text)


def test_unified_memory_too_small_says_so_and_a_smaller_gguf_is_offered() -> None:
    text = ask_text("gemma 2 27b на макбук эйр м2 16гб ollama")
    assert text.startswith("❌") and "не помещается в общую память" in text.splitlines()[0]
    assert "gpu_memory_utilization" not in text.splitlines()[0]
    # a 14B at 4 bits does not fit an 8 GB M1's working set (6 GB); at 3 bits neither: no change that does not load
    a = answer(parse("qwen2.5 14b на m1 8gb llama.cpp"))
    assert isinstance(a, ServingAnswer)
    assert all(c.effect.get("loads", True) for c in a.serving.changes)
    # a 70B at 4 bits with a 16k context past an M3 Max 48 GB's share: the 3-bit K-quant is the way, and the command
    # runs it from the published repository (bartowski's quant set holds Q3_K_M)
    a = answer(parse("llama 3.1 70b на m3 max 48gb llama.cpp контекст 16к"))
    assert isinstance(a, ServingAnswer) and not a.serving.fits
    smaller = [c for c in a.serving.changes if c.key == "serving.change.smaller_gguf"]
    assert smaller and smaller[0].effect["loads"] and smaller[0].params["to"] == "gguf:q3_k_m"
    assert a.serving.command_for == "serving.change.smaller_gguf"
    assert "bartowski/Meta-Llama-3.1-70B-Instruct-GGUF:Q3_K_M" in a.serving.command

"""A count written after its noun («эпох 30», «юзеров 50», "users: 32") is that count, and a number that names the GPU
(«на 4090 эпох 30», «на 4090 юзеров 8k контекст») is never taken for it; Ollama library tags keep their size
(«deepseek-r1:70b» is the Llama-70B distill, not the 671B model)."""

from __future__ import annotations

import pytest

from engine.parse import parse


@pytest.mark.parametrize(("text", "epochs", "gpu"), [
    ("qlora 8b на 4090 эпох 30", 30, "RTX 4090"),
    ("qlora 8b на 4090 3 эпохи", 3, "RTX 4090"),
    ("lora 8b on a100 epochs 4", 4, "A100 80GB SXM"),
    ("лора 7б на 3090, эпохи: 5", 5, "RTX 3090"),
    ("фулл 1б на h100 две эпохи", 2, "H100 SXM"),
])
def test_epochs_before_or_after_the_noun(text: str, epochs: int, gpu: str) -> None:
    r = parse(text)
    assert r.epochs == epochs and r.gpus and r.gpus[0].name == gpu and r.error is None, text


@pytest.mark.parametrize(("text", "users", "gpu"), [
    ("инфер llama 3.1 8b на h100 юзеров 50", 50, "H100 SXM"),
    ("llama 70b на 2 h100 пользователей 100", 100, "H100 SXM"),
    ("vllm qwen 7b on an l40s, users: 32", 32, "L40S"),
    ("qwen 7b на 4090 32 юзера", 32, "RTX 4090"),
    ("qwen 7b на 4090 юзеров 8k контекст", None, "RTX 4090"),  # «8k» is the context, 4090 the card
])
def test_users_before_or_after_the_noun(text: str, users: int | None, gpu: str) -> None:
    r = parse(text)
    assert r.concurrency == users and r.gpus and r.gpus[0].name == gpu, text


@pytest.mark.parametrize(("text", "model"), [
    ("ollama deepseek-r1:70b на rtx 4090", "DeepSeek-R1-Distill-Llama-70B"),
    ("deepseek-r1:32b на 4090 сколько токенов в секунду", "DeepSeek-R1-Distill-Qwen-32B"),
    ("deepseek-r1:14b на 3060", "DeepSeek-R1-Distill-Qwen-14B"),
    ("deepseek-r1:671b на 8 h200", "DeepSeek-R1"),
])
def test_an_ollama_tag_keeps_its_size(text: str, model: str) -> None:
    r = parse(text)
    assert r.model is not None and r.model.name == model

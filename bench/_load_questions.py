"""The load benchmark's questions: distinct ones from templates (Russian and English), popular ones repeated."""

from __future__ import annotations

import random

SIZES = ("1B", "1.5B", "3B", "7B", "8B", "13B", "14B", "27B", "32B", "34B", "70B", "72B", "110B", "180B", "405B")
NAMES = ("Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.1-405B", "Llama-3.2-1B", "Llama-3.2-3B", "Llama-3.3-70B",
         "Mistral-7B-v0.3", "Mistral-Nemo-12B", "Mistral-Small-24B", "Mixtral-8x7B", "Mixtral-8x22B",
         "Qwen2.5-0.5B", "Qwen2.5-7B", "Qwen2.5-14B", "Qwen2.5-32B", "Qwen2.5-72B", "Qwen3-8B", "Qwen3-32B",
         "Qwen3-30B-A3B", "DeepSeek-R1-Distill-Llama-70B", "Phi-4", "Yi-34B", "CodeLlama-34B", "TinyLlama-1.1B")
GPUS = ("H100", "H100 SXM", "H100 PCIe", "A100 80GB", "A100 40GB", "RTX 4090", "RTX 3090", "RTX 5090", "L40S",
        "L4", "T4", "A10G", "H200", "B200", "MI300X", "RTX A6000", "V100 32GB")
METHODS_EN = ("full fine-tune", "full FT", "LoRA", "LoRA r64", "QLoRA", "QLoRA 4-bit", "inference")
METHODS_RU = ("полное дообучение", "полный файнтюн", "LoRA", "лора", "QLoRA", "QLoRA 4 бита", "инференс")
CONTEXTS = ("2k", "4k", "8k", "16k", "32k", "4096", "8192", "128k")
TOKENS = ("10M", "50M", "100M", "500M", "1B")
EN_TEMPLATES = (
    "{model} {method} on {gpu}?",
    "Can I {method} {model} on {n}x {gpu} with {ctx} context?",
    "How much VRAM for {model} {method}, context {ctx}, batch {batch}?",
    "{model} {method} {n}x{gpu} {ctx}",
    "how long and how much to train {model} with {method} on {tokens} tokens on {n} {gpu}",
    "Will {model} {method} fit on {gpu} with batch {batch}?",
)
RU_TEMPLATES = (
    "{model} {method} на {gpu}?",
    "Сколько памяти нужно на {method} {model} с контекстом {ctx}?",
    "Влезет ли {model} {method} на {n}×{gpu}?",
    "сколько стоит {method} {model} на {tokens} токенов на {n} {gpu}",
    "{model} {method} контекст {ctx} батч {batch} на {gpu}",
    "Что нужно для {method} {model}, {n} карты {gpu}?",
)
POPULAR = (  # (question, client language), the first ones asked most (Zipf)
    ("70B QLoRA на H100?", "ru"), ("Llama-3.1-8B LoRA on RTX 4090", "en"), ("7B full fine-tune on A100 80GB", "en"),
    ("Qwen2.5-32B QLoRA на 2×RTX 4090?", "ru"), ("405B inference on 8x H100", "en"), ("13B lora 8k context", "en"),
    ("Mixtral-8x7B QLoRA on L40S", "en"), ("сколько стоит дообучить 70B на 100M токенов", "ru"),
    ("Llama-3.1-70B LoRA 4x H100 32k", "en"), ("Влезет ли 8B full на RTX 3090?", "ru"),
    ("Phi-4 qlora t4", "en"), ("Qwen3-8B инференс на L4", "ru"), ("70B full fine-tune on 8x H200", "en"),
    ("Mistral-7B-v0.3 QLoRA 4-bit on A10G", "en"), ("1B LoRA на T4", "ru"), ("72B QLoRA MI300X", "en"),
    ("DeepSeek-R1-Distill-Llama-70B inference on 2x H100", "en"), ("34B LoRA A100 80GB 16k", "en"),
    ("Сколько памяти на QLoRA 14B с контекстом 8k?", "ru"), ("Can I train 3B on RTX 4090 with full FT?", "en"),
)


class QuestionMix:
    """Questions with the Telegram client's language: distinct ones from templates, or popular ones repeated."""

    def __init__(self, seed: int = 1) -> None:
        self.rng = random.Random(seed)
        self.weights = [1.0 / (i + 1) for i in range(len(POPULAR))]

    def distinct(self) -> tuple[str, str]:
        rng = self.rng
        model = rng.choice(SIZES) if rng.random() < 0.5 else rng.choice(NAMES)
        values = {"model": model, "gpu": rng.choice(GPUS), "n": rng.choice((1, 1, 2, 4, 8)),
                  "ctx": rng.choice(CONTEXTS), "tokens": rng.choice(TOKENS), "batch": rng.choice((1, 2, 4, 8, 16))}
        if rng.random() < 0.5:
            return rng.choice(RU_TEMPLATES).format(method=rng.choice(METHODS_RU), **values), "ru"
        return rng.choice(EN_TEMPLATES).format(method=rng.choice(METHODS_EN), **values), "en"

    def repeat(self) -> tuple[str, str]:
        return self.rng.choices(POPULAR, weights=self.weights)[0]

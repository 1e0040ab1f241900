"""What kind of answer the question wants: estimate, cost, compare or help."""

from __future__ import annotations

from engine.parse.lexicon import (
    COMPARE_STRONG,
    COMPARE_WEAK,
    COST_WORDS,
    LORA_WORDS,
    MEMORY_WORDS,
    QLORA_WORDS,
    TIME_NOUNS,
)
from engine.parse.scan import Scan

# "the fastest", "быстрее всего": plans ranked by time rather than by money
FAST_WORDS = frozenset({"fastest", "quickest", "faster", "quicker", "asap", "быстрее", "побыстрее", "быстрейший",
                        "быстрейшая", "быстрейшее", "быстрейшие", "скорейший"})
FAST_ADJECTIVES = frozenset({"быстрый", "быстрая", "быстрое", "быстрые", "быстрого", "быструю"})
SUPERLATIVE = frozenset({"самый", "самая", "самое", "самые", "самого", "самую", "most"})

SUBSTANCE = ("model", "method", "seq_len", "batch_size", "lora_rank", "bits", "optimizer",
             "gradient_checkpointing", "offload", "tokens", "epochs", "stage", "framework", "serving_engine",
             "quantization", "kv_cache_dtype", "concurrency", "prompt_len", "output_len", "num_generations",
             "tensor_parallel", "pipeline_parallel", "context_parallel", "budget", "deadline_hours", "fused_loss")


def _asks_cost(s: Scan) -> bool:
    toks = s.toks
    for i, t in enumerate(toks):
        w = t.text
        if w in COST_WORDS:
            return True
        nxt = toks[i + 1].text if i + 1 < s.n else ""
        if w == "how" and nxt == "long":
            return True
        if w == "how" and nxt == "much" and (toks[i + 2].text if i + 2 < s.n else "") not in MEMORY_WORDS:
            return True
        if w == "сколько" and (nxt in TIME_NOUNS or (nxt == "по" and i + 2 < s.n and toks[i + 2].text in TIME_NOUNS)):
            return True
        if w in TIME_NOUNS and i > 0 and toks[i - 1].text in ("training", "train", "обучения"):
            return True
    return False


def _options(s: Scan) -> int:
    """How many alternatives the question names in one category (GPUs, methods)."""
    methods = sum(1 for t in s.toks if t.text in QLORA_WORDS) + sum(1 for t in s.toks if t.text in LORA_WORDS)
    methods += sum(1 for t in s.toks if t.text in ("full", "полный", "полного", "полное", "инференс",
                                                    "inference", "fft"))
    return max(len(s.gpus), methods)


def rank_by(s: Scan) -> str | None:
    if s.words & FAST_WORDS:
        return "time"
    for i, t in enumerate(s.toks):
        if t.text in FAST_ADJECTIVES and i > 0 and s.toks[i - 1].text in SUPERLATIVE:
            return "time"
        if t.text == "fast" and i > 1 and s.toks[i - 1].text == "as" and s.toks[i - 2].text == "as":
            return "time"
    return None


def intent(s: Scan) -> str:
    substantive = bool(s.gpus) or bool(s.unsupported) or any(s.said.get(k) is not None for k in SUBSTANCE)
    if s.words & COMPARE_STRONG and substantive:
        return "compare"
    if s.words & COMPARE_WEAK and _options(s) >= 2:
        return "compare"
    if _asks_cost(s):
        return "cost"
    return "estimate" if substantive else "help"

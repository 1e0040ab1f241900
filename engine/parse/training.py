"""How the model is trained: method, weight precision, optimizer, checkpointing, offload, sharding."""

from __future__ import annotations

import re

from engine.parse.lexicon import (
    ALL_WORDS,
    BIT_WORDS,
    BNB,
    CAN_IT_WORDS,
    CONTEXT_WORDS,
    FULL_SLANG,
    FULL_WORDS,
    FUSED_LOSS_NOUNS,
    FUSED_OPTIMIZER,
    GC_HEADS,
    GC_QUALIFIERS,
    GC_WEAK_HEADS,
    INFER_SLANG,
    INFERENCE_WORDS,
    LORA_WORDS,
    NEG_AFTER,
    NEG_BEFORE,
    OFFLOAD_HEADS,
    OPTIMIZER_GENERIC,
    OPTIMIZER_HEADS,
    PAGED,
    PRECISION_NOUNS,
    PRECISION_PREFIX,
    PRECISION_WORDS,
    QLORA_WORDS,
    TRAIN_WORDS,
    WEAK_INFERENCE_WORDS,
    WEIGHT_WORDS,
)
from engine.parse.lexicon_stack import GENERATE_VERBS, SERVING_WORDS, STAGE_WORDS, UNMODELLED_SERVING
from engine.parse.money import asks
from engine.parse.normalize import NUM, WORD
from engine.parse.scan import Scan
from engine.parse.talk import serving_asks

BITS = (4, 8, 16, 32)
PRETRAIN_WORDS = frozenset(w for w, v in STAGE_WORDS.items() if v == "pretrain")
SERVING_NAMES = frozenset(SERVING_WORDS) | frozenset(UNMODELLED_SERVING)
STRONG_INFERENCE = INFERENCE_WORDS | (INFER_SLANG - WEAK_INFERENCE_WORDS)
HYPHENS = frozenset({"-", "‐", "‑", "–", "_"})
# between a switch and its state: "чекпоинтинг градиентов выкл", "checkpointing = off"
SWITCH_FILLERS = frozenset({"=", ":", "-", "is", "был", "будет", "оставить"}) | GC_QUALIFIERS
POSITIVE_AFTER = frozenset({"on", "true", "enabled", "вкл", "включен", "включено", "1", "yes", "да"})


def _n_bit(s: Scan, a: int, b: int, value: float | None) -> tuple[int, int] | None:
    """An "8-bit" / "8 бит" / "32bit" inside tokens a..b (of `value`, or any): (first, last index)."""
    for k in range(max(a, 0), min(b, s.n - 1) + 1):
        t = s.toks[k]
        if t.kind == NUM and (value is None or t.val == value):
            j = s.skip(k + 1, HYPHENS, 1)
            if j < s.n and s.toks[j].text in BIT_WORDS:
                return k, j
    return None


def optimizer(s: Scan) -> None:
    for i, t in enumerate(s.toks):
        if t.used or t.kind != WORD:
            continue
        head = OPTIMIZER_HEADS.get(t.text)
        if head is None and t.text not in OPTIMIZER_GENERIC:
            continue
        lo, hi = i, i
        eight = _n_bit(s, i - 3, i + 4, 8)
        paged = s.near(i, PAGED, 3, 3)
        bnb = s.near(i, BNB, 2, 2)
        width = _n_bit(s, i + 1, i + 4, None)  # "paged_adamw_32bit": the optimizer's, not the weights'
        for k in (eight, paged, bnb, width):
            if isinstance(k, tuple):
                lo, hi = min(lo, k[0]), max(hi, k[1])
            elif k is not None:
                lo, hi = min(lo, k), max(hi, k)
        fused = s.near(i, FUSED_OPTIMIZER, 2, 4)  # "fused AdamW", "adamw_torch_fused", «фьюзд адам»
        if fused is not None and s.word(s.skip(fused + 1, HYPHENS, 1)) in FUSED_LOSS_NOUNS:
            fused = None  # "AdamW, fused cross-entropy": the loss's
        if fused is not None and head == "adamw" and not (eight or bnb or paged is not None):
            head = "adamw_fused"
            lo, hi = min(lo, fused), max(hi, fused)
        if head in (None, "adamw"):
            if (eight or bnb) and paged is not None:
                head = "paged_adamw_8bit"
            elif eight or bnb:
                head = "adamw_8bit"
            elif paged is not None:
                head = "paged_adamw"
        if head is None:
            continue  # "optimizer" alone says nothing
        if s.near(lo, NEG_BEFORE, 3, 0) is not None:
            # "without 8-bit optimizer": plain AdamW; "без adafactor": nothing said
            head = "adamw" if head not in ("adamw", "sgd", "adafactor", "lion") else None
        if head is not None:
            s.set("optimizer", head)
        s.use(lo, hi)


def bits(s: Scan) -> None:
    for i, t in enumerate(s.toks):
        if t.used:
            continue
        value = None
        last = i
        if t.kind == NUM:
            j = s.skip(i + 1, HYPHENS, 1)
            if s.word(j) in BIT_WORDS:
                value, last = t.val, j
        elif t.kind == WORD:
            if t.text in PRECISION_PREFIX and s.num(i + 1) and s.glued(i + 1):
                value, last = s.toks[i + 1].val, i + 1  # fp16, bf16, int8, nf4, q4_k_m
                if t.text == "q" and value not in (4, 8):
                    continue
            elif t.text in PRECISION_WORDS and (t.text != "half" or s.word(s.skip(i + 1, HYPHENS, 1))
                                                in PRECISION_NOUNS):
                value = PRECISION_WORDS[t.text]
            elif t.text in ("full", "полной", "полная", "полную", "одинарной", "половинной") \
                    and s.word(s.skip(i + 1, HYPHENS, 1)) in PRECISION_NOUNS:
                value, last = (16 if t.text == "половинной" else 32), i + 2
        if value is not None and value in BITS:
            s.set("bits", int(value))
            s.use(i, last)


def _switch(s: Scan, i: int, lo: int) -> bool:
    """On unless negated: "без чекпоинтинга", "no offload", "grad ckpt off", "=false"."""
    if s.near(lo, NEG_BEFORE, 3, 0) is not None:
        return False
    j = s.skip(i + 1, SWITCH_FILLERS, 3)
    after = s.toks[j].text if j < s.n else ""
    return after not in NEG_AFTER


def checkpointing(s: Scan) -> None:
    for i, t in enumerate(s.toks):
        if t.kind != WORD:
            continue
        lo = i
        if t.text in GC_WEAK_HEADS:
            q = s.near(i, GC_QUALIFIERS, 2, 0)
            j = s.skip(i + 1, frozenset({"=", ":"}), 1)
            after = s.toks[j].text if j < s.n else ""
            gc_said = t.text == "gc" and (after in NEG_AFTER or after in POSITIVE_AFTER
                                          or s.near(i, NEG_BEFORE, 2, 0) is not None)  # "без gc"
            if q is None and not gc_said:
                continue
            lo = q if q is not None else i
        elif t.text in GC_HEADS:
            q = s.near(i, GC_QUALIFIERS, 2, 0)
            lo = q if q is not None else i
        else:
            continue
        s.set("gradient_checkpointing", _switch(s, i, lo))
        s.use(lo, i)


FLASH_HEADS = frozenset({"flashattention", "flashattention2", "fa2", "fa3", "flash_attn", "flash"})
FLASH_NOUNS = frozenset({"attention", "attn", "attention2", "attention-2", "аттеншн", "аттеншен", "атеншн"})


def flash_attention(s: Scan) -> None:
    """"without flash attention", "flash-attn off", "без FA2": FlashAttention said on or off."""
    for i, t in enumerate(s.toks):
        if t.kind != WORD or (t.text not in FLASH_HEADS and t.text != "fa"):
            continue
        last = i
        if t.text == "fa":  # "FA2", "FA3"
            if not (s.num(i + 1) and s.glued(i + 1) and s.toks[i + 1].val in (2, 3)):
                continue
            last = i + 1
        elif t.text == "flash":
            j = s.skip(i + 1, HYPHENS, 1)
            if s.word(j) not in FLASH_NOUNS:
                continue
            last = j
        s.set("flash_attention", _switch(s, last, i))
        s.use(i, last)
        return


ACTIVATION_WORDS = frozenset({"activation", "activations", "активаций", "активации", "активациями",
                              "checkpoints", "чекпоинтов"})


def alst(s: Scan) -> None:
    """CONTRACT v2.1: ALST's "activation offload" («с оффлоадом активаций», "offload activations to CPU") and
    TiledMLP ("tiled mlp", "TiledMLP"). The offload head it takes is not the optimizer offload `offload` reads."""
    for i, t in enumerate(s.toks):
        if t.kind != WORD:
            continue
        if t.text in OFFLOAD_HEADS and not t.used:
            near = [j for j in (i - 2, i - 1, i + 1, i + 2) if 0 <= j < s.n and s.word(j) in ACTIVATION_WORDS]
            if near:
                s.set("activation_offload", _switch(s, max(i, *near), min(i, *near)))
                s.use(min(i, *near), max(i, *near))
        elif t.text == "tiledmlp" or (t.text == "tiled" and s.word(s.skip(i + 1, HYPHENS, 1)) == "mlp"):
            last = i if t.text == "tiledmlp" else s.skip(i + 1, HYPHENS, 1)
            s.set("tiled_mlp", _switch(s, last, i))
            s.use(i, last)


SELECTIVE_WORDS = frozenset({"selective", "выборочный", "выборочным", "выборочного", "выборочная", "выборочной",
                             "селективный", "селективным", "селективного", "селективная", "селективной"})
SELECTIVE_NOUNS = GC_HEADS | GC_WEAK_HEADS | frozenset({"ac", "activation", "activations", "активаций", "recompute",
                                                        "recomputation", "пересчёт", "пересчет"})
ASYNC_WORDS = frozenset({"async", "asynchronous", "асинхронный", "асинхронным", "асинхронного", "асинхронная",
                         "асинхронной", "асинхронное"})
COMPILE_RU = frozenset({"компиляция", "компиляцией", "компиляции", "компиляцию"})


def native(s: Scan) -> None:
    """CONTRACT v2.1 PyTorch-native switches (docs/contract-training.md): "selective activation checkpointing" /
    «выборочный чекпоинтинг» (selective_checkpointing), "float8" / "Float8 linear" (float8), "async TP" / «асинхронный
    TP» (async_tp), "torch.compile" / «с компиляцией» (torch_compile); each negatable ("без torch.compile")."""
    for i, t in enumerate(s.toks):
        if t.kind != WORD or t.used:
            continue
        w = t.text.lower()
        if w in SELECTIVE_WORDS:
            j = next((k for k in (i + 1, i + 2) if s.word(k).lower() in SELECTIVE_NOUNS), None)
            if j is not None:
                s.set("selective_checkpointing", _switch(s, j, i))
                s.set("gradient_checkpointing", True)
        elif w == "float" and s.num(i + 1) and s.glued(i + 1) and s.toks[i + 1].val == 8:
            s.set("float8", _switch(s, i + 1, i))
            s.use(i, i + 1)
        elif w == "float8":
            s.set("float8", _switch(s, i, i))
            s.use(i, i)
        elif w in ASYNC_WORDS:
            j = s.skip(i + 1, HYPHENS, 1)
            if s.word(j).lower() in ("tp", "tensor"):
                s.set("async_tp", _switch(s, j, i))
                s.use(i, j)
        elif w == "asynctp":
            s.set("async_tp", _switch(s, i, i))
            s.use(i, i)
        elif w == "torch":
            j = s.skip(i + 1, HYPHENS | frozenset({"."}), 1)
            if s.word(j).lower() in ("compile", "compiled"):
                s.set("torch_compile", _switch(s, j, i))
                s.use(i, j)
        elif w in ("torchcompile",) or w in COMPILE_RU:
            s.set("torch_compile", _switch(s, i, i))
            s.use(i, i)


def offload(s: Scan) -> None:
    for i, t in enumerate(s.toks):
        if t.kind == WORD and t.text in OFFLOAD_HEADS and not t.used:
            s.set("offload", _switch(s, i, i))
            return


def sharding(s: Scan) -> None:
    """ZeRO stage / FSDP / DDP (not a `parse` field, but said, so kept for the estimate)."""
    for i, t in enumerate(s.toks):
        if t.kind != WORD:
            continue
        if t.text == "zero":
            j = s.skip(i + 1, HYPHENS | frozenset({"stage"}), 2)
            if s.num(j) and s.toks[j].val in (1, 2, 3):
                s.set("sharding", f"zero{int(s.toks[j].val)}")
                s.use(i, j)
        elif t.text in ("fsdp", "ddp"):
            s.set("sharding", t.text)


def _qlora_said(s: Scan) -> bool:
    """QLoRA named anywhere in the question's own words (not in a model id)."""
    if s.words.isdisjoint(QLORA_WORDS) and s.words.isdisjoint(LORA_WORDS):
        return False
    for i, t in enumerate(s.toks):
        if t.kind != WORD or t.used or i in s.ids:
            continue
        if t.text in QLORA_WORDS:
            return True
        if t.text in LORA_WORDS and s.word(s.skip(i - 1, HYPHENS, 1, -1)) in ("q", "ку", "кью"):
            return True
    return False


def method(s: Scan) -> None:
    """The first method named wins. Without one: pretraining words mean full; a serving engine, a weight
    format (AWQ, GGUF, FP8 ...) or "run"/"поднять" mean inference, unless something says training.
    Words inside a model id ("…-pretrain", "…-Instruct") say nothing."""
    toks = s.toks
    weak = pretrain = False
    specific = _qlora_said(s)  # "лора 70b qlora": QLoRA is LoRA on 4-bit weights, the more specific word wins
    for i, t in enumerate(toks):
        if t.kind != WORD or t.used or i in s.ids:
            continue
        w = t.text
        found = None
        if w in QLORA_WORDS:
            found = "qlora"
        elif w in LORA_WORDS:
            prev = s.skip(i - 1, HYPHENS, 1, -1)
            found = "qlora" if s.word(prev) in ("q", "ку", "кью") else "lora"
        elif w in PRETRAIN_WORDS:
            pretrain = True
        elif w in FULL_WORDS or w in FULL_SLANG:
            if s.word(s.skip(i + 1, HYPHENS, 1)) not in CONTEXT_WORDS:
                found = "full"
        elif w in ("fully", "полностью") and (s.word(s.skip(i + 1, HYPHENS, 1)) in TRAIN_WORDS | {"дообучить"}
                                              or any(x.text in TRAIN_WORDS for x in toks[max(0, i - 4):i])):
            found = "full"  # "fully fine-tune 13b", «полностью дообучить», «зафайнтюнить 70б полностью»
        elif w in WEIGHT_WORDS and s.word(s.skip(i - 1, frozenset({"the"}), 1, -1)) in ALL_WORDS:
            found = "full"  # "all weights", "все веса"
        elif (w == "scratch" and s.word(i - 1) == "from") or (w == "нуля" and s.word(i - 1) in ("с", "со")):
            pretrain = True
        elif w in SERVING_NAMES:
            weak = True  # "GRPO with vLLM rollouts" is training
        elif w in STRONG_INFERENCE and s.said.get("stage") in ("grpo", "ppo"):
            weak = True  # "GRPO, vllm-serve on a separate card": the rollout's server; RL is training
        elif w in STRONG_INFERENCE:
            found = "inference"
        elif w in WEAK_INFERENCE_WORDS:
            weak = True
        if found == "lora" and specific:
            found = "qlora"
        if found:
            s.set("method", found)
            return
    if pretrain:
        s.set("method", "full")
        return
    weak = weak or s.said.get("quantization") is not None or s.said.get("serving_engine") is not None \
        or s.said.get("concurrency") is not None or bool(serving_asks(s)) or bool(s.said.get("asks_users")) \
        or s.said.get("prompt_len") is not None or s.said.get("output_len") is not None \
        or not s.words.isdisjoint(GENERATE_VERBS) \
        or per_million_price(s)  # «сколько юзеров потянет», "how much to generate 100M tokens", «цена за 1м токенов»
    training = bool(s.words & TRAIN_WORDS) or s.said.get("stage") is not None \
        or s.said.get("framework") not in (None, "hf") or s.said.get("num_generations") is not None
    if weak and not training:
        s.set("method", "inference")


# «цена за 1м токенов», "price per 1M tokens", "$/1M tokens": the serving metric, not a 1M-token training set
PER_MILLION = re.compile(r"(?:\bза|\bper|/|\bfor\s+a)\s*(?:1\s*(?:m|м|млн)\b|милли?он\w*|million\b)\.?\s*(?:ток|tok)")


def per_million_price(s: Scan) -> bool:
    return s.said.get("tokens") == 1e6 and PER_MILLION.search(s.text) is not None


# what only a training job has: a question that says one of these is not asked as inference by default
TRAINING_ONLY = ("tokens", "epochs", "lora_rank", "optimizer", "gradient_checkpointing", "offload", "sharding",
                 "fused_loss", "stage", "num_generations", "deadline_hours", "activation_offload", "tiled_mlp",
                 "selective_checkpointing", "float8", "async_tp", "torch_compile")


def inference_by_default(s: Scan) -> None:
    """A model named by name on a GPU with no method, no training word and no training setting ("gpt-oss-120b на
    одной h100", "deepseek v3 on 8xh200") asks whether it runs there: inference, said as assumed (Request.assumed
    "method") so the answer names the guess. A bare size ("70B на H100") keeps the training default, unless the
    question only asks whether it can («70б на одной h100 можно?»): then it is the same run question."""
    said = s.said
    model = said.get("model")
    if said.get("method") is not None or not s.gpus or not isinstance(model, dict):
        return
    if not model.get("name") and s.words.isdisjoint(CAN_IT_WORDS):
        return
    if s.words & TRAIN_WORDS or any(said.get(k) is not None for k in TRAINING_ONLY):
        return
    if said.get("framework") not in (None, "hf") or "time" in asks(s):  # "how long": a run's hours
        return
    s.set("method", "inference")
    s.assumed.append("method")


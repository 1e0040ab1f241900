"""Serving and post-training load: weight format, KV cache, concurrency, lengths, completions per prompt."""

from __future__ import annotations

import re

from engine.parse.lexicon import (
    CONCURRENCY_ADJ,
    CONCURRENCY_NOUNS,
    FILLERS,
    GPU_NOUNS,
    INFERENCE_WORDS,
    TOKEN_WORDS,
    TRAIN_WORDS,
)
from engine.parse.lexicon_stack import (
    ASKING,
    CACHE_WORDS,
    CONCURRENCY_HEADS,
    COUNTED,
    GENERATE_VERBS,
    GGUF,
    KV_DTYPES,
    KV_WORDS,
    MEMORY_UNITS,
    OUTPUT_WORDS,
    PROMPT_WORDS,
    QUANT_BITS,
    QUANT_WORDS,
    SINGLE_USER,
    USER_NOUNS,
)
from engine.parse.normalize import NUM, PUNCT, WORD
from engine.parse.numbers import whole
from engine.parse.scan import STOPS, Phrases, Scan
from engine.parse.settings import KIB, names_a_gpu
from engine.schema import MAX_BATCH, MAX_SEQ_LEN

GLUE = frozenset({"-", "_", ".", "‐"})
_GGUF_TYPE = re.compile(r"i?q[1-8](?:_[0-9a-z]{1,4}){0,2}")
# A bare "q4" / "q8" names a bit width, not a llama.cpp type: read as the type people download at that width —
# the K-quant "_M" mix (q4_k_m is Ollama's tag default: engine/catalog/serving.toml [ollama] default_gguf), q6_k
# and q8_0 where llama.cpp has one type (tools/quantize/quantize.cpp QUANT_OPTIONS). Request.assumed says so.
GGUF_BARE = {"q2": "q2_k", "q3": "q3_k_m", "q4": "q4_k_m", "q5": "q5_k_m", "q6": "q6_k", "q8": "q8_0"}
LEN_FILLERS = FILLERS | TOKEN_WORDS | frozenset({"длина", "длиной", "length", "len", "в", "of", "max", "до", "на",
                                                 "~", "примерно", "около", "about", "around"})
LENGTH_AFTER = TOKEN_WORDS | frozenset({"length", "len", "длина", "длиной", "длины", "tokens"})
PER_PROMPT = frozenset({"prompt", "промпт", "промпта", "вопрос", "question", "запрос", "query", "задачу"})
RATE_AFTER = frozenset({"/", "per", "в", "a", "an"})
SECOND = frozenset({"s", "sec", "second", "секунду", "сек", "с", "day", "день", "hour", "час", "min", "минуту",
                    "month", "месяц", "week", "неделю", "сутки"})
CONCURRENT_WORDS = USER_NOUNS | CONCURRENCY_ADJ | CONCURRENCY_NOUNS
QUANT_TRIGGERS = frozenset({"awq", "gptq", "nf", "fp", "int", "mxfp", "nvfp", "w", "e", "bnb", "q", "iq"}) | GGUF
# verbs that measure the output only with a token count after them: "generate 256 tokens", «сгенерировать 1к токенов»
# "300 tokens per answer", «по 300 токенов на ответ»: the number is before, the noun after these
PER_NOUN = frozenset({"per", "each", "a", "an", "for", "на", "в", "каждый"})
LENGTH_TRIGGERS = PROMPT_WORDS | OUTPUT_WORDS | GENERATE_VERBS | {"new"}


def glued_key(s: Scan, i: int, limit: int = 6) -> list[tuple[str, int]]:
    """Keys of the glued token runs starting at i ("fp8", "q4_k_m" → ["q", "q4", "q4k", ...]): (key, last index)."""
    out: list[tuple[str, int]] = []
    key = ""
    j = i
    while j < s.n and j - i < limit:
        t = s.toks[j]
        if j > i and t.sp:
            break
        if t.kind == PUNCT:
            if t.text not in GLUE:
                break
        else:
            key += t.key
            out.append((key, j))
        j += 1
    return out


def _dtype_at(s: Scan, k: int, table: dict[str, str]) -> tuple[str, int] | None:
    if not (0 <= k < s.n) or s.toks[k].used or s.toks[k].kind == PUNCT:
        return None
    best = None
    for key, j in glued_key(s, k, 4):
        if key in table:
            best = (table[key], j)
    return best


# ── weight format ───────────────────────────────────────────────────────────────────────
def kv_cache(s: Scan) -> None:
    """"fp8 kv", "KV-кэш в fp8", "kv_cache_dtype=fp8": the dtype next to a KV cache word."""
    if s.words.isdisjoint(KV_WORDS):
        return
    for i, t in enumerate(s.toks):
        if t.kind != WORD or t.text not in KV_WORDS:
            continue
        if t.text == "кв" and s.word(s.skip(i + 1, GLUE, 1)) not in CACHE_WORDS:
            continue
        found = None
        k = i + 1
        while k < s.n and k - i <= 7 and not (s.toks[k].kind == PUNCT and s.toks[k].text in STOPS):
            got = _dtype_at(s, k, KV_DTYPES) or _bits_at(s, k)
            if got:
                found = (got[0], k, got[1])
                break
            k += 1
        if found is None:
            k = i - 1
            while k >= 0 and i - k <= 4 and not (s.toks[k].kind == PUNCT and s.toks[k].text in STOPS):
                got = _dtype_at(s, k, KV_DTYPES) or _bits_at(s, k)
                if got:
                    found = (got[0], k, got[1])
                    break
                k -= 1
        if found:
            s.set("kv_cache_dtype", found[0])
            s.use(found[1], found[2])
            s.use(i, i)


def _bits_at(s: Scan, k: int) -> tuple[str, int] | None:
    """"8 bit" / "8-бит" as a KV cache dtype (vLLM's 8-bit KV cache is fp8: `--kv-cache-dtype fp8`)."""
    if s.num(k) and s.toks[k].val in (4, 8, 16):
        j = s.skip(k + 1, GLUE, 1)
        if s.word(j).startswith(("bit", "бит")):
            return {4: "int4", 8: "fp8", 16: "bf16"}[int(s.toks[k].val)], j
    return None


def quantization(s: Scan) -> None:
    """A weight format named: awq, gptq, fp8, int8, nf4, mxfp4, nvfp4, gguf (with its type: "q4_k_m")."""
    if s.words.isdisjoint(QUANT_TRIGGERS):
        return
    gguf = False
    for i, t in enumerate(s.toks):
        if t.used or t.kind != WORD:
            continue
        if t.text in GGUF:
            gguf = True
            s.use(i, i)
            continue
        if t.text in ("q", "iq") and s.num(i + 1) and s.glued(i + 1):
            a, b = i, i
            while (b + 1 < s.n and s.glued(b + 1) and s.toks[b + 1].kind != PUNCT) or (
                    b + 2 < s.n and s.toks[b + 1].text == "_" and s.glued(b + 1) and s.glued(b + 2)):
                b += 1
            raw = s.text[s.toks[a].start:s.toks[b].end]
            m = _GGUF_TYPE.fullmatch(raw)
            if m is None:
                continue
            if raw in GGUF_BARE:  # "q4": llama.cpp has several 4-bit types; the common one, said as assumed
                raw = GGUF_BARE[raw]
                s.assumed.append("quantization")
            s.set("quantization", f"gguf:{raw}")
            level = int(s.toks[i + 1].val)
            if level in (4, 8):
                s.set("bits", level)
            s.use(a, b)
            continue
        got = _dtype_at(s, i, QUANT_WORDS)
        if got:
            name, j = got
            s.set("quantization", name)
            if name in QUANT_BITS:
                s.set("bits", QUANT_BITS[name])
            s.use(i, j)
    if gguf:
        s.set("quantization", "gguf")


EXL2_HEADS = frozenset({"exl", "exllama", "exllamav"})
BPW = frozenset({"bpw", "bpw.", "bits-per-weight"})


def other_formats(s: Scan) -> None:
    """Weight formats the engine does not model as such, heard and said: ExLlamaV2's EXL2 ("exl2 4.0bpw",
    "exllamav2 4.65 bpw") is an inference format, unmodelled (Request.unsupported "exllama"), its bits per weight
    read as the nearest of 4 / 8 / 16 bits (shown in the summary); MLX ("mlx 4bit") is Apple's array framework,
    unmodelled as such (Request.unsupported "mlx"), its bits read by training.bits."""
    if not s.words & (EXL2_HEADS | BPW | {"mlx"}):
        return
    for i, t in enumerate(s.toks):
        if t.kind != WORD:
            continue
        if t.text in EXL2_HEADS and (t.text == "exllama" or (s.num(i + 1) and s.glued(i + 1))):
            if "exllama" not in s.unsupported:
                s.unsupported.append("exllama")
            if s.num(i + 1) and s.glued(i + 1):
                s.use(i + 1, i + 1)  # "exl2": the 2 is no count; the word stays for the method (weak inference)
        elif t.text == "mlx" and "mlx" not in s.unsupported:
            s.unsupported.append("mlx")
        elif t.text in BPW and i > 0 and s.num(i - 1) and s.said.get("bits") is None:
            bpw = float(s.toks[i - 1].val)
            if 1.0 <= bpw <= 16.0:
                s.set("bits", min((4, 8, 16), key=lambda b: (abs(b - bpw), -b)))
                if s.said.get("quantization") is None:
                    s.set("quantization", f"exl2:{bpw:g}")  # the weights at the bits per weight said
                s.use(i - 1, i)


# ── load ────────────────────────────────────────────────────────────────────────────────
def _count(s: Scan, j: int) -> tuple[float, int] | None:
    if s.num(j):
        mult, end = s.unit_after(j)
        if mult <= 1e3:
            return s.toks[j].val * mult, end
    return None


def _rate_follows(s: Scan, j: int) -> bool:
    """"100 requests per second", "1000 запросов в день": a rate, not a number of users at once."""
    k = j + 1
    if s.word(k) in RATE_AFTER:
        return s.word(k + 1) in SECOND
    return s.word(k) in ("rps", "qps")


SINGLE = Phrases(SINGLE_USER)  # one stream: «сколько ток/с на одного», "single user speed"


def concurrency(s: Scan) -> None:
    """"32 concurrent users", "на 50 пользователей", "concurrency=16" (also the serving batch)."""
    one = SINGLE.first(s.texts, s.words)
    if one is not None and s.words.isdisjoint(TRAIN_WORDS) and not any(s.num(k) for k in range(one, one + 4)):
        _put(s, 1)
        s.use(one, one + len(SINGLE.at(s.texts, one) or ()) - 1)
        return
    if s.words.isdisjoint(CONCURRENT_WORDS) and s.words.isdisjoint(CONCURRENCY_HEADS):
        return
    # "команда из 5 человек хочет дообучить 7B": people around a training job are no serving load
    training = not s.words.isdisjoint(TRAIN_WORDS) and s.words.isdisjoint(INFERENCE_WORDS)
    for i, t in enumerate(s.toks):
        if t.used or t.kind == NUM:
            continue
        if t.text in CONCURRENCY_HEADS:
            j = s.skip(i + 1, FILLERS, 2)
            got = _count(s, j)
            if got:
                _put(s, got[0])
                s.use(i, got[1])
            continue
        if t.text not in CONCURRENT_WORDS or training or _rate_follows(s, i):
            continue
        # a number, then at most two words before the noun: "32 одновременных пользователя", "100 active users"
        k = i - 1
        for _ in range(3):
            if s.num(k) or k < 0 or s.toks[k].kind != WORD or s.toks[k].used or s.toks[k].text in ASKING:
                break  # «16 гб сколько потянет юзеров»: the users are asked, the 16 is the card's
            if s.toks[k].text in GPU_NOUNS:
                k = -1  # «8 карт сколько пользователей»: the number counts the cards
                break
            k -= 1
        if not s.num(k) or (s.glued(k) and s.toks[k - 1].kind == WORD) or s.word(k + 1) in MEMORY_UNITS \
                or names_a_gpu(s, k):
            after = _count_after(s, i)  # «юзеров 50», "users: 100": the count written after the noun
            if after is None:
                continue
            k = after
        got = _count(s, k)
        if got:
            _put(s, got[0])
            s.use(k, i)


AFTER_NOUN = frozenset({"=", ":", "-", "—", "–"})


def _count_after(s: Scan, i: int) -> int | None:
    """The index of a bare count right after noun i («пользователей 100», "users: 50"); None when the number there
    is something else: a GPU («юзеров на 4090»: a word between), a memory or a length («users 8k context»)."""
    j = s.skip(i + 1, AFTER_NOUN, 1)
    if not s.num(j) or s.toks[j].used or names_a_gpu(s, j) or s.unit_after(j)[0] > 1 \
            or s.word(j + 1) in MEMORY_UNITS or s.word(j + 1) in TOKEN_WORDS:
        return None
    return j


def _put(s: Scan, v: float) -> None:
    if not whole(v) or v > MAX_BATCH:
        s.errors.append("concurrency out of range")
        return
    s.set("concurrency", int(v))
    s.set("batch_size", int(v))  # CONTRACT.md v1: for inference the batch is the concurrent sequences


def _length(s: Scan, j: int) -> tuple[float, int] | None:
    if not s.num(j):
        return None
    mult, end = s.unit_after(j)
    if mult > 1e6:
        return None
    k = end + 2 if s.word(end + 1) in TOKEN_WORDS else end + 1
    if s.word(k) in ("/", "per", "в") and s.word(k + 1) in SECOND:
        return None  # "50 tokens/s" is a speed
    v = s.toks[j].val * KIB.get(mult, mult)
    end = s.skip(end + 1, TOKEN_WORDS, 1) - 1
    return v, end


def _put_len(s: Scan, field: str, v: float) -> None:
    if v < 1 or v > MAX_SEQ_LEN:
        s.errors.append(f"{field.replace('_', ' ')} out of range")
    else:
        s.set(field, round(v))


def lengths(s: Scan) -> None:
    """"prompt 2k, output 512", "вход 1к выход 256", "2048 input tokens", "ISL/OSL 1024/128"."""
    if s.words.isdisjoint(LENGTH_TRIGGERS):
        return
    for i, t in enumerate(s.toks):
        if t.used or t.kind != WORD:
            continue
        field = "prompt_len" if t.text in PROMPT_WORDS else "output_len" if t.text in OUTPUT_WORDS else None
        if t.text == "new" and s.word(s.skip(i + 1, GLUE, 1)) in TOKEN_WORDS:
            field = "output_len"  # max_new_tokens
        if t.text in GENERATE_VERBS:
            _generated(s, i)
            continue
        if field is None:
            continue
        # "prompt/output 2k/512", "isl/osl 1024/128"
        if s.word(i + 1) == "/" and s.word(i + 2) in (OUTPUT_WORDS if field == "prompt_len" else ()):
            j = s.skip(i + 3, FILLERS, 2)
            a = _length(s, j)
            if a and s.word(a[1] + 1) == "/":
                b = _length(s, a[1] + 2)
                if b:
                    _put_len(s, "prompt_len", a[0])
                    _put_len(s, "output_len", b[0])
                    s.use(i, b[1])
                    continue
        j = s.skip(i + 1, LEN_FILLERS | {"new", "по"}, 4)
        got = _length(s, j)
        if got and (s.word(i + 1) == "по" or t.text in ("answer", "answers")) and _counts_other(s, j):
            got = None  # «ответы по 300 токенов» measures; «генерация по 8 ответов», "answer 100 users" count
        if got and s.word(got[1] + 1) in (OUTPUT_WORDS if field == "prompt_len" else PROMPT_WORDS) \
                and _number_before(s, i):
            got = None  # "2k prompt 300 output": the number after is the next noun's, this one's stands before
        if got:
            _put_len(s, field, got[0])
            s.use(i, got[1])
            continue
        # "2048 input tokens", "2k prompt", "512 токенов ответа" ("1000 промптов" counts prompts)
        k = i - 1
        tokens_said = s.word(i + 1) in TOKEN_WORDS
        if s.word(k) in PER_NOUN and s.word(k - 1) in TOKEN_WORDS:
            k -= 1  # "300 tokens per answer"
        if s.word(k) in TOKEN_WORDS:
            k = s.skip(k - 1, GLUE, 1, -1)  # "300-token answers", "2k-token prompts"
            tokens_said = True
        need = k  # the number read must reach here: nothing but its unit between it and the noun
        if s.word(k) in ("k", "к") and s.glued(k):
            k -= 1
            tokens_said = True
        got = _length(s, k) if tokens_said or t.orig not in COUNTED else None
        if got and got[1] >= need:
            _put_len(s, field, got[0])
            s.use(k, i)


def _number_before(s: Scan, i: int) -> bool:
    """A length stands right before noun i: "2k prompt", "2048 input tokens", "300-token answers"."""
    k = i - 1
    if s.word(k) in TOKEN_WORDS:
        k = s.skip(k - 1, GLUE, 1, -1)
    if s.word(k) in ("k", "к") and s.glued(k):
        k -= 1
    return s.num(k)


def _counts_other(s: Scan, j: int) -> bool:
    """Number j counts something other than tokens: «по 8 ответов» (not «по 300 токенов», «по 2к», «по 300,»)."""
    _, end = s.unit_after(j)
    k = end + 1
    return k < s.n and s.toks[k].kind == WORD and s.toks[k].text not in TOKEN_WORDS


def _generated(s: Scan, i: int) -> None:
    """"generate 256 tokens", «сгенерировать 1к токенов» (a data amount, "generate 1M tokens", is none)."""
    j = s.skip(i + 1, LEN_FILLERS - TOKEN_WORDS | {"up", "to"}, 3)
    got = _length(s, j) if s.unit_after(j)[0] <= 1e3 else None
    if got and s.word(got[1]) in TOKEN_WORDS and 1 <= got[0] <= MAX_SEQ_LEN:
        _put_len(s, "output_len", got[0])
        s.use(i, got[1])

"""Settings anchored on a keyword: context, batch, LoRA rank, epochs, amount of data."""

from __future__ import annotations

from engine.parse.gpus import gpu_index
from engine.parse.lexicon import (
    BATCH_WORDS,
    CONTEXT_WORDS,
    COUNT_WORDS,
    EPOCH_WORDS,
    EXAMPLE_WORDS,
    FILLERS,
    PER_WORDS,
    RANK_WORDS,
    TOKEN_WORDS,
)
from engine.parse.lexicon_stack import PARALLEL_NOUNS
from engine.parse.normalize import NUM, WORD
from engine.parse.numbers import whole
from engine.parse.scan import Scan
from engine.schema import MAX_BATCH, MAX_SEQ_LEN

KIB = {1e3: 1024.0, 1e6: 1024.0 * 1024}  # "8k" of context is 8192 tokens, "1M" 1048576
HYPHEN = frozenset({"-", "‐", "‑", "–", "_"})
BEFORE_CONTEXT = HYPHEN | TOKEN_WORDS  # "4096-token context", "8k tokens context"
GLOBAL_BATCH = frozenset({"global", "total", "effective", "эффективный", "эффективного", "общий", "глобальный",
                          "глобального", "общего", "эффективным", "глобальным"})
KIB_UNITS = frozenset({"k", "к", "m", "м"})
# "128k контекст на 8xh100", "контекст на 4090": after a preposition a number starts what the context is ON
PREPOSITIONS = frozenset({"на", "on", "в", "in", "with", "с", "со", "per"})
MAX_RANK = 65_536
MAX_EPOCHS = 10_000
MAX_TOKENS = 1e15
MAX_EXAMPLES = 1e12  # Request.examples


def length_value(s: Scan, i: int) -> tuple[float, int]:
    """A sequence length at number i: k and M count in powers of two. (value, last index)."""
    mult, end = s.unit_after(i)
    if mult > 1e6:
        return -1.0, end  # "70B" is a model size, not a length
    return s.toks[i].val * KIB.get(mult, mult), end


def put_seq_len(s: Scan, value: float) -> None:
    # "context 0" is said and impossible; a negative value is a sentinel ("70B" is no length), NaN nothing
    if value == 0 or value > MAX_SEQ_LEN:
        s.errors.append("context length out of range")
    elif value >= 1:
        s.set("seq_len", round(value))


def context(s: Scan) -> None:
    for i, t in enumerate(s.toks):
        if t.kind != WORD or t.used or t.text not in CONTEXT_WORDS:
            continue
        if s.word(s.skip(i + 1, HYPHEN, 1)) in PARALLEL_NOUNS:
            continue  # "context parallel" is a parallelism, not a length keyword
        j = s.skip(i + 1, FILLERS | CONTEXT_WORDS)
        before = s.skip(i - 1, BEFORE_CONTEXT, 3, -1)
        # «32к контекст 4090»: a length with its unit before the word wins over a bare number after it
        unit_before = s.word(before) in KIB_UNITS and s.num(before - 1) and s.unit_after(j)[0] == 1
        if s.num(j) and not unit_before and not _names_hardware(s, i + 1, j):
            value, end = length_value(s, j)
            if value >= 0:  # 0 is said and reported; a negative value is "not a length"
                end = s.skip(end + 1, TOKEN_WORDS, 1) - 1
                put_seq_len(s, value)
                s.use(i, end)
                continue
        j = s.skip(i - 1, BEFORE_CONTEXT, 3, -1)
        k = j - 1 if s.word(j) in KIB_UNITS and s.num(j - 1) else j
        if s.num(k) and not (s.glued(k) and s.toks[k - 1].kind == WORD):  # "h100 context" is a name
            value, _ = length_value(s, k)
            if value > 0:
                put_seq_len(s, value)
                s.use(k, i)


def _names_hardware(s: Scan, start: int, j: int) -> bool:
    """The number at j, after a preposition between start and j, is a GPU ("на 4090", "on 8xH100", "на 2х3090");
    a number glued to a word the fillers skipped is a name's ("на a6000": "a" is no article there)."""
    if j > start and s.glued(j) and s.toks[j - 1].kind == WORD:
        return True
    index = gpu_index()
    whole_number = whole(s.toks[j].val)
    times = s.word(j + 1) in ("x", "х", "×", "*")
    if whole_number and ((times and j + 2 < s.n and index.match(s.toks, j + 2) is not None)
                         or (j + 1 < s.n and index.match(s.toks, j + 1) is not None)):
        return True  # «128k контекст 8xh100», "context 8 H100": a GPU count, with or without a preposition
    if not any(s.toks[k].text in PREPOSITIONS for k in range(start, j)):
        return False
    if times:
        return True  # "на 8x", "on 2х": a GPU count
    return index.match(s.toks, j) is not None  # "на 4090": a name


def _count_at(s: Scan, j: int) -> tuple[float, int] | None:
    """A whole number at j (a count, possibly "16k"): (value, last index)."""
    if s.num(j):
        mult, end = s.unit_after(j)
        v = s.toks[j].val * mult
        return (v, end) if whole(v) else None
    w = s.word(j)
    if w in COUNT_WORDS:
        return float(COUNT_WORDS[w]), j
    return None


def batch(s: Scan) -> None:
    """"batch 8", "bs=16", "micro-batch 1" ("32 concurrent users" is `serving.concurrency`, which also sets it)."""
    for i, t in enumerate(s.toks):
        if t.used or t.kind == NUM:
            continue
        if t.text in BATCH_WORDS:
            j = s.skip(i + 1, FILLERS | BATCH_WORDS)
            got = _count_at(s, j)
            if got:
                # the micro-batch per GPU is wanted; a global/effective batch is only consumed
                if s.word(s.skip(i - 1, HYPHEN, 1, -1)) not in GLOBAL_BATCH:
                    _put_batch(s, got[0])
                s.use(i, got[1])


def _put_batch(s: Scan, v: float) -> None:
    if v > MAX_BATCH:
        s.errors.append("batch size out of range")
    else:
        s.set("batch_size", int(v))


def rank(s: Scan) -> None:
    for i, t in enumerate(s.toks):
        if t.used or t.kind != WORD or t.text not in RANK_WORDS:
            continue
        j = s.skip(i + 1, frozenset({"=", ":", "-", "of", "lora", "r", "равен", "равным"}), 2)
        if not s.num(j):
            continue
        if t.text == "r" and s.toks[j].sp and j != i + 1:
            continue  # "r" needs its number right after it: "r=16", "r16", "r 16"
        v = s.toks[j].val
        if whole(v):
            if v > MAX_RANK:
                s.errors.append("LoRA rank out of range")
            else:
                s.set("lora_rank", int(v))
            s.use(i, j)


def names_a_gpu(s: Scan, j: int) -> bool:
    """Number j is (the end of) a GPU's name: "4090", "a100", "h100" (a letter glued before it)."""
    index = gpu_index()
    return index.match(s.toks, j) is not None or (s.glued(j) and index.match(s.toks, j - 1) is not None)


def epochs(s: Scan) -> None:
    for i, t in enumerate(s.toks):
        if t.used or t.kind != WORD or t.text not in EPOCH_WORDS:
            continue
        j = s.skip(i - 1, HYPHEN, 1, -1)  # "3 epochs", "3-epoch", "две эпохи"
        # «qlora 8b на 4090 эпох 30»: a number before that names the GPU is no count; the count follows the noun
        before = (s.num(j) and not names_a_gpu(s, j)) or s.word(j) in COUNT_WORDS
        if before:
            v = s.toks[j].val if s.num(j) else float(COUNT_WORDS[s.word(j)])
        else:
            j = s.skip(i + 1, frozenset({"=", ":", "-"}), 2)  # "epochs=3", "эпох: 3"
            if not s.num(j):
                continue
            v = s.toks[j].val
        if v > MAX_EPOCHS:
            s.errors.append("epochs out of range")
        elif v > 0:
            s.set("epochs", v)
        s.use(min(i, j), max(i, j))


def data(s: Scan) -> None:
    """Training data: "50 млн токенов", "1B tokens", "100k примеров по 512 токенов" (51.2M tokens)."""
    for i, t in enumerate(s.toks):
        if t.used or t.kind != NUM:
            continue
        mult, end = s.unit_after(i)
        noun_at = s.skip(end + 1, HYPHEN, 1)
        noun = s.word(noun_at)
        if noun in EXAMPLE_WORDS:
            examples, first = _grouped(s, i)
            examples *= mult
            s.use(first, noun_at)
            per = _per_example(s, noun_at + 1)
            if per is not None:
                length, last = per
                put_seq_len(s, length)
                _put_tokens(s, examples * length)
                s.use(noun_at, last)
            elif 1 <= examples <= MAX_EXAMPLES:
                s.set("examples", examples)  # no length each: the answer counts each at the context (assumed)
            else:
                s.errors.append("amount of data out of range")
        elif noun in TOKEN_WORDS:
            if s.word(i - 1) in PER_WORDS and s.word(i - 2) in EXAMPLE_WORDS:
                continue  # handled with its examples
            base, first = _grouped(s, i)
            if base * mult >= 1e6:
                _put_tokens(s, base * mult)
            else:
                put_seq_len(s, base * KIB.get(mult, mult))  # "2048 tokens", "8k tokens" is a length
            s.use(first, noun_at)


def _grouped(s: Scan, i: int) -> tuple[float, int]:
    """"50 000 примеров": a number typed with a plain space between thousands. (value, first index)."""
    t = s.toks[i]
    if len(t.text) == 3 and t.text.isdigit() and t.sp and s.num(i - 1):
        prev = s.toks[i - 1].text
        glued_to_name = s.glued(i - 1) and s.toks[i - 2].kind == WORD  # "H100 500M": a GPU, then a number
        before_is_name = s.num(i - 2) and s.glued(i - 2) and s.toks[i - 3].kind == WORD  # "H100 100 000"
        if prev.isdigit() and len(prev) <= 3 and (not s.num(i - 2) or before_is_name) and not glued_to_name:
            return s.toks[i - 1].val * 1000 + t.val, i - 1
    return t.val, i


def _per_example(s: Scan, j: int) -> tuple[float, int] | None:
    """"по 512 токенов", "of 2k tokens each" after a number of examples: (length, last index)."""
    j = s.skip(j, PER_WORDS | frozenset({",", "-", "длиной"}), 3)
    if not s.num(j):
        return None
    mult, end = s.unit_after(j)
    if mult > 1e6:
        return None
    noun_at = s.skip(end + 1, HYPHEN, 1)
    if s.word(noun_at) not in TOKEN_WORDS:
        return None
    return s.toks[j].val * KIB.get(mult, mult), noun_at


def _put_tokens(s: Scan, value: float) -> None:
    if value > MAX_TOKENS:
        s.errors.append("amount of data out of range")
    elif value >= 1:
        s.set("tokens", value)

"""GPUs in the question: names with variants and counts, bare memory sizes, generic GPU counts."""

from __future__ import annotations

import math
from typing import Any

from engine.parse.gpus import gpu_index, resolve
from engine.parse.lexicon import (
    COUNT_WORDS,
    GPU_NOUNS,
    GPU_SERIES_WORDS,
    GPU_VENDOR_WORDS,
    MEMORY_UNITS,
    RAM_WORDS,
    TIMES,
)
from engine.parse.normalize import NUM, WORD
from engine.parse.numbers import is_count
from engine.parse.scan import Scan
from engine.schema import MAX_GPUS

JOIN = frozenset({"-", "/", "(", "‐", "–"})
NOT_GPU_MEMORY = RAM_WORDS | frozenset({
    "весит", "weighs", "weights", "весов", "веса", "dataset", "датасет", "датасета", "data", "данных", "file",
    "файл", "storage", "checkpoint", "чекпоинт", "занимает", "takes", "оперативной", "текста", "text",
    "корпус", "corpus", "датасете", "logs",
})
RU_COUNT_ENDINGS = frozenset({"ми", "ти", "ух", "ех", "ью", "мя", "ой", "ом"})
NODE_WORDS = frozenset({"node", "nodes", "нода", "ноды", "нод", "нодах", "нодами", "ноде", "узел", "узла", "узлов",
                        "узлах", "server", "servers", "сервер", "сервера", "серверов", "серверах", "host", "hosts",
                        "хоста", "хостов", "машины", "машин", "машинах", "box", "boxes"})
PER_WORDS = frozenset({"по", "of", "with", "x", "×", "*", "с"})  # "2 ноды по 8 H100", "2 nodes of 8 H100"
EACH_WORDS = frozenset({"per", "по", "of", "with", "each"})  # "A100 по 40 гигов", "A100 with 40GB"
# A GPU known only by its memory: sizes GPUs have (4 GB … 2 TB), never "1 GB" or "80 322 GB".
MIN_BARE_GB, MAX_BARE_GB = 4, 2048
MAX_READ_GPUS = 8  # a question names a handful; more (a pasted log, noise) is reported as "too many GPUs"
MAX_BARE_COUNT = 1024  # "8 H100" is a count; "2048 A6000" is not
MAX_MEMORY_GB = 100_000


def _count_before(s: Scan, i: int) -> tuple[int, int] | None:
    """A GPU count just before token i: "8x", "8 ×", "8", "двух", "a pair of". (count, first index)."""
    k = i - 1
    while s.word(k) in GPU_VENDOR_WORDS:
        k -= 1
    w = s.word(k)
    if w in RU_COUNT_ENDINGS and s.word(k - 1) in ("-", "‐") and s.num(k - 2):
        w, k = "x", k - 1  # "на 8-ми A100", "2-мя 4090": read as "8x"
    if w in TIMES:
        j = k - 1
        if s.word(j) in ("-", "‐"):
            j -= 1  # "2-х"
        if s.num(j) and is_count(s.toks[j].val, MAX_GPUS):
            return int(s.toks[j].val), j
        return None
    if s.num(k) and is_count(s.toks[k].val, MAX_BARE_COUNT):
        if s.unit_after(k)[1] != k:
            return None
        if s.word(k - 1) in TIMES and s.glued(k):
            return int(s.toks[k].val), k - 1  # "x8 H100"
        if not (s.glued(k) and s.toks[k - 1].kind == WORD):  # "r16 A100" is not 16 GPUs
            return int(s.toks[k].val), k
        return None
    if w == "of" and s.word(k - 1) in COUNT_WORDS:
        k -= 1
        w = s.word(k)
    if w in COUNT_WORDS:
        return COUNT_WORDS[w], k
    return None


def _unread_count_before(s: Scan, i: int) -> str | None:
    """Why a number right before a GPU name was not taken as its count (it is reported, one GPU used):
    "0 H100", "1000000 H100" — no cluster has that; "2000 H100" — a bare number over MAX_BARE_COUNT is
    too often something else ("2048 A6000"), so it is read only as "2000×H100"."""
    k = i - 1
    times = s.word(k) in TIMES
    if times:
        k -= 1
    if not s.num(k) or s.unit_after(k)[1] != k or (s.glued(k) and s.toks[k - 1].kind == WORD):
        return None
    v = s.toks[k].val
    if v == 0 or (v > MAX_GPUS and (math.isinf(v) or v == int(v))):
        return "GPU count out of range"
    if not times and MAX_BARE_COUNT < v <= MAX_GPUS and v == int(v):
        return "GPU count not read"
    return None


def _count_after(s: Scan, j: int) -> tuple[int, int] | None:
    """A GPU count just after token j: "x8", "× 8", "*8". (count, last index)."""
    k = j + 1
    if s.word(k) == "(":
        k += 1
    if s.word(k) in TIMES and s.num(k + 1) and is_count(s.toks[k + 1].val, MAX_GPUS):
        last = k + 1
        if s.word(last + 1) == ")":
            last += 1
        return int(s.toks[k + 1].val), last
    return None


def _memory_after(s: Scan, j: int, variants: tuple[float, ...]) -> tuple[float, int] | None:
    """"80GB", "80 ГБ", "40" (a known variant) right after a GPU name. (GB, last index)."""
    k = j + 1
    each = False
    if s.word(k) in JOIN:
        k += 1
    elif s.word(k) in EACH_WORDS:
        k, each = k + 1, True
    if not s.num(k):
        return None
    v = s.toks[k].val
    if s.word(k + 1) in MEMORY_UNITS:
        return v, k + 1
    variant = any(abs(v - x) < 0.5 for x in variants) and len(variants) > 1
    if each and not (variant and (k + 1 >= s.n or s.toks[k + 1].kind != WORD)):
        return None  # "A100 по 8" is no memory, nor «A100 по 40 часов»; «8 а100 по 40» is the 40 GB card
    if variant:
        return v, k
    return None


def _memory_before(s: Scan, i: int) -> tuple[float, int] | None:
    """"48GB A6000": (GB, first index)."""
    if s.word(i - 1) in MEMORY_UNITS and s.num(i - 2):
        return s.toks[i - 2].val, i - 2
    return None


def _add(s: Scan, pos: int, name: str | None, memory: float | None, count: tuple[int, int] | None) -> None:
    if memory is not None and not 0 < memory <= MAX_MEMORY_GB:
        s.errors.append("GPU memory out of range")
        memory = None
        if name is None:
            return
    entry: dict[str, Any] = {"name": name, "memory_gb": memory, "count": count[0] if count else 1}
    s.gpus.append((pos, entry, count is not None))


def named(s: Scan) -> None:
    index = gpu_index()
    i = 0
    while i < s.n:
        hit = index.match(s.toks, i)
        if hit is None:
            _series(s, i)
            i += 1
            continue
        j, item = hit
        unit = s.unit_after(i)[0] if j == i and s.num(i) else 1.0
        amount = j == i and s.num(i) and s.word(i + 1) in MEMORY_UNITS
        if unit >= 1e6 or (unit >= 1e3 and s.glued(i + 1)) or amount:
            # "1080B", "4090 млрд": a model size; "1080k": a token count; "1080 GB": memory; not the card of that alias
            _series(s, i)
            i += 1
            continue
        first, last = i, j
        mem_said = _memory_after(s, j, item.variants)
        if mem_said:
            last = mem_said[1]
        else:
            mem_said = _memory_before(s, i)
            if mem_said:
                first = mem_said[1]
        count = _count_before(s, first)
        if count:
            first = count[1]
        else:
            count = _count_after(s, last)
            if count:
                last = count[1]
            elif unread := _unread_count_before(s, first):
                s.errors.append(unread)
                first -= 1
        if count:
            nodes = _nodes_before(s, first)
            if nodes:
                count, first = (count[0] * nodes[0], count[1]), nodes[1]
        if s.word(last + 1) in ("s", "ти", "ок") and s.glued(last + 1):
            last += 1  # "3090s"
        name, memory = resolve(item, mem_said[0] if mem_said else None)
        _add(s, i, name, memory, count)
        s.use(first, last)
        i = last + 1


def _nodes_before(s: Scan, i: int) -> tuple[int, int] | None:
    """"2 ноды по 8 H100", "2 nodes of 8 H100", "2 servers with 8x A100": nodes before a per-node count
    (token i is the count's first token). (nodes, first index)."""
    if s.word(i) in ("x", "×") and s.glued(i) and s.num(i - 1) and is_count(s.toks[i - 1].val, 64) \
            and s.unit_after(i - 1)[1] == i - 1:
        return int(s.toks[i - 1].val), i - 1  # "2x8 H100" (the count's "x8" starts at i): 2 nodes of 8
    k = i - 1
    if s.word(k) not in PER_WORDS:
        return None
    if s.word(k) in ("x", "×") and s.glued(k) and s.glued(i) and s.num(k - 1) and is_count(s.toks[k - 1].val, 64):
        return int(s.toks[k - 1].val), k - 1  # "2x8 H100": 2 nodes of 8
    k -= 1
    if s.word(k) not in NODE_WORDS:
        return None
    k -= 1
    if s.num(k) and is_count(s.toks[k].val, MAX_GPUS) and s.unit_after(k)[1] == k:
        return int(s.toks[k].val), k
    if s.word(k) in COUNT_WORDS:
        return COUNT_WORDS[s.word(k)], k
    return None


def _series(s: Scan, i: int) -> None:
    """"RTX 9090": a GPU-shaped name outside both lexicons, memory unknown."""
    t = s.toks[i]
    if t.kind != WORD or t.used or t.text not in GPU_SERIES_WORDS or not s.num(i + 1):
        return
    if not is_count(s.toks[i + 1].val, 99_999) or s.word(i + 2) in MEMORY_UNITS:
        return
    name = f"{GPU_SERIES_WORDS[t.text]} {int(s.toks[i + 1].val)}"
    last = i + 1
    if s.word(i + 2) in ("ti", "super"):
        name += " Ti" if s.word(i + 2) == "ti" else " Super"
        last += 1
    count = _count_before(s, i)
    _add(s, i, name, None, count)
    s.use(count[1] if count else i, last)


def bare_memory(s: Scan) -> None:
    """"a 24GB card", "на 16 гигах": a GPU known only by its memory."""
    named_before = bool(s.gpus)
    for i, t in enumerate(s.toks):
        if t.kind != NUM or t.used or s.word(i + 1) not in MEMORY_UNITS:
            continue
        if s.word(i + 1) == "g" and not s.glued(i + 1):
            continue  # "24g" is memory; "5 g" is a letter
        if s.near(i, NOT_GPU_MEMORY, 3, 3) is not None:
            continue
        if not MIN_BARE_GB <= t.val <= MAX_BARE_GB or t.val != round(t.val, 1):
            if t.val > MAX_BARE_GB:
                s.errors.append("GPU memory out of range")
            continue  # "1 GB", "80 322 ГБ": no GPU has that
        count = _count_before(s, i)
        if named_before and s.near(i + 1, GPU_NOUNS, 0, 2) is None:
            continue  # "H100 … 16 GB …": a GPU named, a stray size is not another one
        _add(s, i, None, t.val, count)
        s.use(count[1] if count else i, i + 1)


# sizes cards are sold in, for a memory said without its unit after "по" («4 карты по 80»)
CARD_SIZES = frozenset({8, 10, 11, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 128, 141, 144, 180, 192})


def _memory_each(s: Scan, i: int) -> float | None:
    """«на 4 картах по 80», "4 cards of 48": the memory of each when the number after "по" is a card's size and no
    other word follows it («по 8 часов» is no memory)."""
    k = i + 1
    if s.word(k) not in EACH_WORDS or not s.num(k + 1):
        return None
    v = s.toks[k + 1].val
    follows = s.toks[k + 2] if k + 2 < s.n else None
    if v not in CARD_SIZES or (follows is not None and follows.kind == WORD and follows.text not in MEMORY_UNITS):
        return None
    s.use(k, k + 2 if follows is not None and follows.text in MEMORY_UNITS else k + 1)
    return float(v)


def generic_count(s: Scan) -> None:
    """"8 GPUs", "4 карты", "на двух картах", "H100, 8 штук": a count for the one GPU named."""
    for i, t in enumerate(s.toks):
        if t.kind != WORD or t.used or t.text not in GPU_NOUNS:
            continue
        j = s.skip(i - 1, frozenset({"-", "‐"}), 1, -1)
        count: int | None = None
        if s.num(j) and is_count(s.toks[j].val, MAX_GPUS) and s.unit_after(j)[1] == j:
            count = int(s.toks[j].val)
        elif s.word(j) in COUNT_WORDS:
            count = COUNT_WORDS[s.word(j)]
        if count is None:
            continue
        s.use(j, i)
        open_ = [g for g in s.gpus if not g[2]]
        if not s.gpus:
            s.gpus.append((j, {"name": None, "memory_gb": _memory_each(s, i), "count": count}, True))
        elif open_ and len(open_) == len(s.gpus):
            # "H100, 8 штук"; "A100 vs H100 for 13B full on 4 GPUs": every GPU compared at that count
            for k, (pos, entry, _) in enumerate(s.gpus):
                entry["count"] = count
                s.gpus[k] = (pos, entry, True)

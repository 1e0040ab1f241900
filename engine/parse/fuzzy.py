"""Typos: a word the lexicon does not know is read as the lexicon word one edit away ("qlroa" → "qlora").

Edit distance is optimal string alignment (Damerau–Levenshtein without re-editing a substring): one
insertion, deletion, substitution or swap of neighbours. Lookup uses a deletion index (SymSpell): every
target word and every word one deletion shorter map to their targets, so a query costs len(word) + 1 dict
lookups and never a scan of the lexicon. How far a word may be from its target depends on the target's
length, so short words cannot drift into each other:

- targets of 4–5 letters ("lora", "qlora", "grpo"): only a swap of neighbours or a doubled letter;
- 6–10 letters: one edit;
- 11 letters and more ("checkpointing", "чекпоинтинг"): two edits.

A typo keeps the first letter (a swap of the first two aside): "reference" is no "inference".

Only words outside the known vocabulary (every lexicon word, every word of a catalog name) are corrected,
and only when one target is nearest (a tie is left alone).
"""

from __future__ import annotations

from functools import cache, lru_cache

from engine.parse import lexicon as lx
from engine.parse import lexicon_money as lm
from engine.parse import lexicon_stack as ls

MIN_LEN = 4
LONG = 11  # targets this long may be two edits away
# Real words one edit from a target ("content" ~ "context", "version" ~ "vision"): never typos.
REAL_WORDS = frozenset({
    "content", "contents", "contest", "version", "versions", "simple", "inner", "flora", "fully", "server",
    "servers", "serves", "сервер", "сервера", "серверах", "сервере", "серверов", "infra", "context7", "sever",
    "tenser", "simply", "sampler", "dollar", "poor", "lore", "lord", "load", "loads", "loaded", "float",
    "floats", "mistake", "imagine", "images", "limits", "spent", "users", "haven", "cached", "caches",
    "tuned", "turn", "tone", "prompted", "promote", "output", "putput", "outlet", "budge", "pipe", "pipes",
    "phil", "gamma", "llamas", "qwerty", "falco", "modes", "model", "models", "token", "taken", "thanks",
    "thank", "trainee", "trainers", "retrain", "serving", "deploy", "hosted", "post", "posts", "reference",
    "compute", "computed", "production", "reduction", "turing", "doubles", "torchrun", "state", "stated",
    "status", "stats", "stages", "generator", "predictor", "precomputed", "slang", "sessions", "stream",
    "сотках", "сотка", "сотки", "фото", "лора", "плата", "платы", "карты", "карта", "очень", "можно",
    "generate", "generates", "generating", "generated",
})


def _targets() -> frozenset[str]:
    """Words worth correcting to: the ones that decide a field."""
    words: set[str] = set()
    for group in (lx.QLORA_WORDS, lx.LORA_WORDS, lx.FULL_WORDS, lx.INFERENCE_WORDS, lx.TRAIN_WORDS,
                  lx.GC_HEADS, lx.OFFLOAD_HEADS, lx.CONTEXT_WORDS, lx.BATCH_WORDS, lx.EPOCH_WORDS,
                  lx.OPTIMIZER_GENERIC, lx.TOKEN_WORDS, lx.EXAMPLE_WORDS, lx.FULL_SLANG, lx.INFER_SLANG,
                  ls.GENERATION_WORDS, ls.PARALLEL_NOUNS, ls.USER_NOUNS, ls.PROMPT_WORDS, ls.OUTPUT_WORDS,
                  ls.CONCURRENCY_HEADS, ls.REWARD_WORDS, ls.FUSED_WORDS, lm.BUDGET_WORDS, ls.COLAB_WORDS,
                  lx.GREETINGS, lx.THANKS):
        words |= group
    for table in (lx.OPTIMIZER_HEADS, ls.STAGE_WORDS, ls.TRAINER_STAGES, ls.FRAMEWORK_WORDS, ls.SERVING_WORDS,
                  ls.UNSUPPORTED_WORDS, lm.CURRENCY_WORDS):
        words |= set(table)
    words |= {w for w in lx.CYRILLIC_WORDS if len(w) >= 5}
    words |= {"llama", "mistral", "mixtral", "gemma", "qwen", "falcon", "deepseek", "phi", "quantization",
              "квантизация", "квантизацией", "квантование", "checkpointing", "gradient", "tensor", "pipeline",
              "parallel", "parallelism", "параллелизм", "sequence"}
    words -= {"states"}
    return frozenset(w for w in words if len(w) >= MIN_LEN and w.isalpha())


@cache
def _known() -> frozenset[str]:
    from engine.parse.gpus import gpu_index
    from engine.parse.models import model_index

    known: set[str] = set(_targets())
    for value in (*vars(lx).values(), *vars(ls).values(), *vars(lm).values()):
        if isinstance(value, (frozenset, set, dict)):
            known |= {w for w in value if isinstance(w, str)}
    known |= set(lx.CYRILLIC_WORDS.values()) | REAL_WORDS
    # every letter run of a catalog name key: "yandexgpt" is not a typo of anything we know
    for index in (model_index().index, gpu_index().index):
        for key in index:
            run = ""
            for ch in key + "0":
                if ch.isalpha():
                    run += ch
                else:
                    if run:
                        known.add(run)
                    run = ""
    return frozenset(known)


def known_words() -> frozenset[str]:
    """Words never corrected (every lexicon word, every word of a catalog name)."""
    return _known()


@cache
def _deletes() -> dict[str, tuple[str, ...]]:
    """Every target and its one-deletion forms → the targets they come from."""
    index: dict[str, set[str]] = {}
    for w in _targets():
        index.setdefault(w, set()).add(w)
        for d in _dels(w):
            index.setdefault(d, set()).add(w)
            if len(w) >= LONG:
                for d2 in _dels(d):
                    index.setdefault(d2, set()).add(w)
    return {k: tuple(sorted(v)) for k, v in index.items()}


def _dels(w: str) -> set[str]:
    return {w[:i] + w[i + 1:] for i in range(len(w))}


def osa(a: str, b: str, limit: int = 2) -> int:
    """Optimal string alignment distance, stopped early above `limit` (returns limit + 1)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        best = cur[0]
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                v = min(v, prev2[j - 2] + 1)
            cur[j] = v
            best = min(best, v)
        if best > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def _allowed(word: str, target: str) -> bool:
    n = len(target)
    if n <= 5:
        if len(word) == n:  # a swap of neighbours
            diff = [i for i in range(n) if word[i] != target[i]]
            return len(diff) == 2 and diff[1] == diff[0] + 1 and word[diff[0]] == target[diff[1]] \
                and word[diff[1]] == target[diff[0]]
        if len(word) == n + 1:  # a doubled letter: "lorra", "qllora"
            return any(word[i] == word[i + 1] and word[:i] + word[i + 1:] == target for i in range(len(word) - 1))
        return False
    if word[0] != target[0]:
        return False
    limit = 2 if n >= LONG else 1
    return osa(word, target, limit) <= limit


@lru_cache(maxsize=8192)
def correct(word: str) -> str | None:
    """The lexicon word `word` is a typo of, or None (known word, too short, nothing near, or a tie)."""
    if len(word) < MIN_LEN or len(word) > 30 or not word.isalpha() or word in _known():
        return None
    index = _deletes()
    candidates: set[str] = set()
    probes = {word} | _dels(word)
    if len(word) >= LONG - 1:
        probes |= {d2 for d in _dels(word) for d2 in _dels(d)}
    for p in probes:
        candidates.update(index.get(p, ()))
    best: list[tuple[int, str]] = sorted((osa(word, c), c) for c in candidates if _allowed(word, c))
    if not best or (len(best) > 1 and best[0][0] == best[1][0] and _meaning(best[0][1]) != _meaning(best[1][1])):
        return None
    return best[0][1]


def _meaning(w: str) -> str:
    """Words of one set mean the same: a tie between two of them is no ambiguity."""
    for table in (ls.UNSUPPORTED_WORDS, ls.STAGE_WORDS, ls.FRAMEWORK_WORDS, ls.SERVING_WORDS, lm.CURRENCY_WORDS):
        if w in table:
            return table[w]
    for group in (lx.QLORA_WORDS, lx.LORA_WORDS, lx.FULL_WORDS, lx.INFERENCE_WORDS, lx.TRAIN_WORDS,
                  lx.CONTEXT_WORDS, lx.GC_HEADS, lx.OFFLOAD_HEADS, ls.GENERATION_WORDS, ls.USER_NOUNS):
        if w in group:
            return str(id(group))
    return w


def warm() -> None:
    _known()
    _deletes()

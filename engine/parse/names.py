"""Longest-match lookup of multi-token names (models, GPUs) in key indexes built once.

A name's key is its alphanumerics after the same folding as the question ("Llama-3.1-8B",
"llama 3.1 8b" and "ллама 3.1 8б" all key to "llama318b"), so one dict lookup per token
extension finds it; a prefix set stops the extension as soon as no name can follow.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

from engine.parse.normalize import NUM, PUNCT, WORD, Tok, clean, tokenize

V = TypeVar("V")

# Punctuation allowed inside a name: "llama-3.1-8b", "qwen/qwen3-8b", "gpt_oss".
JOINERS = frozenset({"-", "‐", "‑", "–", "_", ".", "/", "'"})
MAX_NAME_TOKENS = 14


def key_of(text: str) -> str:
    return "".join(t.key for t in tokenize(clean(text), fix=False))


class NameIndex(Generic[V]):
    def __init__(self, entries: Iterable[tuple[str, V]]) -> None:
        self.index: dict[str, V] = {}
        for alias, value in entries:
            k = key_of(alias)
            if k:
                self.index.setdefault(k, value)
        self.prefixes = frozenset(k[:i] for k in self.index for i in range(1, len(k) + 1))

    def match(self, toks: list[Tok], i: int) -> tuple[int, V] | None:
        """The longest name starting at token i: (index of its last token, value)."""
        first = toks[i]
        if first.used or first.kind == PUNCT or first.key[:1] not in self.prefixes:
            return None
        key = ""
        best: tuple[int, V] | None = None
        j = i
        n = len(toks)
        while j < n and j - i < MAX_NAME_TOKENS:
            t = toks[j]
            if t.used or (t.kind == NUM and not t.key):  # "1e9": a merged number, never part of a name
                break
            if t.kind == PUNCT:
                if j == i or t.text not in JOINERS:
                    break
                j += 1
                continue
            if j > i and t.sp:
                prev = toks[j - 1]
                # "a 40GB card": an English article before a number is not the "a" of "A40"
                if prev.kind == WORD and len(prev.text) == 1 and t.kind == NUM:
                    break
            key += t.key
            if key not in self.prefixes:
                break
            value = self.index.get(key)
            if value is not None:
                best = (j, value)
            j += 1
        return best

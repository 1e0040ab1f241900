"""The token cursor shared by the extractors, and what they found so far."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.parse.lexicon import MULTIPLIER
from engine.parse.normalize import NUM, PUNCT, WORD, Tok

STOPS = frozenset({",", ";", "?", "!", "(", ")", "—", "–", "|", "\n"})


@dataclass
class Scan:
    text: str  # cleaned text the token offsets point into
    toks: list[Tok]
    said: dict[str, Any] = field(default_factory=dict)  # Request fields found, by name
    gpus: list[tuple[int, dict[str, Any], bool]] = field(default_factory=list)  # (position, entry, count said)
    errors: list[str] = field(default_factory=list)
    words: frozenset[str] = frozenset()
    ids: set[int] = field(default_factory=set)  # tokens of a model id: its words never set method or stage
    unsupported: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)  # fields filled from what was implied, not said
    prices: list[tuple[float, str]] = field(default_factory=list)  # "2$ в час": a price per hour said
    language: str = "en"
    texts: list[str] = field(default_factory=list)
    cp_no_degree: bool = False  # context parallelism named without its degree ("DeepSpeed Ulysses")
    alst: bool = False  # ALST / ArcticTraining named: its recipe's switches are the defaults (stack.alst_recipe)
    cased: str = ""  # `text` with the question's own letter case, same offsets (for names shown back)

    def __post_init__(self) -> None:
        self.n = len(self.toks)
        self.words = frozenset(t.text for t in self.toks if t.kind != NUM)
        self.texts = [t.text for t in self.toks]
        self.cased = self.cased or self.text

    # ── token tests ──
    def word(self, i: int) -> str:
        """Text of token i if it is an unused word or punctuation, else ""."""
        if 0 <= i < self.n:
            t = self.toks[i]
            if t.kind != NUM and not t.used:
                return t.text
        return ""

    def num(self, i: int) -> bool:
        return 0 <= i < self.n and self.toks[i].kind == NUM and not self.toks[i].used

    def glued(self, i: int) -> bool:
        """Token i follows token i-1 with no space."""
        return 0 < i < self.n and not self.toks[i].sp

    def use(self, a: int, b: int) -> None:
        for k in range(max(a, 0), min(b, self.n - 1) + 1):
            self.toks[k].used = True

    def set(self, name: str, value: Any) -> bool:
        """Keep the first value said for a field."""
        if self.said.get(name) is None:
            self.said[name] = value
            return True
        return False

    # ── number + unit ──
    def unit_after(self, i: int) -> tuple[float, int]:
        """Multiplier of the unit word after number i ("70b", "7 млрд", "100 тыс.") and its last index."""
        j = i + 1
        if j < self.n:
            t = self.toks[j]
            if t.kind == WORD and not t.used and t.text in MULTIPLIER:
                # "2 t4", "8 b200": a letter glued to digits is a name, not a unit
                if j + 1 < self.n and self.toks[j + 1].kind == NUM and not self.toks[j + 1].sp:
                    return 1.0, i
                end = j
                if j + 1 < self.n and self.toks[j + 1].text == "." and not self.toks[j + 1].sp and len(t.text) > 1:
                    end = j + 1  # "тыс.", "млн."
                return MULTIPLIER[t.text], end
        return 1.0, i

    def skip(self, j: int, words: frozenset[str], limit: int = 3, step: int = 1) -> int:
        """Move from j over at most `limit` unused filler tokens (in `words`), in direction `step`."""
        for _ in range(limit):
            if 0 <= j < self.n and not self.toks[j].used and self.toks[j].kind != NUM \
                    and self.toks[j].text in words:
                j += step
            else:
                break
        return j

    def near(self, i: int, words: frozenset[str], before: int, after: int) -> int | None:
        """Index of a token in `words` within the window around i, not crossing a stop mark."""
        k = i - 1
        while k >= 0 and i - k <= before:
            t = self.toks[k]
            if t.kind == PUNCT and t.text in STOPS:
                break
            if t.text in words:
                return k
            k -= 1
        k = i + 1
        while k < self.n and k - i <= after:
            t = self.toks[k]
            if t.kind == PUNCT and t.text in STOPS:
                break
            if t.text in words:
                return k
            k += 1
        return None


class Phrases:
    """Word sequences looked up by their first word: one dict lookup per token, never a scan of the list."""

    def __init__(self, phrases: Iterable[tuple[str, ...]]) -> None:
        self.by_first: dict[str, list[tuple[str, ...]]] = {}
        for p in sorted(set(phrases), key=len, reverse=True):  # longest first
            self.by_first.setdefault(p[0], []).append(p)
        self.firsts = frozenset(self.by_first)

    def at(self, texts: list[str], i: int) -> tuple[str, ...] | None:
        """The longest phrase starting at position i, or None."""
        for p in self.by_first.get(texts[i], ()):
            if texts[i:i + len(p)] == list(p):
                return p
        return None

    def first(self, texts: list[str], words: frozenset[str] | None = None) -> int | None:
        """Position of the first phrase in the text, or None (`words`: the text's words, to skip early)."""
        if words is not None and self.firsts.isdisjoint(words):
            return None
        for i, w in enumerate(texts):
            if w in self.by_first and self.at(texts, i) is not None:
                return i
        return None

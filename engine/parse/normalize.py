"""Text → tokens: cleaning, Unicode folding and a linear tokenizer.

Every later step works on the token list, never on raw text with regular expressions, so no
pattern can backtrack: the one regex here has no nested quantifiers and matches in linear time.
"""

from __future__ import annotations

import math
import re
import unicodedata

from engine.parse.fuzzy import MIN_LEN, correct, known_words
from engine.parse.lexicon import CYRILLIC_WORDS, HUNDREDS, LETTER_WORDS, LOOKALIKE_LETTERS, LOOKALIKE_TABLE
from engine.parse.numbers import number_value

MAX_CHARS = 4096

NUM, WORD, PUNCT = "n", "w", "p"

# C0/C1 controls (bar tab and line breaks), zero-width and bidi controls: they only hide text.
_INVISIBLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]")
# "100 000" typed with a no-break or thin space is one number (Russian typography).
_GROUP_SPACE = re.compile(r"(?<=[0-9])[\u00a0\u202f\u2009](?=[0-9]{3}(?![0-9]))")
# "4О90", "A1OO": a letter O (Latin or Cyrillic) between digits is a zero typed on the wrong key.
_O_BETWEEN_DIGITS = re.compile(
    r"(?<=[0-9])[oо]+(?=[0-9])|(?<=\b[0-9][0oо][0-9])[oо]\b|(?<=\b[a-zа-я][0-9])[oо]{2}\b")  # "4О9О", "А1ОО"
# number (digit groups joined by . or ,) | letters | whitespace | any other single character
_TOKEN = re.compile(r"([0-9]+(?:[.,][0-9]+)*)|([^\W\d_]+)|(\s+)|(.)", re.S)


class Tok:
    """One token. `sp` says whether whitespace precedes it (else it is glued to the previous one)."""

    __slots__ = ("end", "key", "kind", "orig", "sp", "start", "text", "used", "val")

    def __init__(self, kind: str, text: str, start: int, end: int, sp: bool, val: float = 0.0) -> None:
        self.kind = kind
        self.text = text
        self.start = start
        self.end = end
        self.sp = sp
        self.val = val
        self.used = False
        self.orig = text  # the word as typed (before look-alike folding and typo correction)
        # what the token adds to a catalog key (alphanumerics only, as the catalog's own index)
        self.key = text if kind == WORD else (text.replace(".", "").replace(",", "") if kind == NUM else "")

    def __repr__(self) -> str:  # for test failure messages
        return f"Tok({self.kind}:{self.text!r}{'*' if self.used else ''})"


# an Ollama library tag's size («deepseek-r1:70b», "qwen2.5:32b-instruct-q8_0"): the colon read as a space, so that
# the name and its size are one model (deepseek-r1:70b is the Llama-70B distill, not the 671B), offsets unchanged
_OLLAMA_SIZE = re.compile(r"(?<=[a-z0-9]):(?=\d+(?:\.\d+)?b\b)")


def clean(text: str) -> str:
    """Drop invisible characters, join digit groups, NFKC-fold and lower-case (ё → е)."""
    text = _INVISIBLE.sub(" ", text)
    text = _GROUP_SPACE.sub("", text)
    text = _OLLAMA_SIZE.sub(" ", unicodedata.normalize("NFKC", text).lower())
    return _O_BETWEEN_DIGITS.sub(lambda m: "0" * len(m.group()), text.replace("ё", "е"))


def clean_cased(text: str, cleaned: str) -> str:
    """`clean` without the lower-casing, offset for offset ("yandex/YandexGPT-5-Lite-8B" keeps its case in a
    name read from the text); the cleaned text itself when case folding changed the length."""
    cased = unicodedata.normalize("NFKC", _GROUP_SPACE.sub("", _INVISIBLE.sub(" ", text)))
    return cased if len(cased) == len(cleaned) else cleaned


_CYRILLIC = re.compile("[\u0400-\u04ff]")


def has_cyrillic(text: str) -> bool:
    return _CYRILLIC.search(text) is not None


def tokenize(text: str, fix: bool = True) -> list[Tok]:
    """Tokens of a cleaned text, with Cyrillic look-alikes and slang folded to Latin where meant, and
    (with `fix`) typos corrected to the lexicon word they stand for."""
    toks: list[Tok] = []
    sp = True
    for m in _TOKEN.finditer(text):
        num, word, space, other = m.groups()
        if space is not None:
            sp = True
            continue
        if num is not None:
            toks.append(Tok(NUM, num, m.start(), m.end(), sp, number_value(num)))
        elif word is not None:
            if word[0] in "xх" and len(word) > 1 and not sp and toks and toks[-1].kind == NUM:
                # "4xH100", "2xA100": the count's "x" glued to the name
                toks.append(Tok(WORD, word[0], m.start(), m.start() + 1, False))
                toks.append(Tok(WORD, word[1:], m.start() + 1, m.end(), False))
            else:
                toks.append(Tok(WORD, word, m.start(), m.end(), sp))
        else:
            toks.append(Tok(PUNCT, other or "", m.start(), m.end(), sp))
        sp = False
    _fold_words(toks, fix, has_cyrillic(text))
    _merge_exponents(toks)
    if "аш" in text or "эйч" in text or "эич" in text or "ash" in text:
        _slang(toks)
    if "-" in text or "−" in text or "–" in text:
        _negatives(toks)
    return toks


APPLE_TIERS = {"про": "pro", "макс": "max", "ультра": "ultra"}
H_SERIES = frozenset({"100", "200"})  # NVIDIA's H100 / H200, the numbers «х» is typed before for the H


def _fold_words(toks: list[Tok], fix: bool, cyrillic: bool = True) -> None:
    n = len(toks)
    for i, t in enumerate(toks if cyrillic else ()):
        if t.kind != WORD or not has_cyrillic(t.text):
            continue
        glued_digit = (i > 0 and not t.sp and toks[i - 1].kind == NUM) or (
            i + 1 < n and not toks[i + 1].sp and toks[i + 1].kind == NUM)
        mixed = any("a" <= ch <= "z" for ch in t.text)
        if t.text in CYRILLIC_WORDS:
            t.text = CYRILLIC_WORDS[t.text]
        elif t.text in APPLE_TIERS and i > 1 and toks[i - 1].kind == NUM and toks[i - 2].text in ("m", "м") \
                and not toks[i - 1].sp:
            t.text = APPLE_TIERS[t.text]  # «м3 про», «m4 макс», «м2 ультра»: Apple's chip tiers as they sound
        elif t.text == "л" and i + 1 < n and not toks[i + 1].sp and toks[i + 1].kind == NUM:
            t.text = "l"  # «л40с», «л4»: NVIDIA's L cards spelled as they sound
        elif t.text == "х" and i + 1 < n and not toks[i + 1].sp and toks[i + 1].text in H_SERIES \
                and not (i > 0 and not t.sp and toks[i - 1].kind == NUM):
            t.text = "h"  # «на 8 х100», «х200»: the H said as it sounds; «2х4090», «8х100» stay counts
        elif (glued_digit or mixed) and all(ch in LOOKALIKE_LETTERS or "a" <= ch <= "z" for ch in t.text):
            # "Н100", "а6000", "70б", "128к", "2х4090", "LoRА": Cyrillic letters typed for Latin ones
            t.text = t.text.translate(LOOKALIKE_TABLE)
        elif fix and len(t.text) >= MIN_LEN and t.text not in known_words():
            fixed = correct(t.text)
            if fixed is not None:
                t.text = CYRILLIC_WORDS.get(fixed, fixed)
        t.key = t.text
    if not fix:
        return
    known = known_words()
    for t in toks:  # Latin typos ("qlroa", "infernce")
        if t.kind == WORD and len(t.text) >= MIN_LEN and t.text not in known and "a" <= t.text[:1] <= "z":
            fixed = correct(t.text)
            if fixed is not None:
                t.text = t.key = fixed


def _merge_exponents(toks: list[Tok]) -> None:
    """"1e9", "10^100", "10**12" become one number token (possibly inf: checked against bounds later)."""
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind != NUM:
            i += 1
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if nxt is None:
            break
        # 1e9 / 1e-3 (all glued)
        if nxt.kind == WORD and nxt.text == "e" and not nxt.sp and i + 2 < len(toks):
            sign, j = 1, i + 2
            if toks[j].kind == PUNCT and toks[j].text in "-+" and not toks[j].sp and j + 1 < len(toks):
                sign = -1 if toks[j].text == "-" else 1
                j += 1
            if toks[j].kind == NUM and not toks[j].sp:
                _collapse(toks, i, j, _scale(t.val, sign * toks[j].val))
                continue
        # 10^100, 10**100
        j = i + 1
        stars = 0
        while j < len(toks) and toks[j].kind == PUNCT and toks[j].text in "^*" and stars < 2:
            stars += 1
            j += 1
        if stars and j < len(toks) and toks[j].kind == NUM and (toks[i + 1].text == "^" or stars == 2):
            _collapse(toks, i, j, _power(t.val, toks[j].val))
            continue
        i += 1


def _collapse(toks: list[Tok], i: int, j: int, val: float) -> None:
    first = toks[i]
    merged = Tok(NUM, "".join(t.text for t in toks[i:j + 1]), first.start, toks[j].end, first.sp, val)
    merged.key = ""  # never part of a name
    toks[i:j + 1] = [merged]


def _scale(mantissa: float, exponent: float) -> float:
    if exponent > 300 or math.isinf(mantissa):
        return math.inf
    if exponent < -300:
        return 0.0
    return mantissa * 10.0 ** exponent


def _power(base: float, exponent: float) -> float:
    if base <= 1:
        return base
    if math.isinf(base) or exponent * math.log10(base) > 300:
        return math.inf
    return float(base ** exponent)


def _slang(toks: list[Tok]) -> None:
    for i in range(len(toks) - 1):
        t, nxt = toks[i], toks[i + 1]
        if t.kind != WORD or t.text not in LETTER_WORDS:
            continue
        j = i + 2 if nxt.text in ("-", "‐") and i + 2 < len(toks) else i + 1
        nxt = toks[j]
        if nxt.kind == WORD and nxt.text in HUNDREDS:
            digits = HUNDREDS[nxt.text]
            toks[j] = Tok(NUM, digits, nxt.start, nxt.end, False, float(digits))
        elif nxt.kind == NUM and nxt.text in ("100", "200"):
            nxt.sp = False
        else:
            continue
        t.text = t.key = LETTER_WORDS[t.text]
        if j == i + 2:
            toks[i + 1].text = toks[i + 1].key = ""
            toks[i + 1].kind = PUNCT  # an empty joiner: no key, no meaning


_NEG_AFTER = frozenset({"=", ":", "(", "[", "~"})


def _negatives(toks: list[Tok]) -> None:
    """"-7B", "on -2 H100": a minus sign glued to a number, not to a word before it, makes it negative."""
    for i in range(1, len(toks)):
        t, sign = toks[i], toks[i - 1]
        if t.kind != NUM or t.sp or sign.kind != PUNCT or sign.text not in ("-", "−", "–"):
            continue
        if i == 1 or sign.sp or (toks[i - 2].kind == PUNCT and toks[i - 2].text in _NEG_AFTER):
            t.val = -t.val

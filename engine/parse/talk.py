"""Small talk (greetings, thanks, "what can you do") and what a serving question asks for (latency,
throughput): signals for the answer, not fields of CONTRACT.md."""

from __future__ import annotations

from engine.parse.lexicon2 import CAPABILITY, GREETINGS, THANKS, TTFT_PHRASES
from engine.parse.scan import Phrases, Scan

GREETING_PAIRS = (("добрый", "день"), ("добрый", "вечер"), ("доброе", "утро"), ("доброй", "ночи"),
                  ("good", "morning"), ("good", "evening"), ("good", "afternoon"), ("good", "day"))
NEEDS_PAIR = frozenset({"добрый", "доброе", "good", "morning", "evening", "день", "вечер", "утро"})
ACKS = frozenset({"ок", "ok", "okay", "понял", "поняла", "понятно", "ясно", "got", "nice", "ладно"})
THROUGHPUT = (("tokens", "per", "second"), ("tokens", "/", "s"), ("tok", "/", "s"), ("токенов", "в", "секунду"),
              ("throughput",), ("пропускная",), ("скорость", "генерации"), ("tps",), ("t", "/", "s"))
LATENCY = (*TTFT_PHRASES, ("latency",), ("задержка",), ("задержку",), ("латентность",), ("латенси",))


CAPS = Phrases(CAPABILITY)
GREET = Phrases(GREETING_PAIRS)
THANK = Phrases([("thank", "you")])
LAT = Phrases(LATENCY)
THRU = Phrases(THROUGHPUT)


def smalltalk(s: Scan) -> str | None:
    """"capabilities" | "thanks" | "greeting" for a message with no question in it, else None."""
    texts = [t.text for t in s.toks if t.kind != "p"]
    if not texts or len(texts) > 12:
        return None
    if CAPS.first(texts) is not None:
        return "capabilities"
    words = set(texts)
    if words & (THANKS | ACKS) or THANK.first(texts) is not None:
        return "thanks"
    if words & (GREETINGS - NEEDS_PAIR) or GREET.first(texts) is not None:
        return "greeting"
    return None


def serving_asks(s: Scan) -> list[str]:
    texts = s.texts
    out = []
    if LAT.first(texts, s.words) is not None:
        out.append("latency")
    if THRU.first(texts, s.words) is not None:
        out.append("throughput")
    return out

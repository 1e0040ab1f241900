"""Completions per prompt for GRPO / PPO: "8 генераций", "num_generations=8", "G=8", "group size 8"."""

from __future__ import annotations

from engine.parse.lexicon_stack import GENERATION_HEADS, GENERATION_WORDS
from engine.parse.normalize import NUM
from engine.parse.numbers import whole
from engine.parse.scan import Scan
from engine.parse.serving import GLUE, LENGTH_AFTER, PER_PROMPT, glued_key

WEAK_GENERATIONS = frozenset({"samples", "сэмплов", "семплов", "ответов", "responses"})
HEAD_FIRSTS = frozenset({"num", "numgenerations", "group", "groupsize", "g", "rollout", "n", "nsamples"})
MAX_GENERATIONS = 4096


def generations(s: Scan) -> None:
    """"8 генераций", "num_generations=8", "G=8", "group size 8", "16 completions per prompt"."""
    if s.words.isdisjoint(GENERATION_WORDS) and s.words.isdisjoint(HEAD_FIRSTS):
        return
    grpo_said = bool(s.words & {"grpo", "ppo", "rloo", "dapo", "grpotrainer", "грпо", "rl"})
    for i, t in enumerate(s.toks):
        if t.used:
            continue
        if t.kind == NUM:
            j = s.skip(i + 1, GLUE, 1)
            w = s.word(j)
            if w in GENERATION_WORDS and s.word(s.skip(j + 1, GLUE, 1)) not in LENGTH_AFTER:
                per = s.near(j, PER_PROMPT, 0, 3) is not None
                if w in WEAK_GENERATIONS and not (per or grpo_said):
                    continue
                _put_gen(s, t.val)
                s.use(i, j)
            continue
        if t.text not in HEAD_FIRSTS:
            continue
        j = -1
        for key, last in glued_key(s, i, 5):
            if key in GENERATION_HEADS:
                j = last
        if j < 0 and t.text == "g" and s.word(i + 1) in ("=", ":"):
            j = i
        if j < 0 and t.text == "group" and s.word(s.skip(i + 1, GLUE, 1)) == "size":
            j = s.skip(i + 1, GLUE, 1)
        if j < 0 and t.text == "rollout" and s.word(i + 1) == "." and s.word(i + 2) == "n":
            j = i + 2
        if j < 0:
            continue
        k = s.skip(j + 1, frozenset({"=", ":", "-", "of", "в", "по"}), 2)
        if s.num(k):
            _put_gen(s, s.toks[k].val)
            s.use(i, k)


def _put_gen(s: Scan, v: float) -> None:
    if not whole(v) or v > MAX_GENERATIONS:
        s.errors.append("num_generations out of range")
    else:
        s.set("num_generations", int(v))

"""Model names: the catalog's aliases (longest match), then a size glued to an unknown name."""

from __future__ import annotations

import re
from functools import cache

from engine.catalog import CatalogModel, models, typical_moe_share
from engine.parse.lexicon import NOT_NAME_WORDS
from engine.parse.names import JOINERS, NameIndex, key_of
from engine.parse.normalize import NUM, PUNCT, WORD, Tok
from engine.parse.scan import Scan
from engine.schema import MAX_PARAMS_B

# Spellings people use that the catalog does not list (yet): alias → catalog name.
# Same architecture and parameter count as the target (DeepSeek V3.1/V3.2 and R1-0528 share V3's
# 671B MoE shape; "Qwen3 30B" is the only 30B Qwen3).
EXTRA_MODEL_ALIASES = {
    "qwen3 30b": "Qwen3-30B-A3B", "qwen 3 30b": "Qwen3-30B-A3B", "qwen3 moe": "Qwen3-30B-A3B",
    "qwen3 235b": "Qwen3-235B-A22B", "qwen 3 235b": "Qwen3-235B-A22B",
    "deepseek v3.1": "DeepSeek-V3", "deepseek v3.2": "DeepSeek-V3", "deepseek-v3.1": "DeepSeek-V3",
    "deepseek 671b": "DeepSeek-V3",
    "llama 3 405b": "Llama-3.1-405B", "llama 3.2 1b": "Llama-3.2-1B",
    "mixtral 8x7": "Mixtral-8x7B", "mixtral 8x22": "Mixtral-8x22B", "mixtral": "Mixtral-8x7B",
    "phi 3 mini": "Phi-3-mini-4k", "phi3 mini": "Phi-3-mini-4k", "phi 3 medium": "Phi-3-medium-4k",
    "gemma 3 1b": "Gemma-3-1B", "gpt oss 20b": "gpt-oss-20b", "gpt oss 120b": "gpt-oss-120b",
    "mistral small": "Mistral-Small-24B", "mistral nemo": "Mistral-Nemo-12B",
}


@cache
def model_index() -> NameIndex[CatalogModel]:
    by_name = {m.name: m for m in models()}
    entries: list[tuple[str, CatalogModel]] = []
    for m in models():
        entries += [(a, m) for a in m.names]
    entries += [(a, by_name[n]) for a, n in EXTRA_MODEL_ALIASES.items() if n in by_name]
    return NameIndex(entries)


def chunk_bounds(toks: list[Tok], i: int) -> tuple[int, int]:
    """The run of tokens glued to token i (no whitespace inside): "my-finetune-13b"."""
    a = i
    while a > 0 and not toks[a].sp:
        a -= 1
    b = i
    while b + 1 < len(toks) and not toks[b + 1].sp:
        b += 1
    # trailing/leading punctuation ("13b?", "(llama-13b)") is not part of the name
    while b > a and toks[b].kind == PUNCT:
        b -= 1
    while a < b and toks[a].kind == PUNCT:
        a += 1
    return a, b


def unknown_name(raw: str, toks: list[Tok], size_first: int, size_last: int) -> str | None:
    """The user's own model name around a size ("my-finetune-13b"), or None for a bare size."""
    a, b = chunk_bounds(toks, size_first)
    if b < size_last:
        return None
    named = False
    for k in range(a, b + 1):
        t = toks[k]
        if t.kind == PUNCT and t.text not in JOINERS:
            return None
        if t.kind == WORD and not size_first <= k <= size_last and t.text not in NOT_NAME_WORDS:
            named = True
    if not named:
        return None
    name = raw[toks[a].start:toks[b].end].strip()
    return name if 0 < len(name) <= 200 else None


MONEY = frozenset({"руб", "рублей", "рубля", "рубли", "₽", "$", "usd", "dollars", "долларов", "eur", "€", "euro",
                   "баксов", "rub"})


@cache
def family_size_keys() -> frozenset[str]:
    """Keys of "family word + size" ("qwen7b", "mistral7b"): said with a space ("qwen 7b") they are the family's
    size (the current generation, an assumption: engine/catalog/families.toml), not the old model whose id
    they also spell ("Qwen-7B", 2023); written glued as an id ("Qwen-7B") they stay that model."""
    from engine.parse.families import families  # families imports this module
    return frozenset(key_of(f"{w} {v:g}b") for w, fam in families().items() for v, _ in fam.sizes)


def _spaced_family_size(toks: list[Tok], i: int, j: int) -> bool:
    words = [t for t in toks[i:j + 1] if t.kind != PUNCT]
    return any(t.sp for t in toks[i + 1:j + 1]) and "".join(t.key for t in words) in family_size_keys()


def catalog_names(s: Scan) -> None:
    """A catalog model named anywhere (the first one is the model; later ones are only consumed)."""
    index = model_index()
    for i in range(s.n):
        hit = index.match(s.toks, i)
        if hit is not None and _spaced_family_size(s.toks, i, hit[0]):
            continue  # "qwen 7b", "mistral 7b": the family reader decides (and says it assumed)
        if hit is not None:
            j, entry = hit
            s.use(i, j)
            a, b = chunk_bounds(s.toks, i)
            s.ids.update(range(a, max(b, j) + 1))  # "Qwen2.5-7B-DPO": the id's words say no stage
            if "model" not in s.said:
                s.said["model"] = {"name": _hub_id(s, a, max(b, j)) or entry.name, "params_b": entry.params_b,
                                   "active_params_b": entry.active_params_b}


def _hub_id(s: Scan, a: int, b: int) -> str | None:
    """A Hub id ("Qwen/Qwen2.5-72B-Instruct-AWQ", "meta-llama/Llama-3.1-70B"), as written: a command or config
    must name that checkpoint, the base one when the base was typed, not the catalog's choice for the family (the
    id still resolves to the catalog shape)."""
    name = s.cased[s.toks[a].start:s.toks[b].end].strip()
    if "/" not in name or len(name) > 200:
        return None
    return name


def sizes(s: Scan) -> None:
    """A bare size ("70B", "7 млрд", "125M"), possibly glued to the user's own name, when no catalog
    model was named; every size is consumed either way."""
    for i, t in enumerate(s.toks):
        if t.kind != NUM or t.used:
            continue
        mult, end = s.unit_after(i)
        if mult < 1e6:
            continue
        after = s.word(s.skip(end + 1, frozenset({"-"}), 1))
        if after in MONEY or s.word(i - 1) in MONEY:
            continue
        value = t.val * mult / 1e9
        first = i
        # "8x7b" outside the catalog: a mixture of experts, counted as its upper bound
        if s.word(i - 1) in ("x", "×") and s.glued(i) and s.num(i - 2) and s.glued(i - 1):
            value *= s.toks[i - 2].val
            first = i - 2
        s.use(first, end)
        if "model" in s.said:
            continue
        value = float(f"{value:.6g}")  # "7.000000001" from float arithmetic reads as 7
        if value < 0:
            s.errors.append("negative number")
            s.said["model"] = None
            continue
        if not 0 < value <= MAX_PARAMS_B:
            s.errors.append("model size out of range")
            s.said["model"] = None
            continue
        name = unknown_name(s.cased, s.toks, first, end)
        if name is not None:  # "yandex/YandexGPT-5-Lite-8B-pretrain": the id's words say no method or stage
            a, b = chunk_bounds(s.toks, first)
            s.ids.update(range(a, b + 1))
        s.said["model"] = {"name": name, "params_b": value, "active_params_b": moe_active(s, first, end, name, value)}


ACTIVE_IN_NAME = re.compile(r"[-_ ]a(\d{1,4}(?:\.\d{1,3})?)b\b")  # "30b-a3b": 3B of the 30B active per token
MOE_WORDS = frozenset({"moe", "mixture", "experts"})


def moe_active(s: Scan, first: int, end: int, name: str | None, total: float) -> float | None:
    """The active size of a bare size said as a mixture of experts: "30b-a3b" says it; "30b moe" / "MoE 30B" does
    not, so the typical share of the catalog's MoE models is assumed (engine.catalog.typical_moe_share) and said
    (Request.assumed "model.active_params_b"). None for a dense size."""
    said = ACTIVE_IN_NAME.search(name.lower()) if name else None
    if said is not None and 0 < float(said.group(1)) < total:
        return float(said.group(1))
    after = s.word(s.skip(end + 1, frozenset({"-"}), 1))
    if after not in MOE_WORDS and s.word(first - 1) not in MOE_WORDS:
        return None
    s.assumed.append("model.active_params_b")
    return float(f"{total * typical_moe_share():.3g}")

"""A model family named without its full name ("llama 70b", "ллама 70б", "мистраль", "qwen3") read as the
catalog model engine/catalog/families.toml gives for it; `Scan.assumed` then holds "model" so the answer
states the choice as an assumption."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from engine.catalog import HERE, CatalogModel, models
from engine.datafiles import read
from engine.parse.models import chunk_bounds, model_index
from engine.parse.normalize import PUNCT, WORD
from engine.parse.scan import Scan
from engine.parse.serving import GLUE

FILE = HERE / "families.toml"


@dataclass(frozen=True)
class Family:
    default: CatalogModel | None
    sizes: tuple[tuple[float, CatalogModel], ...]
    versions: dict[str, CatalogModel]


@cache
def families() -> dict[str, Family]:
    by_name = {m.name: m for m in models()}
    data = read(FILE)
    out: dict[str, Family] = {}
    for fam in data["family"]:
        item = Family(default=by_name.get(fam["default"]),
                      sizes=tuple((float(k), by_name[v]) for k, v in fam["sizes"].items()),
                      versions={k: by_name[v] for k, v in fam["versions"].items()})
        for w in fam["words"]:
            out[w] = item
    return out


def _version(s: Scan, i: int) -> tuple[str, int] | None:
    """"qwen3", "llama-3.1", "llama 3", "gemma 2" — a small number right after the family word, not a size."""
    j = i + 1
    if s.word(j) in GLUE and s.glued(j):
        j += 1
    if not s.num(j) or s.toks[j].val >= 10:
        return None
    if s.unit_after(j)[0] != 1.0:
        return None  # "llama 8b": a size
    text = s.toks[j].text.replace(",", ".")
    return text, j


# Variant words between a family's version and its size ("Qwen2.5-Coder-32B", "Qwen2.5-Math-7B"): same shape
VARIANTS = frozenset({"coder", "instruct", "math", "chat", "base", "vl", "it"})
# Variants with their own checkpoint: the catalog's model of that size stands in for it, an assumption
# (Qwen2.5-Coder-32B has Qwen2.5-32B's shape: 64 layers, 40 q / 8 kv heads, 32.5B parameters, its model card
# hf.co/Qwen/Qwen2.5-Coder-32B-Instruct; -Math and -VL differ in context length or add a vision tower).
OWN_CHECKPOINT = frozenset({"coder", "math", "vl"})


def _size_near(s: Scan, i: int, own: list[str]) -> tuple[float, int, int] | None:
    """A size in billions within two tokens after (or right before) token i, variant words aside (those of
    OWN_CHECKPOINT are added to `own`): (billions, first, last)."""
    stop = min(i + 4, s.n)
    j = i
    while j + 1 < stop:
        j += 1
        t = s.toks[j]
        if t.kind == WORD and t.text in VARIANTS:
            stop = min(stop + 2, s.n)  # the word and the hyphen after it
            if t.text in OWN_CHECKPOINT:
                own.append(t.text)
            continue
        if t.kind == PUNCT and t.text not in GLUE and t.text != ":":
            break
        if s.num(j):
            mult, end = s.unit_after(j)
            if mult >= 1e9:
                return t.val * mult / 1e9, j, end
    k = i - 1
    if k >= 1 and s.word(k) in ("b", "б") and s.glued(k) and s.num(k - 1):
        return s.toks[k - 1].val, k - 1, k
    return None


def _in_id(s: Scan, i: int) -> bool:
    """"acme/custom-llama-8b": a family word inside someone's model id is not the family's model."""
    a, b = chunk_bounds(s.toks, i)
    chunk = s.toks[a:b + 1]
    return any(t.text == "/" for t in chunk) or any(t.kind == WORD for t in s.toks[a:i])


def family_models(s: Scan) -> None:
    if s.said.get("model") is not None or "model" in s.said:
        return
    table = families()
    if s.words.isdisjoint(table) and "gpt" not in s.words:
        return
    for i, t in enumerate(s.toks):
        if t.used or t.kind != WORD:
            continue
        key = t.text
        last = i
        if key == "gpt" and s.word(i + 1) in GLUE and s.word(i + 2) == "oss":
            key, last = "gptoss", i + 2
        fam = table.get(key)
        if fam is None or (key == "phi" and t.orig != "phi" and t.orig != "фи") or _in_id(s, i):
            continue
        version = _version(s, last)
        after = version[1] if version else last
        own: list[str] = []
        size = _size_near(s, after, own)
        chosen: CatalogModel | None = None
        if size is not None:
            value, first, end = size
            if version is None:
                chosen = next((m for v, m in fam.sizes if abs(v - value) <= 0.03 * value), None)
            else:  # "llama3.1:70b" (an Ollama tag): the catalog's own name
                chosen = model_index().index.get(f"{key}{version[0].replace('.', '')}{s.toks[first].key}b")
            if chosen is None:
                continue  # a size the family table lacks ("qwen 110b"): a bare size, read later
            s.use(min(i, first), max(end, after))
        else:
            if version is not None:
                chosen = fam.versions.get(version[0])
            elif fam.default is not None:
                chosen = fam.default
            if chosen is None:
                continue
            s.use(i, after)
        s.said["model"] = {"name": chosen.name, "params_b": chosen.params_b,
                           "active_params_b": chosen.active_params_b}
        if not (size is not None and version is not None) or own:
            s.assumed.append("model")
        return

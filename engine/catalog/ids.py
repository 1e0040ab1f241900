"""Model repository ids read as words: the base model a derivative or quantized repo is made from, the weight
format its name says, and the size it carries.

- `name_format(name)`: "…-AWQ" -> "awq", "…-GPTQ-Int4" -> "gptq", "…-FP8-Dynamic" -> "fp8", "…-bnb-4bit" ->
  "bitsandbytes", "…-Q4_K_M.gguf" -> "gguf:q4_k_m", "…-AutoRound-…" -> "gptq" (AutoRound exports GPTQ/AWQ-layout
  int4, vLLM loads it with the same Marlin kernels); None when the name says no format;
- `base_candidates(name)`: the spellings of the base model to look up in the catalog, most specific first
  ("unsloth/Llama-3.2-3B-Instruct-bnb-4bit" -> "Llama-3.2-3B-Instruct", "Llama-3.2-3B");
- `size_from_name(name)`: (total, active) billions of parameters the name carries ("Yi-1.5-34B-Chat" -> (34, None),
  "Foo-48B-A3B" -> (48, 3), "Mixtral-8x7B" -> (56, None)), or None.

Pure string functions (no catalog import): engine.catalog calls them when a name is not in the catalog as written.
"""

from __future__ import annotations

import re

# The owner is dropped from the lookup: mirrors that republish other labs' models (unsloth, hugging-quants,
# neuralmagic, RedHatAI, bartowski, TheBloke, mlx-community, lmstudio-community, Intel, ...) say nothing of the
# architecture, and the labs' own ids resolve by their model name.

# GGUF quant types in file and repo names ("Q4_K_M", "IQ3_XXS", "Q8_0", "BF16" inside a -GGUF name)
_GGUF_TYPE = re.compile(r"(?<![a-z0-9])(i?q[1-8](?:_[a-z0-9]+){0,2})(?![a-z0-9])", re.IGNORECASE)

# (format, words): the first whose word stands in the name as its own token wins (order: specific first)
_FORMAT_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("nvfp4", ("nvfp4", "fp4")),
    ("mxfp4", ("mxfp4",)),
    ("bitsandbytes", ("bnb", "bnb-4bit", "nf4", "bitsandbytes")),
    ("int8", ("gptq-int8", "int8", "w8a8", "w8a16", "8bit")),
    ("awq", ("awq",)),
    ("gptq", ("gptq", "gptq-int4", "w4a16", "int4", "autoround", "auto-round", "marlin", "4bit")),
    ("fp8", ("fp8", "fp8-dynamic", "fp8_dynamic", "float8")),
)

# words of a derivative's name that do not change the architecture (chat/instruct tunes, formats, stages)
_DROP = frozenset({
    "instruct", "chat", "it", "hf", "base", "pt", "sft", "dpo", "orpo", "rlhf", "grpo", "distill", "qat",
    "abliterated", "uncensored", "merged", "lora", "awq", "gptq", "int4", "int8", "w4a16", "w8a8", "w8a16", "w4a4",
    "fp8", "fp16", "bf16", "fp4", "nvfp4", "mxfp4", "nf4", "bnb", "4bit", "8bit", "dynamic", "static", "gguf",
    "quantized", "autoround",
    "auto", "round", "exl2", "mlx", "marlin", "unsloth", "turbo", "fast", "online", "sym", "asym", "g128", "gs128",
    "channelwise", "block", "kv", "thinking", "reasoning", "latest",
})
_DATE = re.compile(r"^\d{4}$|^\d{6}$")  # "2503", "2407", "0528", "202410"
_SIZE = re.compile(r"(?<![a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)([bm])(?![a-z0-9])", re.IGNORECASE)
_ACTIVE = re.compile(r"(?<![a-z0-9.])a(\d+(?:\.\d+)?)b(?![a-z0-9])", re.IGNORECASE)


def _stem(name: str) -> str:
    """The repository name: no owner, no file extension, no parenthesised remark."""
    text = re.sub(r"\s*\(.*\)\s*$", "", name.strip())
    text = text.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"\.(gguf|safetensors|bin)$", "", text, flags=re.IGNORECASE)


def _tokens(stem: str) -> list[str]:
    return [t for t in re.split(r"[-_ ]+", stem) if t]


def name_format(name: str | None) -> str | None:
    """The weight format a repository name says, or None ("…-GGUF" alone reads as its usual Q4_K_M)."""
    if not name:
        return None
    stem = _stem(name).lower()
    gguf = "gguf" in stem or name.lower().endswith(".gguf")
    if gguf:
        m = _GGUF_TYPE.search(stem)
        if m:
            return "gguf:" + m.group(1).lower()
        for plain in ("f16", "bf16", "f32"):
            if re.search(rf"(?<![a-z0-9]){plain}(?![a-z0-9])", stem):
                return "gguf:" + plain
        return "gguf:q4_k_m"
    joined = "-" + "-".join(_tokens(stem.replace(".", "-"))) + "-"
    for fmt, words in _FORMAT_WORDS:
        if any(f"-{w}-" in joined for w in words):
            return fmt
    return None


def base_candidates(name: str | None) -> list[str]:
    """Spellings of the base model, most specific first: the stem, then without the format / tune words and dates,
    then also without a trailing version ("-v0.3", "-v2")."""
    if not name:
        return []
    stem = _stem(name)
    stem = _GGUF_TYPE.sub("", stem) if "gguf" in stem.lower() or name.lower().endswith(".gguf") else stem
    toks = _tokens(stem)
    kept = [t for t in toks if t.lower() not in _DROP and not _DATE.match(t)
            and not re.fullmatch(r"(?:w\d+a\d+|\d+bit|g\d+|quantized\.w\d+a\d+)", t.lower())]
    kept = [re.sub(r"\.?quantized\.w\d+a\d+$", "", t, flags=re.IGNORECASE) for t in kept]
    out = [stem, "-".join(kept)]
    if kept and kept[0].lower() == "meta":  # "Meta-Llama-3.1-8B-Instruct"
        out.append("-".join(kept[1:]))
    while kept and re.fullmatch(r"v\d+(?:\.\d+)*", kept[-1].lower()):
        kept = kept[:-1]
        out.append("-".join(kept))
    seen: list[str] = []
    for c in out:
        if c and c not in seen:
            seen.append(c)
    return seen


def size_from_name(name: str | None) -> tuple[float, float | None] | None:
    """(total, active) parameters in billions that a name carries, or None. "8x7B" counts every expert (an
    upper bound: the shared attention is counted 8 times); "A3B" is the active count of a mixture of experts."""
    if not name:
        return None
    stem = _stem(name)
    active_m = _ACTIVE.search(stem)
    for m in _SIZE.finditer(stem):
        if active_m and m.start() == active_m.start() + 1:
            continue  # "A3B" itself
        if m.start() > 0 and stem[m.start() - 1] in "aA" and (m.start() < 2 or not stem[m.start() - 2].isalnum()):
            continue
        value = float(m.group(2)) * (1e-3 if m.group(3).lower() == "m" else 1.0)
        if m.group(1):
            value *= int(m.group(1))
        if not 0 < value <= 10_000:
            continue
        active = float(active_m.group(1)) if active_m else None
        if active is not None and not 0 < active < value:
            active = None
        return value, active
    return None

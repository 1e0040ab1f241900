"""Quantized checkpoints of the catalog's models (checkpoints.toml): the repository a command loads for a format.

`checkpoint(model, fmt)`: the known repository of `model` (a catalog name or Hub id) in `fmt`, or None.
`format_of_repo(repo)`: the weight format a repository id says it holds ("...-AWQ", "...-GGUF", "...-FP8"), or None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from engine.catalog import data_file, find_model


@dataclass(frozen=True)
class Checkpoint:
    base: str  # models.toml name
    format: str  # awq gptq fp8 gguf bnb-4bit
    repo: str
    source: str
    types: tuple[str, ...] = ()  # GGUF quant types offered


# The request's quantization words (engine.schema Request.quantization) → the checkpoint format that holds them
FORMAT_OF_QUANT = {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "nf4": "bnb-4bit", "mxfp4": "gguf"}


@cache
def checkpoints() -> tuple[Checkpoint, ...]:
    return tuple(Checkpoint(base=c["base"], format=c["format"], repo=c["repo"], source=c["source"],
                            types=tuple(c.get("types", ()))) for c in data_file("checkpoints.toml")["checkpoint"])


def checkpoint(model: str | None, fmt: str) -> Checkpoint | None:
    entry = find_model(model)
    if entry is None:
        return None
    return next((c for c in checkpoints() if c.base == entry.name and c.format == fmt), None)


# Repository-name markers of a format (the publishers' own suffixes: -AWQ, -AWQ-INT4, -GPTQ-Int4, -GGUF, -FP8,
# -FP8-dynamic, -bnb-4bit, .w4a16 = GPTQ-style INT4 of llm-compressor, -MXFP4)
_REPO_FORMAT = (("gguf", re.compile(r"gguf", re.I)), ("awq", re.compile(r"(^|[-_./])awq", re.I)),
                ("gptq", re.compile(r"(^|[-_./])(gptq|w4a16)", re.I)),
                ("fp8", re.compile(r"(^|[-_./])(fp8|w8a8)", re.I)),
                ("bnb-4bit", re.compile(r"bnb[-_]?4bit", re.I)), ("mxfp4", re.compile(r"mxfp4", re.I)))


def format_of_repo(repo: str | None) -> str | None:
    if not repo:
        return None
    return next((fmt for fmt, pattern in _REPO_FORMAT if pattern.search(repo)), None)


@dataclass(frozen=True)
class Weights:
    """What a serving command loads: the repository (or a placeholder to replace), whether the engine must be told
    the format (`flag`: a bf16 repository quantized on load: vLLM/SGLang --quantization fp8 or bitsandbytes), and
    a note: `checkpoint:<repo> <source>` for a catalog checkpoint, `checkpoint_missing:<format> of <model>` for a
    placeholder."""

    repo: str
    flag: bool
    note: str | None


PLACEHOLDER_SUFFIX = {"awq": "AWQ", "gptq": "GPTQ", "gguf": "GGUF", "fp8": "FP8", "bnb-4bit": "bnb-4bit"}
# formats vLLM and SGLang can make from bf16 weights while loading (no separate checkpoint needed)
ON_LOAD = ("fp8", "bnb-4bit")


def placeholder(model: str, fmt: str) -> str:
    """`your-org/<name>-AWQ`: a Hub id that says what to put there (never a real repository)."""
    return f"your-org/{model.rsplit('/', 1)[-1]}-{PLACEHOLDER_SUFFIX.get(fmt, fmt.upper())}"


def serving_weights(model: str, fmt: str | None) -> Weights:
    """The repository a vLLM/SGLang command loads for weights in `fmt` (awq gptq fp8 bnb-4bit; None: as named).
    A repository that already holds the format is loaded as named (its config.json says the format); a catalog
    checkpoint replaces the bf16 one; FP8 and bitsandbytes may be made on load; AWQ/GPTQ need a checkpoint: a
    placeholder when the catalog knows none (never the bf16 repository with --quantization awq)."""
    if fmt is None or format_of_repo(model) is not None or model.lower().endswith(".gguf"):
        return Weights(model, False, None)
    known = checkpoint(model, fmt)
    if known is not None:
        return Weights(known.repo, False, f"checkpoint:{known.repo} {known.source}")
    if fmt in ON_LOAD:
        return Weights(model, True, None)
    return Weights(placeholder(model, fmt), False, f"checkpoint_missing:{fmt} of {model}")


def gguf_weights(model: str, gguf_type: str) -> tuple[str, str | None]:
    """(`-hf` value, note) for llama-server: the repository as named when it is a GGUF one, a catalog GGUF
    repository of the model at `gguf_type` (no tag when it offers only one type), else a placeholder."""
    if format_of_repo(model) == "gguf":
        return (model if ":" in model else f"{model}:{gguf_type}"), None
    known = checkpoint(model, "gguf")
    if known is not None:
        if len(known.types) == 1:
            return known.repo, f"checkpoint:{known.repo} {known.source}"
        if not known.types or gguf_type in known.types:
            return f"{known.repo}:{gguf_type}", f"checkpoint:{known.repo} {known.source}"
    return f"{placeholder(model, 'gguf')}:{gguf_type}", f"checkpoint_missing:gguf {gguf_type} of {model}"


ROPE_OVERRIDE_FLAG = {"vllm": "--hf-overrides", "sglang": "--json-model-override-args"}  # config.json overrides


def long_context_flags(engine: str, model_id: str, max_model_len: int) -> list[str]:
    """The engine's flags that give a served chat checkpoint its card's YaRN past its config's window (vLLM
    --hf-overrides, SGLang --json-model-override-args); none within the window or for other engines."""
    import json

    flag = ROPE_OVERRIDE_FLAG.get(engine)
    rope = long_context_rope(model_id, max_model_len) if flag else None
    return [flag, json.dumps(rope)] if flag and rope else []


def long_context_rope(model_id: str, max_model_len: int) -> dict[str, object] | None:
    """The rope_scaling a served chat checkpoint needs for a context past its config.json's window (the model card's
    YaRN, catalog models.toml chat_yarn), as the engine's config override takes it; None within the window."""
    model = find_model(model_id)
    if model is None or model.chat_yarn is None or not model_id.startswith(model.served_id):
        return None
    factor, original = model.chat_yarn
    if max_model_len <= original:
        return None
    return {"rope_scaling": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original}}

"""Hugging Face model ids in free text: `owner/name`, or a huggingface.co link."""

from __future__ import annotations

import re

from engine.catalog import find_gpu, find_model
from engine.configs.safety import MAX_BYTES

# The one limit for pasted and uploaded configs (config.json, training and serving configs): engine.configs'
# 256 KB, which its check enforces too; beyond that a text is not a question nor a config.
MAX_PASTE = MAX_BYTES

NAME_MAX = 96
_PART = rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{NAME_MAX - 1}}}"
_ID = re.compile(rf"^(?P<owner>{_PART})/(?P<name>{_PART})$")
_URL = re.compile(
    rf"(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/(?P<owner>{_PART})/(?P<name>{_PART})",
    re.IGNORECASE,
)
_BARE = re.compile(rf"(?<![A-Za-z0-9_./:@-])(?P<owner>{_PART})/(?P<name>{_PART})(?![A-Za-z0-9_/-])")
_NOT_MODELS = {"datasets", "spaces", "docs", "blog", "api", "settings", "collections", "papers", "organizations",
               "learn", "tasks", "join", "login", "pricing", "models"}
# words that stand on either side of a slash in questions, never as a Hub owner or model name
_WORDS = {
    "ru", "en", "de", "fr", "lora", "qlora", "full", "ft", "sft", "dpo", "ppo", "orpo", "rlhf", "inference",
    "train", "training", "finetune", "fine-tune", "fp32", "fp16", "bf16", "fp8", "fp4", "int8", "int4", "nf4",
    "4bit", "8bit", "4-bit", "8-bit", "16-bit", "s", "h", "hr", "hour", "hours", "day", "month", "mo", "gb",
    "gib", "tb", "tib", "mb", "gpu", "gpus", "cpu", "ram", "vram", "tokens", "token", "tok", "sec", "step",
    "adam", "adamw", "sgd", "lion", "zero", "zero3", "fsdp", "ddp", "ctx", "context", "batch", "epoch",
    "epochs", "usd", "rub", "eur", "yes", "no", "and", "or", "vs", "pcie", "sxm", "nvl", "input", "output",
}
# owners whose model names may be a single plain word (bigscience/bloom, microsoft/DialoGPT)
_KNOWN_OWNERS = {
    "meta-llama", "mistralai", "qwen", "google", "microsoft", "facebook", "bigscience", "tiiuae", "eleutherai",
    "openai", "openai-community", "deepseek-ai", "thudm", "zai-org", "01-ai", "nvidia", "allenai", "bigcode",
    "huggingfaceh4", "huggingfacetb", "stabilityai", "databricks", "mosaicml", "internlm", "baichuan-inc",
    "cohereforai", "coherelabs", "ibm-granite", "google-bert", "google-t5", "unsloth", "nousresearch",
    "moonshotai", "xai-org", "apple", "salesforce", "upstage", "ai21labs", "snowflake", "tinyllama",
    "yandex", "ai-forever", "sberbank-ai", "t-tech", "vikhrmodels", "lmsys", "teknium", "openbmb",
}
_NUMBERISH = re.compile(r"^[0-9][0-9.,_-]*[a-z]?$", re.IGNORECASE)  # 8k, 16k, 70b, 2024, 1.5, 12-05
# owners that are really settings or model names: r16/r32, bs8/bs16, Llama3/Qwen2.5
_NOT_OWNER = re.compile(r"^(?:[a-z]{0,3}\d+[a-z]{0,2}|(?:llama|qwen|mistral|mixtral|gemma|phi|falcon|gpt|"
                        r"deepseek|yi|glm|chatglm|claude|bloom|olmo|granite|command)[-_]?\d.*)$", re.IGNORECASE)


def _valid_part(part: str) -> bool:
    return 0 < len(part) <= NAME_MAX and "--" not in part and ".." not in part and part[-1] not in ".-"


def is_hub_id(model_id: str) -> bool:
    """Whether a string is a well-formed `owner/name` Hub model id (Hub naming rules)."""
    m = _ID.match(model_id)
    if m is None:
        return False
    return _valid_part(m["owner"]) and _valid_part(m["name"]) and not m["name"].endswith(".git")


def _plausible(owner: str, name: str) -> bool:
    lo, ln = owner.lower(), name.lower()
    if not (_valid_part(owner) and _valid_part(name)):
        return False
    if lo in _WORDS or ln in _WORDS or _NUMBERISH.match(owner) or _NUMBERISH.match(name):
        return False
    if lo not in _KNOWN_OWNERS and ("." in owner or _NOT_OWNER.match(owner)):
        return False
    if find_gpu(owner) or find_gpu(name) or find_model(owner):  # A100/H100, llama-3-8b/mistral-7b
        return False
    if lo in _KNOWN_OWNERS:
        return True
    # a model name almost always carries a size, a version or a separator (gpt2, Llama-3.1-8B)
    return any(ch.isdigit() or ch in "-._" for ch in name)


def _clean(part: str) -> str:
    return part.rstrip(".-")


def find_hub_id(text: str) -> str | None:
    """The first Hugging Face model id (`owner/name`, original case) in free text, else None.

    A huggingface.co link wins; otherwise a bare `owner/name` that looks like a model and not like
    "8k/16k", "A100/H100", "ru/en", a date or a fraction."""
    if not isinstance(text, str) or "/" not in text:
        return None
    text = text[:MAX_PASTE]
    for m in _URL.finditer(text):
        owner, name = m["owner"], _clean(m["name"])
        if owner.lower() in _NOT_MODELS:
            continue
        if _valid_part(owner) and _valid_part(name):
            return f"{owner}/{name}"
    for m in _BARE.finditer(text):
        owner, name = m["owner"], _clean(m["name"])
        if _plausible(owner, name):
            return f"{owner}/{name}"
    return None

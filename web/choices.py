"""What the page's controls offer: the catalog's models and GPUs and the engine's own literals (no list of names
kept here that the engine does not keep)."""

from __future__ import annotations

from functools import cache
from typing import Any, get_args

from bot.views.keyboards import SERVING_TARGETS, TARGET_LABELS, TRAINING_TARGETS
from engine.catalog import gpus, models
from engine.schema import Framework, ServingEngine, Stage

SERVING_FORMATS = ("bf16", "fp8", "awq", "gptq", "nf4", "mxfp4", "gguf:f16", "gguf:q8_0", "gguf:q4_k_m")
METHODS = ("full", "lora", "qlora")


@cache
def catalog_json() -> dict[str, Any]:
    return {
        "models": [{"name": m.name, "hf_id": m.hf_id, "params_b": m.params_b} for m in models()],
        "gpus": [{"name": g.name, "memory_gb": g.memory_gb} for g in gpus()],
        "methods": list(METHODS),
        "stages": [s for s in get_args(Stage) if s != "pretrain"],
        "frameworks": list(get_args(Framework)),
        "engines": list(get_args(ServingEngine)),
        "formats": list(SERVING_FORMATS),
        "config_targets": {"training": list(TRAINING_TARGETS), "serving": list(SERVING_TARGETS)},
        "config_labels": TARGET_LABELS,
    }

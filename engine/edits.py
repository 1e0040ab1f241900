"""Edits of a stored Request, in one place: a follow-up's change ("а с QLoRA?", "and on two of them?"), the state a
keyboard button names (method, context, GPU count; a serving answer's weight format, users, context), and what a
method change resets (the precision the old method brought, QLoRA's optimizer, the other kind's fields).

    merge_follow_up(previous, read_follow_up("а с QLoRA?"))  → the previous Request, QLoRA, 4-bit precision reset
    keyboard_state(stored, "qlora", 8192, 2)                  → the stored Request as the pressed button shows it

Each raises ValueError when the edited request is not a possible one.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from engine.parse.followup import CHANGEABLE, HARDWARE_KEYS, SETTLED, FollowUp
from engine.schema import GpuRef, Request, error_keys, join_errors

TRAINING_ONLY = ("stage", "num_generations", "lora_rank", "optimizer", "gradient_checkpointing", "epochs", "tokens",
                 "fused_loss")
SERVING_ONLY = ("quantization", "kv_cache_dtype", "concurrency", "serving_engine", "prompt_len", "output_len")
SERVING_SETTLED = frozenset({"context length out of range", "batch size out of range"})


def switch_method(data: dict[str, Any], previous: Request, method: str, said: frozenset[str] | set[str] = frozenset(),
                  *, across_kinds: bool = True) -> None:
    """`data` (the previous request's dump) with `method` and what the method change resets: the precision the old
    method brought (QLoRA 4-bit, LoRA 16-bit) and QLoRA's optimizer, unless `said` names them; `across_kinds`: a
    switch between training and inference also drops the other kind's fields (a keyboard keeps them, so that its
    buttons lead back to the same question)."""
    data["method"] = method
    if "bits" not in said:
        data["bits"] = None
    if method == "qlora" and previous.optimizer in ("adamw", "adamw_fused", "adamw_8bit") and "optimizer" not in said:
        data["optimizer"] = None
    if not across_kinds:
        return
    if method == "inference":
        for k in TRAINING_ONLY:
            if k not in said:
                data[k] = None
    elif previous.method == "inference":
        for k in SERVING_ONLY:
            if k not in said:
                data[k] = None
        if previous.concurrency is not None and previous.batch_size == previous.concurrency \
                and "batch_size" not in said:
            data["batch_size"] = None


def merge_follow_up(previous: Request, follow: FollowUp) -> Request:
    """The previous Request with the follow-up's changes. A method change resets what the method brings
    (`switch_method`); serving-only and training-only fields do not survive a switch between training and
    inference. ValueError when the result is not a possible request."""
    new = follow.changes
    data: dict[str, Any] = previous.model_dump()
    said = set(follow.said)
    for k in CHANGEABLE:
        if k in said and k not in ("gpus", "unsupported", "method", "asks"):
            data[k] = getattr(new, k).model_dump() if isinstance(getattr(new, k), BaseModel) else getattr(new, k)
    if "method" in said and new.method != previous.method:
        assert new.method is not None
        switch_method(data, previous, new.method, said)
    if "gpus" in said:
        count = _common_count(previous)
        gpus = []
        for g, count_said in zip(new.gpus, follow.gpu_count_said or [True] * len(new.gpus), strict=False):
            entry = g.model_dump()
            if not count_said and count is not None:
                entry["count"] = count  # "а на H200?" after 8×H100: 8×H200
            gpus.append(entry)
        data["gpus"] = gpus
        data["assumed"] = [a for a in data["assumed"] if a != "gpus"]
    elif "gpu_count" in said:
        n = new.gpus[0].count
        data["gpus"] = [{**g, "count": n} for g in data["gpus"]] or [GpuRef(count=n).model_dump()]
    unsupported = list(previous.unsupported)
    if "gpus" in said:
        unsupported = [u for u in unsupported if u not in HARDWARE_KEYS]
    data["unsupported"] = list(dict.fromkeys(unsupported + list(new.unsupported)))[:32]
    if "model" in said:
        data["assumed"] = [a for a in data["assumed"] if a != "model"]
    if data.get("method") != previous.method:  # a method said now: no longer the guessed inference
        data["assumed"] = [a for a in data["assumed"] if a != "method"]
    data["assumed"] = list(dict.fromkeys(data["assumed"] + list(new.assumed)))[:16]
    reasons = [r for r in error_keys(previous.error) if r not in SETTLED] + error_keys(new.error)
    data["error"] = join_errors(list(dict.fromkeys(reasons)))
    if follow.language_said:
        data["language"] = new.language
    if new.intent in ("compare", "cost"):
        data["intent"] = new.intent
    elif data.get("intent") in (None, "help"):
        data["intent"] = "estimate"
    if new.asks:
        data["asks"] = list(new.asks)  # "а сколько это будет стоить?": the same question, money first
        if any(a in ("money", "time") for a in new.asks) and data["intent"] != "compare":
            data["intent"] = "cost"
    data["smalltalk"] = None
    return _valid(data, "follow-up out of range")


def _common_count(previous: Request) -> int | None:
    counts = {g.count for g in previous.gpus}
    return counts.pop() if len(counts) == 1 else None


def keyboard_state(stored: Request, method: str, ctx: int, count: int) -> Request:
    """The stored request as an answer's keyboard wants it: `method` at context `ctx` on `count` GPUs."""
    data = stored.model_dump()
    if method != stored.method:
        switch_method(data, stored, method, across_kinds=False)
    data["method"] = method
    data["seq_len"] = ctx
    gpus = data.get("gpus") or []
    for gpu in gpus:  # a comparison keeps comparing the same GPUs, each at the count pressed
        gpu["count"] = count
    if not gpus and count > 1:
        gpus = [GpuRef(count=count).model_dump()]
    data["gpus"] = gpus
    # what the question said that could not be used is settled once the button says it
    data["error"] = join_errors([r for r in error_keys(stored.error) if r not in SETTLED])
    return _valid(data, "state out of range")


def serving_state(stored: Request, quantization: str | None, users: int, ctx: int) -> Request:
    """The stored serving request with the weight format (None: as it was), users at once and context a serving
    answer's keyboard says."""
    data = stored.model_dump()
    if quantization is not None:
        data["quantization"] = quantization
        data["bits"] = None
    data["concurrency"] = users or None  # 0: none asked, the room the GPUs have
    data["seq_len"] = ctx
    data["prompt_len"] = data["output_len"] = None  # the button's context is prompt + output
    if data.get("engine_options"):
        data["engine_options"]["max_model_len"] = None
    data["error"] = join_errors([r for r in error_keys(stored.error) if r not in SERVING_SETTLED])
    return _valid(data, "state out of range")


def load_state(stored: Request, quantization: str | None, rate: float, users: int, ttft_ms: int,
               tpot_ms: int) -> Request:
    """The stored serving request with the weight format (None: as it was), the load (request rate or users at once)
    and the promise (TTFT p95, TPOT; 0 for none) a load answer's keyboard says; prompt and output lengths stay."""
    if not (rate or users):
        raise ValueError("no load")
    data = stored.model_dump()
    if quantization is not None:
        data["quantization"] = quantization
        data["bits"] = None
    data["request_rate"] = rate or None
    data["concurrency"] = users or None
    data["ttft_p95_ms"] = float(ttft_ms) if ttft_ms else None
    data["tpot_ms"] = float(tpot_ms) if tpot_ms else None
    return _valid(data, "state out of range")


def _valid(data: dict[str, Any], reason: str) -> Request:
    try:
        return Request.model_validate(data)
    except ValidationError as exc:
        raise ValueError(reason) from exc

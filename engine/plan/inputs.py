"""What the input said that cannot be used as given: parse errors, unknown GPUs, impossible prices and
rates; each a note (a message key with parameters), and the price options without the unusable parts."""

from __future__ import annotations

from engine import pricing
from engine.catalog import find_gpu
from engine.schema import Note, PriceOptions, Request, error_keys


def checked_inputs(request: Request, prices: PriceOptions) -> tuple[list[Note], PriceOptions]:
    notes = [Note(key=reason) for reason in error_keys(request.error)]
    known = [ref.memory_gb is not None or find_gpu(ref.name) is not None for ref in request.gpus]
    for ref, ok in zip(request.gpus, known, strict=True):
        if ref.name and not ok:
            notes.append(Note(key="unknown_gpu", params={"name": ref.name, "others": any(known)}))
    usd_rub = prices.usd_rub
    if usd_rub is not None:
        try:
            pricing.validate_rate(usd_rub)
        except ValueError:
            notes.append(Note(key="rate", params={"value": usd_rub}))
            usd_rub = None
    overrides = {}
    for gpu_name, value in prices.overrides.items():
        why = "unknown GPU" if find_gpu(gpu_name) is None else None
        if why is None:
            try:
                overrides[gpu_name] = pricing.validate_price(value, prices.currency)
                continue
            except ValueError:
                why = "impossible"
        notes.append(Note(key="price", params={"gpu": gpu_name, "value": value, "why": why}))
    return notes, prices.model_copy(update={"usd_rub": usd_rub, "overrides": overrides})

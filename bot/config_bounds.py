"""A model from a config.json (pasted, uploaded, or fetched) obeys the request's bounds like a size in words.

A config of a hundred-trillion-parameter model is not a question anyone means; the parser answers such a
size in words with "model size out of range", and a config gets the same answer instead of "Needs
696,973,473 GB per GPU".
"""

from __future__ import annotations

import math

from engine.catalog import architecture
from engine.schema import MAX_PARAMS_B, Request

OUT_OF_RANGE = "model size out of range"  # the parser's error key (engine.parse.models)


def within_bounds(request: Request) -> Request:
    model = request.model
    if model is None or model.config is None:
        return request
    try:
        params_b = architecture(model).params / 1e9
    except (ValueError, ArithmeticError):
        params_b = math.inf
    if params_b <= MAX_PARAMS_B:
        return request
    data = request.model_dump()
    data["model"] = None
    data["error"] = OUT_OF_RANGE
    return Request.model_validate(data)

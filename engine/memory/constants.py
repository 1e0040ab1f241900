"""The memory model's constants (engine/catalog/memory.toml, each with its source), loaded once."""

from __future__ import annotations

import tomllib
from functools import cache
from typing import Any

from engine.catalog import HERE

GIB = float(2**30)


@cache
def constants() -> dict[str, Any]:
    with (HERE / "memory.toml").open("rb") as f:
        return tomllib.load(f)

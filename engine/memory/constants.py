"""The memory model's constants (engine/catalog/memory.toml, each with its source), loaded once."""

from __future__ import annotations

from typing import Any

from engine.catalog import data_file

GIB = float(2**30)


def constants() -> dict[str, Any]:
    return data_file("memory.toml")

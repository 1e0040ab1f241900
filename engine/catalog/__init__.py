"""Catalogs of models, GPUs and prices: data files next to this package, loaded once (`lookup`: the data files, GPUs
and models by name), and the architecture a model stands on (`shapes`).

Every figure in the .toml files carries its source; these modules only read and index them.
"""

from __future__ import annotations

from engine.catalog.lookup import (
    HERE,
    CatalogModel,
    Gpu,
    data_file,
    find_gpu,
    find_model,
    gpus,
    models,
    unified_memory,
    usable_memory_gib,
)
from engine.catalog.shapes import (
    architecture,
    config_params,
    reference_of,
    shape_reference,
    smaller_shapes,
    typical_moe_share,
)

__all__ = ["HERE", "CatalogModel", "Gpu", "architecture", "config_params", "data_file", "find_gpu", "find_model",
           "gpus", "models", "reference_of", "shape_reference", "smaller_shapes", "typical_moe_share", "unified_memory",
           "usable_memory_gib"]

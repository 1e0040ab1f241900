"""The data of a serving answer: defined in engine/schema_serving.py (part of the schema, so that engine.schema's
Answer can carry a ServingResult without importing this package), re-exported here for the package's modules."""

from engine.schema_serving import (
    Arrangement,
    Cost,
    EngineFamily,
    GpuChoice,
    Issue,
    KvCapacity,
    RankMemory,
    ServingResult,
    Settings,
    Speed,
)

__all__ = ["Arrangement", "Cost", "EngineFamily", "GpuChoice", "Issue", "KvCapacity", "RankMemory", "ServingResult",
           "Settings", "Speed"]

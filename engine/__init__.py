"""The engine: pure, synchronous estimates. `engine.schema` loads first: its Answer holds engine.posttrain's result
type, and engine.posttrain (through engine.catalog) imports engine.schema."""

from engine import schema as _schema  # noqa: F401

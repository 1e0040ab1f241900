"""The engine: pure, synchronous estimates. Its types live in `engine.schema`, which imports no engine logic."""

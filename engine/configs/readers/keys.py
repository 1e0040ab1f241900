"""Key tables: what each key of a configuration mapping says, declared as data (key → handler), and the one loop
that applies a table to a mapping. The handlers below are the shapes most keys share: a request field through a
converter, the model name, the optimizer, LoRA targets, mixed precision."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from engine.configs.readers.collect import Collector, as_bool

# (collector, the key as written, its value, the whole mapping it came from) — the mapping for keys that depend on
# others (Axolotl's lora_target_modules is void under lora_target_linear)
Handler = Callable[[Collector, str, Any, Mapping[str, Any]], None]
Table = Mapping[str, Handler]


def apply(table: Table, data: Mapping[str, Any], c: Collector, fallback: Handler | None = None) -> None:
    """Every key of `data` through `table`; keys the table lacks go to `fallback` (default: Collector.unknown)."""
    for key, value in data.items():
        (table.get(key) or fallback or unknown)(c, key, value, data)


def skip(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    """Read before the loop (or says nothing the estimate uses)."""


def unknown(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    c.unknown(key, value)


def model(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    c.model = str(value)


def optimizer(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    c.optimizer(key, value)


def targets(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    c.targets(key, value)


def precision(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
    """bf16 / fp16 / tf32 switches: on is mixed precision (the weights stay in fp32)."""
    if as_bool(value):
        c.set("mixed_precision", "amp")
    elif value not in (False, None, "false", "False"):
        c.ignore(key)


def to(field: str, convert: Callable[[Any], Any]) -> Handler:
    """The key sets `field` to its converted value; a value that does not convert is named, never dropped quietly
    (`sequence_len: 1e308x` would otherwise read as "every key understood" and an estimate at the defaults)."""

    def handler(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
        converted = convert(value)
        if converted is None and value is not None:
            c.ignore(f"{key} (value not understood)")
        c.set(field, converted)

    return handler


def when_true(field: str, said: Any) -> Handler:
    """A switch that, when on, says `field` is `said` (off says nothing)."""

    def handler(c: Collector, key: str, value: Any, data: Mapping[str, Any]) -> None:
        if as_bool(value):
            c.set(field, said)

    return handler


def each(keys: Iterable[str], handler: Handler) -> dict[str, Handler]:
    return dict.fromkeys(keys, handler)

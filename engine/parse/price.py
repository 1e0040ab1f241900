"""The argument of `/price`: a GPU, and optionally the chat's own price for it per GPU-hour.

    read_price_args("H100")             → PriceArgs(gpu=H100 SXM)                         (show the market range)
    read_price_args("H100 200 руб")     → PriceArgs(gpu=H100 SXM, price=200, currency="RUB")
    read_price_args("H100 = 2.5$/час")  → PriceArgs(gpu=H100 SXM, price=2.5, currency="USD")
    read_price_args("A100 40GB 1,2")    → PriceArgs(gpu=A100 40GB SXM, price=1.2, currency=None)  (the chat's currency)
    read_price_args("Foo 9000 2$")      → PriceArgs(gpu=None, gpu_text="foo 9000", error="unknown gpu", price=2, ...)
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from engine.parse import hardware
from engine.parse.money import amount_at, per_time_after
from engine.parse.normalize import MAX_CHARS, NUM, clean, tokenize
from engine.parse.scan import Scan
from engine.schema import Currency, GpuRef

MAX_PRICE = 1e6  # per GPU-hour, in any currency
COMMAND = frozenset({"/price", "price", "/цена", "цена"})


class PriceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built by the first price question

    gpu: GpuRef | None = None  # the catalog GPU named (its memory variant when said)
    gpu_text: str | None = Field(default=None, max_length=100)  # what was typed for the GPU, when not known
    price: float | None = Field(default=None, gt=0, le=MAX_PRICE)  # own price per GPU-hour
    currency: Currency | None = None  # None: the number had no currency (use the chat's)
    error: str | None = None  # "unknown gpu" | "several gpus" | "negative number" | "price out of range"


def read_price_args(text: str) -> PriceArgs:
    """Never raises; an empty argument gives PriceArgs() (the bot lists prices or asks which GPU)."""
    try:
        return _read(text if isinstance(text, str) else "")
    except Exception:  # the parser's last-resort guard, as parse() has
        return PriceArgs(error="unreadable")


def _read(text: str) -> PriceArgs:
    text = text[:MAX_CHARS].strip()
    head = text.split(maxsplit=1)
    if head and head[0].split("@")[0].lower() in COMMAND:
        text = head[1] if len(head) > 1 else ""
    if not text.strip():
        return PriceArgs()
    cleaned = clean(text)
    s = Scan(cleaned, tokenize(cleaned))
    hardware.named(s)
    errors: list[str] = []
    price: float | None = None
    currency: str | None = None
    first_money = s.n
    # a sum with its currency wins; else the last bare number ("Foo 9000 2": 2 is the price)
    spot = next((i for i in range(s.n) if not s.toks[i].used and amount_at(s, i) is not None), None)
    if spot is None:
        spot = next((i for i in range(s.n - 1, -1, -1) if s.num(i) or (s.toks[i].kind == NUM and s.toks[i].val < 0
                                                                       and not s.toks[i].used)), None)
    if spot is not None:
        got = amount_at(s, spot)
        if got is not None:
            price, currency, first, last = got
        else:
            price, first, last = s.toks[spot].val, spot, spot
        first_money = first
        rate = per_time_after(s, last)
        s.use(first, rate if rate is not None else last)
    gpus = [g[1] for g in sorted(s.gpus, key=lambda g: g[0])]
    if price is not None and price < 0:
        errors.append("negative number")
        price = None
    elif price is not None and not 0 < price <= MAX_PRICE:
        errors.append("price out of range")
        price = None
    gpu = None
    gpu_text = None
    if len(gpus) > 1:
        errors.append("several gpus")
    elif gpus and gpus[0]["name"] is not None:
        gpu = GpuRef(name=gpus[0]["name"], memory_gb=gpus[0]["memory_gb"])
    else:
        typed = cleaned[:s.toks[first_money].start] if first_money < s.n else cleaned
        typed = typed.strip(" =:-—,;").strip()
        if typed:
            gpu_text = typed[:100]
            errors.append("unknown gpu")
    return PriceArgs(gpu=gpu, gpu_text=gpu_text, price=price, currency=currency,
                     error="; ".join(errors) or None)

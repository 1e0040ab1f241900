"""Numbers, money, dates and durations in the reader's language: Babel's (CLDR) conventions."""

from __future__ import annotations

import datetime
import math
from functools import cache
from typing import Any

from bot.views.catalogs import _, _n
from engine.speed import gpus_per_node


@cache
def _cldr(lang: str) -> dict[str, Any] | None:
    """The CLDR conventions of `lang` an answer uses, as Babel has them (bot/views/cldr.toml), or None for a language
    the file lacks (then Babel itself is asked): loading Babel and its locale data cost a CLI answer a tenth of its
    time, for two marks and a date."""
    from engine.datafiles import read_toml

    table: dict[str, dict[str, Any]] = read_toml("bot.views", "cldr.toml")
    return table.get(lang)


@cache
def _symbols(lang: str) -> tuple[str, str]:
    """The language's group and decimal marks, as Babel (CLDR) has them: ("," ".") / ("\u00a0" ",")."""
    known = _cldr(lang)
    if known is not None:
        return known["group"], known["decimal"]
    from babel.numbers import get_decimal_symbol, get_group_symbol

    return get_group_symbol(locale=lang), get_decimal_symbol(locale=lang)


def decimal(lang: str, value: float, places: int, keep_zeros: bool = False) -> str:
    """Babel's "#,##0.##…" (grouped, at most `places` decimals, no trailing zeros unless `keep_zeros`) at
    str.format speed: an answer formats dozens of numbers, and Babel's pattern engine was a fifth of its time."""
    text = f"{value:,.{places}f}"
    if places and not keep_zeros:
        text = text.rstrip("0").rstrip(".")
    if text == "-0":
        text = "0"
    group, point = _symbols(lang)
    return text.replace(",", "\x00").replace(".", point).replace("\x00", group)


def num(lang: str, value: float) -> str:
    return decimal(lang, value, 1)


def number_or_text(lang: str, value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return num(lang, value)
    return str(value)


@cache  # Babel parses its date patterns on every call; an answer has one of a few dozen dates
def date_text(lang: str, iso: str) -> str:
    """"2026-11-09" → "9 ноября 2026 г." / "November 9, 2026"; "2026-06" → "июнь 2026 г." / "June 2026"."""
    parts = iso.split("-")
    try:
        if len(parts) == 3:
            return _long_date(lang, datetime.date(*map(int, parts)))
        if len(parts) == 2:
            return _year_month(lang, datetime.date(int(parts[0]), int(parts[1]), 1))
    except ValueError:
        pass
    return iso


def _long_date(lang: str, day: datetime.date) -> str:
    """Babel's format_date(format="long"): "9 ноября 2026 г." / "November 9, 2026"."""
    known = _cldr(lang)
    if known is None:
        from babel.dates import format_date

        return format_date(day, format="long", locale=lang)
    return str(known["date_long"]).format(day=day.day, month=known["months"][day.month - 1], year=day.year)


def _year_month(lang: str, day: datetime.date) -> str:
    """Babel's format_skeleton("yMMMM"): "июнь 2026 г." / "June 2026"."""
    known = _cldr(lang)
    if known is None:
        from babel.dates import format_skeleton

        return format_skeleton("yMMMM", day, locale=lang)
    return str(known["year_month"]).format(month=known["months_alone"][day.month - 1], year=day.year)


NBSP = "\u00a0"  # between a number and its unit, so that a line never breaks inside "83 ч"


def with_unit(value: str, unit: str) -> str:
    """"60,6" + "ГБ" → "60,6 ГБ" with a non-breaking space."""
    return f"{value}{NBSP}{unit}"


def gb(lang: str, value: float) -> str:
    """"60.6 GB" / "60,6 ГБ"."""
    return with_unit(num(lang, value), _(lang, "GB"))


def pct(lang: str, value: float) -> str:
    """"18%" / "18 %": Russian puts a (non-breaking) space before the sign, English none."""
    return with_unit(num(lang, value), "%") if lang == "ru" else f"{num(lang, value)}%"


def gpus_text(lang: str, n: int) -> str:
    """"8 GPUs" / "8 GPU" (the Russian "GPU" does not decline)."""
    return with_unit(num(lang, n), _n(lang, "GPU", "GPUs", n))


def hours_text(lang: str, hours: float) -> str:
    """"83 h" / "83 ч", "9.8 h" / "9,8 ч", "25 min" / "25 мин": the unit abbreviated, as people write it."""
    if round(hours * 60) < 60:
        return with_unit(str(max(1, round(hours * 60))), _(lang, "min"))
    shown = round(hours) if hours >= 10 else round(hours, 1)
    return with_unit(num(lang, shown), _(lang, "h"))


def context_text(lang: str, tokens: int) -> str:
    """A context length as people write it: 131072 → "128k", 8192 → "8k", 1536 → "1.5k" / "1,5k", 32000 → "32k",
    1048576 and 1000000 → "1M"; a length that is no round number of thousands as digits ("4 160")."""
    if tokens >= 2**20 and tokens % 2**19 == 0:
        return num(lang, tokens / 2**20) + "M"
    if tokens >= 10**6 and tokens % 10**5 == 0:
        return num(lang, tokens / 10**6) + "M"
    if tokens >= 1024 and tokens % 512 == 0:
        return num(lang, tokens / 1024) + "k"
    if tokens >= 1000 and tokens % 1000 == 0:
        return num(lang, tokens / 1000) + "k"
    return num(lang, tokens)


def tokens_amount(lang: str, tokens: float) -> str:
    """An amount of data as people write it: "100M" / "100 млн", "1.2B" / "1,2 млрд"."""
    if tokens >= 1e9:
        return _(lang, "%(n)sB (billion)") % {"n": num(lang, round(tokens / 1e9, 1))}
    if tokens >= 1e6:
        return _(lang, "%(n)sM (million)") % {"n": num(lang, round(tokens / 1e6, 1))}
    return num(lang, round(tokens))


def _money_places(value: float) -> int:
    return 0 if value >= 100 else (2 if round(value, 2) >= 0.1 else 3)  # 0.0999 is "0.10", never "0.100"


def _with_symbol(lang: str, digits: str, currency: str) -> str:
    symbol = "₽" if currency == "RUB" else "$"
    return f"{symbol}{digits}" if lang == "en" and symbol == "$" else f"{digits}{NBSP}{symbol}"


def money(lang: str, value: float, currency: str, whole: bool = False) -> str:
    """"$1,234" / "1 234 $" / "1 234 ₽": Babel's digits, the symbol where each language puts it; cents
    below $100 ("$0.40", not "$0.4") unless `whole` and the sum has none (a budget of "20 $", not "20,00 $")."""
    places = 0 if whole and float(value).is_integer() else _money_places(value)
    return _with_symbol(lang, decimal(lang, value, places, keep_zeros=places > 0), currency)


def _two_figures(value: float) -> tuple[float, int]:
    """`value` at two significant figures, and the decimals that shows: 57.36 → 57, 1142 → 1100, 0.4 → 0.40."""
    if value <= 0 or not math.isfinite(value):
        return 0.0, 0
    places = 1 - math.floor(math.log10(value))  # negative: round to tens, hundreds, ...
    return float(round(value, places)), max(0, places)


def _cents(places: int) -> bool:
    """Trailing zeros kept to whole cents ("0,40 $"), not beyond ("0,07 $", never "0,070 $")."""
    return 0 < places <= 2


def money_typical(lang: str, value: float, currency: str) -> str:
    """"≈$90": a typical estimate at two significant figures."""
    shown, places = _two_figures(value)
    return "≈" + _with_symbol(lang, decimal(lang, shown, places, keep_zeros=_cents(places)), currency)


def money_range(lang: str, low: float, high: float, currency: str) -> str:
    """"$57–140" / "57–140 $": an estimate's range at two significant figures (not cents), the symbol once;
    one value when the ends meet."""
    ends = []
    for value in (low, high):
        shown, places = _two_figures(value)
        ends.append(decimal(lang, shown, places, keep_zeros=_cents(places)))
    lo, hi = ends
    return _with_symbol(lang, lo if lo == hi else f"{lo}–{hi}", currency)


def nodes_text(lang: str, count: int, nodes: int) -> str:
    """"16 узлов по 8 GPU", "1 узел (4 GPU из 8)": the machines a count of GPUs takes, at the catalog's GPUs a node."""
    per = gpus_per_node()
    if nodes > 1 or count >= per:
        n = max(nodes, math.ceil(count / per))
        return _n(lang, "%(n)s node of %(per)s GPUs", "%(n)s nodes of %(per)s GPUs", n) % {"n": n, "per": count // n}
    return _(lang, "1 node (%(count)s of its %(per)s GPUs)") % {"count": count, "per": per}


def days_text(lang: str, hours: float) -> str:
    """A deadline of whole days as said ("2 недели" → "14 дней (336 ч)"); under two days, or not whole, in hours."""
    if hours < 48 or hours % 24:
        return hours_text(lang, hours)
    days = int(hours // 24)
    return _n(lang, "%(n)s day", "%(n)s days", days) % {"n": num(lang, days)} + f" ({hours_text(lang, hours)})"


def about_days(lang: str, hours: float) -> str:
    """A plan's hours set against a deadline in days: "249 ч (≈10 дней)"; under a day, the hours alone."""
    if hours < 24:
        return hours_text(lang, hours)
    days = hours / 24
    if days < 10 and abs(days - round(days)) >= 0.25:  # 59 h is 2.5 days, not "≈2" beside a deadline of 2
        half = round(days * 2) / 2
        return hours_text(lang, hours) + " (≈" + _(lang, "%(n)s days") % {"n": decimal(lang, half, 1)} + ")"
    whole = max(1, round(days))
    return hours_text(lang, hours) + " (≈" + _n(lang, "%(n)s day", "%(n)s days", whole) % {"n": num(lang, whole)} + ")"

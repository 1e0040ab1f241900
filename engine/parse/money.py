"""Money and time: the currency asked in, a budget, a deadline; and whether the question asks for money or
time at all (`asks`)."""

from __future__ import annotations

import math

from engine.parse.lexicon import COST_WORDS, COUNT_WORDS, MEMORY_WORDS, TIME_NOUNS
from engine.parse.lexicon_money import (
    CURRENCY_SYMBOLS,
    CURRENCY_WORDS,
    DEADLINE_LEADS,
    DEADLINE_NOT,
    FIT_VERBS,
    HOURS_PER,
    IN_CURRENCY,
    MONEY_ASKS,
    NAMED_SPANS,
    PER_TIME,
    TIME_ASKS,
    WEEKDAYS,
)
from engine.parse.normalize import NUM
from engine.parse.scan import Phrases, Scan
from engine.parse.settings import _grouped

SHORT_CURRENCY = frozenset({"р", "тр", "дол", "долл"})  # only right after a number
MAX_MONEY = 1e12
MAX_HOURS = 1e6
MONEY_TRIGGERS = frozenset(CURRENCY_WORDS) | {"p", "budget", "бюджет", "бюджетом", "бюджета", "бюджете"}
HALF = {"полтора": 1.5, "полторы": 1.5, "пару": 2.0, "пара": 2.0, "couple": 2.0, "half": 0.5, "двое": 2.0,
        "трое": 3.0, "четверо": 4.0, "пятеро": 5.0, "семеро": 7.0, "полсуток": 0.5}


def amount_at(s: Scan, i: int) -> tuple[float, str, int, int] | None:
    """A sum of money at token i: "50 тыс рублей", "$1.5k", "200₽", "2,5 $", "100 000 руб".
    (amount, currency, first index, last index), or None."""
    toks = s.toks
    if s.num(i):
        base, first = _grouped(s, i)
        mult, end = s.unit_after(i)
        if mult > 1e9:
            return None
        cur = s.word(end + 1)
        if cur and toks[end + 1].orig in CURRENCY_WORDS:
            cur = toks[end + 1].orig  # "150р": a Cyrillic р glued to digits was folded to a Latin p
        if cur in CURRENCY_WORDS:
            value = base * mult
            if first > 0 and s.word(first - 1) in CURRENCY_SYMBOLS:
                first -= 1
            return value, CURRENCY_WORDS[cur], first, end + 1
        return None
    w = s.word(i)
    if w in CURRENCY_SYMBOLS and s.num(i + 1) and not toks[i + 1].sp:
        mult, end = s.unit_after(i + 1)
        if mult > 1e9:
            return None
        return toks[i + 1].val * mult, CURRENCY_WORDS[w], i, end
    return None


def per_time_after(s: Scan, j: int) -> int | None:
    """"/час", "в час", "per hour", "an hour", "/h", "в месяц": the last index of a rate after a price."""
    k = j + 1
    w = s.word(k)
    unit = s.word(k + 1)
    if w == "за" and HOURS_PER.get(unit, 1.0) > 1.0:
        return None  # "500$ за сутки" is a budget and a deadline; "2$ за час" is a price
    if w in ("/", "per", "в", "за", "an", "a", "each") and unit in PER_TIME | frozenset(HOURS_PER):
        return k + 1
    if w in ("hourly", "почасово", "/h", "/hr"):
        return k
    return None


def budget(s: Scan) -> None:
    """A budget: a sum of money that is not a price per hour or month ("H100 за 2$ в час" is a price)."""
    if s.words.isdisjoint(MONEY_TRIGGERS):
        return
    for i, t in enumerate(s.toks):
        if t.used:
            continue
        got = amount_at(s, i)
        if got is None:
            continue
        value, currency, first, last = got
        rate = per_time_after(s, last)
        s.use(first, rate if rate is not None else last)
        if rate is not None:
            s.prices.append((value, currency))
            continue
        _put_budget(s, value, currency)
    for i, t in enumerate(s.toks):  # "бюджет 50000": a sum without its currency
        if t.used or t.kind == NUM or t.text not in ("budget", "бюджет", "бюджетом", "бюджета", "бюджете"):
            continue
        j = s.skip(i + 1, frozenset({"=", ":", "-", "of", "в", "до", "около", "~", "is", "примерно"}), 2)
        if s.num(j):
            k = j + 1 if s.num(j + 1) and _grouped(s, j + 1)[1] == j else j
            mult, end = s.unit_after(k)
            _put_budget(s, _grouped(s, k)[0] * mult, None)
            s.use(i, end)


def _put_budget(s: Scan, value: float, currency: str | None) -> None:
    if value < 0:
        s.errors.append("negative number")
    elif not 0 < value <= MAX_MONEY or math.isinf(value):
        s.errors.append("budget out of range")
    elif s.said.get("budget") is None:
        s.said["budget"] = {"amount": value, "currency": currency}


def currency(s: Scan) -> None:
    """"в рублях", "in euros", "сколько долларов", a budget in rubles: the currency to answer in."""
    if s.words.isdisjoint(MONEY_TRIGGERS):
        return
    for i, t in enumerate(s.toks):
        if t.used or t.kind == NUM or t.text not in CURRENCY_WORDS or t.text in SHORT_CURRENCY:
            continue
        s.set("currency", CURRENCY_WORDS[t.text])
        s.use(i, i)
        if i > 0 and s.toks[i - 1].text in IN_CURRENCY:
            s.use(i - 1, i)
    b = s.said.get("budget")
    if b is not None:
        if b["currency"] is None:
            b["currency"] = s.said.get("currency") or ("RUB" if s.language == "ru" else "USD")
            s.assumed.append("budget.currency")
        s.set("currency", b["currency"])
    if s.said.get("currency") is None and s.prices:
        s.set("currency", s.prices[0][1])


def _span_value(s: Scan, j: int) -> tuple[float, int] | None:
    """"3 дня", "48 hours", "24h", "пару часов", "полтора дня", "two days": (hours, last index)."""
    if s.num(j):
        n, k = s.toks[j].val, j + 1
    elif s.word(j) in COUNT_WORDS:
        n, k = float(COUNT_WORDS[s.word(j)]), j + 1
    elif s.word(j) in HALF:
        n, k = HALF[s.word(j)], j + 1
        if s.word(k) == "of":
            k += 1
    else:
        return None
    if s.word(k) in ("-", "gpu", "гпу") or s.word(k) in DEADLINE_NOT:
        return None
    unit = s.word(k)
    if unit not in HOURS_PER:
        return None
    if len(unit) == 1 and (not s.glued(k) or (k + 1 < s.n and s.toks[k + 1].kind == NUM and s.glued(k + 1))):
        return None  # "24h" is a span, "2 h100" is not
    if s.word(k + 1) in ("-", "/") or s.word(k + 1) in DEADLINE_NOT:
        return None  # "GPU-hours", "часов аренды"
    if s.word(k + 1) in ("в", "a", "per", "each", "every") and s.word(k + 2) in MONTH_WORDS | WEEK_WORDS:
        return None  # "200 hours a month", «40 часов в неделю»: a use per period (`rental`), no deadline
    return n * HOURS_PER[unit], k


TIME_WORDS = frozenset({"часов", "hours", "долго", "days", "дней", "суток"})
MONEY_WORDS = COST_WORDS - TIME_WORDS - {"$", "₽", "€", "usd", "eur", "рублей", "рубля", "руб", "рубли", "dollars",
                                         "dollar", "euro", "euros"}
SPANS = Phrases(NAMED_SPANS)
TIME_TRIGGERS = DEADLINE_LEADS | SPANS.firsts
MONEY = Phrases(MONEY_ASKS)
TIME = Phrases(TIME_ASKS)


BESIDE_BUDGET = frozenset({"и", "and", ",", "есть", "have", "плюс", "plus"})
WEEKDAY_PREFIX = "deadline_weekday:"  # Request.assumed: the weekday named (0 = Monday)
BARE_SPAN_LEADS = frozenset({"срок", "сроком", "срока", "дедлайн", "дедлайном", "deadline"})


def deadline(s: Scan) -> None:
    """"за сутки" = 24, "by tomorrow" ≈ 24, "in 3 days" = 72, "за 10 часов", "within 48h", "дедлайн 2 дня"; next to
    a budget, a bare span is the deadline too («есть 200 баксов и двое суток», "$300 and 2 days")."""
    leads = DEADLINE_LEADS | (BESIDE_BUDGET if s.said.get("budget") is not None else frozenset())
    if s.words.isdisjoint(TIME_TRIGGERS | leads):
        return
    toks = s.toks
    for i, t in enumerate(toks):
        if t.used or t.kind == NUM:
            continue
        span = SPANS.at(s.texts, i)
        if span is not None and not any(toks[k].used for k in range(i, i + len(span))):
            after = i + len(span)
            exact = _span_value(s, after + 1) if after < s.n and toks[after].text == "(" else None
            if exact:  # «за ночь (8 ч)»: the hours in brackets say what the named span means
                _put_hours(s, exact[0])
                s.use(i, exact[1])
                continue
            _put_hours(s, NAMED_SPANS[span])
            if span in WEEKDAYS:  # counted on the calendar by the answer (engine.answer.on_calendar), or said
                s.assumed += ["deadline_hours", f"{WEEKDAY_PREFIX}{WEEKDAYS[span]}"]
            s.use(i, i + len(span) - 1)
            continue
        if t.text not in leads:
            continue
        extra = frozenset({"в"}) if t.text in FIT_VERBS else frozenset()  # «уложиться в 4 дня»
        j = s.skip(i + 1, leads | extra | frozenset({"a", "an", "чем", "the", "-", ":", "—"}), 3)
        got = _span_value(s, j)
        if got is None and t.text in BARE_SPAN_LEADS and s.word(j) in HOURS_PER and len(s.word(j)) > 2:
            got = HOURS_PER[s.word(j)], j  # "срок сутки", "дедлайн неделя"
        if got:
            _put_hours(s, got[0])
            s.use(i, got[1])


def _put_hours(s: Scan, hours: float) -> None:
    if hours <= 0:
        s.errors.append("negative number" if hours < 0 else "deadline out of range")
    elif hours > MAX_HOURS:
        s.errors.append("deadline out of range")
    else:
        s.set("deadline_hours", hours)


def asks(s: Scan) -> list[str]:
    """Whether the question asks for money, time, or both, in the order asked: ["time", "money"]."""
    found: list[tuple[int, str]] = []
    texts = s.texts
    for i, w in enumerate(texts if not MONEY.firsts.isdisjoint(s.words) else ()):
        if w in MONEY.by_first:
            p = MONEY.at(texts, i)
            if p is not None and not (p == ("how", "much") and i + 2 < len(texts) and texts[i + 2] in MEMORY_WORDS):
                found.append((i, "money"))
                break
    # "а сколько это будет стоить?", "цена?"; «стоит ли …» asks whether it is worth it, not a price
    priced = [i for i, w in enumerate(texts) if w in MONEY_WORDS
              and not (w == "стоит" and i + 1 < len(texts) and texts[i + 1] == "ли")]
    if not found and priced:
        found.append((priced[0], "money"))
    t = TIME.first(texts, s.words)
    if t is None and not s.words.isdisjoint(TIME_WORDS):  # "сколько часов", "how many days"
        t = next(i for i, w in enumerate(texts) if w in TIME_WORDS)
    words = [i for i, w in enumerate(texts) if w not in ("?", "!", ".", ",")]
    if t is None and words and texts[words[-1]] in TIME_NOUNS and s.said.get("tokens") is not None:
        t = words[-1]  # «qlora 70b на a100 200M токенов время»: a job of a size, then "time": its hours
    if t is not None:
        found.append((t, "time"))
    if s.said.get("budget") is not None and not any(k == "money" for _, k in found):
        found.append((s.n, "money"))
    if s.said.get("deadline_hours") is not None and not any(k == "time" for _, k in found):
        found.append((s.n, "time"))
    return [k for _, k in sorted(found)]


MONTH_WORDS = frozenset({"месяц", "месяца", "месяцев", "month", "months", "monthly", "помесячная", "помесячно",
                         "помесячную", "помесячной", "помесячный", "ежемесячно", "мес"})
WEEK_WORDS = frozenset({"неделя", "неделю", "недели", "недель", "week", "weeks"})
HOUR_UNITS = frozenset(k for k, v in HOURS_PER.items() if v == 1.0)
HOURS_PER_MONTH = 730.0  # engine.pricing's month: 8 760 h / 12


RENT_FOR = frozenset({"на", "for"})  # «l40s на сутки», «на 3 дня», "for 2 days": the period rented
WEEKS_PER_MONTH = HOURS_PER_MONTH / 168.0


def rental(s: Scan) -> None:
    """A rental priced for a period: "неделя 8xh100" (168 h), "месяц a100" (a month, compared with the monthly
    offers), "100 часов в месяц" (that use per month), «40 часов в неделю» (that use per week, a month of it),
    «на сутки» / "for 3 days" (the span). Runs after the deadline, on what it left."""
    for i, t in enumerate(s.toks):
        if not t.used and t.text in RENT_FOR and s.word(i + 1) not in MONTH_WORDS:  # a month: 730 h, below
            got = _span_value(s, i + 1)
            if got is None and s.word(i + 1) in HOURS_PER and len(s.word(i + 1)) > 2:
                got = HOURS_PER[s.word(i + 1)], i + 1  # «на сутки», «на неделю»
            if got is not None and not any(x.used for x in s.toks[i:got[1] + 1]):
                s.set("rent_hours", got[0])
                s.use(i, got[1])
    if s.words.isdisjoint(MONTH_WORDS | WEEK_WORDS):
        return
    for i, t in enumerate(s.toks):
        if t.used or t.kind == NUM:
            continue
        k = s.skip(i - 1, frozenset({"в", "per", "a", "/", "each", "every"}), 1, -1)
        if t.text in WEEK_WORDS and k < i and s.word(k) in HOUR_UNITS and s.num(k - 1) \
                and 0 < s.toks[k - 1].val <= 168:  # «40 часов в неделю»: a month of that use
            s.set("rent_hours", round(s.toks[k - 1].val * WEEKS_PER_MONTH))
            s.set("rent_monthly", True)
            s.use(k - 1, i)
        elif t.text in MONTH_WORDS:
            s.set("rent_monthly", True)
            k = s.skip(i - 1, frozenset({"в", "per", "a", "/", "за"}), 1, -1)  # "100 часов в месяц"
            if s.said.get("rent_hours") is not None:
                s.use(i, i)  # «40 часов в неделю, сколько в месяц»: the use per month is already counted
            elif k < i and s.word(k) in HOUR_UNITS and s.num(k - 1) and 0 < s.toks[k - 1].val <= 744:
                s.set("rent_hours", s.toks[k - 1].val)
                s.use(k - 1, i)
            else:
                s.use(i, i)
        elif t.text in WEEK_WORDS:
            n = s.toks[i - 1].val if s.num(i - 1) and 0 < s.toks[i - 1].val <= 52 else 1.0
            s.set("rent_hours", n * 168.0)
            s.use(i - 1 if n != 1.0 or s.num(i - 1) else i, i)
    if s.said.get("rent_monthly") and s.said.get("rent_hours") is None:
        s.set("rent_hours", HOURS_PER_MONTH)


def period(s: Scan) -> None:
    """One span, two readings, settled once the model is known: with a job (a model, a training method) a rental
    span is its deadline («бюджет 10к$ и неделя»); with GPUs and no model a deadline is the period rented
    («сколько за 3 дня 8xa100»)."""
    said = s.said
    job = said.get("model") is not None or said.get("method") not in (None, "inference")
    if job and said.get("rent_hours") is not None:
        if said.get("deadline_hours") is None and not said.get("rent_monthly") and said.get("method") != "inference":
            s.set("deadline_hours", said["rent_hours"])
        if said.get("method") != "inference":  # inference «на 1 млрд токенов в месяц»: a month of serving
            said.pop("rent_hours", None)
            said.pop("rent_monthly", None)
    elif not job and s.gpus and said.get("deadline_hours") is not None and said.get("rent_hours") is None \
            and not any(WEEKDAY_PREFIX in a for a in s.assumed):
        s.set("rent_hours", said.pop("deadline_hours"))
    elif not job and s.gpus and said.get("rent_hours") is None and not s.words.isdisjoint(MONEY_WORDS):
        for k, t in enumerate(s.toks):  # «сколько стоит 100 часов h100»: hours of a GPU priced, with no preposition
            if t.text in HOUR_UNITS and not t.used and s.num(k - 1) and not s.toks[k - 1].used \
                    and 0 < s.toks[k - 1].val <= MAX_HOURS:
                s.set("rent_hours", s.toks[k - 1].val)
                s.use(k - 1, k)
                break

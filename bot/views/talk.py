"""The conversation's words: small talk, what a follow-up changed, the budget and deadline lines, /price."""

from __future__ import annotations

from typing import Any

from bot.views.catalogs import _, _n
from bot.views.formats import (
    about_days,
    context_text,
    date_text,
    days_text,
    decimal,
    gpus_text,
    hours_text,
    money,
    money_range,
    money_typical,
)
from bot.views.plan_lines import plan_view
from bot.views.words import gpu_name, method_label
from engine.catalog import find_gpu
from engine.schema import Answer, Limits, Plan, PlannedAnswer, Rental, Scenario, ServingAnswer

EXAMPLE = {"en": "70B QLoRA on H100?", "ru": "70B QLoRA на H100?"}


def smalltalk_text(lang: str, kind: str) -> str:
    """A short friendly answer to a greeting, thanks or "what can you do" (the examples come as buttons)."""
    if kind == "thanks":
        return _(lang, "You are welcome! To change one thing in an answer, reply to it: “and with 8k context?”, "
                       "“on two of them?”, “in roubles”.")
    if kind == "capabilities":
        return "\n".join([
            _(lang, "I can:"),
            "• " + _(lang, "tell whether a model fits a GPU for full fine-tuning, LoRA, QLoRA or inference, and "
                           "what to change when it does not;"),
            "• " + _(lang, "pick the cheapest (or the fastest) GPUs and count the hours and the cost for your "
                           "amount of data;"),
            "• " + _(lang, "check a budget or a deadline, compare GPUs side by side;"),
            "• " + _(lang, "change one thing in an answer when you reply to it."),
            _(lang, "Ask in a sentence, for example: %(example)s") % {
                "example": f"<code>{EXAMPLE.get(lang, EXAMPLE['en'])}</code>"},
        ])
    return _(lang, "Hi! I count how much GPU memory, time and money fine-tuning or serving a language model "
                   "takes. Ask in a sentence, for example: %(example)s") % {
        "example": f"<code>{EXAMPLE.get(lang, EXAMPLE['en'])}</code>"}


# ---- what a follow-up changed ------------------------------------------------------------------------------


def _gpus(lang: str, a: PlannedAnswer, s: Scenario) -> str:
    if a.asked is not None:
        return f"{a.asked.count}×{gpu_name(lang, a.asked.gpu)}"
    return gpus_text(lang, s.gpu_count)


def what_changed(lang: str, before: Answer, after: Answer) -> str:
    """"Changed: context 8k instead of 2k" for an answer to a follow-up; "" when nothing shown differs."""
    if not isinstance(before, PlannedAnswer) or not isinstance(after, PlannedAnswer):
        return ""
    b, a = before.scenario, after.scenario
    parts = []
    if a.arch.name != b.arch.name:
        parts.append(_(lang, "model %(new)s instead of %(old)s") % {"new": a.arch.name, "old": b.arch.name})
    if method_label(lang, a) != method_label(lang, b):
        parts.append(_(lang, "%(new)s instead of %(old)s") % {"new": method_label(lang, a),
                                                               "old": method_label(lang, b)})
    if a.seq_len != b.seq_len:
        parts.append(_(lang, "context %(new)s instead of %(old)s") % {"new": context_text(lang, a.seq_len),
                                                                       "old": context_text(lang, b.seq_len)})
    if a.batch_size != b.batch_size:
        parts.append(_(lang, "micro-batch %(new)s instead of %(old)s") % {"new": a.batch_size, "old": b.batch_size})
    if _gpus(lang, after, a) != _gpus(lang, before, b):
        parts.append(_(lang, "%(new)s instead of %(old)s") % {"new": _gpus(lang, after, a),
                                                               "old": _gpus(lang, before, b)})
    if after.currency != before.currency:
        parts.append(_(lang, "prices in roubles") if after.currency == "RUB" else _(lang, "prices in dollars"))
    asked = {"budget", "deadline_hours"}
    if after.limits is not None and (before.limits is None or after.limits.model_dump(include=asked)
                                     != before.limits.model_dump(include=asked)):
        parts.append(limits_label(lang, after.limits))
    if not parts:
        return ""
    return _(lang, "Changed: %(what)s") % {"what": "; ".join(parts)}


# ---- budget and deadline -----------------------------------------------------------------------------------


def limits_label(lang: str, lim: Limits) -> str:
    """"budget 50 000 ₽ and deadline 24 hours"."""
    parts = []
    if lim.budget_asked is not None:
        parts.append(_(lang, "a budget of %(money)s") % {
            "money": money(lang, lim.budget_asked.amount, lim.budget_asked.currency, whole=True)})
    if lim.deadline_hours is not None:
        parts.append(_(lang, "a deadline of %(hours)s") % {"hours": days_text(lang, lim.deadline_hours)})
    return (" " + _(lang, "and") + " ").join(parts)


def _plan_line(lang: str, p: Plan) -> str:
    v = plan_view(lang, p)
    shown = ", ".join(x for x in (v["time"], v["money"]) if x)
    return f"{p.count}×{v['gpu']}" + (f" ({shown})" if shown else "")


def _plan_brief(lang: str, p: Plan, deadline: float | None = None) -> str:
    """"1×H100 SXM, 21 h, ≈70 $": an arrangement, its hours (in days too against a deadline of days) and its
    typical cost."""
    parts = [f"{p.count}×{gpu_name(lang, p.gpu)}"]
    if p.hours is not None:
        in_days = deadline is not None and days_text(lang, deadline) != hours_text(lang, deadline)
        parts.append(about_days(lang, p.hours) if in_days else hours_text(lang, p.hours))
    if p.cost:
        parts.append(money_typical(lang, p.cost["typical"], p.currency))
    return ", ".join(parts)


def limits_lead(lang: str, lim: Limits | None) -> str:
    """The first line of a question with a budget or a deadline: does the cheapest plan within them exist, and
    with what; when none is, what the cheapest and the fastest give. Empty when the check cannot be made
    (the lines below say why)."""
    if lim is None or lim.unchecked is not None:
        return ""
    label = limits_label(lang, lim)
    if lim.asked is not None and lim.asked in lim.meeting:
        best = lim.asked  # the GPUs named meet them: that is the answer, not a cheaper other card
        return "✅ " + _(lang, "Within %(limits)s: %(plan)s") % {
            "limits": label, "plan": _plan_brief(lang, best, lim.deadline_hours)}
    if lim.meeting:
        best = min(lim.meeting, key=lambda p: (p.cost or {}).get("typical", 0.0))
        within = _plan_brief(lang, best, lim.deadline_hours)
        if lim.asked is not None:  # the GPUs named do not: said first, then what does
            return "❌ " + _(lang, "Not within %(limits)s: %(asked)s; it takes %(plan)s") % {
                "limits": label, "asked": _plan_brief(lang, lim.asked, lim.deadline_hours), "plan": within}
        return "✅ " + _(lang, "Within %(limits)s: %(plan)s") % {"limits": label, "plan": within}
    if lim.cheapest is None or lim.fastest is None:
        return ""
    text = "❌ " + _(lang, "Not within %(limits)s: the cheapest is %(plan)s") % {
        "limits": label, "plan": _plan_brief(lang, lim.cheapest, lim.deadline_hours)}
    if lim.fastest is not lim.cheapest and lim.deadline_hours is not None:
        text += "; " + _(lang, "the fastest %(plan)s") % {"plan": _plan_brief(lang, lim.fastest, lim.deadline_hours)}
    return text


def limits_lines(lang: str, lim: Limits, shown: list[Plan] | None = None) -> list[str]:
    """The budget / deadline check of an answer in one to three lines (`shown`: the plans listed above)."""
    label = limits_label(lang, lim)
    if lim.unchecked == "currency":
        return ["💶 " + _(lang, "A budget in euros cannot be checked: prices are in dollars and roubles only.")]
    if lim.unchecked == "no_data_size":
        return ["⏳ " + _(lang, "To check %(limits)s I need the amount of data, e.g. “on 100M tokens”.") % {
            "limits": label}]
    if lim.unchecked == "no_price":
        return ["💰 " + _(lang, "Cannot check %(limits)s: these GPUs have no prices.") % {"limits": label}]
    if lim.meeting and shown and all(p in lim.meeting for p in shown):
        return ["🎯 " + _(lang, "All of these are within %(limits)s.") % {"limits": label}]
    if lim.meeting:
        listed = "; ".join(_plan_line(lang, p) for p in lim.meeting[:3])
        return ["🎯 " + _(lang, "Within %(limits)s: %(plans)s") % {"limits": label, "plans": listed}]
    if lim.cheapest is None or lim.fastest is None:
        return ["❌ " + _(lang, "Nothing fits this, so nothing meets %(limits)s.") % {"limits": label}]
    lines = ["❌ " + _(lang, "No arrangement meets %(limits)s.") % {"limits": label}]
    if lim.budget is not None:
        lines.append(_(lang, "The cheapest: %(plan)s.") % {"plan": _plan_line(lang, lim.cheapest)})
    if lim.deadline_hours is not None:
        lines.append(_(lang, "The fastest: %(plan)s.") % {"plan": _plan_line(lang, lim.fastest)})
    return lines


# ---- /price ------------------------------------------------------------------------------------------------


def market_price_text(lang: str, r: dict[str, Any], own: str | None) -> str:
    """/price H100: the market range per GPU-hour (engine.pricing's PriceRange as a dict), where it comes from
    and its date, and the chat's own price."""
    cur = r["currency"]
    lines = [_(lang, "<b>%(gpu)s</b>: typically %(typical)s per GPU-hour (%(range)s on the market)") % {
        "gpu": r["gpu"], "range": money_range(lang, r["min"], r["max"], cur),
        "typical": money(lang, r["typical"], cur)}]
    providers = len(r.get("providers") or [])
    if r.get("proxy_of"):
        lines.append(_(lang, "No offers for it: the prices of %(other)s stand in.") % {"other": r["proxy_of"]})
    lines.append(_n(lang, "Prices as of %(date)s, %(count)s provider", "Prices as of %(date)s, %(count)s providers",
                    providers) % {"date": date_text(lang, r["date"]), "count": providers})
    if r.get("converted") and r.get("rate") is not None:
        lines.append(_(lang, "Converted from dollars at %(rate)s ₽ per $.") % {"rate": decimal(lang, r["rate"], 2)})
    if own:
        lines.append(_(lang, "This chat's own price: %(price)s.") % {"price": own})
    lines.append(_(lang, "Set your own: <code>/price %(gpu)s 2.5</code>.") % {"gpu": price_hint_name(r["gpu"])})
    return "\n".join(lines)


FORM_FACTORS = frozenset({"SXM", "PCIe", "NVL"})


def price_hint_name(gpu: str) -> str:
    """The name /price reads back for a catalog GPU: "H100 SXM" → "H100", "RTX 4090" stays whole."""
    words = gpu.split()
    return " ".join(words[:-1]) if len(words) > 1 and words[-1] in FORM_FACTORS else gpu


HOURS_PER_MONTH = 730  # 365 × 24 / 12: the hours a month has


def rental_lines(lang: str, r: Rental, gpu: str, currency: str, monthly_asked: bool) -> list[str]:
    """"неделя 8xh100": the period's cost at the typical hourly price first, the providers' range second; for a
    month, the cheapest monthly offer against hourly at the stated use."""
    lines = ["💰 " + _(lang, "%(gpus)s for %(hours)s: %(typical)s at the typical hourly price (%(range)s across "
                             "providers)") % {
        "gpus": f"{r.count}×{gpu}", "hours": hours_text(lang, r.hours),
        "typical": money_typical(lang, r.cost["typical"], currency),
        "range": money_range(lang, r.cost["min"], r.cost["max"], currency)}]
    m = r.monthly
    if m is not None:
        cheaper = _(lang, "the monthly rental") if m.cheaper == "monthly" else _(lang, "hourly")
        never = m.break_even_hours > HOURS_PER_MONTH  # dearer than a whole month by the hour: it never pays off
        why = (_(lang, "monthly never pays off: it costs more than the whole month by the hour") if never else
               _(lang, "monthly pays off from %(even)s a month") % {
                   "even": hours_text(lang, round(m.break_even_hours))})
        lines.append("📅 " + _(lang, "By the month: %(month)s per GPU a month; at %(use)s of use a month that is "
                                     "%(effective)s per hour against %(hourly)s by the hour, so %(cheaper)s is "
                                     "cheaper (%(why)s)") % {
            "month": money(lang, m.monthly_price, currency), "use": hours_text(lang, m.hours_per_month),
            "effective": money(lang, m.effective_hourly, currency), "hourly": money(lang, m.hourly_price, currency),
            "cheaper": cheaper, "why": why})
    elif monthly_asked:
        lines.append("📅 " + _(lang, "No monthly offers for %(gpu)s in the catalog: only hourly prices.") % {
            "gpu": gpu})
    return lines


def rental_lead(lang: str, a: PlannedAnswer | ServingAnswer) -> str:
    """A model question that prices a period («… на 2 h100 в месяц»): the GPUs asked for it, hourly against monthly
    where a month is asked; the fit on them follows."""
    if a.rental is None or not a.request.gpus or a.request.gpus[0].name is None:
        return ""
    found = find_gpu(a.request.gpus[0].name, a.request.gpus[0].memory_gb)
    gpu = gpu_name(lang, found.name if found else a.request.gpus[0].name)
    return "\n".join(rental_lines(lang, a.rental, gpu, a.currency, bool(a.request.rent_monthly)))

"""Answer → the view model the answer template lays out: every line worded, nothing computed.

Tables stay within 34 characters so that they read in a phone's chat bubble.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.views.catalogs import _, _n
from bot.views.formats import date_text, hours_text, money, money_range, num
from bot.views.talk import limits_lines
from bot.views.words import (
    COMPONENTS,
    assumption_text,
    change_text,
    component_label,
    gpu_name,
    method_label,
    note_text,
    technique_label,
)
from engine.schema import Answer, Breakdown, Change, Comparison, Monthly, Plan, Scenario

TABLE_WIDTH = 34


@dataclass(frozen=True)
class AnswerView:
    """What the template needs, and the two plain lines the inline result and the chart caption use."""

    model: dict[str, Any]
    headline: str  # the verdict, one plain line (inline result title, chart caption)
    summary: str  # model · method · context · batch (inline result description)


def memory_table(lang: str, b: Breakdown, need: float) -> list[str]:
    values = b.model_dump()
    rows = [(component_label(lang, key), num(lang, values[key])) for key in COMPONENTS if values[key] >= 0.05]
    rows.append((_(lang, "total, GB"), num(lang, need)))
    lines = []
    for i, (label, value) in enumerate(rows):
        if i == len(rows) - 1:
            lines.append("─" * TABLE_WIDTH)
        lines.append(f"{label[: TABLE_WIDTH - 9]:<{TABLE_WIDTH - 8}}{value:>8}")
    return lines


def plan_money(lang: str, p: Plan) -> str:
    """The whole run as a range with the picked figure, else the price per hour of all its GPUs."""
    if p.cost:
        return money_range(lang, p.cost["min"], p.cost["max"], p.currency)
    if p.per_hour is not None:
        return money(lang, p.per_hour, p.currency) + _(lang, "/h")
    return ""


def plan_time(lang: str, p: Plan) -> str:
    if p.hours is not None:
        return hours_text(lang, p.hours)
    if p.hours_per_100m_tokens is not None:
        return hours_text(lang, p.hours_per_100m_tokens) + " / 100M " + _(lang, "tokens")
    if p.tokens_per_second is not None:
        tps = round(p.tokens_per_second)
        return _n(lang, "%(tps)s token/s", "%(tps)s tokens/s", tps) % {"tps": num(lang, tps)}
    return ""


def techniques_text(lang: str, p: Plan) -> str:
    """The plan's techniques, the host memory an offload needs, and what they cost in time."""
    parts = [", ".join(technique_label(lang, t) for t in p.techniques)] if p.techniques else []
    if p.cpu_ram_gb >= 0.05:
        parts.append(_(lang, "%(gb)s GB of CPU RAM per machine") % {"gb": num(lang, p.cpu_ram_gb)})
    if p.techniques and p.slowdown >= 1.05:
        parts.append(_(lang, "%(pct)s%% slower") % {"pct": num(lang, round((p.slowdown - 1) * 100))})
    return "; ".join(parts)


def plan_view(lang: str, p: Plan) -> dict[str, Any]:
    return {"gpu": gpu_name(lang, p.gpu), "count": p.count, "money": plan_money(lang, p), "time": plan_time(lang, p),
            "techniques": techniques_text(lang, p)}


def comparison_line(lang: str, c: Comparison) -> str:
    """One GPU of a side-by-side comparison: fits?, headroom, time, cost per 1M tokens."""
    name = f"{c.count}×{gpu_name(lang, c.gpu)}"
    if not c.fits or c.plan is None:
        return "❌ " + _(lang, "%(gpu)s: needs %(need)s GB of %(total)s") % {
            "gpu": name, "need": num(lang, c.need_gb), "total": num(lang, c.memory_gb)}
    p = c.plan
    if p.techniques:
        name += f" ({techniques_text(lang, p)})"
    parts = [_(lang, "%(gb)s GB free") % {"gb": num(lang, max(p.headroom_gb, 0))}]
    if plan_time(lang, p):
        parts.append(plan_time(lang, p))
    if p.cost_per_1m_tokens is not None:
        parts.append(_(lang, "%(money)s per 1M tokens") % {"money": money(lang, p.cost_per_1m_tokens, p.currency)})
    return f"✅ {name}: " + " · ".join(parts)


def monthly_text(lang: str, m: Monthly) -> str:
    text = _(lang, "By the month: %(gpu)s for %(month)s a month pays off from %(hours)s h of use a month") % {
        "gpu": m.gpu, "month": money(lang, m.monthly_price, m.currency), "hours": num(lang, round(m.break_even_hours))}
    if m.run_hours is not None:
        text += "; " + _(lang, "this run takes %(hours)s on %(gpus)s") % {
            "hours": hours_text(lang, m.run_hours), "gpus": f"{m.count}×{m.gpu}"}
    return text + "."


def change_line(lang: str, c: Change, inference: bool = False) -> str:
    mark = " ✓" if c.fits else ""
    gb = _(lang, "GB")
    return f"{change_text(lang, c.key, c.params, inference)}: −{num(lang, c.saves_gb)} {gb}{mark}"


def model_label(lang: str, s: Scenario) -> str:
    return s.arch.name if not s.arch.known else f"{s.arch.name} ({num(lang, s.arch.params / 1e9)}B)"


def headline(lang: str, a: Answer, gpu_label: str, compared: str) -> str:
    used, total = num(lang, a.need_gb), num(lang, a.asked.memory_gb if a.asked else 0)
    match a.verdict:
        case "fits":
            return _(lang, "Fits on %(gpu)s: %(used)s GB of %(total)s GB") % {
                "gpu": gpu_label, "used": used, "total": total}
        case "tight":
            return _(lang, "Fits on %(gpu)s, but tightly: %(used)s GB of %(total)s GB") % {
                "gpu": gpu_label, "used": used, "total": total}
        case "compare":
            return compared
        case "no_fit" | "fits_with_changes":
            return _(lang, "Does not fit on %(gpu)s: needs %(used)s GB of %(total)s GB") % {
                "gpu": gpu_label, "used": used, "total": total}
    return _(lang, "Needs %(used)s GB per GPU") % {"used": used}


def summary(lang: str, s: Scenario) -> str:
    context, batch = _(lang, "context"), _(lang, "batch")
    line = f"{model_label(lang, s)} · {method_label(lang, s)} · {context} {s.seq_len} · {batch} {s.batch_size}"
    return line + (f" · {s.gpu_count} GPU" if s.gpu_count > 1 else "")


def view_model(lang: str, a: Answer) -> AnswerView:
    """The template's data for an answer that has a scenario (`a.errors` empty)."""
    s, b = a.scenario, a.breakdown
    assert s is not None and b is not None
    asked = a.asked
    gpu_label = f"{asked.count}×{gpu_name(lang, asked.gpu)}" if asked else ""
    compared = (" " + _(lang, "vs") + " ").join(f"{c.count}×{gpu_name(lang, c.gpu)}" for c in a.comparison)
    title = headline(lang, a, gpu_label, compared)
    line = summary(lang, s)
    model = {
        "error": False, "verdict": a.verdict or "estimate", "headline": title, "summary": line,
        "model_known": s.arch.known, "shape_ref": a.shape_reference or "",
        "table": memory_table(lang, b, a.need_gb), "plans": [plan_view(lang, p) for p in a.plans[:3]],
        "changes": [change_line(lang, c, s.method == "inference") for c in a.changes[:4]],
        "cpu_ram_gb": a.cpu_ram_gb,
        "assumptions": "; ".join(assumption_text(lang, x) for x in a.assumptions) or "—",
        "price_date": date_text(lang, a.price_date) if a.price_date else "",
        "rank_by": a.rank_by, "named": asked is not None,
        "asked_gpu": gpu_name(lang, asked.gpu) if asked else "",
        "comparison": [comparison_line(lang, c) for c in a.comparison],
        "alternatives": [plan_view(lang, p) for p in a.alternatives],
        "cheaper": plan_view(lang, a.cheaper) if a.cheaper else None,
        "notes": [note_text(lang, n, s) for n in a.notes],
        "monthly": monthly_text(lang, a.monthly) if a.monthly else "",
        "limits": limits_lines(lang, a.limits, a.plans[:3]) if a.limits else [],
    }
    if a.posttrain is not None:
        from bot.views import posttrain

        title, line = posttrain.apply(lang, a, model)
    return AnswerView(model, title, line)

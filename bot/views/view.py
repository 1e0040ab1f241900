"""Answer → the view model the answer template lays out: every line worded, nothing computed.

Tables stay within 34 characters so that they read in a phone's chat bubble.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.views.catalogs import N_, _, _n
from bot.views.comparison import comparison_headline, comparison_line
from bot.views.formats import (
    context_text,
    date_text,
    decimal,
    gb,
    gpus_text,
    hours_text,
    money,
    num,
)
from bot.views.plan_lines import (
    context_lead,
    count_lead,
    lead_line,
    lead_of,
    old_price_note,
    plan_money,
    plan_time,
    plan_view,
)
from bot.views.talk import limits_lead, limits_lines, rental_lead
from bot.views.words import (
    assumption_text,
    change_text,
    component_label,
    gpu_name,
    method_label,
    note_text,
    tight_suffix,
)
from engine.parts import parts
from engine.schema import SHOWN_PLANS, Breakdown, Change, Monthly, Plan, PlannedAnswer, PostTrainAnswer, Scenario

TABLE_WIDTH = 34


@dataclass(frozen=True)
class AnswerView:
    """What the template needs, and the two plain lines the inline result and the chart caption use."""

    model: dict[str, Any]
    headline: str  # the verdict, one plain line (inline result title, chart caption)
    summary: str  # model · method · context · batch
    answer_line: str = ""  # the one-line answer to what was asked (inline result description)


def memory_table(lang: str, b: Breakdown, need: float) -> list[str]:
    """The breakdown's lines (engine.parts: they add up to the total, what is freed before the peak a line of its
    own) and the total with the CUDA context."""
    rows = [(component_label(lang, key), num(lang, v)) for key, v in parts(b).items() if abs(v) >= 0.05]
    rows.append((_(lang, "total, GB"), num(lang, need)))
    lines = []
    for i, (label, value) in enumerate(rows):
        if i == len(rows) - 1:
            lines.append("─" * TABLE_WIDTH)
        lines.append(table_row(label, value))
    return lines


LABEL_WIDTH = TABLE_WIDTH - 9  # a label longer than this would push its figure out of line (tests hold every label)


def table_row(label: str, value: str) -> str:
    """One line of a memory table: the label, then the figure right-aligned in 8 columns."""
    return f"{label:<{TABLE_WIDTH - 8}}{value:>8}"


def fused_note(lang: str, a: PlannedAnswer) -> str:
    """No framework named: what a fused linear cross-entropy (Unsloth, Liger) would make of the total."""
    if a.fused_loss_gb is None:
        return ""
    return _(lang, "Counted for plain Hugging Face + TRL; with fused cross-entropy (Liger / Unsloth) it would be "
                   "%(gb)s") % {"gb": gb(lang, a.fused_loss_gb)}


def monthly_text(lang: str, m: Monthly) -> str:
    if m.hourly_always:
        return _(lang, "By the month: %(gpu)s for %(month)s a month costs more than by the hour even at full use: "
                       "hourly is cheaper at any use.") % {"gpu": m.gpu, "month": money(lang, m.monthly_price,
                                                                                          m.currency)}
    text = _(lang, "By the month: %(gpu)s for %(month)s a month pays off from %(hours)s of use a month") % {
        "gpu": m.gpu, "month": money(lang, m.monthly_price, m.currency),
        "hours": hours_text(lang, round(m.break_even_hours))}
    if m.run_hours is not None:
        text += "; " + _(lang, "this run takes %(hours)s on %(gpus)s") % {
            "hours": hours_text(lang, m.run_hours), "gpus": f"{m.count}×{m.gpu}"}
    return text + "."


def change_line(lang: str, c: Change, inference: bool = False) -> str:
    """A change with the total one GPU holds after it, ✓ where that fits; a combination names its parts."""
    mark = " ✓" if c.fits else ""
    return f"{fix_text(lang, c, inference)}: {gb(lang, c.total_gb)}{mark}"


def fix_text(lang: str, c: Change, inference: bool) -> str:
    if c.key == "combined":
        return " + ".join(change_text(lang, part.key, part.params, inference) for part in c.parts)
    return change_text(lang, c.key, c.params, inference)


def model_label(lang: str, s: Scenario) -> str:
    return s.arch.name if not s.arch.known else f"{s.arch.name} ({num(lang, s.arch.params / 1e9)}B)"


def gb_pair(lang: str, need: float, room: float) -> tuple[str, str]:
    """Need and capacity worded so that a shortfall reads as one: two decimals where one would make them equal."""
    used, avail = num(lang, need), num(lang, room)
    if used == avail and need != room:
        used, avail = decimal(lang, need, 2), decimal(lang, room, 2)
    return used, avail


VERDICT_MARKS = {"fits": "✅", "tight": "⚠️", "compare": "⚖️", "fits_with_changes": "🔧", "no_fit": "❌"}


def verdict_mark(verdict: str | None) -> str:
    """The mark before a headline (answer.html.j2 draws the same ones), shared by training and serving answers."""
    return VERDICT_MARKS.get(verdict or "", "🧮")


CONFLICTS = {
    "qlora_needs_bitsandbytes": N_("QLoRA needs bitsandbytes, which has no backend for this GPU"),
    "flash_attention_unsupported": N_("this GPU has no FlashAttention 2"),
    "bf16_unsupported": N_("this GPU has no bf16 (fp16 mixed precision instead)"),
}


def headline(lang: str, a: PlannedAnswer, gpu_label: str, compared: str) -> str:
    total = num(lang, a.asked.memory_gb if a.asked else 0)
    used, avail = gb_pair(lang, a.need_gb, a.capacity_gib)
    p = {"gpu": gpu_label, "used": used, "avail": avail, "total": total}
    room = num(lang, a.capacity_gib)
    match a.verdict:
        case "fits":
            return _(lang, "Fits on %(gpu)s: %(used)s GB, %(avail)s GB available of %(total)s") % p
        case "tight" if a.breakdown is not None and a.breakdown.pressure:
            return _(lang, "Fits on %(gpu)s, but tightly: it takes all %(avail)s GB available of %(total)s "
                           "(the allocator gives back its cache)") % {**p, "avail": room}
        case "tight":
            return _(lang, "Fits on %(gpu)s, but tightly: %(used)s GB, %(avail)s GB available of %(total)s") % p
        case "compare":
            return compared
        case "fits_with_changes" if a.fix is not None:
            inference = a.scenario is not None and a.scenario.method == "inference"
            return _(lang, "Fits on %(gpu)s after changes (%(fix)s): %(fixed)s GB; as asked %(used)s GB, with "
                           "%(avail)s GB available of %(total)s") % {
                **p, "fix": fix_text(lang, a.fix, inference), "fixed": num(lang, a.fix.total_gb)} + tight_suffix(
                lang, a.fix)
        case "no_fit" if a.conflicts:
            why = _(lang, "Does not run on %(gpu)s: %(why)s") % {
                "gpu": gpu_label, "why": _(lang, CONFLICTS.get(a.conflicts[0], a.conflicts[0]))}
            if a.fix is None:
                return why
            return why + _(lang, "; runs there as %(fix)s: %(fixed)s GB") % {
                "fix": fix_text(lang, a.fix, False), "fixed": num(lang, a.fix.total_gb)} + tight_suffix(lang, a.fix)
        case "no_fit" | "fits_with_changes":
            return _(lang, "Does not fit on %(gpu)s: needs %(used)s GB, %(avail)s GB available of %(total)s") % p
    if a.scenario is not None and a.scenario.gpu_count == 1:  # no GPU named: all of it, as on one card
        return _(lang, "Needs %(gb)s of GPU memory in all") % {"gb": gb(lang, a.need_gb)}
    return _(lang, "Needs %(used)s GB per GPU") % {"used": num(lang, a.need_gb)}


def per_card(lang: str, a: PlannedAnswer) -> str:
    """Several GPUs: what each card holds and all of them together."""
    s = a.scenario
    if s is None or s.gpu_count < 2 or a.verdict == "compare":
        return ""
    pt = a.posttrain if isinstance(a, PostTrainAnswer) else None
    if pt is not None and pt.rollout_gpus and pt.rollout_gpu_total is not None:  # vLLM in server mode: its own GPUs
        trainers = _n(lang, "on each of %(n)s training card %(gb)s", "on each of %(n)s training cards %(gb)s",
                      pt.train_gpus) % {"n": pt.train_gpus, "gb": gb(lang, a.need_gb)}
        vllm = {"n": pt.rollout_gpus, "gb": gb(lang, pt.rollout_gpu_total)}
        server = _(lang, "%(gb)s on the vLLM card") % vllm if pt.rollout_gpus == 1 else _n(
            lang, "on each of %(n)s vLLM card %(gb)s", "on each of %(n)s vLLM cards %(gb)s", pt.rollout_gpus) % vllm
        return _(lang, "%(trainers)s, %(server)s, %(all)s in total") % {
            "trainers": trainers, "server": server, "all": gb(lang, a.cluster_gb)}
    return _n(lang, "on each of %(n)s card %(gb)s, %(all)s in total",
              "on each of %(n)s cards %(gb)s, %(all)s in total", s.gpu_count) % {
        "n": s.gpu_count, "gb": gb(lang, a.need_gb), "all": gb(lang, a.cluster_gb)}


def summary(lang: str, s: Scenario) -> str:
    context, batch = _(lang, "context"), _(lang, "batch")
    line = (f"{model_label(lang, s)} · {method_label(lang, s)} · {context} {context_text(lang, s.seq_len)}"
            f" · {batch} {s.batch_size}")
    return line + (f" · {gpus_text(lang, s.gpu_count)}" if s.gpu_count > 1 else "")


def view_model(lang: str, a: PlannedAnswer) -> AnswerView:
    """The template's data for a training or post-training answer."""
    s, b = a.scenario, a.breakdown
    asked = a.asked
    gpu_label = f"{asked.count}×{gpu_name(lang, asked.gpu)}" if asked else ""
    if asked and "mixed_gpus" in a.request.unsupported:  # «4090 и 3090 вместе»: the set, counted as its weakest card
        gpu_label = _(lang, "your %(n)s cards (counted as %(gpus)s, the weakest of them)") % {
            "n": num(lang, asked.count), "gpus": gpu_label}
    compared = comparison_headline(lang, a) if a.comparison else ""
    title = headline(lang, a, gpu_label, compared)
    line = summary(lang, s)
    lead = lead_of(a)
    first = limits_lead(lang, a.limits) or context_lead(lang, a) or count_lead(lang, a) or rental_lead(lang, a) \
        or lead_line(lang, a, lead)
    model = {
        "error": False, "verdict": a.verdict or "estimate", "headline": title, "summary": line,
        "lead": first,
        "per_card": per_card(lang, a),
        "fused_note": fused_note(lang, a),
        "model_note": model_note(lang, a),
        "table": memory_table(lang, b, a.need_gb),
        "shape_note": b.shape_margin >= 0.05,  # a bare size whose smaller neighbours' shape needs more
        "reserve_note": b.overhead >= 0.05,  # the two lines a user does not know, explained once
        "plans": [plan_view(lang, p, a.tokens, lead) for p in a.plans[:SHOWN_PLANS]],
        "changes": [change_line(lang, c, s.method == "inference") for c in a.changes[:5]],
        "cpu_ram": _(lang, "CPU RAM for the CPU offload: %(gb)s") % {"gb": gb(lang, a.cpu_ram_gb)}
        if a.cpu_ram_gb else "",
        "assumptions": "; ".join(assumption_text(lang, x) for x in a.assumptions) or "—",
        "price_date": (date_text(lang, a.price_date) + old_price_note(lang, a.price_date) + "".join(
            "; " + _(lang, "for %(gpu)s as of %(date)s, no newer figure") % {"gpu": gpu, "date": date_text(lang, day)}
            for gpu, day in a.old_prices.items() if day != a.price_date)) if a.price_date else "",
        "rank_by": a.rank_by, "named": asked is not None, "conflicted": bool(a.conflicts),
        "asked_gpu": gpu_name(lang, asked.gpu) if asked else "",
        "comparison": [comparison_line(lang, c) for c in a.comparison]
        + [comparison_line(lang, c) + " (QLoRA)" for c in a.comparison_fix if c.fits],
        "alternatives": [plan_view(lang, p, a.tokens, lead) for p in a.alternatives],
        "cheaper": plan_view(lang, a.cheaper, a.tokens, lead) if a.cheaper else None,
        "notes": [note_text(lang, n, s) for n in a.notes]
        + [_(lang, CONFLICTS[k]) for k in a.conflicts[1 if a.verdict == "no_fit" else 0:] if k in CONFLICTS],
        "monthly": monthly_text(lang, a.monthly) if a.monthly else "",
        "limits": limits_lines(lang, a.limits, a.plans[:SHOWN_PLANS]) if a.limits else [],
    }
    if isinstance(a, PostTrainAnswer):
        from bot.views import posttrain

        title, line = posttrain.apply(lang, a, model)
        return AnswerView(model, title, line)
    return AnswerView(model, title, line, answer_line(lang, a, first))


def best_plan(a: PlannedAnswer) -> Plan | None:
    """The arrangement asked about when a plan has it ("how long on 8×A100" is answered for 8×A100), else the
    best plan, else the best other GPU."""
    if a.asked is not None:
        for p in a.plans:
            if (p.gpu, p.count) == (a.asked.gpu, a.asked.count):
                return p
    return a.plans[0] if a.plans else (a.alternatives[0] if a.alternatives else None)


def answer_line(lang: str, a: PlannedAnswer, lead: str) -> str:
    """The one-line answer under an inline result's verdict title: what was asked (money, hours: the lead line),
    else the best arrangement with its time and money."""
    if lead:
        return lead
    p = best_plan(a)
    if p is None:
        return ""
    details = [x for x in (plan_time(lang, p), plan_money(lang, p)) if x]
    return f"{p.count}×{gpu_name(lang, p.gpu)}" + (": " + ", ".join(details) if details else "")


def model_note(lang: str, a: PlannedAnswer) -> str:
    """Where the model's shape came from when it is not a known one: a bare size is a typical model of it."""
    s = a.scenario
    if s.arch.known:
        return ""
    size = num(lang, s.arch.params / 1e9) + "B"
    ref = a.shape_reference or ""
    model = a.request.model
    if model is not None and model.name:
        return _(lang, "%(name)s is not in the catalog: counted as a typical %(size)s (%(ref)s architecture)") % {
            "name": model.name, "size": size, "ref": ref}
    return _(lang, "No model named: a typical %(size)s (%(ref)s architecture)") % {"size": size, "ref": ref}

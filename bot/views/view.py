"""Answer → the view model the answer template lays out: every line worded, nothing computed.

Tables stay within 34 characters so that they read in a phone's chat bubble.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.views.catalogs import N_, _, _n
from bot.views.formats import (
    context_text,
    date_text,
    decimal,
    gb,
    gpus_text,
    hours_text,
    money,
    money_range,
    money_typical,
    num,
    pct,
    tokens_amount,
)
from bot.views.talk import limits_lead, limits_lines
from bot.views.words import (
    assumption_text,
    change_text,
    component_label,
    gpu_name,
    method_label,
    note_text,
    technique_label,
    tight_suffix,
)
from engine.parts import parts
from engine.schema import (
    SHOWN_PLANS,
    Breakdown,
    Change,
    Comparison,
    Monthly,
    Plan,
    PlannedAnswer,
    PostTrainAnswer,
    Scenario,
)

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
        return _(lang, "%(what)s per 100M tokens") % {"what": hours_text(lang, p.hours_per_100m_tokens)}
    if p.tokens_per_second is not None:
        tps = round(p.tokens_per_second)
        return _n(lang, "%(tps)s token/s", "%(tps)s tokens/s", tps) % {"tps": num(lang, tps)}
    return ""


def techniques_text(lang: str, p: Plan) -> str:
    """The plan's techniques joined with "+", then the host memory an offload needs, what they cost in time and the
    nodes: "ZeRO-3 + CPU offload, 117.3 GB of CPU RAM per machine, 283.5 GB over PCIe per step, 1.3× slower"."""
    details = []
    if p.cpu_ram_gb >= 0.05:
        details.append(_(lang, "%(gb)s of CPU RAM per machine") % {"gb": gb(lang, p.cpu_ram_gb)})
    if p.offload_slowdown >= 1.05:
        x = round(p.offload_slowdown, 1)
        n = int(x) if x.is_integer() else 2  # "в 2,8 раза": a fraction takes the form of 2
        details.append(_n(lang, "%(x)s× slower (the optimizer state travels to the CPU and back every step)",
                          "%(x)s× slower (the optimizer state travels to the CPU and back every step)", n) % {
            "x": num(lang, x)})
    elif p.techniques and p.slowdown >= 1.5:  # "на 415 %" reads as jargon: a big slowdown is "в 5,2 раза"
        x = round(p.slowdown, 1)
        n = int(x) if x.is_integer() else 2
        details.append(_n(lang, "%(x)s× slower", "%(x)s× slower", n) % {"x": num(lang, x)})
    elif p.techniques and p.slowdown >= 1.05:
        details.append(_(lang, "%(pct)s slower") % {"pct": pct(lang, round((p.slowdown - 1) * 100))})
    if p.nodes > 1:
        text = _n(lang, "%(n)s node", "%(n)s nodes", p.nodes) % {"n": p.nodes}
        if p.network_slowdown >= 1.05:
            text += ", " + _(lang, "the network between them +%(pct)s") % {
                "pct": pct(lang, round((p.network_slowdown - 1) * 100))}
        details.append(text)
    return ", ".join([" + ".join(technique_label(lang, t) for t in p.techniques), *details]).removeprefix(", ")


def same_amount(tokens: float | None) -> bool:
    """The user's amount of data is the reference 100M tokens: its figures are the per-100M ones, said once."""
    return tokens is not None and abs(tokens - 1e8) < 5e5


def plan_figures(lang: str, p: Plan, tokens: float | None, lead: str) -> str:
    """Per 100M tokens (hours and money), and the user's own job when it gives its data; money first when
    the question asked what it costs."""
    parts = []
    if p.hours_per_100m_tokens is not None:
        hours = hours_text(lang, p.hours_per_100m_tokens)
        spend = money_range(lang, p.cost_per_100m["min"], p.cost_per_100m["max"], p.currency) \
            if p.cost_per_100m else ""
        pair = [spend, hours] if lead == "money" else [hours, spend]
        parts.append(_(lang, "%(what)s per 100M tokens") % {"what": ", ".join(x for x in pair if x)})
    if p.hours is not None and tokens and not same_amount(tokens):
        hours = hours_text(lang, p.hours)
        spend = money_range(lang, p.cost["min"], p.cost["max"], p.currency) if p.cost else ""
        pair = [spend, hours] if lead == "money" else [hours, spend]
        parts.append(_(lang, "your %(tokens)s tokens: %(what)s") % {
            "tokens": tokens_amount(lang, tokens), "what": ", ".join(x for x in pair if x)})
    if p.timed_as and parts:
        parts[-1] += timed_note(lang, p)
    if not parts:
        return ", ".join(x for x in (plan_time(lang, p), plan_money(lang, p)) if x) or \
            _(lang, "no speed or price figures for this card in the catalog")
    if p.per_hour is not None:
        return "; ".join(parts) + f" ({money(lang, p.per_hour, p.currency)}{_(lang, '/h')})"
    return "; ".join(parts)


def plan_view(lang: str, p: Plan, tokens: float | None = None, lead: str = "") -> dict[str, Any]:
    return {"gpu": gpu_name(lang, p.gpu), "count": p.count, "money": plan_money(lang, p), "time": plan_time(lang, p),
            "techniques": techniques_text(lang, p), "figures": plan_figures(lang, p, tokens, lead)}


def lead_of(a: PlannedAnswer) -> str:
    """What the answer leads with: "money" for a cost question, "time" for a how-long one, else nothing."""
    asks = [x for x in a.request.asks if x in ("money", "time")]
    if asks:
        return asks[0]
    return "money" if a.request.intent == "cost" else ""


def lead_line(lang: str, a: PlannedAnswer, lead: str) -> str:
    """The first line of a cost or time question: the best plan's money (or hours), for the job when known."""
    if not lead or not a.plans or (a.scenario is not None and a.scenario.method == "inference"):
        return ""
    p = a.plans[0]
    params = {"gpus": f"{p.count}×{gpu_name(lang, p.gpu)}", "tokens": tokens_amount(lang, a.tokens or 0)}
    if a.tokens and p.hours is not None:
        spend = typical_then_range(lang, p.cost, p.currency)
        hours = hours_text(lang, p.hours)
        yours = True
    elif p.hours_per_100m_tokens is not None:
        spend = typical_then_range(lang, p.cost_per_100m, p.currency)
        hours = hours_text(lang, p.hours_per_100m_tokens)
        yours = False
    elif lead == "time":
        return "⏱ " + _(lang, "Hours on %(gpu)s cannot be counted: the catalog has no speed figures for it") % {
            "gpu": gpu_name(lang, p.gpu)}
    else:
        return ""
    if lead == "money" and spend:
        text = _(lang, "%(money)s for your %(tokens)s tokens on %(gpus)s (%(hours)s)") if yours else \
            _(lang, "%(money)s per 100M tokens on %(gpus)s (%(hours)s)")
        return "💰 " + text % {**params, "money": spend, "hours": hours}
    text = _(lang, "%(hours)s on %(gpus)s for your %(tokens)s tokens%(money)s") if yours else \
        _(lang, "%(hours)s on %(gpus)s per 100M tokens%(money)s")
    return "⏱ " + text % {**params, "hours": hours, "money": f", {spend}" if spend else ""} + timed_note(lang, p)


def timed_note(lang: str, p: Plan) -> str:
    """A GPU given only by its memory: whose hours these are, said as the assumption it is."""
    if not p.timed_as:
        return ""
    return " " + _(lang, "(hours as on %(gpu)s, the most rented card with %(gb)s)") % {
        "gpu": gpu_name(lang, p.timed_as), "gb": gb(lang, p.memory_gb)}


OLD_PRICES = "2024"  # engine.answer.PRICE_WINDOW_START: a newest figure older than this is said as old


def old_price_note(lang: str, day: str) -> str:
    """T4 and A10G rest on one AWS spot price of 2021-12: the date alone does not warn."""
    return " — " + _(lang, "old figures, nothing newer in the catalog") if day < OLD_PRICES else ""


def count_lead(lang: str, a: PlannedAnswer) -> str:
    """"сколько нод h100", "скока надо гпу": the fewest of the GPU asked (else the cheapest plan) that holds the job,
    as the engine's own plans count them, with the nodes they span and the techniques they need."""
    if "count" not in a.request.asks or not a.plans:
        return ""
    named = a.asked.gpu if a.asked is not None else None
    pool = [p for p in a.plans if p.gpu == named] if named else a.plans[:1]
    if not pool:
        return "🔢 " + _(lang, "No count of %(gpu)s holds it up to %(n)s GPUs") % {
            "gpu": gpu_name(lang, named or ""), "n": 256}
    online = [x for x in pool if "cpu_offload" not in x.techniques] or pool  # offload is the last resort
    p = min(online, key=lambda x: x.count)
    gpus = f"{p.count}×{gpu_name(lang, p.gpu)}"
    if p.nodes > 1:
        gpus += " (" + _n(lang, "%(n)s node of %(per)s", "%(n)s nodes of %(per)s", p.nodes) % {
            "n": p.nodes, "per": p.count // p.nodes} + ")"
    if p.techniques:
        gpus += " + " + " + ".join(technique_label(lang, t) for t in p.techniques)
    return "🔢 " + _(lang, "It takes %(gpus)s") % {"gpus": gpus}


def typical_then_range(lang: str, cost: dict[str, float] | None, currency: str) -> str:
    """"≈90 $ (71–110 $ across providers)": the typical price leads, the providers' spread sets the range."""
    if not cost:
        return ""
    spread = money_range(lang, cost["min"], cost["max"], currency)
    typical = money_typical(lang, cost["typical"], currency)
    if spread.replace("≈", "") == typical.replace("≈", ""):
        return typical
    return _(lang, "%(typical)s (%(range)s across providers)") % {"typical": typical, "range": spread}


def comparison_line(lang: str, c: Comparison) -> str:
    """One GPU of a side-by-side comparison: fits?, headroom, time, cost per 1M tokens."""
    name = f"{c.count}×{gpu_name(lang, c.gpu)}"
    if not c.fits or c.plan is None:
        return "❌ " + _(lang, "%(gpu)s: needs %(need)s of %(total)s") % {
            "gpu": name, "need": gb(lang, c.need_gb), "total": gb(lang, c.memory_gb)}
    p = c.plan
    if p.techniques:
        name += f" + {techniques_text(lang, p)}"
    parts = [_(lang, "%(gb)s free") % {"gb": gb(lang, max(p.headroom_gb, 0))}]
    if plan_time(lang, p):
        parts.append(plan_time(lang, p))
    if p.cost_per_1m_tokens is not None:
        parts.append(_(lang, "%(money)s per 1M tokens") % {"money": money(lang, p.cost_per_1m_tokens, p.currency)})
    return f"✅ {name}: " + " · ".join(parts)


FEW_PROVIDERS = 3  # a price from fewer market offers is said as such and does not rank a comparison


def _speed_of(c: Comparison) -> float | None:
    return (c.plan.hours or c.plan.hours_per_100m_tokens) if c.plan is not None else None  # the job's, else 100M


def comparison_headline(lang: str, a: PlannedAnswer) -> str:
    """Two or more GPUs named: which one to take and why (faster; cheaper only on prices from enough
    providers); when none holds the job as asked, the way forward (QLoRA) and the winner with it."""
    names = {(c.gpu, c.count): f"{c.count}×{gpu_name(lang, c.gpu)}" for c in a.comparison}
    listed = (" " + _(lang, "vs") + " ").join(names.values())
    pool, fix = [c for c in a.comparison if c.fits], ""
    if not pool and a.comparison_fix:
        pool = [c for c in a.comparison_fix if c.fits]
        fix = "qlora" if pool else ""
    if not pool:
        need = max(c.need_gb for c in a.comparison)
        return _(lang, "%(gpus)s: neither holds it as asked (needs %(need)s per GPU)") % {
            "gpus": listed, "need": gb(lang, need)}
    timed = [c for c in pool if _speed_of(c)]
    winner = min(timed, key=lambda c: _speed_of(c) or 0.0) if timed else pool[0]
    name = names[(winner.gpu, winner.count)]
    if len(pool) == 1:
        text = (_(lang, "As asked neither holds it; with QLoRA only %(gpu)s does") if fix else
                _(lang, "Only %(gpu)s holds it")) % {"gpu": name}
    else:
        both = len(pool) == 2
        if len(pool) < len(a.comparison):  # some of the named hold it
            some = ", ".join(names[(c.gpu, c.count)] for c in pool)
            text = (_(lang, "As asked none holds it; with QLoRA %(some)s do, take %(gpu)s") if fix else
                    _(lang, "%(some)s hold it; take %(gpu)s")) % {"some": some, "gpu": "%(gpu)s"}
        elif fix:
            text = _(lang, "As asked neither holds it; with QLoRA both do, take %(gpu)s") if both else \
                _(lang, "As asked none holds it; with QLoRA all do, take %(gpu)s")
        else:
            text = _(lang, "Both hold it; take %(gpu)s") if both else _(lang, "All hold it; take %(gpu)s")
        text %= {"gpu": name}
        slowest = max(timed, key=lambda c: _speed_of(c) or 0.0) if timed else None
        fast, slow = _speed_of(winner), _speed_of(slowest) if slowest else None
        if fast and slow and slow / fast >= 1.1:
            x = round(slow / fast, 1)
            n = int(x) if x.is_integer() else 2  # "в 2,4 раза", "в 5 раз"
            text += ": " + _n(lang, "%(ratio)s× faster (%(fast)s against %(slow)s)",
                              "%(ratio)s× faster (%(fast)s against %(slow)s)", n) % {
                "ratio": num(lang, x), "fast": hours_text(lang, fast), "slow": hours_text(lang, slow)}
    few = [names[(c.gpu, c.count)] for c in a.comparison if 0 < c.providers < FEW_PROVIDERS]
    if few:
        text += "; " + _(lang, "the price of %(gpus)s rests on too few providers to compare") % {
            "gpus": ", ".join(few)}
    return text


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
            return _(lang, "Does not run on %(gpu)s: %(why)s") % {
                "gpu": gpu_label, "why": _(lang, CONFLICTS.get(a.conflicts[0], a.conflicts[0]))}
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
    compared = comparison_headline(lang, a) if a.comparison else ""
    title = headline(lang, a, gpu_label, compared)
    line = summary(lang, s)
    lead = lead_of(a)
    first = limits_lead(lang, a.limits) or count_lead(lang, a) or lead_line(lang, a, lead)
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
        "rank_by": a.rank_by, "named": asked is not None,
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

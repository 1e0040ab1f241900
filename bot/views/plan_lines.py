"""A plan's lines as the answer shows them: its money and hours, the techniques it needs, the line a cost, time or
count question leads with."""

from __future__ import annotations

from typing import Any

from bot.views.catalogs import _, _n
from bot.views.formats import (
    about_days,
    context_text,
    gb,
    hours_text,
    money,
    money_range,
    money_typical,
    nodes_text,
    num,
    pct,
    tokens_amount,
)
from bot.views.words import gpu_name, technique_label
from engine.schema import Plan, PlannedAnswer, PostTrainAnswer


def plan_money(lang: str, p: Plan) -> str:
    """The whole run at the typical price with the providers' range after it, else the price per hour of all its
    GPUs."""
    if p.cost:
        return typical_then_range(lang, p.cost, p.currency, said=False)
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
        spend = typical_then_range(lang, p.cost_per_100m, p.currency, said=False)
        pair = [spend, hours] if lead == "money" else [hours, spend]
        parts.append(_(lang, "%(what)s per 100M tokens") % {"what": ", ".join(x for x in pair if x)})
    if p.hours is not None and tokens and not same_amount(tokens):
        hours = hours_text(lang, p.hours)
        spend = typical_then_range(lang, p.cost, p.currency, said=False)
        pair = [spend, hours] if lead == "money" else [hours, spend]
        parts.append(_(lang, "your %(tokens)s tokens: %(what)s") % {
            "tokens": tokens_amount(lang, tokens), "what": ", ".join(x for x in pair if x)})
    if p.timed_as and parts:
        parts[-1] += timed_note(lang, p)
    if not parts:
        text = ", ".join(x for x in (plan_time(lang, p), plan_money(lang, p)) if x)
        if not text:
            return _(lang, "no speed or price figures for this card in the catalog")
        return text + no_price_note(lang, p)
    if p.per_hour is not None:
        return "; ".join(parts) + f" ({money(lang, p.per_hour, p.currency)}{_(lang, '/h')})"
    return "; ".join(parts) + no_price_note(lang, p)


def unpriced(p: Plan) -> bool:
    """A catalog card with hours or a decode speed but no rental price (an RTX 3060, a Mac): the money is not
    counted, and the answer says why rather than leaving it out unsaid. A bare memory size timed as another card is
    not a card to price."""
    return p.per_hour is None and not p.timed_as and (
        p.hours_per_100m_tokens is not None or p.tokens_per_second is not None)


def no_price_note(lang: str, p: Plan) -> str:
    return "; " + _(lang, "no rental price in the catalog") if unpriced(p) else ""


def plan_view(lang: str, p: Plan, tokens: float | None = None, lead: str = "") -> dict[str, Any]:
    return {"gpu": gpu_name(lang, p.gpu), "count": p.count, "money": plan_money(lang, p), "time": plan_time(lang, p),
            "techniques": techniques_text(lang, p), "figures": plan_figures(lang, p, tokens, lead)}


def lead_of(a: PlannedAnswer) -> str:
    """What the answer leads with: "money" for a cost question, "time" for a how-long one, else nothing."""
    asks = [x for x in a.request.asks if x in ("money", "time")]
    if asks:
        return asks[0]
    return "money" if a.request.intent == "cost" else ""


def rented_inference_lead(lang: str, a: PlannedAnswer) -> str:
    """«во сколько обойдётся инфер 70б на месяц»: the cheapest arrangement that holds the model, for the period's
    hours at its hourly price (the typical figure of the market range)."""
    hours = a.request.rent_hours
    p = next((x for x in a.plans if x.per_hour is not None), None)
    if hours is None or p is None or p.per_hour is None:
        return ""
    period = _(lang, "a month (%(h)s)") % {"h": hours_text(lang, hours)} if a.request.rent_monthly else \
        hours_text(lang, hours)
    return "💰 " + _(lang, "≈%(money)s for %(period)s of %(gpus)s at %(hourly)s/h, the cheapest arrangement that "
                          "holds the model") % {
        "money": money(lang, round(p.per_hour * hours), p.currency, whole=True), "period": period,
        "gpus": f"{p.count}×{gpu_name(lang, p.gpu)}", "hourly": money(lang, p.per_hour, p.currency)}


def lead_line(lang: str, a: PlannedAnswer, lead: str) -> str:
    """The first line of a cost or time question: the best plan's money (or hours), for the job when known."""
    if lead == "money" and a.plans and a.scenario is not None and a.scenario.method == "inference":
        return rented_inference_lead(lang, a)
    if not lead or not a.plans or (a.scenario is not None and a.scenario.method == "inference"):
        return ""
    p = a.plans[0]
    params = {"gpus": f"{p.count}×{gpu_name(lang, p.gpu)}", "tokens": tokens_amount(lang, a.tokens or 0)}
    if a.tokens and p.hours is not None:
        spend = typical_then_range(lang, p.cost, p.currency)
        hours = about_days(lang, p.hours) if p.hours >= LONG_RUN_HOURS else hours_text(lang, p.hours)
        if p.count > 1:  # a cluster's run is budgeted in GPU-hours too
            gpu_hours = round(p.hours * p.count)
            hours += ", " + _n(lang, "%(n)s GPU-hour", "%(n)s GPU-hours", gpu_hours) % {"n": num(lang, gpu_hours)}
        yours = True
    elif p.hours_per_100m_tokens is not None:
        spend = typical_then_range(lang, p.cost_per_100m, p.currency)
        hours = hours_text(lang, p.hours_per_100m_tokens)
        yours = False
    elif p.hours is not None and isinstance(a, PostTrainAnswer) and a.posttrain.time is not None \
            and a.posttrain.time.prompts:  # no data said: the RL run timed for the prompts assumed
        return rl_lead(lang, a, p, lead, a.posttrain.time.prompts)
    elif lead == "time":
        return "⏱ " + _(lang, "Hours on %(gpu)s cannot be counted: the catalog has no speed figures for it") % {
            "gpu": gpu_name(lang, p.gpu)}
    else:
        return ""
    examples = a.request.examples if yours and not a.request.tokens else None  # each at the context (assumed)
    if examples:
        n = round(examples)
        params["data"] = (_n(lang, "%(n)s prompt", "%(n)s prompts", n) if a.request.stage in ("grpo", "ppo") else
                          _n(lang, "%(n)s example", "%(n)s examples", n)) % {"n": num(lang, n)}
    priceless = ""
    if lead == "money" and not spend and unpriced(p):  # a cost question on a card nobody rents: hours, and why
        priceless = "; " + _(lang, "the catalog has no rental price for %(gpu)s, so the money is not counted") % {
            "gpu": gpu_name(lang, p.gpu)}
    # the tokens the parser took from «chinchilla» (20 a parameter), not the user's own
    chinchilla = yours and "chinchilla" in a.request.assumed
    if lead == "money" and spend:
        text = _(lang, "%(money)s for your %(tokens)s tokens on %(gpus)s (%(hours)s)") if yours else \
            _(lang, "%(money)s per 100M tokens on %(gpus)s (%(hours)s)")
        if chinchilla:
            text = _(lang, "%(money)s for %(tokens)s tokens (Chinchilla-optimal) on %(gpus)s (%(hours)s)")
        if examples:
            text = _(lang, "%(money)s for %(data)s (up to %(tokens)s tokens) on %(gpus)s (%(hours)s)")
        return "💰 " + text % {**params, "money": spend, "hours": hours} + not_the_asked(lang, a, p)
    text = _(lang, "%(hours)s on %(gpus)s for your %(tokens)s tokens%(money)s") if yours else \
        _(lang, "%(hours)s on %(gpus)s per 100M tokens%(money)s")
    if chinchilla:
        text = _(lang, "%(hours)s on %(gpus)s for %(tokens)s tokens (Chinchilla-optimal)%(money)s")
    if examples:
        text = _(lang, "%(hours)s on %(gpus)s for %(data)s (up to %(tokens)s tokens)%(money)s")
    return "⏱ " + text % {**params, "hours": hours, "money": f", {spend}" if spend else ""} + timed_note(lang, p) \
        + priceless + not_the_asked(lang, a, p)


LONG_RUN_HOURS = 48  # a run this long is said in days too: «270 ч (≈11 дней)»


def rl_lead(lang: str, a: PlannedAnswer, p: Plan, lead: str, prompts: int) -> str:
    """The first line of a post-training cost or time question with no data said: the hours and money of the prompts
    the estimate assumed (named as the assumption it is in the list below)."""
    assert p.hours is not None  # the caller leads with hours only when they were counted
    params = {"gpus": f"{p.count}×{gpu_name(lang, p.gpu)}", "hours": hours_text(lang, p.hours),
              "prompts": num(lang, prompts)}
    spend = typical_then_range(lang, p.cost, p.currency)
    if lead == "money" and spend:
        return "💰 " + _n(lang, "%(money)s for %(prompts)s prompt on %(gpus)s (%(hours)s; say your amount of data)",
                         "%(money)s for %(prompts)s prompts on %(gpus)s (%(hours)s; say your amount of data)",
                         prompts) % {**params, "money": spend}
    text = _n(lang, "%(hours)s on %(gpus)s for %(prompts)s prompt%(money)s (say your amount of data)",
              "%(hours)s on %(gpus)s for %(prompts)s prompts%(money)s (say your amount of data)", prompts)
    return "⏱ " + text % {**params, "money": f", {spend}" if spend else ""} + not_the_asked(lang, a, p)


def not_the_asked(lang: str, a: PlannedAnswer, p: Plan) -> str:
    """The hours are another arrangement's than the one asked (2×RTX 3090 holds it only with CPU offload, which the
    plans do not time): said, so that they are not read as the asked cards' hours."""
    x = a.asked
    if x is None or (x.gpu, x.count) == (p.gpu, p.count) or a.verdict in ("fits", "tight", "compare", None):
        return ""
    asked = f"{x.count}×{gpu_name(lang, x.gpu)}"
    if a.verdict == "fits_with_changes" and a.fix_plan is not None and a.fix_plan.hours is not None:
        # the change of method on the GPUs asked, timed by its own plan (engine.answer.fix_plan)
        spend = typical_then_range(lang, a.fix_plan.cost, a.fix_plan.currency)
        return "; " + _(lang, "on %(asked)s after the change below: %(hours)s%(money)s") % {
            "asked": asked, "hours": hours_text(lang, a.fix_plan.hours), "money": f", {spend}" if spend else ""}
    if a.verdict == "fits_with_changes":
        return "; " + _(lang, "%(asked)s holds it only after the change below, whose hours are not counted") % {
            "asked": asked}
    return "; " + _(lang, "it does not fit on %(asked)s") % {"asked": asked}


def timed_note(lang: str, p: Plan) -> str:
    """A GPU given only by its memory: whose hours these are, said as the assumption it is."""
    if not p.timed_as:
        return ""
    return " " + _(lang, "(hours as on %(gpu)s, the most common card with %(gb)s)") % {
        "gpu": gpu_name(lang, p.timed_as), "gb": gb(lang, p.memory_gb)}


OLD_PRICES = "2024"  # engine.answer.PRICE_WINDOW_START: a newest figure older than this is said as old


def old_price_note(lang: str, day: str) -> str:
    """T4 and A10G rest on one AWS spot price of 2021-12: the date alone does not warn."""
    return " — " + _(lang, "old figures, nothing newer in the catalog") if day < OLD_PRICES else ""


def count_lead(lang: str, a: PlannedAnswer) -> str:
    """"сколько нод h100", "скока надо гпу": the fewest of the GPU asked (else the cheapest plan) that holds the job,
    as the engine's own plans count them, with the nodes they span and the techniques they need."""
    full_elsewhere = a.request.method == "full" and a.verdict == "no_fit" and a.asked is not None \
        and not {"money", "time"} & set(a.request.asks)  # «цена pretrain 7b на h100»: the price leads
    if ("count" not in a.request.asks and not full_elsewhere) or not a.plans:
        return ""  # full fine-tuning that does not fit as asked: the count that holds it leads, LoRA comes after
    named = a.asked.gpu if a.asked is not None else None
    pool = [p for p in a.plans if p.gpu == named] if named else a.plans[:1]
    if not pool:
        return "🔢 " + _(lang, "No count of %(gpu)s holds it up to %(n)s GPUs") % {
            "gpu": gpu_name(lang, named or ""), "n": 256}
    if not named:  # the cheapest plan that keeps the job on GPUs: 2×RTX 3090 with 1.4 TB of CPU RAM is no count
        pool = [x for x in a.plans if "cpu_offload" not in x.techniques][:1] or pool
    online = [x for x in pool if "cpu_offload" not in x.techniques] or pool  # offload is the last resort
    p = min(online, key=lambda x: x.count)
    gpus = f"{p.count}×{gpu_name(lang, p.gpu)}"
    if "nodes" in a.request.asks:  # «сколько нод»: the machines lead, the GPUs they hold beside them
        gpus = nodes_text(lang, p.count, p.nodes) + ": " + gpus
    elif p.nodes > 1:
        gpus += " (" + _n(lang, "%(n)s node of %(per)s", "%(n)s nodes of %(per)s", p.nodes) % {
            "n": p.nodes, "per": p.count // p.nodes} + ")"
    if p.techniques:
        gpus += " + " + " + ".join(technique_label(lang, t) for t in p.techniques)
    if "time" in a.request.asks and p.hours:  # "how many H100 and how long": both in the first line
        gpus += ", " + hours_text(lang, p.hours)
    return "🔢 " + _(lang, "It takes %(gpus)s") % {"gpus": gpus}


def typical_then_range(lang: str, cost: dict[str, float] | None, currency: str, said: bool = True) -> str:
    """"≈90 $ (71–110 $ across providers)": the typical price leads, the providers' spread sets the range; a list
    line (`said` False) keeps only "≈90 $ (71–110 $)", the lead line above it having said what the range is."""
    if not cost:
        return ""
    spread = money_range(lang, cost["min"], cost["max"], currency)
    typical = money_typical(lang, cost["typical"], currency)
    if spread.replace("≈", "") == typical.replace("≈", ""):
        return typical
    if not said:
        return f"{typical} ({spread})"
    return _(lang, "%(typical)s (%(range)s across providers)") % {"typical": typical, "range": spread}


def context_lead(lang: str, a: PlannedAnswer) -> str:
    """«какой максимальный контекст влезет для лоры 8b на 4090»: the longest context the GPUs asked hold, said to
    the 512 below it, and how far a fused cross-entropy takes it when no stack was named."""
    fit, asked = a.context_fit, a.asked
    if fit is None or asked is None:
        return ""
    gpus = f"{asked.count}×{gpu_name(lang, asked.gpu)}"
    if fit.tokens < 512:
        return "📏 " + _(lang, "Not even a 512-token context fits on %(gpus)s as asked") % {"gpus": gpus}
    limit = a.scenario.arch.max_position_embeddings

    def shown(tokens: int) -> str:  # the model's own limit as it is, any other length to the 512 below it
        return context_text(lang, tokens if tokens == limit else tokens // 512 * 512)

    text = _(lang, "The longest context that fits on %(gpus)s: %(ctx)s, the model's own limit") if \
        fit.tokens == limit else _(lang, "The longest context that fits on %(gpus)s: about %(ctx)s")
    line = "📏 " + text % {"gpus": gpus, "ctx": shown(fit.tokens)}
    if fit.fused_tokens:
        line += "; " + _(lang, "with a fused cross-entropy (Liger / Unsloth) about %(ctx)s") % {
            "ctx": shown(fit.fused_tokens)}
    return line

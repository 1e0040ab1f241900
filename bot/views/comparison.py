"""A side-by-side comparison of the GPUs a question names, as the answer shows it: one line per GPU and the
headline that says which to take and why."""

from __future__ import annotations

from bot.views.catalogs import _, _n
from bot.views.formats import gb, hours_text, money, money_typical, num
from bot.views.plan_lines import plan_time, techniques_text, unpriced
from bot.views.words import gpu_name
from engine.schema import Comparison, Plan, PlannedAnswer


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
    elif unpriced(p):
        parts.append(_(lang, "no rental price in the catalog"))
    return f"✅ {name}: " + " · ".join(parts)


def _speed_of(c: Comparison) -> float | None:
    """Time the GPU takes, lower is faster: the job's hours (else per 100M tokens); for inference, seconds a token
    (the inverse of its decode tokens/s)."""
    if c.plan is None:
        return None
    if c.plan.tokens_per_second:
        return 1.0 / c.plan.tokens_per_second
    return c.plan.hours or c.plan.hours_per_100m_tokens  # the job's, else 100M


def _priced(c: Comparison) -> tuple[float, str] | None:
    """What this GPU costs for the job and on what basis (the run, 100M tokens, an hour), on enough providers."""
    p = c.plan
    if p is None or c.thin_price:
        return None
    if p.cost:
        return float(p.cost["typical"]), "run"
    if p.cost_per_100m:
        return float(p.cost_per_100m["typical"]), "100m"
    return (float(p.per_hour), "hour") if p.per_hour else None


def _cost_clause(lang: str, winner: Comparison, others: list[Comparison], alone: bool) -> str:
    """«и дешевле: ≈160 $ против 210 $», «но дороже: …»: the price beside the speed, when both are priced well."""
    mine, theirs = _priced(winner), _priced(others[0]) if len(others) == 1 else None
    if mine is None or theirs is None or mine[1] != theirs[1] or winner.plan is None:
        return ""
    currency = winner.plan.currency
    unit = {"run": "", "100m": " " + _(lang, "per 100M tokens"), "hour": _(lang, "/h")}[mine[1]]
    figures = {"mine": money_typical(lang, mine[0], currency),
               "theirs": money_typical(lang, theirs[0], currency) + unit}
    if abs(mine[0] - theirs[0]) <= 0.1 * max(mine[0], theirs[0]):  # within the providers' noise: no winner by price
        return "; " + _(lang, "about the same money (%(mine)s against %(theirs)s)") % figures
    if mine[0] < theirs[0] and alone:
        return ": " + _(lang, "cheaper (%(mine)s against %(theirs)s)") % figures
    if mine[0] < theirs[0]:
        return "; " + _(lang, "and cheaper (%(mine)s against %(theirs)s)") % figures
    return "; " + _(lang, "but dearer (%(mine)s against %(theirs)s)") % figures


def _ratio_text(lang: str, fast: float, slow: float, per_token: bool = False) -> str:
    """"2× faster (6.2 h against 12 h)"; `per_token`: the figures are seconds a token, said as tokens/s."""
    x = round(slow / fast, 1)
    n = int(x) if x.is_integer() else 2  # "в 2,4 раза", "в 5 раз"

    def said(v: float) -> str:
        return _(lang, "%(n)s tokens/s") % {"n": num(lang, round(1.0 / v))} if per_token else hours_text(lang, v)

    return _n(lang, "%(ratio)s× faster (%(fast)s against %(slow)s)",
              "%(ratio)s× faster (%(fast)s against %(slow)s)", n) % {
        "ratio": num(lang, x), "fast": said(fast), "slow": said(slow)}


def _faster_of(lang: str, plans: list[Plan]) -> str:
    """None of the named holds it as asked, more of each do: the faster of those arrangements, as the pick."""
    timed = [p for p in plans if p.hours or p.hours_per_100m_tokens]
    if len(timed) < 2:
        return ""
    speed = {id(p): float(p.hours or p.hours_per_100m_tokens or 0.0) for p in timed}
    fast, slow = min(timed, key=lambda p: speed[id(p)]), max(timed, key=lambda p: speed[id(p)])
    if speed[id(slow)] / speed[id(fast)] < 1.1:
        return ""
    return "; " + _(lang, "take %(gpu)s") % {"gpu": f"{fast.count}×{gpu_name(lang, fast.gpu)}"} + ": " + \
        _ratio_text(lang, speed[id(fast)], speed[id(slow)])


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
        text = _(lang, "%(gpus)s: neither holds it as asked (needs %(need)s per GPU)") % {
            "gpus": listed, "need": gb(lang, need)}
        more: dict[str, str] = {}  # of each named GPU, the fewest the plans hold it on, cheapest plan first
        taken: list[Plan] = []
        for p in a.plans:
            if any(c.gpu == p.gpu for c in a.comparison) and p.gpu not in more:
                more[p.gpu] = f"{p.count}×{gpu_name(lang, p.gpu)}"
                taken.append(p)
        if more:
            text += "; " + _(lang, "it fits on %(more)s") % {"more": (" " + _(lang, "or") + " ").join(more.values())}
        return text + _faster_of(lang, taken)
    timed = [c for c in pool if _speed_of(c)]
    winner = min(timed, key=lambda c: _speed_of(c) or 0.0) if timed else pool[0]
    slowest_time = max((_speed_of(c) or 0.0 for c in timed), default=0.0)
    priced = [c for c in pool if _priced(c) is not None]
    if timed and slowest_time / (_speed_of(winner) or 1.0) < 1.1 and len(priced) == len(pool):
        # about as fast as each other: the cheaper is the pick («берите 1×RTX 3090: дешевле»)
        winner = min(priced, key=lambda c: (_priced(c) or (0.0, ""))[0])
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
            text += ": " + _ratio_text(lang, fast, slow, per_token=bool(winner.plan and winner.plan.tokens_per_second))
        # no speed said: the price is the reason («берите 1×RTX 3090: дешевле …»)
        text += _cost_clause(lang, winner, [c for c in pool if c is not winner],
                             alone=not (fast and slow and slow / fast >= 1.1))
        unknown = [names[(c.gpu, c.count)] for c in pool if not _speed_of(c)]
        if unknown:  # a card the catalog has no speed for: the reason it is not the pick, said
            text += "; " + _n(lang, "%(gpus)s has no speed or price data with us to compare",
                              "%(gpus)s have no speed or price data with us to compare", len(unknown)) % {
                "gpus": ", ".join(unknown)}
    few = [names[(c.gpu, c.count)] for c in a.comparison if c.thin_price]
    if few:
        text += "; " + _(lang, "the price of %(gpus)s rests on too few providers to compare") % {
            "gpus": ", ".join(few)}
    return text

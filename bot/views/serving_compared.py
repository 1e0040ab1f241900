"""Several GPUs named for one serving job: the winner's headline and one line per GPU (the side-by-side the
serving answer carries in ServingResult.compared)."""

from __future__ import annotations

from bot.views.catalogs import _, _n
from bot.views.formats import context_text, money, num
from bot.views.serving_words import ENGINE_NAMES, per_million_text
from bot.views.words import gpu_name
from engine.schema import ServingResult, ServingSide


def users_text(lang: str, n: int) -> str:
    return _n(lang, "%(n)s user", "%(n)s users", n) % {"n": num(lang, n)}


def _side_gpus(lang: str, x: ServingSide) -> str:
    """The side's arrangement; an engine's side («vllm или sglang») is named by its engine."""
    gpus = f"{x.holds_count or x.count}×{gpu_name(lang, x.gpu)}"
    return f"{_side_name(lang, x)} ({gpus})" if x.engine or x.tensor_parallel else gpus


def _side_name(lang: str, x: ServingSide) -> str:
    if x.tensor_parallel:
        return f"TP {x.tensor_parallel}"
    return ENGINE_NAMES.get(x.engine, x.engine) if x.engine else gpu_name(lang, x.gpu)


def _cheaper(lang: str, win: ServingSide, other: ServingSide) -> str:
    """"7 % cheaper than 4×H100 SXM ($2.79)": by the price per 1M output tokens, else per hour."""
    mine, theirs = win.per_million_output_tokens, other.per_million_output_tokens
    unit = "per_million"
    if mine is None or theirs is None:
        mine, theirs, unit = win.per_hour, other.per_hour, "per_hour"
    if mine is None or theirs is None or theirs <= 0:
        return ""
    figure = per_million_text(lang, theirs, other.currency) if unit == "per_million" else \
        _(lang, "%(money)s/h") % {"money": money(lang, theirs, other.currency)}
    if mine >= theirs * 0.995:
        return _(lang, "as cheap as %(gpus)s (%(figure)s)") % {"gpus": _side_gpus(lang, other), "figure": figure}
    return _(lang, "%(pct)s%% cheaper than %(gpus)s (%(figure)s)") % {
        "pct": num(lang, round(100 * (1 - mine / theirs))), "gpus": _side_gpus(lang, other), "figure": figure}


def compared_headline(lang: str, r: ServingResult) -> str:
    """Several GPUs named for one serving job: the winner, what it holds and for how much, by how much it beats the
    others; a faster runner-up is said too (cheaper is not faster)."""
    win = next((x for x in r.compared if x.winner), None)
    users = users_text(lang, r.users or (win.users if win is not None and win.users else 1))
    if win is None:
        names = ", ".join(_side_name(lang, x) for x in r.compared)
        return _(lang, "None of %(gpus)s holds %(users)s at %(ctx)s") % {
            "gpus": names, "users": users, "ctx": context_text(lang, r.context)}
    price = per_million_text(lang, win.per_million_output_tokens, win.currency) \
        if win.per_million_output_tokens is not None else (
            _(lang, "%(money)s/h") % {"money": money(lang, win.per_hour, win.currency)} if win.per_hour else "")
    line = _n(lang, "%(gpu)s: %(gpus)s holds %(users)s at %(ctx)s for %(price)s",
              "%(gpu)s: %(gpus)s hold %(users)s at %(ctx)s for %(price)s", win.holds_count or 1) % {
        "gpu": _side_name(lang, win), "gpus": f"{win.holds_count}×{gpu_name(lang, win.gpu)}", "users": users,
        "ctx": context_text(lang, r.context), "price": price}
    others = [x for x in r.compared if not x.winner and x.holds_count is not None]
    if win.engine or win.tensor_parallel:  # engines (TP degrees): what each other side holds, or that it does not
        extra = [_(lang, "%(engine)s: %(users)s") % {"engine": _side_gpus(lang, x), "users": users_text(lang, x.users)}
                 if x.holds_as_named and x.users else
                 _(lang, "%(engine)s does not hold it as asked") % {"engine": _side_gpus(lang, x)}
                 for x in r.compared if not x.winner]
    else:
        extra = [t for t in (_cheaper(lang, win, x) for x in others) if t]
    extra += [_(lang, "%(gpus)s is faster per user: %(theirs)s against %(mine)s tokens/s") % {
        "gpus": _side_gpus(lang, x), "theirs": num(lang, x.per_user_tokens_s or 0),
        "mine": num(lang, win.per_user_tokens_s or 0)}
        for x in others if (x.per_user_tokens_s or 0) > (win.per_user_tokens_s or 0) * 1.05]
    return line + ("; " + "; ".join(extra) if extra else "")


def compared_lines(lang: str, r: ServingResult) -> list[str]:
    """One line per GPU named: the count named holds the users or not, the smallest that does, price, speed."""
    out = []
    for x in r.compared:
        named = f"{x.count}×{gpu_name(lang, x.gpu)}"
        if (x.engine or x.tensor_parallel) and not x.holds_as_named:  # «vllm или sglang»: it does not load as asked
            out.append("• " + _(lang, "%(engine)s on %(named)s: does not hold it as asked") % {
                "engine": _side_name(lang, x), "named": named})
            continue
        if x.engine or x.tensor_parallel:
            named = f"{_side_name(lang, x)}, {named}"
        if x.holds_count is None:
            out.append(_(lang, "%(named)s: no arrangement of it holds them") % {"named": named})
            continue
        parts = [users_text(lang, x.users)] if (x.engine or x.tensor_parallel) and x.users else []
        if x.per_million_output_tokens is not None:
            parts.append(per_million_text(lang, x.per_million_output_tokens, x.currency))
        if x.per_hour is not None:
            parts.append(_(lang, "%(money)s/h") % {"money": money(lang, x.per_hour, x.currency)})
        if x.per_user_tokens_s is not None:
            parts.append(_(lang, "%(tps)s tokens/s per user") % {"tps": num(lang, x.per_user_tokens_s)})
        where = named if x.holds_as_named else _(lang, "%(named)s is not enough, %(gpus)s") % {
            "named": named, "gpus": _side_gpus(lang, x)}
        out.append(f"{'✅' if x.winner else '•'} {where}: " + ", ".join(parts))
    return out

"""The first line of a serving answer under load: does the arrangement keep the promise at the traffic asked
(«✅ 4×H100 держат 20 запросов/с: TTFT p95 ≈ 0,4 с, ~35 ток/с на пользователя; 1,10 $ за 1 млн токенов»), or what
breaks it (the queue past capacity, a TTFT or TPOT above the promise)."""

from __future__ import annotations

from bot.views.catalogs import _, _n
from bot.views.formats import money, num
from engine.schema import ServingAnswer


def _s(lang: str, ms: float) -> str:
    x = ms / 1000.0
    return num(lang, round(x, 2)) if x < 10 else num(lang, round(x))


def load_lead(lang: str, a: ServingAnswer, where: str) -> tuple[str, str] | None:
    """(mark, line) when the question set a request rate or a latency promise; None otherwise."""
    r = a.serving
    q = a.request
    if r is None or r.load is None or r.gpu is None:
        return None
    if not (q.request_rate or q.ttft_p95_ms or q.tpot_ms):
        return None
    load, p = r.load, r.load.point
    n = r.gpu.count
    if q.request_rate:
        what = _n(lang, "%(n)s request/s", "%(n)s requests/s", max(1, round(q.request_rate))) % {
            "n": num(lang, q.request_rate)}
    else:
        what = _n(lang, "%(n)s user at once", "%(n)s users at once", max(1, p.concurrency or 1)) % {
            "n": num(lang, (p.concurrency or 1) * load.replicas)}
    if not p.stable:
        return "❌", _n(lang, "%(gpus)s does not hold %(what)s: it serves up to %(cap)s requests/s, past that the "
                              "queue grows without bound",
                        "%(gpus)s do not hold %(what)s: they serve up to %(cap)s requests/s, past that the queue "
                        "grows without bound", n) % {
            "gpus": where, "what": what, "cap": num(lang, round(load.capacity_rps, 2))}
    params = {"gpus": where, "what": what, "ttft": _s(lang, p.ttft_ms.get("p95", 0.0)),
              "tps": num(lang, round(p.per_user_tokens_s or 0.0))}
    line = _n(lang, "%(gpus)s holds %(what)s: TTFT p95 ≈ %(ttft)s s, ~%(tps)s tokens/s per user",
              "%(gpus)s hold %(what)s: TTFT p95 ≈ %(ttft)s s, ~%(tps)s tokens/s per user", n) % params
    if load.meets is False:
        promised = []
        if q.ttft_p95_ms:
            promised.append(_(lang, "TTFT p95 %(x)s s") % {"x": _s(lang, q.ttft_p95_ms)})
        if q.tpot_ms:
            promised.append(_(lang, "TPOT %(x)s ms") % {"x": num(lang, q.tpot_ms)})
        line = _n(lang, "%(gpus)s does not keep the promise (%(promise)s) at %(what)s: TTFT p95 ≈ %(ttft)s s, "
                        "~%(tps)s tokens/s per user",
                  "%(gpus)s do not keep the promise (%(promise)s) at %(what)s: TTFT p95 ≈ %(ttft)s s, "
                  "~%(tps)s tokens/s per user", n) % {**params, "promise": ", ".join(promised)}
    if load.per_million_tokens is not None:
        line += "; " + _(lang, "%(money)s per 1M tokens") % {"money": money(lang, load.per_million_tokens,
                                                                             load.currency)}
    return ("❌" if load.meets is False else "✅"), line

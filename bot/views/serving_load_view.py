"""The first line of a serving answer under load: does the arrangement keep the promise at the traffic asked
(«✅ 4×H100 держат 20 запросов/с: TTFT p95 ≈ 0,4 с, ~35 ток/с на пользователя; 1,10 $ за 1 млн токенов»), or what
breaks it (the queue past capacity, a TTFT or TPOT above the promise)."""

from __future__ import annotations

from bot.views.catalogs import _, _n
from bot.views.formats import date_text, decimal, money, money_range, num
from engine.schema import Request, ServingAnswer, ServingLoad


def _s(lang: str, ms: float) -> str:
    """Seconds as said: never "0" for a few milliseconds (≤ 0.01 s below a hundredth)."""
    x = ms / 1000.0
    if x < 0.01:
        return "≤\u00a0" + decimal(lang, 0.01, 2)
    return decimal(lang, x, 2) if x < 1 else num(lang, round(x, 1)) if x < 10 else num(lang, round(x))


def load_lead(lang: str, a: ServingAnswer, where: str, named: str | None = None) -> tuple[str, str] | None:
    """(mark, line) when the question set a request rate or a latency promise; None otherwise. When the GPUs named
    (`named`, their label) miss it, the line says what they do first, then what the arrangement sized for it does."""
    r = a.serving
    q = a.request
    if r is None or r.load is None or r.gpu is None:
        return None
    if not (q.request_rate or q.ttft_p95_ms or q.tpot_ms):
        return None
    if r.instead_of is not None and named is not None:
        _, asked = _lead(lang, q, r.instead_of.load, r.instead_of.gpu.count, named)
        sized = r.load.point
        line = _n(lang, "%(gpus)s holds it: TTFT %(pct)s ≈ %(ttft)s s, ~%(tps)s tokens/s per user",
                  "%(gpus)s hold it: TTFT %(pct)s ≈ %(ttft)s s, ~%(tps)s tokens/s per user", r.gpu.count) % {
            "gpus": where, "ttft": _s(lang, sized.ttft_ms.get(_key(r.load), 0.0)), "pct": _key(r.load),
            "tps": num(lang, round(sized.per_user_tokens_s or 0.0))}
        return "❌", f"{asked}; {line}{_per_million(lang, r.load)}"
    if "users" in q.asks and not q.concurrency and r.load.users_within_promise is not None:
        return _users_lead(lang, q, r.load, r.gpu.count, where)
    mark, line = _lead(lang, q, r.load, r.gpu.count, where)
    return mark, line + (_per_million(lang, r.load) if r.load.point.stable else "")


def _users_lead(lang: str, q: Request, load: ServingLoad, n: int, where: str) -> tuple[str, str]:
    """"How many users does this setup hold within the promise": the most requests in flight that keep it."""
    users = load.users_within_promise or 0
    promise = _promise(lang, q, load)
    if users < 1:
        return "❌", _n(lang, "%(gpus)s does not keep the promise (%(promise)s) even for one user",
                        "%(gpus)s do not keep the promise (%(promise)s) even for one user", n) % {
            "gpus": where, "promise": promise}
    line = _n(lang, "%(gpus)s: up to %(users)s user at once within %(promise)s",
              "%(gpus)s: up to %(users)s users at once within %(promise)s", users) % {
        "gpus": where, "users": num(lang, users), "promise": promise}
    return "✅", line


def _key(load: ServingLoad) -> str:
    """The TTFT percentile the promise is judged at, as the load model judged it (loadplan.ttft_key)."""
    return f"p{load.ttft_percentile}"


def _promise(lang: str, q: Request, load: ServingLoad) -> str:
    """The promise as said: «TTFT p95 0,5 с, TPOT 40 мс»."""
    promised = []
    if q.ttft_p95_ms:
        promised.append(_(lang, "TTFT %(pct)s %(x)s s") % {"x": _s(lang, q.ttft_p95_ms), "pct": _key(load)})
    if q.tpot_ms:
        promised.append(_(lang, "TPOT %(x)s ms") % {"x": num(lang, q.tpot_ms)})
    return ", ".join(promised)


def _per_million(lang: str, load: ServingLoad) -> str:
    if load.per_million_tokens is None:
        return ""
    return "; " + _(lang, "%(money)s per 1M tokens") % {"money": money(lang, load.per_million_tokens, load.currency)}


def _lead(lang: str, q: Request, load: ServingLoad, n: int, where: str) -> tuple[str, str]:
    """(mark, line) of one arrangement under the load asked: holds it, misses the promise, or queues past capacity."""
    p = load.point
    if q.request_rate:
        what = _n(lang, "%(n)s request/s", "%(n)s requests/s", max(1, round(q.request_rate))) % {
            "n": num(lang, q.request_rate)}
    else:
        what = _n(lang, "%(n)s user at once", "%(n)s users at once", max(1, p.concurrency or 1)) % {
            "n": num(lang, (p.concurrency or 1) * load.scale)}
    if not p.stable:
        return "❌", _n(lang, "%(gpus)s does not hold %(what)s: it serves up to %(cap)s requests/s, past that the "
                              "queue grows without bound",
                        "%(gpus)s do not hold %(what)s: they serve up to %(cap)s requests/s, past that the queue "
                        "grows without bound", n) % {
            "gpus": where, "what": what, "cap": num(lang, round(load.capacity_rps, 2))}
    params = {"gpus": where, "what": what, "ttft": _s(lang, p.ttft_ms.get(_key(load), 0.0)), "pct": _key(load),
              "tps": num(lang, round(p.per_user_tokens_s or 0.0))}
    line = _n(lang, "%(gpus)s holds %(what)s: TTFT %(pct)s ≈ %(ttft)s s, ~%(tps)s tokens/s per user",
              "%(gpus)s hold %(what)s: TTFT %(pct)s ≈ %(ttft)s s, ~%(tps)s tokens/s per user", n) % params
    if load.meets is False:
        line = _n(lang, "%(gpus)s does not keep the promise (%(promise)s) at %(what)s: TTFT %(pct)s ≈ %(ttft)s s, "
                        "~%(tps)s tokens/s per user",
                  "%(gpus)s do not keep the promise (%(promise)s) at %(what)s: TTFT %(pct)s ≈ %(ttft)s s, "
                  "~%(tps)s tokens/s per user", n) % {**params, "promise": _promise(lang, q, load)}
    return ("❌" if load.meets is False else "✅"), line


def hosted_line(lang: str, a: ServingAnswer) -> str:
    """Our cost per 1M tokens at the load against the hosted APIs' range for the same model at the same prompt/output
    mix, in dollars and roubles (the catalog's dated rate); "" when the catalog has no hosted price of the model."""
    r = a.serving
    if r.load is None or r.load.hosted is None:
        return ""
    load, h = r.load, r.load.hosted
    rate = h.rub_per_usd
    hosted = _(lang, "hosted APIs for this model: %(usd)s (%(rub)s) per 1M tokens at your prompt/output mix, "
                     "%(low)s to %(high)s, %(n)s offers, prices as of %(date)s") % {
        "usd": money_range(lang, h.low_usd, h.high_usd, "USD"),
        "rub": money_range(lang, h.low_usd * rate, h.high_usd * rate, "RUB"),
        "low": h.low_provider, "high": h.high_provider, "n": num(lang, h.offers), "date": date_text(lang, h.oldest)}
    rub_note = _(lang, "₽ at %(rate)s per $ (%(date)s)") % {"rate": num(lang, round(rate, 2)),
                                                            "date": date_text(lang, h.rate_date)}
    ours = load.per_million_tokens
    if ours is None:
        return f"{hosted}; {rub_note}"
    usd, rub = (ours, ours * rate) if load.currency != "RUB" else (ours / rate, ours)
    cheaper, dearer = round(h.low_usd / max(usd, 1e-9), 1), round(usd / h.high_usd, 1)
    if usd <= h.low_usd and cheaper > 1.0:
        verdict = _(lang, "%(x)s× cheaper than the cheapest") % {"x": num(lang, cheaper)}
    elif usd <= h.low_usd:
        verdict = _(lang, "as cheap as the cheapest")
    elif usd >= h.high_usd and dearer > 1.0:
        verdict = _(lang, "%(x)s× dearer than the dearest") % {"x": num(lang, dearer)}
    elif usd >= h.high_usd:
        verdict = _(lang, "as dear as the dearest")
    else:
        verdict = _(lang, "within their range")
    mine = _(lang, "ours at this load: %(usd)s (%(rub)s) per 1M tokens, %(verdict)s") % {
        "usd": money(lang, usd, "USD"), "rub": money(lang, rub, "RUB"), "verdict": verdict}
    return f"{mine}; {hosted}; {rub_note}"


LINKS = {"nvlink": "NVLink", "pcie": "PCIe", "infiniband": "InfiniBand / RoCE"}


def pools_line(lang: str, load: ServingLoad | None) -> str:
    """How the load answer ran the instances: prefill and decode pools with the KV transfer, and DP attention; ""
    for plain colocated TP."""
    if load is None:
        return ""
    parts = []
    d = load.disaggregation
    if d is not None:
        parts.append(_(lang, "prefill and decode on separate instances: %(p)s prefill, %(d)s decode; each prompt's "
                             "KV cache goes over %(link)s in ~%(ms)s ms; TPOT is the decode instances' own, TTFT "
                             "= the prefill queue + prefill + transfer") % {
            "p": num(lang, d.prefill_instances), "d": num(lang, d.decode_instances),
            "link": LINKS.get(d.link, d.link), "ms": decimal(lang, max(d.transfer_ms, 0.01), 2)})
    if load.attention_dp > 1:
        parts.append(_(lang, "attention data-parallel over %(n)s GPUs: each holds the KV cache of its own requests "
                             "only, the MoE layers run over all of them") % {"n": num(lang, load.attention_dp)})
    return "; ".join(parts)

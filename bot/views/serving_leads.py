"""The first line of a serving answer when the question asked for something other than users and memory: the
adapters it serves, whether speculative decoding pays, the price per 1M tokens or for a token volume, time to
first token, tokens/s, or how many users the GPUs hold (`asked_lead`, read by serving_view's headline)."""

from __future__ import annotations

import math

from bot.views.catalogs import _, _n
from bot.views.formats import context_text, gb, money, money_typical, num, tokens_amount
from engine.schema import ServingAnswer, ServingResult


def seconds_text(lang: str, s: float) -> str:
    """Seconds as said: never "0" for a first token that takes a few milliseconds (≤ 0.1 s below a tenth)."""
    if s < 0.1:
        return "≤\u00a0" + num(lang, 0.1)
    return num(lang, round(s, 2)) if s < 10 else num(lang, round(s))


def _volume_lead(lang: str, a: ServingAnswer, where: str) -> str:
    """«сколько стоит инфер 70б на 1 млрд токенов в месяц»: what those output tokens cost on these GPUs at full load
    (the load they hold, priced per 1M output tokens), and how many such instances a month of them needs."""
    r, q = a.serving, a.request
    if r is None or "money" not in q.asks or not q.tokens or r.speed is None or r.cost is None or not r.fits:
        return ""
    per_million = r.cost.per_million_output_tokens
    rate = r.speed.total_tokens_s * max(1, r.replicas)
    if not per_million or rate <= 0:
        return ""
    hours = q.tokens / rate / 3600.0
    text = _(lang, "≈%(cost)s for your %(tokens)s output tokens: %(model)s on %(gpus)s at full load, %(rate)s "
                   "tokens/s, %(per)s per 1M tokens") % {
        "cost": money_typical(lang, q.tokens / 1e6 * per_million, r.cost.currency).lstrip("≈"),
        "tokens": tokens_amount(lang, q.tokens), "model": r.model, "gpus": where, "rate": num(lang, round(rate)),
        "per": money(lang, per_million, r.cost.currency)}
    period = q.rent_hours
    if period and hours > period:
        n = math.ceil(hours / period)
        text += "; " + _n(lang, "in %(h)s h that takes %(n)s such instance",
                          "in %(h)s h that takes %(n)s such instances", n) % {"h": num(lang, round(period)),
                                                                             "n": num(lang, n)}
    return text


def _rate_lead(lang: str, r: ServingResult, where: str) -> str:
    """"How many requests per second can it take": the rate at which its KV pool / max_num_seqs binds."""
    assert r.load is not None
    return _(lang, "%(model)s on %(gpus)s holds up to %(cap)s requests/s with %(prompt)s-token prompts and "
                   "%(output)s-token answers; past that the queue grows without bound") % {
        "model": r.model, "gpus": where, "cap": num(lang, round(r.load.capacity_rps, 2)),
        "prompt": num(lang, r.prompt_len), "output": num(lang, r.output_len)}


def _price_lead(lang: str, r: ServingResult, where: str) -> str:
    """"What's our cost per 1M tokens at 200 users": the price at the load asked first, then what it runs on."""
    assert r.load is not None and r.cost is not None and r.load.per_million_tokens is not None
    users = r.users or (r.load.point.concurrency or 1) * r.load.scale
    return _n(lang, "%(money)s per 1M tokens (%(out)s per 1M output tokens) at %(n)s user at once: %(model)s on "
                    "%(gpus)s, %(hourly)s/h",
              "%(money)s per 1M tokens (%(out)s per 1M output tokens) at %(n)s users at once: %(model)s on "
              "%(gpus)s, %(hourly)s/h", users) % {
        "money": money(lang, r.load.per_million_tokens, r.load.currency),
        "out": money(lang, r.load.per_million_output_tokens or r.cost.per_million_output_tokens, r.load.currency),
        "n": num(lang, users), "model": r.model, "gpus": where,
        "hourly": money(lang, r.cost.per_hour, r.cost.currency)}


def _speculative_lead(lang: str, method: str, r: ServingResult, where: str) -> str:
    """"Is speculative decoding worth it for us": tokens/s per user without and with it at the load asked, and
    whether that pays (the load model's speculative_speedup; serving_load.toml [speculative])."""
    assert r.load is not None and r.load.speculative_speedup is not None
    x = r.load.speculative_speedup
    after = r.load.point.per_user_tokens_s or 0.0
    names = {"eagle": "EAGLE", "mtp": "MTP", "ngram": "n-gram", "draft": _(lang, "draft model")}
    users = r.load.point.concurrency or 1
    verdict = (_(lang, "worth turning on") if x >= 1.15 else _(lang, "little gain") if x >= 1.0
               else _(lang, "does not pay at this load"))
    return _n(lang, "Speculative decoding (%(method)s) at %(n)s user: ~%(before)s → ~%(after)s tokens/s per user "
                    "(×%(x)s), %(verdict)s: %(model)s on %(gpus)s",
              "Speculative decoding (%(method)s) at %(n)s users: ~%(before)s → ~%(after)s tokens/s per user "
              "(×%(x)s), %(verdict)s: %(model)s on %(gpus)s", users) % {
        "method": names.get(method, method), "n": num(lang, users), "before": num(lang, round(after / x)),
        "after": num(lang, round(after)), "x": num(lang, round(x, 1)), "verdict": verdict, "model": r.model,
        "gpus": where}


def _adapters_lead(lang: str, r: ServingResult, where: str) -> str:
    """"How many LoRA adapters can it serve": the slots that fit beside the requests asked (engine/serving/lora.py)."""
    n, requests = r.adapter_slots or 0, -(-(r.users or 1) // max(1, r.replicas))
    beside = _n(lang, "beside %(n)s request of %(ctx)s", "beside %(n)s requests of %(ctx)s", requests) % {
        "n": num(lang, requests), "ctx": context_text(lang, r.context)}
    params = {"n": num(lang, n), "rank": num(lang, r.adapter_rank or 0), "mib": num(lang, r.adapter_slot_mib or 0),
              "beside": beside, "model": r.model, "gpus": where}
    if n < 1:
        return _(lang, "No room for a LoRA adapter slot of rank %(rank)s (%(mib)s MiB) %(beside)s: "
                       "%(model)s on %(gpus)s") % params
    return _n(lang, "Room for %(n)s LoRA adapter of rank %(rank)s in GPU slots (%(mib)s MiB each) %(beside)s: "
                    "%(model)s on %(gpus)s",
              "Room for %(n)s LoRA adapters of rank %(rank)s in GPU slots (%(mib)s MiB each) %(beside)s: "
              "%(model)s on %(gpus)s", n) % params


GIB = 2**30


def _memory_lead(lang: str, a: ServingAnswer, where: str) -> str:
    """«сколько памяти надо под TGI»: the memory one request of the context needs on each GPU (the weights, its KV
    cache, the engine's activation peak, CUDA graphs and non-torch memory), then what the GPUs hold of them."""
    r = a.serving
    assert r is not None
    m, kv = r.memory, r.kv
    if m is None or kv is None or not r.fits:
        return ""
    one = kv.bytes_per_token * r.context / GIB
    rest = m.activation_peak_gib + m.non_torch_gib + m.cuda_graph_gib
    return _n(lang, "%(model)s needs %(need)s per GPU for one request of %(ctx)s: weights %(w)s, KV cache %(kv)s a "
                    "request, activations and the engine's own memory %(rest)s; %(gpus)s hold %(n)s such request",
              "%(model)s needs %(need)s per GPU for one request of %(ctx)s: weights %(w)s, KV cache %(kv)s a "
              "request, activations and the engine's own memory %(rest)s; %(gpus)s hold %(n)s such requests",
              a.serving_users) % {
        "model": r.model, "need": gb(lang, round(m.weights_gib + one + rest, 1)), "ctx": context_text(lang, r.context),
        "w": gb(lang, round(m.weights_gib, 1)), "kv": gb(lang, round(one, 2)), "rest": gb(lang, round(rest, 1)),
        "gpus": where, "n": num(lang, a.serving_users)}


def asked_lead(lang: str, a: ServingAnswer, where: str) -> str:
    """What the question asked first, as the headline: time to first token, tokens/s, or (no users said) how many
    users the GPUs hold at the context."""
    r = a.serving
    assert r is not None
    if a.request.asks[:1] == ["memory"] and not a.request.concurrency:
        lead = _memory_lead(lang, a, where)
        if lead:
            return lead
    if "rate" in a.request.asks and r.load is not None and r.load.capacity_rps > 0 and r.fits:
        return _rate_lead(lang, r, where)
    if "adapters" in a.request.asks and r.adapter_slots is not None:
        return _adapters_lead(lang, r, where)
    if a.request.speculative and r.load is not None and r.load.speculative_speedup and r.fits:
        return _speculative_lead(lang, a.request.speculative, r, where)
    if "money" in a.request.asks and r.load is not None and r.load.per_million_tokens is not None and r.fits \
            and r.cost is not None and r.load.point.stable and a.request.concurrency and a.request.tokens == 1e6:
        # "what's our cost per 1M tokens at 200 users": the unit price at the load said (a volume is priced below)
        return _price_lead(lang, r, where)
    asks = [x for x in a.request.asks if x in ("latency", "throughput")]
    sp = r.speed
    volume = _volume_lead(lang, a, where)
    if volume:
        return volume
    if asks and sp is not None and r.fits:
        if asks[0] == "latency":
            prompt = _n(lang, "a %(n)s-token prompt", "a %(n)s-token prompt", r.prompt_len) % {
                "n": num(lang, r.prompt_len)}
            return _(lang, "First token in %(ttft)s s for %(prompt)s: %(model)s on %(gpus)s") % {
                "ttft": seconds_text(lang, sp.ttft_s), "prompt": prompt, "model": r.model, "gpus": where}
        per_user, total = round(sp.per_user_tokens_s), round(sp.total_tokens_s * max(1, r.replicas))
        at_once = max(1, sp.concurrency * max(1, r.replicas))
        return _n(lang, "%(tps)s tokens/s per user, %(total)s in total with %(n)s request at once: %(model)s on "
                        "%(gpus)s",
                  "%(tps)s tokens/s per user, %(total)s in total with %(n)s requests at once: %(model)s on %(gpus)s",
                  at_once) % {"tps": num(lang, per_user), "total": num(lang, total), "n": num(lang, at_once),
                              "model": r.model, "gpus": where}
    if asks and sp is None and r.fits:  # tokens/s asked of a card the catalog has no speed for: said first, not users
        return _n(lang, "%(model)s runs on %(gpus)s (%(n)s user at once at %(ctx)s), but its speed is unknown to us: "
                        "the card is not in the catalog",
                  "%(model)s runs on %(gpus)s (%(n)s users at once at %(ctx)s), but its speed is unknown to us: "
                  "the card is not in the catalog", a.serving_users) % {
            "model": r.model, "gpus": where, "n": num(lang, a.serving_users), "ctx": context_text(lang, r.context)}
    s, m = r.settings, r.memory
    if s is not None and m is not None and s.gpu_layers is not None and 0 < s.gpu_layers < r.layers and r.fits:
        if sp is None:  # a card the catalog has no speed for: the split, not "0 tokens/s"
            return _(lang, "%(model)s on %(gpus)s: %(on)s of %(layers)s layers on the GPU, the rest in host RAM "
                           "(%(host)s GB); its speed is unknown to us (the card is not in the catalog)") % {
                "model": r.model, "gpus": where, "on": s.gpu_layers, "layers": r.layers,
                "host": num(lang, round(m.host_ram_gib, 1))}
        tps = round(sp.per_user_tokens_s, 1)
        return _n(lang, "%(model)s on %(gpus)s: %(on)s of %(layers)s layers on the GPU, the rest in host RAM "
                        "(%(host)s GB): %(tps)s token/s",
                  "%(model)s on %(gpus)s: %(on)s of %(layers)s layers on the GPU, the rest in host RAM "
                  "(%(host)s GB): %(tps)s tokens/s", max(1, round(tps))) % {
            "model": r.model, "gpus": where, "on": s.gpu_layers, "layers": r.layers,
            "host": num(lang, round(m.host_ram_gib, 1)), "tps": num(lang, tps)}
    if r.users is None and r.fits:
        return _n(lang, "%(n)s user at once at %(ctx)s: %(model)s on %(gpus)s",
                  "%(n)s users at once at %(ctx)s: %(model)s on %(gpus)s", a.serving_users) % {
            "n": num(lang, a.serving_users), "ctx": context_text(lang, r.context), "model": r.model, "gpus": where}
    return ""

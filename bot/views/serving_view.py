"""A serving Answer (engine.serving's ServingResult) → the view model serving.html.j2 lays out: every line worded.

The engine hands over numbers and message keys (`serving.change.*`, `serving.error.*`, "key=value" assumptions);
this module words them in the reader's language. The table stays within 34 characters, as the training one.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from bot.views.catalogs import N_, _, _n
from bot.views.formats import context_text, money, money_typical, nodes_text, num
from bot.views.serving_compared import compared_headline, compared_lines, users_text
from bot.views.serving_leads import asked_lead, seconds_text
from bot.views.serving_load_view import hosted_line, load_lead, pools_line
from bot.views.serving_words import (
    assumption_line,
    change_line,
    engine_label,
    error_line,
    format_label,
    per_million_text,
)
from bot.views.talk import rental_lead
from bot.views.view import TABLE_WIDTH, AnswerView, table_row, verdict_mark
from bot.views.words import NOTE_TEXTS, gpu_name, said_note_text
from engine.schema import Assumption, Change, GpuChoice, ServingAnswer, ServingResult, ServingSettings

NBSP = "\u00a0"


def room_text(lang: str, n: int) -> str:
    return _n(lang, "room for %(n)s such request", "room for %(n)s such requests", n) % {"n": num(lang, n)}


def gpus_label(lang: str, r: ServingResult) -> str:
    """"4×H100 SXM (TP 4)", "8×H100 SXM (TP 4 × PP 2)", "4×H100 SXM (2 × TP 2)"."""
    assert r.gpu is not None and r.settings is not None
    return arrangement_label(lang, r.gpu, r.settings, r.replicas)


def arrangement_label(lang: str, gpu: GpuChoice, s: ServingSettings, replicas: int) -> str:
    if s.family in ("llama.cpp", "ollama", "hf") and s.tensor_parallel * s.pipeline_parallel == 1 and replicas == 1:
        return f"{gpu.count}×{gpu_name(lang, gpu.name)}"
    par = f"TP{NBSP}{s.tensor_parallel}"
    if s.pipeline_parallel > 1:
        par += f" × PP{NBSP}{s.pipeline_parallel}"
    if replicas > 1:
        par = f"{replicas} × {par}"
    return f"{gpu.count}×{gpu_name(lang, gpu.name)} ({par})"


def verdict(a: ServingAnswer) -> str:
    """The Answer's verdict on the GPUs asked; on GPUs the engine picked: fits (or no_fit when none serves)."""
    r = a.serving
    assert r is not None
    if a.verdict is not None:
        return a.verdict
    return "fits" if r.fits and r.memory is not None else "no_fit"


def headline(lang: str, a: ServingAnswer) -> tuple[str, str]:
    """(mark, line): the verdict's mark (the training answer's) and the serving headline, which leads with users,
    speed or time to first token as asked."""
    r = a.serving
    if r is not None and r.memory is not None and r.gpu is not None and r.memory.kv_pool_gib > 0:
        named = r.instead_of
        led = load_lead(lang, a, gpus_label(lang, r),
                        arrangement_label(lang, named.gpu, named.settings, named.replicas) if named else None)
        if led is not None:
            return led
    mark, line = _headline(lang, a)
    if mark == "🔢":  # the count asked: the answer is the count, not the verdict on the card written
        return mark, line
    if not mark and not r.fits:  # «не загружается»: the way it runs there, as «Что можно изменить» lists it first
        way = way_forward(lang, a)
        if way:
            line += "; " + _(lang, "it runs with: %(change)s") % {"change": way}
    return verdict_mark(verdict(a)) if mark else "❌", line


def way_forward(lang: str, a: ServingAnswer) -> str:
    """The first change the reply lists that makes it load and serve at least one request, in its words."""
    r = a.serving
    if r is None:
        return ""
    loads = [c for c in shown_changes(r) if c.effect.get("loads", True) and _served_of(c) >= 1]
    # the change the launch command runs, else the first that serves the users asked, else the first that loads
    best = next((c for c in loads if c.key == r.command_for), None) \
        or next((c for c in loads if _served_of(c) >= (r.users or 1)), loads[0] if loads else None)
    return change_line(lang, best, r.users).removesuffix(" ✓") if best is not None else ""


def _served_of(c: Change) -> float:
    e = c.effect
    return float(e["users_served"] if "users_served" in e else e.get("concurrency_at_context", 0) or 0)


def _headline(lang: str, a: ServingAnswer) -> tuple[str, str]:
    r = a.serving
    assert r is not None
    if r.compared:
        return "✓", compared_headline(lang, r)
    if r.memory is None or r.gpu is None or r.settings is None:
        return "", error_line(lang, r.errors[0].key, r.errors[0].params) if r.errors else _(lang, "No answer")
    where, room = gpus_label(lang, r), room_text(lang, a.serving_users)
    x = r.arrangement
    # «сколько a100 надо чтоб поднять deepseek v3», «сколько гпу надо под deepseek r1» (no GPU named: the pick's)
    if "count" in a.request.asks and x is not None and (not r.fits or not a.request.gpus):
        par = f"TP\u00a0{x.tensor_parallel}" + (f" × PP\u00a0{x.pipeline_parallel}" if x.pipeline_parallel > 1 else "")
        gpus = f"{x.count}×{gpu_name(lang, x.gpu)}"
        if "nodes" in a.request.asks:  # «сколько нод h100 под 405b»: the machines lead
            gpus = nodes_text(lang, x.count, x.nodes) + ": " + gpus
        return "🔢", _(lang, "It takes %(gpus)s (%(par)s) for %(model)s: %(room)s") % {
            "gpus": gpus, "par": par, "model": r.model,
            "room": room_text(lang, math.floor(x.concurrency_at_context * max(1, x.replicas) + 1e-9))}
    budget = r.settings.gpu_memory_utilization * r.gpu.total_gib
    if r.memory.kv_pool_gib <= 0 and r.gpu.unified_memory and r.settings.engine in ("llama.cpp", "ollama"):
        # one RAM for the GPU and the CPU: layers left "on the CPU" are in the same memory (engine/serving/local.py)
        whole = r.memory.weights_gib * max(1, r.gpu.count) + r.memory.host_ram_gib
        return "", _(lang, "%(model)s does not fit in the unified memory of %(gpus)s: %(weights)s GB of weights "
                           "alone, the GPU may take %(total)s GB of it") % {
            "model": r.model, "gpus": where, "weights": num(lang, whole), "total": num(lang, r.gpu.total_gib)}
    if r.memory.kv_pool_gib <= 0 and r.memory.weights_gib < r.gpu.total_gib:  # smaller than the card: the share
        return "", _(lang, "%(model)s does not load on %(gpus)s: %(weights)s GB of weights per GPU, and at "
                           "gpu_memory_utilization %(util)s the engine has %(budget)s of the %(total)s GB for the "
                           "weights, activations and its own memory") % {
            "model": r.model, "gpus": where, "weights": num(lang, r.memory.weights_gib), "budget": num(lang, budget),
            "util": f"{r.settings.gpu_memory_utilization:g}", "total": num(lang, r.gpu.total_gib)}
    if r.memory.kv_pool_gib <= 0:
        return "", _(lang, "%(model)s does not load on %(gpus)s: %(weights)s GB of weights per GPU of %(total)s") % {
            "model": r.model, "gpus": where, "weights": num(lang, r.memory.weights_gib),
            "total": num(lang, r.gpu.total_gib)}
    if r.kv is not None and r.kv.max_concurrency < 1.0:  # vLLM's start-up check: one request of max_model_len
        return "", _(lang, "%(model)s does not start on %(gpus)s: the KV pool holds %(tokens)s, less than one "
                             "request of max_model_len %(len)s") % {
            "model": r.model, "gpus": where, "tokens": tokens_text(lang, r.kv.tokens),
            "len": num(lang, r.settings.max_model_len)}
    lead = asked_lead(lang, a, where)
    if lead:
        return "✓", lead
    if r.users is None:
        room = _n(lang, "room for %(n)s request of %(ctx)s at once", "room for %(n)s requests of %(ctx)s at once",
                  a.serving_users) % {"n": num(lang, a.serving_users), "ctx": context_text(lang, r.context)}
        return "✓", _(lang, "%(model)s on %(gpus)s: %(room)s") % {
            "model": r.model, "gpus": where, "room": room}
    params = {"users": users_text(lang, r.users), "ctx": context_text(lang, r.context), "gpus": where, "room": room}
    if not r.fits:
        return "✓", _n(lang, "%(users)s at %(ctx)s does not fit on %(gpus)s: %(room)s",
                        "%(users)s at %(ctx)s do not fit on %(gpus)s: %(room)s", r.users) % params
    line = _(lang, "%(users)s at %(ctx)s on %(gpus)s: %(room)s") % params
    if "money" in a.request.asks and r.cost is not None and r.cost.per_month:  # "what does it cost to serve …"
        line += "; " + _(lang, "≈%(month)s a month (%(hour)s/h)") % {
            "month": money_typical(lang, r.cost.per_month, r.cost.currency).lstrip("≈"),
            "hour": money(lang, r.cost.per_hour, r.cost.currency)}
    return "✓", line


def summary(lang: str, r: ServingResult) -> str:
    """model · engine · weights · KV · context (prompt + output)."""
    parts = [r.model if not r.model_known else f"{r.model} ({num(lang, r.params_b)}B)"]
    if r.settings is not None:
        s = r.settings
        parts += [engine_label(lang, s), _(lang, "weights %(f)s") % {"f": format_label(s.weight_format)},
                  _(lang, "KV cache %(f)s") % {"f": format_label(s.kv_cache_dtype)}]
    if r.context:
        parts.append(_(lang, "context %(ctx)s (prompt %(prompt)s + output %(output)s)") % {
            "ctx": context_text(lang, r.context), "prompt": num(lang, r.prompt_len),
            "output": num(lang, r.output_len)})
    return " · ".join(parts)


def table(lang: str, r: ServingResult) -> list[str]:
    """Per GPU (rank 0 with PP), GB of 2^30 bytes as the training table (vLLM logs the same figures as GiB): weights,
    activation peak, non-torch + CUDA graphs, KV pool; the total against the card."""
    m, g = r.memory, r.gpu
    assert m is not None and g is not None
    rows = [_(lang, "per GPU, GB"), table_row(_(lang, "weights"), num(lang, m.weights_gib)),
            table_row(_(lang, "activation peak"), num(lang, m.activation_peak_gib)),
            table_row(_(lang, "non-torch + CUDA graphs"), num(lang, m.non_torch_gib + m.cuda_graph_gib)),
            table_row(_(lang, "KV pool"), num(lang, max(0.0, m.kv_pool_gib)))]
    if m.non_torch_gib + m.cuda_graph_gib < 0.05:
        del rows[3]  # llama.cpp: no CUDA graphs, no NCCL (its CUDA context is not counted apart)
    total = m.weights_gib + m.activation_peak_gib + m.non_torch_gib + m.cuda_graph_gib + max(0.0, m.kv_pool_gib)
    rows.append("─" * TABLE_WIDTH)
    rows.append(table_row(_(lang, "total, GB (of %(card)s)") % {"card": num(lang, g.total_gib)}, num(lang, total)))
    if m.host_ram_gib >= 0.05:
        rows.append(table_row(_(lang, "host RAM (layers on CPU)"), num(lang, m.host_ram_gib)))
    return rows


def kv_line(lang: str, r: ServingResult) -> str:
    k = r.kv
    assert k is not None
    kib = k.bytes_per_token / 1024
    return _(lang, "KV cache: %(tokens)s (%(kib)s KiB a token per GPU); the longest request that fits: "
                   "%(longest)s") % {"tokens": tokens_text(lang, k.tokens), "kib": num(lang, kib),
                                     "longest": _longest(lang, k.max_model_len_that_fits)}


def _longest(lang: str, n: int) -> str:
    """The longest request the pool holds, rounded down as people say contexts ("128k"); a short one in tokens."""
    if n < 1024:
        return tokens_text(lang, n)
    return f"{n // 1024}k" if n % 1024 else context_text(lang, n)  # a limit: rounded down (100,000 → "97k")


def tokens_text(lang: str, n: int) -> str:
    return _n(lang, "%(n)s token", "%(n)s tokens", n) % {"n": num(lang, n)}


def speed_line(lang: str, r: ServingResult) -> str:
    sp = r.speed
    if sp is None:
        return ""
    per_user, total = round(sp.per_user_tokens_s), round(sp.total_tokens_s * max(1, r.replicas))
    tps = _n(lang, "%(tps)s token/s", "%(tps)s tokens/s", per_user) % {"tps": num(lang, per_user)}
    tps_total = _n(lang, "%(tps)s token/s", "%(tps)s tokens/s", total) % {"tps": num(lang, total)}
    at_once = max(1, sp.concurrency * max(1, r.replicas))
    prompt = _n(lang, "a %(n)s-token prompt", "a %(n)s-token prompt", r.prompt_len) % {"n": num(lang, r.prompt_len)}
    return _n(lang, "%(tps)s per user, %(total)s in total with %(n)s request at once; first token in %(ttft)s s "
                    "for %(prompt)s",
              "%(tps)s per user, %(total)s in total with %(n)s requests at once; first token in %(ttft)s s "
              "for %(prompt)s", at_once) % {
        "tps": tps, "total": tps_total, "n": num(lang, at_once), "ttft": seconds_text(lang, sp.ttft_s),
        "prompt": prompt}


def price_line(lang: str, r: ServingResult) -> str:
    c = r.cost
    if c is None or r.gpu is None:
        return ""
    return _(lang, "%(hour)s/h for %(gpus)s · %(million)s per 1M output tokens · %(month)s a month") % {
        "hour": money(lang, c.per_hour, c.currency), "gpus": f"{r.gpu.count}×{gpu_name(lang, r.gpu.name)}",
        "million": money(lang, c.per_million_output_tokens, c.currency),  # (the price line's own wording)
        "month": money(lang, c.per_month, c.currency)}


def answer_line(lang: str, r: ServingResult) -> str:
    """The one-line answer under an inline result's verdict title: the GPUs, speed per user, money per hour and per
    1M output tokens."""
    if r.gpu is None or r.settings is None or r.speed is None:
        return ""
    parts = [_n(lang, "%(tps)s token/s per user", "%(tps)s tokens/s per user", round(r.speed.per_user_tokens_s)) % {
        "tps": num(lang, round(r.speed.per_user_tokens_s))}]
    if r.cost is not None:
        parts.append(money(lang, r.cost.per_hour, r.cost.currency) + _(lang, "/h"))
        if r.cost.per_million_output_tokens:
            parts.append(per_million_text(lang, r.cost.per_million_output_tokens, r.cost.currency))
    return f"{gpus_label(lang, r)}: " + ", ".join(parts)


def command_text(r: ServingResult) -> str:
    return " ".join(shlex.quote(a) if "=" not in a or not a.split("=", 1)[0].isupper() else a for a in r.command)


def command_for_note(lang: str, r: ServingResult) -> str:
    """As asked it does not start: the command is the change's that does, said under it."""
    what = {"serving.change.fp8_kv_cache": _(lang, "FP8 KV cache"),
            "serving.change.combined": _(lang, "FP8 weights and FP8 KV cache"),
            "serving.change.int4_weights": _(lang, "4-bit weights"),
            "serving.change.fp8_weights": _(lang, "FP8 weights")}.get(r.command_for or "")
    more = next((c for c in r.changes if c.key == "serving.change.arrangement"), None)
    if r.command_for == "serving.change.arrangement" and more is not None:
        p = more.params
        return _(lang, "As asked it does not start here: the command is for %(count)s×%(gpu)s (TP %(tp)s), the "
                       "arrangement that does.") % {
            "count": p.get("count"), "gpu": p.get("gpu"), "tp": p.get("tensor_parallel")}
    if not what:
        return ""
    return _(lang, "As asked it does not start here; the command runs the change that does: %(what)s.") % {"what": what}


def pools_command_note(lang: str, r: ServingResult) -> str:
    """Disaggregated pools: what the other role runs and what sits in front."""
    if r.load is None or r.load.disaggregation is None or r.settings is None:
        return ""
    if r.settings.engine == "sglang":
        return _(lang, "That is a prefill instance; decode instances run the same with --disaggregation-mode decode, "
                       "and a router in front: python -m sglang_router.launch_router --pd-disaggregation --prefill "
                       "http://PREFILL:30000 --decode http://DECODE:30000.")
    if r.settings.engine == "vllm":
        return _(lang, "Prefill and decode instances run the same command (kv_role kv_both); a proxy in front sends "
                       "each prompt to a prefill instance with max_tokens 1, then streams from a decode instance "
                       "(vLLM's disaggregated-serving proxy example, or llm-d).")
    return ""


def serving_view(lang: str, a: ServingAnswer) -> AnswerView:
    """The template's data for a serving answer."""
    r = a.serving
    assert r is not None
    mark, title = headline(lang, a)
    rented = rental_lead(lang, a)
    shown_mark, shown_title = mark, title
    if rented:  # «сколько стоит … в месяц»: the period's price leads, the engine's headline after it
        shown_title = rented.removeprefix("💰 ") + "\n" + (mark + " " if mark else "") + title
        shown_mark = "💰"
        title = rented.split("\n", 1)[0].removeprefix("💰 ")  # the plain line: the period's price
    line = summary(lang, r)
    ready = r.memory is not None and r.kv is not None and r.gpu is not None
    errors = [error_line(lang, e.key, e.params) for e in r.errors]
    if not ready and errors:
        errors = errors[1:]  # the first is the headline
    errors = [said_note_text(lang, n) or note_line(lang, n.key, r) for n in a.notes] + errors
    model: dict[str, Any] = {
        "mark": shown_mark, "verdict": verdict(a), "headline": shown_title, "summary": line, "ready": ready,
        "tight": a.verdict == "tight",
        "model_known": r.model_known, "errors": errors, "shape_ref": _shape_ref(r),
        "table": table(lang, r) if ready else [], "kv": kv_line(lang, r) if ready else "",
        "speed": speed_line(lang, r) if ready else "", "price": price_line(lang, r) if ready else "",
        "hosted": hosted_line(lang, a) if ready else "",
        "pools": pools_line(lang, r.load) if ready else "",
        "changes": [change_line(lang, c, r.users) for c in shown_changes(r)],
        "compared": compared_lines(lang, r),
        "assumptions": "; ".join(x for x in (assumption_line(lang, s, r.settings.family if r.settings else "")
                                              for s in _assumptions(r)) if x) or "—",
        # the one place the unit is said: the table's GB are the training table's, 2^30 bytes (vLLM logs GiB)
        "units": _(lang, "GB here are 2^30 bytes (GiB, as vLLM's start-up log counts them)") if ready else "",
        "command": command_text(r) if ready else "",
        "command_note": " ".join(x for x in (_(lang, "No published checkpoint in this format is known to us: "
                                                     "replace the your-org/… placeholder with one from the Hugging "
                                                     "Face Hub before running.")
                                               if ready and any(a.startswith("your-org/") for a in r.command)
                                               else command_for_note(lang, r) if ready else "",
                                               pools_command_note(lang, r) if ready else "") if x),
    }
    return AnswerView(model, title, line, answer_line(lang, r) if ready else "")


def shown_changes(r: ServingResult, most: int = 6) -> list[Change]:
    """The changes the reply lists: up to `most` on the asked GPUs, then other arrangements to fill `most`, and at
    least one of them (renting more is always said when the engine found an arrangement)."""
    here = [c for c in r.changes if c.key != "serving.change.arrangement"]
    other = [c for c in r.changes if c.key == "serving.change.arrangement"]
    return here[:most] + other[:max(1, most - len(here))]


SERVING_NOTES = {
    "concurrency out of range": N_("number of users out of range (1–1,000,000): ignored"),
    "parallelism out of range": N_("parallelism degree out of range: ignored"),
}


def note_line(lang: str, key: str, r: ServingResult) -> str:
    """Something the question said that could not be used, and what the answer used instead."""
    text = SERVING_NOTES.get(key) or NOTE_TEXTS.get(key)
    if text is None:
        return key
    return _(lang, text) % {"seq_len": num(lang, r.context), "batch_size": r.users or 1, "lora_rank": ""}


def _shape_ref(r: ServingResult) -> str:
    """The catalog model an unknown model's shape is borrowed from ("" for a known model)."""
    return next((str(x.value) for x in r.assumptions if x.key == "architecture"), "")


def _assumptions(r: ServingResult) -> list[Assumption]:
    out = list(r.assumptions)
    if r.settings is not None:
        out.insert(0, Assumption(key="engine_version", value=r.settings.version or ""))
    return out


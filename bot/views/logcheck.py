"""The plain-text reply to `check` of a start-up log: the settings read, then ours beside theirs per component,
in the reader's language (the CLI prints it in English; the bot in the chat's language)."""

from __future__ import annotations

import html
from typing import Any

from bot.views.catalogs import N_, _
from bot.views.messages import t
from bot.views.serving_words import assumption_line, error_line

# the components engine.configs.logcheck compares, by the label it gives them
COMPONENT_WORDS = {"weights": N_("weights"), "activation peak": N_("activation peak"),
                   "non-torch memory": N_("non-torch memory"), "CUDA graphs": N_("CUDA graphs"),
                   "KV pool": N_("KV pool"), "KV tokens": N_("KV tokens"), "max concurrency": N_("max concurrency")}
# the reasons' templates (engine/configs/logcheck.py MECHANISM, UPSTREAM, FOLLOWS_POOL, GRAPHS_FITTED), marked here
# for extraction: the engine hands them over with their parameters, this view translates them
REASONS = (
    N_("the rank's share of the weights in %(fmt)s (vLLM / SGLang pad the vocabulary to 64 x TP)"),
    N_("profile run: forward of max_num_batched_tokens (%(mnbt)s) tokens and the sampler over min(max_num_seqs, "
       "max_num_batched_tokens) rows of fp32 logits"),
    N_("profile run: max_num_seqs (%(mns)s) dummy sequences through the sampler (fp32 logits of the vocabulary)"),
    N_("compute buffer: the larger of the fp32 logits of n_ubatch (512) outputs and, without flash attention, one "
       "layer's fp32 attention scores (n_ctx x n_ubatch x heads)"),
    N_("the engine's warm-up batch"),
    N_("NCCL / custom all-reduce buffers under TP, cuBLAS workspace"),
    N_("graph pool of the captured batch sizes (counted inside the budget)"),
    N_("graph pool of the captured batch sizes (taken after the KV pool, outside it)"),
    N_("total x gpu_memory_utilization (%(util)s) minus weights, activation peak and non-torch memory"),
    N_("total x mem_fraction_static minus what the process holds after loading"),
    N_("free memory after the warm-up batch less the release's margin (0.95 of it before 2.4, 0.90 in 2.4, a tenth of "
       "the card from 3.0), within cuda_memory_fraction"),
    N_("n_ctx x layers x K+V bytes, allocated whole at start (not paged)"),
    N_("the KV cache the engine allocates"),
    N_("pool / (bytes per token: %(bpt)s B), in blocks of 16"),
    N_("KV tokens / blocks one max_model_len (%(mml)s) request needs"),
    N_("the pool is what is left, so it moves against %(components)s"),
    N_("follows the KV pool (%(gib)s GiB)"),
    N_("fitted per layer on vLLM 0.19 logs (serving.toml [vllm.cuda_graphs])"),
)
# the notes and errors engine.configs.logcheck.check_log writes in English
NOTES = (N_("a memory printout without the model or settings: paste the engine's start-up log too"),
         N_("the log does not name the model"), N_("no estimate"))


def _num(v: Any) -> str:
    if isinstance(v, float) and v >= 1000:
        return f"{v:,.0f}"
    return f"{v:g}" if isinstance(v, (int, float)) else str(v)


def gib(lang: str, v: float) -> str:
    signed = f"{v:+.2f}"
    return t(lang, "%(v)s GiB", v=signed)


def component_word(lang: str, label: str) -> str:
    return _(lang, COMPONENT_WORDS[label]) if label in COMPONENT_WORDS else label


def reason_text(lang: str, row: dict[str, Any]) -> str:
    """A row's reason in the reader's language, from the templates the engine handed over."""
    parts = row.get("reason_parts")
    if not parts:
        return str(row.get("reason") or "")
    out = []
    for text, args in parts:
        if "components" in args:
            args = {"components": ", ".join(component_word(lang, k) + " (" + gib(lang, v) + ")"
                                            for k, v in args["components"])}
        args = {k: "?" if v is None else v for k, v in args.items()}
        worded = _(lang, text) if text in REASONS else text  # a template this view does not know stays as sent
        out.append(worded % args if args else worded)
    return "; ".join(out)


def log_summary(out: dict[str, Any], lang: str = "en") -> str:
    kind = out.get("format", "log:?").split(":", 1)[1]
    s = out.get("settings") or {}
    head = t(lang, "%(engine)s log", engine=kind)
    if out.get("engine_version"):
        head += ", " + t(lang, "version %(v)s", v=out["engine_version"])
    lines = [head]
    shown = [f"{k}={_num(v)}" for k, v in s.items() if k not in ("enforce_eager",)]
    if shown:
        lines.append(t(lang, "settings: %(list)s", list=", ".join(shown)))
    rows = out.get("components") or []
    family = (out.get("estimate") or {}).get("engine_family") or ""
    if rows:
        width = max(18, *(len(component_word(lang, r["component"])) + 2 for r in rows))
        heads = (_(lang, "component"), _(lang, "theirs"), _(lang, "ours"), _(lang, "diff"), _(lang, "reason"))
        lines.append(f"{heads[0]:<{width}}{heads[1]:>12}{heads[2]:>12}{heads[3]:>8}  {heads[4]}")
        for r in rows:
            diff = f"{r['diff_pct']:+.0f}%" if r.get("diff_pct") is not None else "-"
            lines.append(f"{component_word(lang, r['component']):<{width}}{_num(r['theirs']):>12}"
                         f"{_num(r['ours']):>12}{diff:>8}  {reason_text(lang, r)}")
    elif out.get("measured"):
        lines.append(t(lang, "measured: %(list)s",
                       list=", ".join(f"{k}={_num(v)}" for k, v in out["measured"].items())))
    for a in out.get("assumptions") or []:
        lines.append(t(lang, "assumed: %(v)s", v=assumption_line(lang, a, family) or a))
    if out.get("note"):
        lines.append(t(lang, out["note"]) if out["note"] in NOTES else str(out["note"]))
    if out.get("error"):
        err = str(out["error"])
        worded = (error_line(lang, err, {"model": s.get("model", "")}) if err.startswith("serving.error.")
                  else t(lang, err) if err in NOTES else err)
        lines.append(t(lang, "error: %(v)s", v=worded or err))
    return "\n".join(lines)


def log_reply_html(lang: str, out: dict[str, Any]) -> str:
    """The bot's reply: a translated heading, then the table as preformatted text (secrets and paths already gone)."""
    kind = out.get("format", "log:?").split(":", 1)[1]
    head = "🔎 <b>" + t(lang, "Start-up log of %(engine)s read back: our estimate beside the measured figures",
                        engine=html.escape(kind)) + "</b>"
    return head + "\n<pre>" + html.escape(log_summary(out, lang)) + "</pre>"

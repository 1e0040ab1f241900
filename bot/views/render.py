"""Answer → text: the jinja2 template with gettext catalogs and Babel number formats.

The engine hands over data (numbers, names, message keys); this module only words and lays it out.
Tables stay within 34 characters so that they read in a phone's chat bubble.
"""

from __future__ import annotations

import datetime
import gettext
import html
import io
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from babel.numbers import get_decimal_symbol, get_group_symbol
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from pydantic import BaseModel, Field

from engine.catalog import shape_reference
from engine.planner import HEADROOM, Comparison, Monthly, Note, Plan, PlanResult, PriceOptions, Suggestion, plan
from engine.pricing import Currency
from engine.scenario import ScenarioError
from engine.schema import Language, Request
from engine.speed import gpus_per_node

TEMPLATES = Path(__file__).parent / "templates"
LOCALES = Path(__file__).resolve().parents[2] / "locales"
TABLE_WIDTH = 34
TAG = re.compile(r"<[^>]{1,40}>")
LANGUAGES = ("en", "ru")
Tier = Literal["cheapest", "typical", "premium"]
RankBy = Literal["cost", "time"]


@cache
def translations(lang: str) -> gettext.NullTranslations:
    """The compiled catalog when the build made one, else compiled from the .po in memory."""
    base = LOCALES / lang / "LC_MESSAGES"
    mo = base / "messages.mo"
    if mo.exists():
        with mo.open("rb") as f:
            return gettext.GNUTranslations(f)
    po = base / "messages.po"
    if not po.exists():
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with po.open("rb") as f:
        catalog = read_po(f, locale=lang)
    buf = io.BytesIO()
    write_mo(buf, catalog)
    buf.seek(0)
    return gettext.GNUTranslations(buf)


@cache
def environment(lang: str) -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined, auto_reload=False,
                      extensions=["jinja2.ext.i18n"], trim_blocks=False, lstrip_blocks=False)
    env.install_gettext_translations(translations(lang), newstyle=False)  # type: ignore[attr-defined]
    env.globals["num"] = lambda x: num(lang, x)
    return env


def N_(message: str) -> str:
    """Marks a message chosen at run time for extraction (bot/i18n.py); translated where it is shown."""
    return message


def _(lang: str, message: str) -> str:
    return translations(lang).gettext(message)


def _n(lang: str, singular: str, plural: str, n: float) -> str:
    return translations(lang).ngettext(singular, plural, int(n))


@cache
def _symbols(lang: str) -> tuple[str, str]:
    """The language's group and decimal marks, as Babel (CLDR) has them: ("," ".") / ("\u00a0" ",")."""
    return get_group_symbol(locale=lang), get_decimal_symbol(locale=lang)


def decimal(lang: str, value: float, places: int, keep_zeros: bool = False) -> str:
    """Babel's "#,##0.##…" (grouped, at most `places` decimals, no trailing zeros unless `keep_zeros`) at
    str.format speed: an answer formats dozens of numbers, and Babel's pattern engine was a fifth of its time."""
    text = f"{value:,.{places}f}"
    if places and not keep_zeros:
        text = text.rstrip("0").rstrip(".")
    if text == "-0":
        text = "0"
    group, point = _symbols(lang)
    return text.replace(",", "\x00").replace(".", point).replace("\x00", group)


def num(lang: str, value: float) -> str:
    return decimal(lang, value, 1)


COMPONENTS = ("weights", "adapters", "gradients", "optimizer", "activations", "logits", "kv_cache", "overhead",
              "cuda_context")


def component_label(lang: str, key: str) -> str:
    labels = {
        "weights": _(lang, "weights"), "adapters": _(lang, "adapters"), "gradients": _(lang, "gradients"),
        "optimizer": _(lang, "optimizer"), "activations": _(lang, "activations"), "logits": _(lang, "logits"),
        "kv_cache": _(lang, "KV cache"), "overhead": _(lang, "allocator"), "cuda_context": _(lang, "CUDA context"),
    }
    return labels[key]


def memory_table(lang: str, result: PlanResult) -> list[str]:
    b = result.breakdown.model_dump()
    rows = []
    for key in COMPONENTS:
        if b[key] >= 0.05:
            rows.append((component_label(lang, key), num(lang, b[key])))
    total = b["total"] + b["cuda_context"]
    rows.append((_(lang, "total, GB"), num(lang, total)))
    lines = []
    for i, (label, value) in enumerate(rows):
        if i == len(rows) - 1:
            lines.append("─" * TABLE_WIDTH)
        lines.append(f"{label[: TABLE_WIDTH - 9]:<{TABLE_WIDTH - 8}}{value:>8}")
    return lines


@cache  # Babel parses its date patterns on every call; an answer has one of a few dozen dates
def date_text(lang: str, iso: str) -> str:
    """"2026-11-09" → "9 ноября 2026 г." / "November 9, 2026"; "2026-06" → "июнь 2026 г." / "June 2026"."""
    from babel.dates import format_date, format_skeleton

    parts = iso.split("-")
    try:
        if len(parts) == 3:
            return format_date(datetime.date(*map(int, parts)), format="long", locale=lang)
        if len(parts) == 2:
            return format_skeleton("yMMMM", datetime.date(int(parts[0]), int(parts[1]), 1), locale=lang)
    except ValueError:
        pass
    return iso


def hours_text(lang: str, hours: float) -> str:
    if round(hours * 60) < 60:
        minutes = max(1, round(hours * 60))
        return f"{minutes} " + _n(lang, "minute", "minutes", minutes)
    shown = round(hours) if hours >= 10 else round(hours, 1)
    if float(shown).is_integer():
        return f"{num(lang, shown)} " + _n(lang, "hour", "hours", shown)
    return f"{num(lang, shown)} " + _(lang, "hours (fraction)")


def _money_places(value: float) -> int:
    return 0 if value >= 100 else (2 if value >= 0.1 else 3)


def _with_symbol(lang: str, digits: str, currency: str) -> str:
    symbol = "₽" if currency == "RUB" else "$"
    return f"{symbol}{digits}" if lang == "en" and symbol == "$" else f"{digits}\u00a0{symbol}"  # no break


def money(lang: str, value: float, currency: str) -> str:
    """"$1,234" / "1 234 $" / "1 234 ₽": Babel's digits, the symbol where each language puts it; cents
    below $100 ("$0.40", not "$0.4")."""
    places = _money_places(value)
    return _with_symbol(lang, decimal(lang, value, places, keep_zeros=places > 0), currency)


def money_range(lang: str, low: float, high: float, currency: str) -> str:
    """"$57–142" / "57–142 $": both ends at the precision of the smaller, the symbol once; one value when
    the ends meet."""
    places = _money_places(low)
    lo = decimal(lang, low, places, keep_zeros=places > 0)
    hi = decimal(lang, high, places, keep_zeros=places > 0)
    return _with_symbol(lang, lo if lo == hi else f"{lo}–{hi}", currency)


def plan_money(lang: str, p: Plan) -> str:
    """The whole run as a range with the picked figure, else the price per hour of all its GPUs."""
    if p.cost:
        return money_range(lang, p.cost["min"], p.cost["max"], p.currency)
    if p.per_hour is not None:
        return money(lang, p.per_hour, p.currency) + _(lang, "/h")
    return ""


def technique_label(lang: str, key: str) -> str:
    labels = {"gradient_checkpointing": _(lang, "checkpointing"), "micro_batch_1": _(lang, "micro-batch 1"),
              "fused_loss": _(lang, "fused loss"),
              "optimizer_8bit": "8-bit Adam", "zero3": "ZeRO-3", "cpu_offload": _(lang, "CPU offload")}
    return labels.get(key, key)


def plan_time(lang: str, p: Plan) -> str:
    if p.hours is not None:
        return hours_text(lang, p.hours)
    if p.hours_per_100m_tokens is not None:
        return hours_text(lang, p.hours_per_100m_tokens) + " / 100M " + _(lang, "tokens")
    if p.tokens_per_second is not None:
        tps = round(p.tokens_per_second)
        return _n(lang, "%(tps)s token/s", "%(tps)s tokens/s", tps) % {"tps": num(lang, tps)}
    return ""


def techniques_text(lang: str, p: Plan) -> str:
    """The plan's techniques, the host memory an offload needs, and what they cost in time."""
    parts = [", ".join(technique_label(lang, t) for t in p.techniques)] if p.techniques else []
    if p.cpu_ram_gb >= 0.05:
        parts.append(_(lang, "%(gb)s GB of CPU RAM per machine") % {"gb": num(lang, p.cpu_ram_gb)})
    if p.techniques and p.slowdown >= 1.05:
        parts.append(_(lang, "%(pct)s%% slower") % {"pct": num(lang, round((p.slowdown - 1) * 100))})
    return "; ".join(parts)


BARE_GPU = re.compile(r"(\d+(?:\.\d+)?) GB GPU")


def gpu_name(lang: str, name: str) -> str:
    """A catalog name as it is; a GPU known only by its memory ("24 GB GPU") worded in the reader's language."""
    bare = BARE_GPU.fullmatch(name)
    return _(lang, "%(gb)s GB GPU") % {"gb": num(lang, float(bare.group(1)))} if bare else name


def plan_view(lang: str, p: Plan) -> dict[str, Any]:
    return {"gpu": gpu_name(lang, p.gpu), "count": p.count, "money": plan_money(lang, p), "time": plan_time(lang, p),
            "techniques": techniques_text(lang, p)}


def comparison_line(lang: str, c: Comparison) -> str:
    """One GPU of a side-by-side comparison: fits?, headroom, time, cost per 1M tokens."""
    name = f"{c.count}×{gpu_name(lang, c.gpu)}"
    if not c.fits or c.plan is None:
        return "❌ " + _(lang, "%(gpu)s: needs %(need)s GB of %(total)s") % {
            "gpu": name, "need": num(lang, c.need_gb), "total": num(lang, c.memory_gb)}
    p = c.plan
    if p.techniques:
        name += f" ({techniques_text(lang, p)})"
    parts = [_(lang, "%(gb)s GB free") % {"gb": num(lang, max(p.headroom_gb, 0))}]
    if plan_time(lang, p):
        parts.append(plan_time(lang, p))
    if p.cost_per_1m_tokens is not None:
        parts.append(_(lang, "%(money)s per 1M tokens") % {"money": money(lang, p.cost_per_1m_tokens, p.currency)})
    return f"✅ {name}: " + " · ".join(parts)


NOTE_TEXTS = {
    "model size out of range": N_("model size out of range: ignored"),
    "context length out of range": N_("context length out of range: the default %(seq_len)s is used"),
    "batch size out of range": N_("batch size out of range: the default %(batch_size)s is used"),
    "LoRA rank out of range": N_("LoRA rank out of range: the default %(lora_rank)s is used"),
    "epochs out of range": N_("number of epochs out of range: ignored"),
    "amount of data out of range": N_("amount of data out of range: ignored"),
    "GPU memory out of range": N_("GPU memory out of range: ignored"),
    "GPU count out of range": N_("GPU count out of range (1–100 000): one GPU is used"),
    "GPU count not read": N_("a bare number over 1024 before a GPU is not read as a count: one GPU is used "
                             "(write it as 2048×H100)"),
    "too long": N_("the message is too long: only its beginning was read"),
}


def note_text(lang: str, n: Note, scenario: Any) -> str:
    params = {"seq_len": scenario.seq_len, "batch_size": scenario.batch_size, "lora_rank": scenario.lora_rank}
    if n.key == "unknown_gpu" and n.params.get("others"):
        return _(lang, "%(name)s is not in the catalog: left out") % {"name": n.params.get("name", "")}
    if n.key == "unknown_gpu":
        return _(lang, "%(name)s is not in the catalog: all GPUs are compared instead") % {
            "name": n.params.get("name", "")}
    if n.key == "price":
        return _(lang, "your price %(value)s for %(gpu)s is not usable: market prices are used") % {
            "value": _number_or_text(lang, n.params.get("value")), "gpu": n.params.get("gpu")}
    if n.key == "rate":
        return _(lang, "the rouble rate %(value)s is not usable: the Bank of Russia rate is used") % {
            "value": _number_or_text(lang, n.params.get("value"))}
    text = NOTE_TEXTS.get(n.key)
    return _(lang, text) % params if text else n.key


def _number_or_text(lang: str, value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return num(lang, value)
    return str(value)


OPTIMIZER_NAMES = {"adamw": "AdamW", "paged_adamw": "paged AdamW", "adamw_8bit": "8-bit AdamW",
                   "paged_adamw_8bit": "paged 8-bit AdamW", "sgd": "SGD", "adafactor": "Adafactor", "lion": "Lion"}


def assumption_text(lang: str, item: str) -> str:
    """One default the answer relied on ("seq_len=2048"), worded in the reader's language."""
    key, _sep, value = item.partition("=")
    on = value == "on"
    switch = {"gradient_checkpointing": (N_("gradient checkpointing on"), N_("gradient checkpointing off")),
              "flash_attention": (N_("FlashAttention on"), N_("FlashAttention off")),
              "fused_loss": (N_("fused loss on"), N_("fused loss off"))}
    if key in switch:
        return _(lang, switch[key][0] if on else switch[key][1])
    match key:
        case "architecture":
            return _(lang, "architecture %(v)s") % {"v": value.replace("like ", _(lang, "like") + " ")}
        case "method":
            names = {"full": _(lang, "full fine-tuning"), "inference": _(lang, "inference"), "lora": "LoRA",
                     "qlora": "QLoRA"}
            return _(lang, "method %(v)s") % {"v": names.get(value, value)}
        case "bits":
            return _(lang, "%(v)s-bit weights") % {"v": value}
        case "optimizer":
            return _(lang, "optimizer %(v)s") % {"v": OPTIMIZER_NAMES.get(value, value)}
        case "mixed_precision":
            return _(lang, "bf16 mixed precision with fp32 master weights") if value == "amp" else _(lang, "pure bf16")
        case "lora_rank":
            return _(lang, "LoRA rank %(v)s") % {"v": value}
        case "lora_targets":
            return _(lang, "LoRA on all linear layers") if value == "all_linear" else _(lang, "LoRA on %(v)s") % {
                "v": value}
        case "seq_len":
            n = int(value) if value.isdigit() else 5
            return _n(lang, "context %(v)s token", "context %(v)s tokens", n) % {"v": value}
        case "batch_size":
            return _(lang, "micro-batch %(v)s") % {"v": value}
        case "sharding":
            return _(lang, "%(v)s across the GPUs") % {"v": value.upper().replace("ZERO", "ZeRO-")}
    return item


def monthly_text(lang: str, m: Monthly) -> str:
    text = _(lang, "By the month: %(gpu)s for %(month)s a month pays off from %(hours)s h of use a month") % {
        "gpu": m.gpu, "month": money(lang, m.monthly_price, m.currency), "hours": num(lang, round(m.break_even_hours))}
    if m.run_hours is not None:
        text += "; " + _(lang, "this run takes %(hours)s on %(gpus)s") % {
            "hours": hours_text(lang, m.run_hours), "gpus": f"{m.count}×{m.gpu}"}
    return text + "."


def suggestion_text(lang: str, s: Suggestion, inference: bool = False) -> str:
    mark = " ✓" if s.fits else ""
    return f"{_change_text(lang, s.key, s.params, inference)}: −{num(lang, s.saves_gb)} {_(lang, 'GB')}{mark}"


def _change_text(lang: str, key: str, p: dict[str, Any], inference: bool) -> str:
    match key:
        case "gradient_checkpointing":
            return _(lang, "gradient checkpointing")
        case "optimizer_8bit":
            return _(lang, "8-bit optimizer")
        case "fused_loss":
            return _(lang, "fused/chunked loss")
        case "cpu_offload":
            return _(lang, "offload optimizer state to CPU RAM")
        case "method":
            return _(lang, "switch to %(to)s") % {"to": {"lora": "LoRA", "qlora": "QLoRA"}.get(p.get("to", ""), "")}
        case "bits":
            return _(lang, "weights in %(to)s bits") % {"to": p.get("to")}
        case "shorter_context":
            return _(lang, "context %(from)s → %(to)s") % {"from": p.get("from"), "to": p.get("to")}
        case "smaller_batch" if inference:
            return _(lang, "concurrent sequences %(from)s → 1") % {"from": p.get("from")}
        case "smaller_batch":
            return _(lang, "micro-batch %(from)s → 1 with gradient accumulation") % {"from": p.get("from")}
        case "more_gpus" if inference:
            return _(lang, "%(count)s GPUs, the weights split across them") % {"count": p.get("count")}
        case "more_gpus":
            return _(lang, "%(count)s GPUs with ZeRO-3") % {"count": p.get("count")}
    return key


def method_label(lang: str, result: PlanResult) -> str:
    s = result.scenario
    bits = _(lang, "%(bits)s-bit") % {"bits": s.bits}
    if s.method == "qlora":
        return f"QLoRA {bits} r{s.lora_rank}"
    if s.method == "lora":
        return f"LoRA r{s.lora_rank}"
    if s.method == "inference":
        return _(lang, "inference, %(bits)s") % {"bits": bits}
    return _(lang, "full fine-tuning")


def view_model(lang: str, result: PlanResult, asked_gpu: tuple[str, float, int] | None) -> dict[str, Any]:
    b = result.breakdown
    need = b.total + b.cuda_context
    verdict = "estimate"
    if result.comparison:
        verdict = "compare"
    elif asked_gpu is not None and result.asked_fits:
        # under the planner's headroom it fits, but a longer sample or an allocator spike may not
        verdict = "tight" if need > asked_gpu[1] * 0.98 * (1 - HEADROOM) else "fits"
    elif asked_gpu is not None:
        verdict = "no_fit"
    plans = [plan_view(lang, p) for p in result.plans[:3]]
    dates = sorted({p.price_date for p in [*result.plans, *result.alternatives]
                    if p.price_date and p.price_date != "given"})
    cheaper = result.alternatives[0] if result.asked_fits and result.alternatives else None
    s = result.scenario
    return {
        "error": False, "verdict": verdict, "need_gb": need,
        "gpu_label": f"{asked_gpu[2]}×{gpu_name(lang, asked_gpu[0])}" if asked_gpu else "",
        "memory_gb": asked_gpu[1] if asked_gpu else 0,
        "model_label": s.arch.name if not s.arch.known else f"{s.arch.name} ({num(lang, s.arch.params / 1e9)}B)",
        "model_known": s.arch.known, "shape_ref": shape_reference(s.arch.params),
        "method_label": method_label(lang, result), "seq_len": s.seq_len, "batch_size": s.batch_size,
        "gpu_count": s.gpu_count, "table": memory_table(lang, result), "plans": plans,
        "suggestions": [suggestion_text(lang, x, s.method == "inference") for x in result.suggestions[:4]],
        "cpu_ram_gb": b.cpu_ram * min(s.gpu_count, gpus_per_node()),
        "assumptions": "; ".join(assumption_text(lang, x) for x in s.assumptions) or "—",
        "price_date": date_text(lang, dates[-1]) if dates else "",
        "rank_by": result.rank_by, "named": asked_gpu is not None,
        "asked_gpu": gpu_name(lang, asked_gpu[0]) if asked_gpu else "",
        "comparison": [comparison_line(lang, c) for c in result.comparison],
        "compared": (" " + _(lang, "vs") + " ").join(f"{c.count}×{gpu_name(lang, c.gpu)}" for c in result.comparison),
        "alternatives": [] if cheaper else [plan_view(lang, p) for p in result.alternatives],
        "cheaper": plan_view(lang, cheaper) if cheaper else None,
        "notes": [note_text(lang, n, s) for n in result.notes],
        "monthly": monthly_text(lang, result.monthly) if result.monthly and not result.comparison else "",
    }


class AnswerOptions(BaseModel):
    """How a chat wants its answers: the bot fills this from chat settings and the keyboard."""

    lang: Language | None = None  # forced language; None: the question's own, then default_lang
    default_lang: Language = "en"
    currency: Currency = "USD"
    tier: Tier = "typical"
    prices: dict[str, float] = Field(default_factory=dict)  # own price per GPU-hour, in `currency`
    rank_by: RankBy | None = None  # None: as the question asks ("the fastest"), else by cost
    usd_rub: float | None = None  # None: the catalog's Bank of Russia rate

    def price_options(self) -> PriceOptions:
        return PriceOptions(currency=self.currency, pick=self.tier, overrides=self.prices, usd_rub=self.usd_rub,
                            rank_by=self.rank_by)


@dataclass(frozen=True)
class RenderedAnswer:
    lang: str
    html: str  # the whole reply, Telegram HTML, under 4096 characters
    title: str  # one plain line: the verdict (inline result title, chart caption)
    request: Request | None  # None when nothing could be read
    result: PlanResult | None


def render_request(request: Request, options: AnswerOptions | None = None) -> RenderedAnswer:
    """The complete answer to an already parsed (or keyboard-altered) request."""
    from engine.estimate import candidate_gpus

    options = options or AnswerOptions()
    language = options.lang or request.language or options.default_lang
    template = environment(language).get_template("answer.html.j2")
    if request.model is None:
        return _not_understood(language)
    try:
        result = plan(request, options.price_options())
    except ScenarioError:
        return _not_understood(language)
    named = candidate_gpus(request) if request.gpus else []
    a = view_model(language, result, named[0] if named else None)
    body = template.render(a=a).strip()
    verdict_line = html.unescape(TAG.sub("", body.split("\n", 1)[0]))
    return RenderedAnswer(language, body, verdict_line.split(" ", 1)[-1], request, result)  # without its emoji


@cache
def _not_understood(language: str) -> RenderedAnswer:
    body = environment(language).get_template("answer.html.j2").render(a={"error": True}).strip()
    return RenderedAnswer(language, body, _(language, "Not understood"), None, None)


def render_text(text: str, options: AnswerOptions | None = None) -> RenderedAnswer:
    from engine.parse import parse

    return render_request(parse(text), options)


def render_answer(text: str, lang: str | None = None) -> tuple[str, str]:
    """(language, HTML) of the complete answer to a question."""
    answer = render_text(text, AnswerOptions(lang=lang) if lang in LANGUAGES else None)
    return answer.lang, answer.html




def render_answer_text(text: str, options: AnswerOptions | None = None, fmt: str = "text") -> str:
    body = render_text(text, options).html
    if fmt == "html":
        return body
    return html.unescape(TAG.sub("", body))

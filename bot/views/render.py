"""Answer → Telegram HTML (and plain text): the jinja2 templates with the gettext catalogs.

The engine hands over an Answer (numbers, names, message keys); `view.py` words it, the template lays it out.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from bot.views.catalogs import N_, _, translations
from bot.views.formats import money, num
from bot.views.talk import market_price_text, rental_lines
from bot.views.view import view_model
from bot.views.words import error_lines
from engine.schema import Answer, ErrorAnswer, MarketAnswer, ModelsAnswer, ServingAnswer

if TYPE_CHECKING:
    from jinja2 import Environment

MESSAGE_LIMIT = 4096  # Telegram's
TAG = re.compile(r"<[^>]{1,40}>")


@cache
def environment(lang: str) -> Environment:
    from jinja2 import Environment, PackageLoader, StrictUndefined  # only an answer laid out by a template needs it

    from bot.views.template_cache import template_cache

    env = Environment(loader=PackageLoader("bot.views", "templates"), autoescape=True, undefined=StrictUndefined,
                      auto_reload=False, bytecode_cache=template_cache(),
                      extensions=["jinja2.ext.i18n"], trim_blocks=False, lstrip_blocks=False)
    env.install_gettext_translations(translations(lang), newstyle=False)  # type: ignore[attr-defined]
    env.globals["num"] = lambda x: num(lang, x)
    return env


@dataclass(frozen=True)
class RenderedAnswer:
    lang: str
    html: str  # the whole reply, Telegram HTML, under 4096 characters
    title: str  # one plain line: the verdict (inline result title, chart caption)
    description: str  # one plain line: the answer to what was asked (inline result description)
    answer: Answer

    @property
    def understood(self) -> bool:
        return not isinstance(self.answer, ErrorAnswer)


def render(a: Answer, lang: str) -> RenderedAnswer:
    """The complete reply to an answer in `lang`."""
    if isinstance(a, MarketAnswer):
        return _market(lang, a)
    if isinstance(a, ModelsAnswer):
        return _models(lang, a)
    if isinstance(a, ErrorAnswer):
        return _not_understood(lang, a)
    if isinstance(a, ServingAnswer):
        return _serving(lang, a)
    view = view_model(lang, a)
    body = environment(lang).get_template("answer.html.j2").render(a=view.model).strip()
    return RenderedAnswer(lang, body, view.headline, view.answer_line or view.summary, a)


def _serving(lang: str, a: ServingAnswer) -> RenderedAnswer:
    """A serving answer; over Telegram's limit (a long model id, many changes) the changes go first, then the
    assumptions."""
    from bot.views.serving_view import serving_view  # the serving wording: only a serving answer needs it

    view = serving_view(lang, a)
    template = environment(lang).get_template("serving.html.j2")
    model = dict(view.model)
    body = template.render(a=model).strip()
    for key, short in (("changes", model["changes"][:2]), ("assumptions", "…")):
        if len(body) < MESSAGE_LIMIT:
            break
        model[key] = short
        body = template.render(a=model).strip()
    return RenderedAnswer(lang, body, view.headline, view.answer_line or view.summary, a)


def _market(lang: str, a: MarketAnswer) -> RenderedAnswer:
    """"сколько стоит T4 в час": the GPU's market range, as /price shows it (engine.answer.market_answer)."""
    own = money(lang, a.own_price, a.currency) + _(lang, "/h") if a.own_price is not None else None
    body = market_price_text(lang, a.market.model_dump(), own)
    if a.rental is not None:
        body = "\n".join([*rental_lines(lang, a.rental, a.market.gpu, a.currency, bool(a.request.rent_monthly)),
                          body])
    line = plain(body.split("\n", 1)[0])
    return RenderedAnswer(lang, body, line, line, a)


def _models(lang: str, a: ModelsAnswer) -> RenderedAnswer:
    """«какую модель можно запустить на 4090»: the largest model of typical shape each row holds
    (engine.answer.models_fit)."""
    from bot.views.models_view import models_lines

    lines = models_lines(lang, a)
    return RenderedAnswer(lang, "\n".join(lines), plain(lines[0]), plain(lines[1] if len(lines) > 1 else lines[0]), a)


def _not_understood(lang: str, a: ErrorAnswer) -> RenderedAnswer:
    """No estimate: why, when the engine says (a negative size, CP over more GPUs than named), and the usual hint
    when the model size is what is missing."""
    reasons = [f"⚠️ {html.escape(line, quote=False)}" for line in error_lines(lang, a.errors)]
    missing = any(n.key == "no_model" or n.params.get("why") in ("no_model_size", "") for n in a.errors)
    other = next((k for k in a.request.unsupported if k in NOT_LANGUAGE_MODELS), None) if missing else None
    if other is not None:  # "sdxl лора", "whisper на t4": not a language model, said so instead of "no size"
        line = "🚫 " + _(lang, NOT_LANGUAGE_MODELS[other])
        return RenderedAnswer(lang, "\n".join([*reasons, line]), _(lang, "Not supported"), plain(line), a)
    if missing and "models" in a.request.asks and not a.request.gpus:  # «какая модель лучше для кода?»
        line = "🧩 " + _(lang, "I size GPUs for models, I do not pick one by its quality. Name the GPU and I will say "
                               "which sizes fit it: %(example)s") % {
            "example": "<code>" + _(lang, "which model fits a 4090") + "</code>"}
        return RenderedAnswer(lang, "\n".join([*reasons, line]), _(lang, "Not understood"), plain(line), a)
    body = "\n".join([*reasons, *([_not_understood_html(lang)] if missing or not reasons else [])])
    return RenderedAnswer(lang, body, _(lang, "Not understood"), "", a)


NOT_LANGUAGE_MODELS = {
    "diffusion": N_("Image generators (SDXL, FLUX, Stable Diffusion) are not language models: I count memory and "
                    "time for language models only. Ask, for example, “LoRA Llama 3.1 8B on a 4090”."),
    "audio": N_("Speech models (Whisper, TTS) are not supported: I count memory and time for language models only. "
                "Ask, for example, “LoRA Llama 3.1 8B on a 4090”."),
}


@cache
def _not_understood_html(lang: str) -> str:
    return environment(lang).get_template("answer.html.j2").render(a={"error": True}).strip()


def plain(text: str) -> str:
    """Telegram HTML as plain text: tags dropped, entities decoded."""
    return html.unescape(TAG.sub("", text))

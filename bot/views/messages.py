"""The bot's own words (welcome, help, settings, toasts, errors) through the gettext catalogs.

The answer itself is `view.py`'s and `render.py`'s; this module reuses their catalogs and jinja2 environment.
"""

from __future__ import annotations

from typing import Any

from bot.views import render
from bot.views.catalogs import LANGUAGES, translations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "en": (
        "70B QLoRA on H100?",
        "LoRA Llama 3.1 8B on a 4090, 8k context",
        "Full fine-tune Qwen2.5-7B on 8×A100: how long for 100M tokens?",
    ),
    "ru": (
        "70B QLoRA на H100?",
        "LoRA Llama 3.1 8B на 4090, контекст 8k",
        "Полное дообучение Qwen2.5-7B на 8×A100: сколько часов на 100 млн токенов?",
    ),
}


def lang_of(lang: str | None) -> str:
    return lang if lang in LANGUAGES else "en"


def t(lang: str, message: str, **params: Any) -> str:
    """The translation of `message`, with %(name)s parameters filled in."""
    text = translations(lang_of(lang)).gettext(message)
    return text % params if params else text


def tn(lang: str, singular: str, plural: str, n: int, **params: Any) -> str:
    text = translations(lang_of(lang)).ngettext(singular, plural, n)
    return text % {"n": n, **params}


def template(lang: str, name: str, **context: Any) -> str:
    """One of the bot's own templates (bot/views/templates/*.html.j2), rendered as Telegram HTML."""
    env = render.environment(lang_of(lang))
    return env.get_template(name).render(lang=lang_of(lang), **context).strip()

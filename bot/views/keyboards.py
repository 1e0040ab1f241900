"""Inline keyboards: under an answer (change it in place), under /start (examples), under /settings.

Callback data stays far below Telegram's 64 bytes: an answer button carries the question's short id
(12 hex characters) and the complete state it leads to, so pressing it needs nothing else to redraw.
"""

from __future__ import annotations

from functools import lru_cache

from aiogram.filters.callback_data import CallbackData
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

from bot.views.messages import EXAMPLES, lang_of, t

METHOD_CODES = {"full": "f", "lora": "l", "qlora": "q", "inference": "i"}
CODE_METHODS = {v: k for k, v in METHOD_CODES.items()}
CONTEXTS = (2048, 8192, 32768)
GPU_COUNTS = (1, 2, 4, 8)
MARK = "✓ "
MAX_CALLBACK_BYTES = 64


class AnswerCb(CallbackData, prefix="a"):
    """The state an answer button leads to: question id, method, context, GPU count, language, action."""

    q: str
    m: str
    c: int
    n: int
    lg: str
    x: str = "r"  # r: redraw the answer, p: send the chart as a photo


class ExampleCb(CallbackData, prefix="e"):
    i: int
    lg: str


class SettingsCb(CallbackData, prefix="s"):
    k: str  # lang | cur | tier
    v: str


def _label(text: str, selected: bool) -> str:
    return MARK + text if selected else text


def pack_answer(q: str, m: str, c: int, n: int, lg: str, x: str = "r") -> str:
    """`AnswerCb(...).pack()` without building the model: every answer carries 13 of these (a test keeps
    the two identical; the values are ours, never the user's, so nothing needs escaping)."""
    return f"{AnswerCb.__prefix__}:{q}:{m}:{c}:{n}:{lg}:{x}"


@lru_cache(maxsize=256)
def _template(text: str) -> InlineKeyboardButton:
    return InlineKeyboardButton(text=text, callback_data="-")


def _button(text: str, data: str) -> InlineKeyboardButton:
    # a copy of a validated button with its own data: a third of what building one costs, 13 times an answer
    return _template(text).model_copy(update={"callback_data": data})


def answer_keyboard(qid: str, method: str, ctx: int, count: int, lang: str) -> InlineKeyboardMarkup:
    lang = lang_of(lang)
    code = METHOD_CODES.get(method, "l")

    def cb(m: str = code, c: int = ctx, n: int = count, lg: str = lang, x: str = "r") -> str:
        return pack_answer(qid, m, c, n, lg, x)

    methods = [(t(lang, "Full FT"), "f"), ("LoRA", "l"), ("QLoRA", "q"), (t(lang, "Inference"), "i")]
    rows = [
        [_button(_label(label, code == m), cb(m=m)) for label, m in methods],
        [_button(_label(f"{c // 1024}k", ctx == c), cb(c=c)) for c in CONTEXTS],
        [_button(_label(f"{n}×GPU" if n == 1 else f"{n}×", count == n), cb(n=n)) for n in GPU_COUNTS],
        [_button(_label("RU", lang == "ru"), cb(lg="ru")), _button(_label("EN", lang == "en"), cb(lg="en")),
         _button("📊 " + t(lang, "Chart"), cb(x="p"))],
    ]
    return InlineKeyboardMarkup.model_construct(inline_keyboard=rows)


def examples_keyboard(lang: str) -> InlineKeyboardMarkup:
    lang = lang_of(lang)
    return InlineKeyboardMarkup(inline_keyboard=[
        [InlineKeyboardButton(text=text, callback_data=ExampleCb(i=i, lg=lang).pack())]
        for i, text in enumerate(EXAMPLES[lang])
    ])


def tier_label(lang: str, tier: str) -> str:
    labels = {"cheapest": t(lang, "Cheapest prices"), "typical": t(lang, "Typical prices"),
              "premium": t(lang, "Premium prices")}
    return labels.get(tier, tier)


def settings_keyboard(lang: str, language: str | None, currency: str, tier: str) -> InlineKeyboardMarkup:
    lang = lang_of(lang)

    def button(text: str, key: str, value: str, selected: bool) -> InlineKeyboardButton:
        return InlineKeyboardButton(text=_label(text, selected), callback_data=SettingsCb(k=key, v=value).pack())

    return InlineKeyboardMarkup(inline_keyboard=[
        [button(t(lang, "Auto language"), "lang", "auto", language is None),
         button("Русский", "lang", "ru", language == "ru"),
         button("English", "lang", "en", language == "en")],
        [button("USD $", "cur", "USD", currency == "USD"), button("RUB ₽", "cur", "RUB", currency == "RUB")],
        [button(tier_label(lang, "cheapest"), "tier", "cheapest", tier == "cheapest"),
         button(tier_label(lang, "typical"), "tier", "typical", tier == "typical"),
         button(tier_label(lang, "premium"), "tier", "premium", tier == "premium")],
    ])

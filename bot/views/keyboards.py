"""Inline keyboards: under an answer (change it in place), under /start (examples), under /settings.

Callback data stays far below Telegram's 64 bytes: an answer button carries the question's short id
(12 hex characters) and the complete state it leads to, so pressing it needs nothing else to redraw.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from aiogram.filters.callback_data import CallbackData
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

from bot.views.messages import EXAMPLES, lang_of, t

METHOD_CODES = {"full": "f", "lora": "l", "qlora": "q", "inference": "i"}
CODE_METHODS = {v: k for k, v in METHOD_CODES.items()}
CONTEXTS = (2048, 8192, 32768)
GPU_COUNTS = (1, 2, 4, 8)
MARK = "✓ "
# the bounds of a load button's state (engine.schema Request: request_rate, concurrency, ttft_p95_ms, tpot_ms)
MIN_RATE, MAX_RATE, MAX_USERS, MAX_TTFT_MS, MAX_TPOT_MS = 1e-3, 1e6, 1_000_000, 10**7, 10**6
MAX_CALLBACK_BYTES = 64


class AnswerCb(CallbackData, prefix="a"):
    """The state an answer button leads to: question id, method, context, GPU count, language, action."""

    q: str
    m: str
    c: int
    n: int
    lg: str
    x: str = "r"  # r: redraw the answer, p: send the chart as a photo


class ServingCb(CallbackData, prefix="v"):
    """The state a serving answer's button leads to: question id, weight format code, users, context, language."""

    q: str
    f: str  # FORMAT_CODES value, or "-": the format the question named
    u: int
    c: int
    lg: str
    x: str = "r"  # r: redraw the answer, p: send its chart as a photo


# Weight formats a serving keyboard switches between: bf16 / fp8 / AWQ on a GPU engine; the GGUF types of the same
# sizes on llama.cpp and Ollama (which load neither fp8 nor AWQ).
FORMAT_CODES = {"bf16": "b", "fp8": "8", "awq": "a"}
CODE_FORMATS = {v: k for k, v in FORMAT_CODES.items()}
LOCAL_FORMATS = {"b": "gguf:f16", "8": "gguf:q8_0", "a": "gguf:q4_k_m"}
LOCAL_ENGINES = ("llama.cpp", "ollama")
SERVING_USERS = (8, 32, 128)
SERVING_CONTEXTS = (4096, 8192, 32768)


class ConfigCb(CallbackData, prefix="g"):
    """A config for the answer in this state: question id, method, context, GPU count, language, framework code
    ("" for the default: the framework the question named, else TRL or vLLM)."""

    q: str
    m: str
    c: int
    n: int
    lg: str
    f: str = ""


class LoadCb(CallbackData, prefix="w"):
    """The state a button under a serving answer under load leads to: question id, weight format code, request rate
    (0: none), users at once (0: none), TTFT p95 and TPOT promises in ms (0: none), language, action."""

    q: str
    f: str  # FORMAT_CODES value, or "-": the format the question named
    r: float
    u: int
    t: int
    o: int
    lg: str
    x: str = "r"  # r: redraw the answer, p: send its memory chart, l: send its latency/throughput chart


class ServingConfigCb(CallbackData, prefix="h"):
    """A config for a serving answer in this state: question id, weight format code, users, context, language,
    framework code ("" for the default: the engine the question named, else vLLM)."""

    q: str
    f: str
    u: int
    c: int
    lg: str
    t: str = ""


# Framework codes of ConfigCb (two letters keep callback data short) → engine.configs targets.
TARGET_CODES = {"axolotl": "ax", "llama-factory": "lf", "trl": "tr", "unsloth": "us", "torchtune": "tt",
                "deepspeed": "ds", "arctictraining": "at", "accelerate": "ac", "vllm": "vl", "sglang": "sg",
                "llama.cpp": "lc"}
CODE_TARGETS = {v: k for k, v in TARGET_CODES.items()}
TRAINING_TARGETS = ("axolotl", "llama-factory", "trl", "unsloth", "torchtune", "deepspeed", "accelerate")
SERVING_TARGETS = ("vllm", "sglang", "llama.cpp")
TARGET_LABELS = {"axolotl": "Axolotl", "llama-factory": "LLaMA-Factory", "trl": "TRL", "unsloth": "Unsloth",
                 "torchtune": "torchtune", "deepspeed": "DeepSpeed", "arctictraining": "ArcticTraining",
                 "accelerate": "accelerate", "vllm": "vLLM",
                 "sglang": "SGLang", "llama.cpp": "llama.cpp"}


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


def pack_config(q: str, m: str, c: int, n: int, lg: str, f: str = "") -> str:
    """`ConfigCb(...).pack()` without building the model (a test keeps the two identical)."""
    return f"{ConfigCb.__prefix__}:{q}:{m}:{c}:{n}:{lg}:{f}"


def pack_serving_config(q: str, f: str, u: int, c: int, lg: str, t: str = "") -> str:
    """`ServingConfigCb(...).pack()` without building the model (a test keeps the two identical)."""
    return f"{ServingConfigCb.__prefix__}:{q}:{f}:{u}:{c}:{lg}:{t}"


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
         _button("📊 " + t(lang, "Chart"), cb(x="p")),
         _button("⚙️ " + t(lang, "Config"), pack_config(qid, code, ctx, count, lang))],
    ]
    return InlineKeyboardMarkup.model_construct(inline_keyboard=rows)


def pack_serving(q: str, f: str, u: int, c: int, lg: str, x: str = "r") -> str:
    """`ServingCb(...).pack()` without building the model (a test keeps the two identical)."""
    return f"{ServingCb.__prefix__}:{q}:{f}:{u}:{c}:{lg}:{x}"


def format_code(weight_format: str, engine: str) -> str:
    """The keyboard's code of an answer's weight format ("-" for one the keyboard does not offer)."""
    if engine in LOCAL_ENGINES:
        return next((code for code, fmt in LOCAL_FORMATS.items() if fmt == weight_format), "-")
    return FORMAT_CODES.get(weight_format, "-")


def serving_keyboard(qid: str, fmt: str, users: int | None, ctx: int, lang: str, engine: str = "vllm"
                     ) -> InlineKeyboardMarkup:
    """Under a serving answer: weight format, users at once, context, language, the chart, the config."""
    lang = lang_of(lang)
    u = users or 0  # 0: no users asked (the answer is the room the GPUs have), kept so by the format and context

    def cb(f: str = fmt, n: int = u, c: int = ctx, lg: str = lang, x: str = "r") -> str:
        return pack_serving(qid, f, n, c, lg, x)

    local = engine in LOCAL_ENGINES
    formats = [("F16", "b"), ("Q8_0", "8"), ("Q4_K_M", "a")] if local else [("BF16", "b"), ("FP8", "8"), ("AWQ", "a")]
    rows = [
        [_button(_label(label, fmt == code), cb(f=code)) for label, code in formats],
        [_button(_label(f"👥 {n}", users == n), cb(n=n)) for n in SERVING_USERS],
        [_button(_label(f"{c // 1024}k", ctx == c), cb(c=c)) for c in SERVING_CONTEXTS],
        [_button(_label("RU", lang == "ru"), cb(lg="ru")), _button(_label("EN", lang == "en"), cb(lg="en")),
         _button("📊 " + t(lang, "Chart"), cb(x="p")),
         _button("⚙️ " + t(lang, "Config"), pack_serving_config(qid, fmt, u, ctx, lang))],
    ]
    return InlineKeyboardMarkup.model_construct(inline_keyboard=rows)


def pack_load(q: str, f: str, r: float, u: int, t: int, o: int, lg: str, x: str = "r") -> str:
    """`LoadCb(...).pack()` without building the model (a test keeps the two identical)."""
    return f"{LoadCb.__prefix__}:{q}:{f}:{_rate(r)}:{u}:{t}:{o}:{lg}:{x}"


def _rate(r: float) -> str:
    """A request rate as the button carries it: at most 4 significant digits (short data, no float noise)."""
    return f"{float(f'{r:.4g}')}" if r else "0.0"


def _short(lang: str, x: float) -> str:
    """A rate or a count on a button: 0.6, 12.5, 40."""
    from bot.views.formats import num

    return num(lang, float(f"{x:.3g}")) if x < 100 else num(lang, round(x))


def _ms_label(lang: str, ms: int) -> str:
    from bot.views.formats import num

    return t(lang, "%(x)s\u00a0s") % {"x": num(lang, ms / 1000)} if ms >= 1000 and ms % 100 == 0 else \
        t(lang, "%(x)s\u00a0ms") % {"x": num(lang, ms)}


def load_keyboard(qid: str, fmt: str, load: tuple[float, int, int, int], lang: str, engine: str = "vllm"
                  ) -> InlineKeyboardMarkup:
    """Under a serving answer under load: weight format; half / twice the request rate (or the users); a tighter
    / looser TTFT p95 promise (one at 500 ms when none was made) and TPOT when one was; language, the memory
    chart, the latency/throughput chart (no config: it would rebuild the request from a context alone).
    `load` = (request rate, users, TTFT p95 ms, TPOT ms), 0 for what the question did not say; every button
    carries the whole state it leads to."""
    lang = lang_of(lang)
    rate, users, ttft, tpot = load

    def cb(f: str = fmt, r: float = rate, u: int = users, tt: int = ttft, o: int = tpot, lg: str = lang,
           x: str = "r") -> str:
        return pack_load(qid, f, r, u, tt, o, lg, x)

    local = engine in LOCAL_ENGINES
    formats = [("F16", "b"), ("Q8_0", "8"), ("Q4_K_M", "a")] if local else [("BF16", "b"), ("FP8", "8"), ("AWQ", "a")]
    load_row: list[InlineKeyboardButton] = []
    if rate:
        half, double = float(f"{rate / 2:.4g}"), float(f"{rate * 2:.4g}")
        if half >= MIN_RATE:
            load_row.append(_button(t(lang, "÷2: %(n)s req/s") % {"n": _short(lang, half)}, cb(r=half)))
        if double <= MAX_RATE:
            load_row.append(_button(t(lang, "×2: %(n)s req/s") % {"n": _short(lang, double)}, cb(r=double)))
    else:
        n = max(1, users)
        if n >= 2:
            load_row.append(_button(t(lang, "÷2: %(n)s users") % {"n": n // 2}, cb(u=n // 2)))
        if n * 2 <= MAX_USERS:
            load_row.append(_button(t(lang, "×2: %(n)s users") % {"n": n * 2}, cb(u=n * 2)))
    promise_row = ([_button(f"TTFT ≤ {_ms_label(lang, x)}", cb(tt=x)) for x in (ttft // 2, ttft * 2)
                    if 1 <= x <= MAX_TTFT_MS] if ttft else [_button(f"TTFT ≤ {_ms_label(lang, 500)}", cb(tt=500))])
    if tpot:
        promise_row += [_button(f"TPOT ≤ {_ms_label(lang, x)}", cb(o=x)) for x in (tpot // 2, tpot * 2)
                        if 1 <= x <= MAX_TPOT_MS]
    rows = [
        [_button(_label(label, fmt == code), cb(f=code)) for label, code in formats],
        *[row for row in (load_row, promise_row) if row],
        [_button(_label("RU", lang == "ru"), cb(lg="ru")), _button(_label("EN", lang == "en"), cb(lg="en")),
         _button("📊 " + t(lang, "Chart"), cb(x="p")), _button("📈 " + t(lang, "Load"), cb(x="l"))],
    ]
    return InlineKeyboardMarkup.model_construct(inline_keyboard=rows)


def frameworks_keyboard(pack: Callable[[str], str], serving: bool, current: str) -> InlineKeyboardMarkup:
    """Under a config document: the same answer's config for another framework (training or serving ones);
    `pack(framework code)` is the button's callback data."""
    targets = SERVING_TARGETS if serving else TRAINING_TARGETS
    buttons = [_button(_label(TARGET_LABELS[name], name == current), pack(TARGET_CODES[name])) for name in targets]
    rows = [buttons[:4], buttons[4:]] if len(buttons) > 4 else [buttons]
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


def with_calculator(markup: InlineKeyboardMarkup | None, qid: str | None, lang: str, webapp_url: str | None, *,
                    private: bool, bot_username: str | None = None) -> InlineKeyboardMarkup | None:
    """The answer's keyboard with a last row «📱 Калькулятор» that opens the Mini App on the same question: a
    `web_app` button in a private chat (the page reads `?q=<id>`), a t.me/<bot>?startapp=<id> link elsewhere
    (web_app buttons work only in private chats). Unchanged when the Mini App is not set up (no BOT_WEBAPP_URL)."""
    if markup is None or not qid or not webapp_url:
        return markup
    from aiogram.types import WebAppInfo

    text = "📱 " + t(lang_of(lang), "Calculator")
    if private:
        joiner = "&" if "?" in webapp_url else "?"
        button = InlineKeyboardButton(text=text, web_app=WebAppInfo(url=f"{webapp_url}{joiner}q={qid}"))
    elif bot_username:
        button = InlineKeyboardButton(text=text, url=f"https://t.me/{bot_username}?startapp={qid}")
    else:
        return markup
    return InlineKeyboardMarkup.model_construct(inline_keyboard=[*markup.inline_keyboard, [button]])

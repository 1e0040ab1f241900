"""The application pipeline of one reply, the same for every door (the bot's messages, inline queries, buttons and
documents; `gpu-advisor ask`): the text parsed once (`engine.parse.read_question`: the Request and what it changes
as a follow-up), the language resolved once, a follow-up merged once (`engine.edits`), enriched once (a pasted
config.json, a Hub id the catalog lacks: `bot.enrich`), answered once (`engine.answer`), rendered, and the keyboard
under it. Around it what every door shares: chat options, keyboard states (decoded here, applied by
`engine.edits`).

Handlers stay thin: they pick the text out of an update and send what this module returns. The Telegram
and Hub parts import lazily, so that `gpu-advisor ask` runs the same pipeline without aiogram or aiogram's HTTP.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date
from html import escape as html_escape
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from bot.lru import LRU
from bot.views.messages import t
from bot.views.render import RenderedAnswer, plain, render
from engine.answer import answer, asks_a_price
from engine.answer.models_fit import asks_for_models
from engine.edits import keyboard_state, load_state, serving_state
from engine.parse import parse
from engine.parse.normalize import has_cyrillic
from engine.pricing import default_rate, market_range
from engine.schema import (
    Answer,
    Currency,
    Language,
    MarketAnswer,
    ModelsAnswer,
    PlannedAnswer,
    PriceOptions,
    RankBy,
    Request,
    ServingAnswer,
    Tier,
)

if TYPE_CHECKING:
    from aiogram.types import InlineKeyboardMarkup

    from bot import hub
    from bot.config import BotConfig
    from bot.storage import ChatSettings, Storage

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 4096  # Telegram's own message limit; longer text is not a question
TELEGRAM_LIMIT = 4096

# Function words that only an English sentence has; a bare "70B qlora h100" has none and so leaves
# the language to the chat's setting.
EN_WORDS = frozenset({
    "a", "an", "the", "i", "we", "you", "my", "our", "can", "could", "will", "would", "should", "does", "do",
    "is", "are", "am", "it", "fit", "fits", "fitting", "on", "in", "with", "for", "of", "to", "and", "or",
    "how", "what", "which", "much", "many", "long", "need", "needs", "run", "train", "training", "tune",
    "tuning", "enough", "if", "vs", "versus", "about", "cost", "costs", "price", "hours", "time", "using",
    "use", "want", "please", "help",
})
_WORD = re.compile(r"[a-z]+")


def question_language(text: str) -> Language | None:
    """The language the question is written in, or None when its words do not tell (names, numbers)."""
    if has_cyrillic(text):
        return "ru"
    if any(w in EN_WORDS for w in _WORD.findall(text.lower()[:MAX_QUESTION_CHARS])):
        return "en"
    return None


def client_language(code: str | None) -> Language | None:
    if not code:
        return None
    code = code.lower()
    if code.startswith("ru"):
        return "ru"
    if code.startswith("en"):
        return "en"
    return None


def resolve_language(question: Language | None, chat: Language | None, user_code: str | None,
                     default: Language | None) -> Language:
    """The question's own language → the chat's setting → the Telegram client's → the default → en."""
    return question or chat or client_language(user_code) or default or "en"


def own_prices(settings: ChatSettings) -> dict[str, float]:
    """The chat's own prices in the chat's currency (a price set in the other currency is converted)."""
    out: dict[str, float] = {}
    for gpu, price in settings.prices.items():
        value = price.value
        if price.currency != settings.currency:
            rate = default_rate().rub_per_usd  # the catalog's Bank of Russia rate, as the answers use
            value = value * rate if settings.currency == "RUB" else value / rate
        out[gpu] = round(value, 4)
    return out


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


def asked_currency(request: Request) -> str | None:
    """The currency the question asks its prices in ("в рублях", a budget in roubles), if any."""
    return request.currency or (request.budget.currency if request.budget is not None else None)


def in_currency(options: AnswerOptions, currency: str | None) -> AnswerOptions:
    """The options for one answer in the currency its question asks (the chat's setting stays): own prices
    converted at the rate the answers use. A currency without prices (EUR) leaves them as they are."""
    if currency not in ("USD", "RUB") or currency == options.currency:
        return options
    rate = options.usd_rub or default_rate().rub_per_usd
    factor = rate if currency == "RUB" else 1 / rate
    return options.model_copy(update={"currency": currency,
                                      "prices": {g: round(v * factor, 4) for g, v in options.prices.items()}})


# The answers this process rendered last, by their request, prices and the date a weekday deadline was counted from
# («к пятнице» is 2 days on a Wednesday, 7 on a Friday): a follow-up says what it changed against the answer
# already given instead of computing it again (after a restart, on another replica or on another day, it is).
_recent: LRU[tuple[str, str, str], Answer] = LRU(128)  # 256 cost ~15 MiB of peak RSS in bench/load_bench.py
_recent_lock = threading.Lock()  # answers are rendered in the answer pool's threads (bot.compute)


def _key(request: Request, prices: PriceOptions, today: date) -> tuple[str, str, str]:
    return request.model_dump_json(), prices.model_dump_json(), today.isoformat()


def render_request(request: Request, options: AnswerOptions | None = None,
                   today: date | None = None) -> RenderedAnswer:
    """The complete reply to an already parsed (or keyboard-altered, or enriched) request; `today` is the door's
    date (date.today() unless given), from which a weekday deadline is counted."""
    options = in_currency(options or AnswerOptions(), asked_currency(request))
    prices = options.price_options()
    day = today or date.today()
    found = answer(request, prices, today=day)
    with _recent_lock:
        _recent.put(_key(request, prices, day), found)
    return render(found, options.lang or request.language or options.default_lang)


def previous_answer(request: Request, options: AnswerOptions, today: date | None = None) -> Answer:
    """The answer to a follow-up's previous question, counted from `today`: as rendered before when this process
    rendered it that day."""
    prices = in_currency(options, asked_currency(request)).price_options()
    day = today or date.today()
    with _recent_lock:
        found = _recent.get(_key(request, prices, day))
    return found if found is not None else answer(request, prices, today=day)


def render_text(text: str, options: AnswerOptions | None = None) -> RenderedAnswer:
    return render_request(parse(text), options)


def ask_text(text: str, options: AnswerOptions | None = None, fmt: str = "text") -> str:
    """`gpu-advisor ask`: the reply as the bot would send it, as Telegram HTML or plain text. A pasted launch command
    or training config is checked as the bot checks it (bot.pasted), not read as a question."""
    body = pasted_reply(text, options or AnswerOptions())
    if body is None:
        request = parse(text)
        direct = talk_or_price(request, options or AnswerOptions())
        body = direct[0] if direct is not None else render_request(request, options).html
    return body if fmt == "html" else plain(body)


def pasted_reply(text: str, options: AnswerOptions) -> str | None:
    """The bot's reply to a pasted command or config (handlers.configs.answer_check): what it was read as, then the
    answer for it; its error in words when it cannot be read; None for a question."""
    from bot.pasted import checked, checked_request, might_be_pasted, pasted_config

    if not might_be_pasted(text):
        return None
    from bot.views.configs import check_header, error_text

    read = pasted_config(text)
    if read is None:
        return None
    read = checked(read)
    request = checked_request(read)
    lang = options.lang or options.default_lang
    if request is None:
        return error_text(lang, read.error or "unknown_format")
    request = request.model_copy(update={"language": lang})
    rendered = render_request(request, options)
    header = check_header(rendered.lang, read.format, request.model_dump(mode="json", exclude_none=True),
                          read.ignored, read.secrets, None, read.no_effect)
    return header + "\n\n" + rendered.html


def talk_or_price(request: Request, options: AnswerOptions) -> tuple[str, RenderedAnswer] | None:
    """The reply to small talk, to a price question without a model, or to "which model fits" (the same for `ask`
    and the bot; none of them has a keyboard), with the rendered answer it stands for; None for any other question."""
    talk = smalltalk_reply(request, options)
    if talk is None and not asks_a_price(request) and not asks_for_models(request):
        return None
    rendered = render_request(request, options)
    if talk is None and isinstance(rendered.answer, ModelsAnswer):
        return rendered.html, rendered
    return talk or price_reply(request, rendered, options), rendered


def answer_options(settings: ChatSettings, lang: Language, default: Language) -> AnswerOptions:
    return AnswerOptions(lang=lang, default_lang=default, currency=settings.currency, tier=settings.tier,
                         prices=own_prices(settings))


def smalltalk_reply(request: Request, options: AnswerOptions) -> str | None:
    """A short friendly answer to "привет", "спасибо!", "что ты умеешь?" (no question in them), else None."""
    if request.smalltalk is None or request.model is not None:
        return None
    from bot.views.talk import smalltalk_text

    return smalltalk_text(options.lang or request.language or options.default_lang, request.smalltalk)


def market_price(lang: str, gpu: str, currency: Currency, own: str | None = None) -> str:
    """The market range per GPU-hour of one GPU and its date (/price H100, "сколько стоит H100")."""
    from bot.views.talk import market_price_text

    try:
        found = market_range(gpu, None, currency)
    except (LookupError, ValueError):
        text = t(lang, "I have no market prices for %(gpu)s: set your own with <code>/price %(gpu)s 2.5</code>.",
                 gpu=gpu)
        return text + ("\n" + t(lang, "This chat's own price: %(price)s.", price=own) if own else "")
    return market_price_text(lang, found.model_dump(), own)


def price_reply(request: Request, rendered: RenderedAnswer, options: AnswerOptions) -> str:
    """"сколько стоит H100", "how much is an A100 per hour?" (engine.answer.asks_a_price): the engine's market
    answer (engine.answer.market_answer), or, for a GPU without market prices, how to set one's own."""
    if isinstance(rendered.answer, MarketAnswer):
        return rendered.html
    from bot.views.formats import money

    opts = in_currency(options, asked_currency(request))
    gpu = request.gpus[0].name or ""
    own = opts.prices.get(gpu)
    return market_price(rendered.lang, gpu, opts.currency,
                        money(rendered.lang, own, opts.currency) + t(rendered.lang, "/h") if own else None)


# ---- answers and their keyboards ---------------------------------------------------------------------------


def with_lead(html: str, lead: str) -> str:
    """The answer to a follow-up, led by what changed (the model's name may be the user's own words)."""
    if lead and len(html) + len(lead) + 12 <= TELEGRAM_LIMIT:
        return f"↪️ <i>{html_escape(lead, quote=False)}</i>\n{html}"
    return html


@dataclass(frozen=True)
class Reply:
    html: str
    title: str
    lang: str
    markup: InlineKeyboardMarkup | None
    rendered: RenderedAnswer
    qid: str | None


def state_of(rendered: RenderedAnswer) -> tuple[str, int, int]:
    """(method, context, GPU count) of a rendered answer, as the keyboard shows them."""
    a = rendered.answer
    assert isinstance(a, PlannedAnswer), a.kind
    s = a.scenario
    return s.method, s.seq_len, s.gpu_count


def with_note(html: str, note: str | None) -> str:
    if note and len(html) + len(note) + 8 <= TELEGRAM_LIMIT:
        return f"{html}\n<i>{note}</i>"
    return html


async def make_reply(request: Request, storage: Storage, options: AnswerOptions, note: str | None = None,
                     qid: str | None = None) -> Reply:
    """Render `request` and, when there is an answer, store the request and put a keyboard under it."""
    from bot.compute import off_loop
    from bot.views.keyboards import answer_keyboard

    rendered = await off_loop(render_request, request, options)
    if not rendered.understood:
        return Reply(rendered.html, rendered.title, rendered.lang, None, rendered, None)
    if qid is None:
        qid = await storage.put_request(request)
    if isinstance(rendered.answer, ServingAnswer):  # a serving answer: format, users, context (bot/views/keyboards.py)
        from bot.views.keyboards import format_code, serving_keyboard

        serving = rendered.answer.serving
        engine = serving.settings.engine if serving.settings else (request.serving_engine or "vllm")
        fmt = format_code(serving.settings.weight_format, engine) if serving.settings else "-"
        if serving.load is not None and (request.request_rate or request.ttft_p95_ms or request.tpot_ms):
            from bot.views.keyboards import load_keyboard  # the load, the promise, the latency chart

            state = (request.request_rate or 0.0, request.concurrency or (0 if request.request_rate else 1),
                     round(request.ttft_p95_ms or 0), round(request.tpot_ms or 0))
            markup = load_keyboard(qid, fmt, state, rendered.lang, engine)
            return Reply(with_note(rendered.html, note), rendered.title, rendered.lang, markup, rendered, qid)
        markup = serving_keyboard(qid, fmt, serving.users, serving.context or request.seq_len or 0, rendered.lang,
                                  engine)
        return Reply(with_note(rendered.html, note), rendered.title, rendered.lang, markup, rendered, qid)
    method, ctx, count = state_of(rendered)
    markup = answer_keyboard(qid, method, ctx, count, rendered.lang)
    return Reply(with_note(rendered.html, note), rendered.title, rendered.lang, markup, rendered, qid)


async def reply_to(text: str, request: Request | None, options: AnswerOptions, *, store: Storage, config: BotConfig,
                   hub_cache: hub.ConfigCache | None = None,
                   before_fetch: Callable[[], Awaitable[None]] | None = None,
                   previous: Request | None = None, parsed: Request | None = None) -> Reply:
    """The whole pipeline for a question: parse → enrich (a pasted config.json, a Hub id the catalog lacks) →
    engine.answer → render → keyboard. `parsed` is `text` already parsed (it is parsed once, with the follow-up
    reading); `request` skips parse and enrich (a config.json file already read, a follow-up merged into
    `previous`, whose answer the reply then says what changed against); `before_fetch` runs before the Hub is
    asked (the bot shows "typing")."""
    from bot.compute import off_loop  # asyncio and the enrichment: the bot's, not `gpu-advisor ask`'s
    from bot.enrich import enrich, may_fetch

    note = None
    if request is None:
        request = parsed if parsed is not None else parse(text)
        direct = await off_loop(talk_or_price, request, options)
        if direct is not None:
            talk, rendered = direct
            return Reply(talk, rendered.title, rendered.lang, None, rendered, None)
        if may_fetch(text, request):
            if before_fetch is not None:
                await before_fetch()
            enriched = await enrich(text, request, config, hub_cache, options.lang or "en")
            request, note = enriched.request, enriched.note
    reply = await make_reply(request, store, options, note)
    if previous is not None and reply.rendered.understood:
        from bot.views.talk import what_changed
        before = await off_loop(previous_answer, previous, options)
        lead = what_changed(reply.lang, before, reply.rendered.answer)
        reply = Reply(with_lead(reply.html, lead), reply.title, reply.lang, reply.markup, reply.rendered, reply.qid)
    return reply


def apply_state(stored: Request, method_code: str, ctx: int, count: int) -> Request:
    """The stored request as an answer's keyboard button names it (`engine.edits.keyboard_state`); ValueError when
    the state is not a possible one."""
    from bot.views.keyboards import CODE_METHODS

    method = CODE_METHODS.get(method_code)
    if method is None:
        raise ValueError("unknown method")
    return keyboard_state(stored, method, ctx, count)


def apply_serving_state(stored: Request, fmt_code: str, users: int, ctx: int) -> Request:
    """The stored serving request with the format, users at once and context a serving button says
    (`engine.edits.serving_state`); ValueError when the state is not a possible one."""
    from bot.views.keyboards import CODE_FORMATS, LOCAL_ENGINES, LOCAL_FORMATS

    quantization = None
    if fmt_code != "-":
        if fmt_code not in CODE_FORMATS:
            raise ValueError("unknown format")
        local = stored.serving_engine in LOCAL_ENGINES
        quantization = LOCAL_FORMATS[fmt_code] if local else CODE_FORMATS[fmt_code]
    return serving_state(stored, quantization, users, ctx)


def _format(stored: Request, fmt_code: str) -> str | None:
    """The weight format a serving keyboard's code names for this request's engine; None: as it was."""
    from bot.views.keyboards import CODE_FORMATS, LOCAL_ENGINES, LOCAL_FORMATS

    if fmt_code == "-":
        return None
    if fmt_code not in CODE_FORMATS:
        raise ValueError("unknown format")
    return LOCAL_FORMATS[fmt_code] if stored.serving_engine in LOCAL_ENGINES else CODE_FORMATS[fmt_code]


def apply_load_state(stored: Request, fmt_code: str, rate: float, users: int, ttft_ms: int, tpot_ms: int) -> Request:
    """The stored serving request with the weight format, load (request rate or users at once) and promise (TTFT p95,
    TPOT; 0 for none) a button under a load answer says (`engine.edits.load_state`); ValueError when the state is
    not a possible one."""
    return load_state(stored, _format(stored, fmt_code), rate, users, ttft_ms, tpot_ms)

"""Inline mode: `@bot 70B qlora h100` in any chat → a few answers to pick, cached by the normalised query.

Each result: title = the verdict on the GPU asked, description = the one-line answer (money, hours, the best
arrangement), message = the full HTML answer with its keyboard (buttons then edit the inline message through
inline_message_id). Telegram sends a query on every keystroke, so a word still being typed ("70B ql") is
completed by prefix before parsing: the person sees answers while typing, not silence.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from aiogram import Bot, Router
from aiogram.types import (
    InlineKeyboardMarkup,
    InlineQuery,
    InlineQueryResultArticle,
    InlineQueryResultsButton,
    InlineQueryResultUnion,
    InputTextMessageContent,
)

from bot.compute import off_loop
from bot.config import BotConfig
from bot.handlers.common import calculator_row
from bot.lru import LRU
from bot.metrics import Metrics
from bot.pipeline import Reply, answer_options, client_language, make_reply, question_language, render_request
from bot.storage import ChatSettings, Storage
from bot.views.catalogs import _
from bot.views.messages import EXAMPLES, t
from engine.answer.models_fit import asks_for_models
from engine.catalog import find_gpu
from engine.parse import parse
from engine.schema import Language, PlannedAnswer, Request, ServingAnswer

MAX_RESULTS = 3
CACHE_TIME_S = 300  # how long Telegram's own servers may keep our results
ALTERNATIVES = {"qlora": ("lora", "full"), "lora": ("qlora", "full"), "full": ("lora", "qlora"), "inference": ()}


class AnswerCache(Protocol):
    """Cached inline answers by key: JSON-able values; in process (`LRUCache`) or in Redis
    (`bot.scaleout.state.RedisAnswerCache`, shared by replicas)."""

    async def get(self, key: str) -> list[dict[str, Any]] | None: ...

    async def put(self, key: str, value: list[dict[str, Any]]) -> None: ...


class LRUCache:
    """In process, with a time to live."""

    def __init__(self, maxsize: int = 2048, ttl_s: float = 600.0) -> None:
        self._items: LRU[str, list[dict[str, Any]]] = LRU(maxsize, ttl_s)
        self.hits = 0
        self.misses = 0

    async def get(self, key: str) -> list[dict[str, Any]] | None:
        found = self._items.get(key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    async def put(self, key: str, value: list[dict[str, Any]]) -> None:
        self._items.put(key, value)


def normalise(query: str) -> str:
    return re.sub(r"\s+", " ", query.strip().lower())[:256]


# Words a query is often cut inside of while typed: methods and the common GPUs (a prefix completes only when
# exactly one of them starts with it).
TYPED_WORDS = ("qlora", "lora", "full", "inference", "инференс", "полное", "h100", "h200", "a100", "b200", "l40s")
MIN_PREFIX = 2


def method_name(lang: str, method: str) -> str:
    name = {"lora": "LoRA", "qlora": "QLoRA"}.get(method) or _(lang, "full fine-tuning")
    return name[:1].upper() + name[1:]


def complete(query: str) -> str:
    """The last word of a query still being typed completed by prefix: "70b ql" → "70b qlora",
    "llama 8b lo" → "llama 8b lora", "70b h1" → "70b h100"; a whole word or an ambiguous prefix is left as it is, and
    so are a number («юзеров 50», «эпох 30») and a GPU's own name («l4», «a10», «h20»): whole as typed."""
    head, _sep, last = query.rpartition(" ")
    if len(last) < MIN_PREFIX or last in TYPED_WORDS or last.isdigit() or find_gpu(last) is not None:
        return query
    matches = [w for w in TYPED_WORDS if w.startswith(last)]
    if len(matches) != 1:
        return query
    return f"{head} {matches[0]}".strip()


def pasted_request(query: str) -> Request | None:
    """A launch command typed inline (`vllm serve … -tp 2`) is read as the bot's messages and `check` read it (its
    flags, its checkpoint's format), never as a question; None for a question."""
    from bot.pasted import checked, checked_request, pasted_config

    read = pasted_config(query)
    return checked_request(checked(read)) if read is not None else None


def _entry(reply: Reply, title: str | None = None) -> dict[str, Any]:
    return {"id": f"{reply.qid or 'x'}{reply.lang}", "qid": reply.qid, "title": title or reply.title,
            "description": reply.rendered.description, "html": reply.html,
            "markup": reply.markup.model_dump(mode="json", exclude_none=True) if reply.markup else None}


async def build_results(query: str, lang: str, settings: ChatSettings, store: Storage,
                        config: BotConfig) -> list[dict[str, Any]]:
    options = answer_options(settings, lang, config.default_language)  # type: ignore[arg-type]
    if not query:
        out = []
        for example in EXAMPLES[lang]:
            reply = await make_reply(parse(example), store, options)
            out.append(_entry(reply, title=example) | {"description": reply.title})
        return out
    request = pasted_request(query) or parse(complete(query))
    if request.model is None and asks_for_models(request):  # «какую модель можно запустить на 4090»: one result
        rendered = await off_loop(render_request, request, options)
        return [_entry(Reply(rendered.html, rendered.title, rendered.lang, None, rendered, None))]
    if request.model is None:
        return []
    first = await make_reply(request, store, options)
    answered = first.rendered.answer
    if not isinstance(answered, PlannedAnswer):  # a serving answer stands alone (its variants are its keyboard's)
        return [_entry(first)] if isinstance(answered, ServingAnswer) else []
    out = [_entry(first)]
    asked = answered.scenario.method
    for method in ALTERNATIVES.get(asked, ()):
        if len(out) >= MAX_RESULTS:
            break
        variant = Request.model_validate(request.model_dump() | {"method": method, "bits": None})
        reply = await make_reply(variant, store, options)
        if reply.rendered.understood:  # the method first: the variants differ by it
            out.append(_entry(reply, title=f"{method_name(reply.lang, method)} — {reply.title}"))
    return out


def to_articles(entries: list[dict[str, Any]]) -> list[InlineQueryResultUnion]:
    return [
        InlineQueryResultArticle(
            id=e["id"][:64], title=e["title"][:256], description=e["description"][:256] or None,
            input_message_content=InputTextMessageContent(message_text=e["html"], parse_mode="HTML"),
            reply_markup=InlineKeyboardMarkup.model_validate(e["markup"]) if e["markup"] else None)
        for e in entries
    ]


async def _with_calculator(bot: Bot, config: BotConfig, entry: dict[str, Any], lang: str) -> dict[str, Any]:
    if not entry.get("markup"):
        return entry
    markup = await calculator_row(bot, config, InlineKeyboardMarkup.model_validate(entry["markup"]), entry.get("qid"),
                                  lang, private=False)
    return entry | {"markup": markup.model_dump(mode="json", exclude_none=True) if markup else None}


async def inline_answer(query: InlineQuery, lang: Language, settings: ChatSettings, store: Storage, config: BotConfig,
                        answer_cache: AnswerCache, metrics: Metrics | None = None, bot: Bot | None = None) -> None:
    """`lang` and `settings` are the user's private chat's; the question's own language comes first."""
    text = normalise(query.query)
    if text:
        lang = question_language(text) or lang
    key = "|".join((text, lang, settings.model_dump_json()))
    entries = await answer_cache.get(key)
    if metrics is not None:
        metrics.inline_cache(entries is not None)
    if entries is None:
        entries = await build_results(text, lang, settings, store, config)
        if config.webapp_url and bot is not None:  # each result opens the Mini App on its question (a t.me link)
            entries = [await _with_calculator(bot, config, e, lang) for e in entries]
        await answer_cache.put(key, entries)
    button = None
    if not entries:
        hint = client_language(query.from_user.language_code) or lang
        button = InlineQueryResultsButton(text=t(hint, "How to ask: examples"), start_parameter="help")
    await query.answer(to_articles(entries), cache_time=CACHE_TIME_S, is_personal=True, button=button)


def make_router() -> Router:
    router = Router(name="inline")
    router.inline_query.register(inline_answer)
    return router

"""Buttons: the answer keyboard (redraw in place, also inline messages; the chart), the /start examples,
and a polite toast for anything stale or forged."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from aiogram import Bot, Router
from aiogram.exceptions import TelegramAPIError, TelegramBadRequest
from aiogram.types import BufferedInputFile, CallbackQuery, InaccessibleMessage, Message

from bot.config import BotConfig
from bot.conversation import remember
from bot.handlers.common import answer_question, button_request, calculator_row, is_private, is_question_id, not_sent
from bot.pipeline import Reply, answer_options, apply_load_state, apply_serving_state, apply_state, make_reply
from bot.storage import ChatSettings, Storage
from bot.views.keyboards import (
    CODE_FORMATS,
    CODE_METHODS,
    MAX_RATE,
    MAX_TPOT_MS,
    MAX_TTFT_MS,
    MAX_USERS,
    MIN_RATE,
    AnswerCb,
    ExampleCb,
    LoadCb,
    ServingCb,
)
from bot.views.messages import EXAMPLES, t
from engine.schema import MAX_BATCH, MAX_GPUS, MAX_SEQ_LEN, Answer, Language, PlannedAnswer, Request, ServingAnswer

log = logging.getLogger(__name__)
_chart_lock = asyncio.Lock()  # matplotlib is not thread-safe: one chart at a time, off the event loop


def addressed(qid: str, lang: str, action: str, actions: tuple[str, ...] = ("r", "p")) -> bool:
    """What every answer button carries: a stored question's id, the answer's language, what to do with it."""
    return is_question_id(qid) and lang in ("ru", "en") and action in actions


def valid(cb: AnswerCb) -> bool:
    return (addressed(cb.q, cb.lg, cb.x) and cb.m in CODE_METHODS and 1 <= cb.c <= MAX_SEQ_LEN
            and 1 <= cb.n <= MAX_GPUS)


def valid_serving(cb: ServingCb) -> bool:
    return (addressed(cb.q, cb.lg, cb.x) and (cb.f in CODE_FORMATS or cb.f == "-") and 0 <= cb.u <= MAX_BATCH
            and 1 <= cb.c <= MAX_SEQ_LEN)


def valid_load(cb: LoadCb) -> bool:
    return (addressed(cb.q, cb.lg, cb.x, ("r", "p", "l")) and (cb.f in CODE_FORMATS or cb.f == "-")
            and (cb.r == 0 or MIN_RATE <= cb.r <= MAX_RATE) and 0 <= cb.u <= MAX_USERS and (cb.r > 0 or cb.u > 0)
            and 0 <= cb.t <= MAX_TTFT_MS and 0 <= cb.o <= MAX_TPOT_MS)


async def render_chart(answer: Answer, lang: str, kind: str = "memory") -> bytes:
    from bot.views.chart import chart_png  # matplotlib loads on the first chart, not at start-up

    async with _chart_lock:
        if kind == "load" and isinstance(answer, ServingAnswer):
            from bot.views.load_chart import load_png

            return await asyncio.to_thread(load_png, answer, lang)
        return await asyncio.to_thread(chart_png, answer, lang)


async def answer_button(query: CallbackQuery, callback_data: AnswerCb, lang: Language, settings: ChatSettings,
                        store: Storage, config: BotConfig, bot: Bot) -> None:
    """Redraw the answer in the state the button names (also inline messages), or send its chart."""
    cb = callback_data
    if not valid(cb):
        await query.answer(t(lang, "This button no longer works."))
        return
    await redraw(query, lang, settings, store, config, bot, cb.q, cb.lg, cb.x,
                 lambda stored: apply_state(stored, cb.m, cb.c, cb.n), serving=False)


async def serving_button(query: CallbackQuery, callback_data: ServingCb, lang: Language, settings: ChatSettings,
                         store: Storage, config: BotConfig, bot: Bot) -> None:
    """Redraw a serving answer with the weight format, users and context the button names, or send its chart."""
    cb = callback_data
    if not valid_serving(cb):
        await query.answer(t(lang, "This button no longer works."))
        return
    await redraw(query, lang, settings, store, config, bot, cb.q, cb.lg, cb.x,
                 lambda stored: apply_serving_state(stored, cb.f, cb.u, cb.c), serving=True)


async def load_button(query: CallbackQuery, callback_data: LoadCb, lang: Language, settings: ChatSettings,
                      store: Storage, config: BotConfig, bot: Bot) -> None:
    """Redraw a serving answer under load with the format, load and promise the button names, or send a chart."""
    cb = callback_data
    if not valid_load(cb):
        await query.answer(t(lang, "This button no longer works."))
        return
    await redraw(query, lang, settings, store, config, bot, cb.q, cb.lg, cb.x,
                 lambda stored: apply_load_state(stored, cb.f, cb.r, cb.u, cb.t, cb.o), serving=True)


async def redraw(query: CallbackQuery, lang: Language, settings: ChatSettings, store: Storage, config: BotConfig,
                 bot: Bot, qid: str, answer_lang: str, action: str, state: Callable[[Request], Request], *,
                 serving: bool) -> None:
    """The stored question in the state a button names: its answer edited in place, or its chart sent ("p")."""
    request = await button_request(query, store, qid, state, lang)
    if request is None:
        return
    options = answer_options(settings, answer_lang, config.default_language)  # type: ignore[arg-type]
    reply = await make_reply(request, store, options, qid=qid)
    if action in ("p", "l"):
        if not serving and isinstance(reply.rendered.answer, ServingAnswer):  # a training chart of serving: forged
            await query.answer(t(lang, "This button no longer works."))
            return
        message = query.message
        await send_chart(query, bot, reply, message.chat.id if message is not None else query.from_user.id,
                         "load" if action == "l" else "memory")
        return
    chat = query.message.chat if query.message is not None else None
    private = chat is not None and is_private(chat)
    markup = await calculator_row(bot, config, reply.markup, reply.qid, reply.lang, private)
    await edit_in_place(query, bot, store, dataclasses.replace(reply, markup=markup), request)


async def edit_in_place(query: CallbackQuery, bot: Bot, store: Storage, reply: Reply, request: Request) -> None:
    """Put the redrawn answer where the pressed button was (a chat message or an inline one)."""
    message = query.message
    try:
        if query.inline_message_id:
            await bot.edit_message_text(text=reply.html, inline_message_id=query.inline_message_id,
                                        reply_markup=reply.markup)
        elif message is not None:
            await bot.edit_message_text(text=reply.html, chat_id=message.chat.id, message_id=message.message_id,
                                        reply_markup=reply.markup)
            if reply.rendered.understood:  # a reply to this answer now changes the question as shown
                await remember(store, message.chat.id, message.message_id, await store.put_request(request))
    except TelegramBadRequest as exc:
        if "not modified" not in exc.message:
            log.info("edit failed: %s", exc.message)
            await query.answer(t(reply.lang, "I could not change that message: ask the question again, please."))
            return
    await query.answer()


async def send_chart(query: CallbackQuery, bot: Bot, reply: Reply, chat_id: int, kind: str = "memory") -> None:
    lang = reply.lang
    a = reply.rendered.answer
    drawn = isinstance(a, PlannedAnswer) or (isinstance(a, ServingAnswer) and a.serving.memory is not None)
    if kind == "load":
        drawn = isinstance(a, ServingAnswer) and a.serving.load is not None and bool(a.serving.load.curve)
    if not drawn:  # nothing to draw: no memory figures (an error, a price, a serving answer that did not load)
        await query.answer(t(lang, "This button no longer works."))
        return
    png = await render_chart(reply.rendered.answer, lang, kind)
    photo = BufferedInputFile(png, filename=f"{kind}.png")
    try:
        await bot.send_photo(chat_id, photo, caption=reply.title[:1000], parse_mode=None)
    except TelegramAPIError as exc:
        log.info("chart not sent: %s", type(exc).__name__)
        await not_sent(query, t(lang, "I could not send the chart: try again in a minute, please."),
                       t(lang, "Open a chat with me to get the chart."))
        return
    await query.answer()


async def example_button(query: CallbackQuery, callback_data: ExampleCb, lang: Language, settings: ChatSettings,
                         store: Storage, config: BotConfig, bot: Bot, hub_cache: Any = None) -> None:
    examples = EXAMPLES.get(callback_data.lg)
    message = query.message
    if examples is None or not 0 <= callback_data.i < len(examples) or message is None \
            or isinstance(message, InaccessibleMessage):
        await query.answer(t(lang, "This button no longer works."))
        return
    await query.answer()
    assert isinstance(message, Message)
    # answer as if the user had asked it: the example's own language, a new message in the chat
    await answer_question(message.model_copy(update={"from_user": query.from_user}), examples[callback_data.i],
                          settings=settings, store=store, config=config, bot=bot, hub_cache=hub_cache)


async def unknown_button(query: CallbackQuery, lang: Language) -> None:
    await query.answer(t(lang, "This button no longer works."))


def make_router() -> Router:
    router = Router(name="callbacks")
    router.callback_query.register(answer_button, AnswerCb.filter())
    router.callback_query.register(serving_button, ServingCb.filter())
    router.callback_query.register(load_button, LoadCb.filter())
    router.callback_query.register(example_button, ExampleCb.filter())
    router.callback_query.register(unknown_button)
    return router

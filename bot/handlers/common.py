"""What several routers share: answering a question in a chat, the chat's language, admin checks."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from aiogram import Bot
from aiogram.enums import ChatAction, ChatType
from aiogram.exceptions import AiogramError, TelegramAPIError
from aiogram.types import CallbackQuery, Chat, Message, User

from bot.config import BotConfig
from bot.conversation import FollowedUp, remember
from bot.pipeline import MAX_QUESTION_CHARS, answer_options, question_language, reply_to, resolve_language
from bot.storage import ChatSettings, Storage, StorageError
from bot.views.keyboards import examples_keyboard, with_calculator
from bot.views.messages import EXAMPLES, t
from engine.schema import Language, Request

log = logging.getLogger(__name__)


def chat_language(settings: ChatSettings, user: User | None, config: BotConfig) -> Language:
    """For the bot's own texts (no question to read a language from): chat → client → default."""
    return resolve_language(None, settings.language, user.language_code if user else None, config.default_language)


def is_private(chat: Chat) -> bool:
    return chat.type == ChatType.PRIVATE


async def can_change_settings(bot: Bot, chat: Chat, user: User | None, sender_chat: Chat | None = None) -> bool:
    """Anyone in a private chat; in a group only its admins (anonymous admins post as the group)."""
    if is_private(chat):
        return True
    if sender_chat is not None and sender_chat.id == chat.id:
        return True
    if user is None:
        return False
    try:
        member = await bot.get_chat_member(chat.id, user.id)
    except (TelegramAPIError, AiogramError) as exc:  # AiogramError: an answer this aiogram cannot read
        log.info("getChatMember failed in chat %s: %s", chat.id, type(exc).__name__)
        return False
    return member.status in ("creator", "administrator")


def is_question_id(qid: str) -> bool:
    """A stored question's id as a button carries it (12 hex digits); anything else is forged."""
    return len(qid) == 12 and all(c in "0123456789abcdef" for c in qid)


async def not_sent(query: CallbackQuery, private_text: str, group_text: str) -> None:
    """A chart or a file the Bot API refused: in a private chat ask to try again, in a group to open one with us."""
    private = query.message is not None and query.message.chat.type == ChatType.PRIVATE
    await query.answer(private_text if private else group_text, show_alert=True)


async def button_request(query: CallbackQuery, store: Storage, qid: str, state: Callable[[Request], Request],
                         lang: str) -> Request | None:
    """The stored question behind a button in the state the button names; None (the user told why) when the
    question is gone or the state is forged."""
    stored = await store.get_request(qid)
    if stored is None:
        await query.answer(t(lang, "This answer is too old to change: ask the question again, please."))
        return None
    try:
        return state(stored)
    except ValueError:
        await query.answer(t(lang, "This button no longer works."))
        return None


async def calculator_row(bot: Bot, config: BotConfig, markup: Any, qid: str | None, lang: str, private: bool) -> Any:
    """The answer's keyboard with the Mini App's «📱 Калькулятор» row when BOT_WEBAPP_URL is set."""
    if not config.webapp_url or markup is None:
        return markup
    username = None
    if not private:
        with contextlib.suppress(TelegramAPIError, AiogramError):
            username = (await bot.me()).username  # aiogram keeps the answer: asked once
    return with_calculator(markup, qid, lang, config.webapp_url, private=private, bot_username=username)


async def send(message: Message, text: str, **kwargs: Any) -> Message:
    """A reply: plain in a private chat, threaded to the question in a group."""
    if is_private(message.chat):
        return await message.answer(text, **kwargs)
    return await message.reply(text, **kwargs)


async def answer_question(message: Message, text: str, *, settings: ChatSettings, store: Storage, config: BotConfig,
                          bot: Bot, hub_cache: Any = None, request: Request | None = None,
                          followed: FollowedUp | None = None, parsed: Request | None = None) -> Message:
    """Answer `text` (`parsed`: already parsed; or an already built `request`, or a follow-up merged into the
    previous question) in the message's chat, with the answer keyboard; the chat's last answer is linked to its
    question."""
    user = message.from_user
    if followed is not None and followed.previous is None:  # "а если 8k контекст?" with nothing before it
        lang = resolve_language(followed.request.language, settings.language, user.language_code if user else None,
                                config.default_language)
        return await send(message, t(lang, "Which question should I change? Reply to one of my answers, or ask "
                                           "the whole question, for example: %(example)s",
                                     example="<code>" + EXAMPLES[lang][1] + "</code>"),
                          reply_markup=examples_keyboard(lang))
    if followed is not None:
        request = followed.request
    if len(text) > MAX_QUESTION_CHARS:
        lang = chat_language(settings, user, config)
        return await send(message, t(lang, "That is too long for a question. Ask in a sentence or two, or send "
                                            "config.json as a file."))
    lang = resolve_language(question_language(text) if request is None else request.language, settings.language,
                            user.language_code if user else None, config.default_language)

    async def typing() -> None:  # the Hub may take a moment
        with contextlib.suppress(TelegramAPIError):
            await bot.send_chat_action(message.chat.id, ChatAction.TYPING)

    reply = await reply_to(text, request, answer_options(settings, lang, config.default_language), store=store,
                           config=config, hub_cache=hub_cache, before_fetch=typing,
                           previous=followed.previous if followed is not None else None, parsed=parsed)
    markup = await calculator_row(bot, config, reply.markup, reply.qid, reply.lang, is_private(message.chat))
    sent = await send(message, reply.html, reply_markup=markup or examples_keyboard(reply.lang))
    if reply.qid is not None:
        try:
            await remember(store, message.chat.id, sent.message_id, reply.qid)
        except StorageError as exc:  # the answer is out; only its follow-ups will not find it
            log.info("follow-up link not stored: %s", exc)
    return sent

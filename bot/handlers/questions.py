"""Questions: every text in a private chat; in groups, replies to the bot and mentions of it.

A follow-up ("а если 8k контекст?", "and on two of them?") changes one thing of the previous question: in a
group only as a reply to one of the bot's answers; in a private chat also as the message right after one.
Commands of the groups (/vram) live in `commands`; any other group message is not for the bot.
"""

from __future__ import annotations

import re
from typing import Any

from aiogram import Bot, F, Router
from aiogram.enums import ChatType
from aiogram.types import Message

from bot.config import BotConfig
from bot.conversation import FollowedUp, follow_up, last_key, message_key
from bot.handlers.common import answer_question
from bot.handlers.filters import InLoop
from bot.storage import ChatSettings, Storage, StorageError
from bot.views.keyboards import AnswerCb
from engine.parse import FollowUp, read_question

QID = re.compile(r"[0-9a-f]{12}")


def _to_bot(message: Message, bot: Bot) -> Message | None:
    """The bot's message this one replies to, if it does."""
    reply = message.reply_to_message
    if reply is not None and reply.from_user is not None and reply.from_user.id == bot.id:
        return reply
    return None


def keyboard_qid(message: Message) -> str | None:
    """The question id an answer's keyboard carries (an answer sent before the links were kept)."""
    markup = message.reply_markup
    for row in markup.inline_keyboard if markup is not None else []:
        for button in row:
            data = button.callback_data or ""
            if data.startswith(AnswerCb.__prefix__ + ":"):
                qid = data.split(":")[1]
                return qid if QID.fullmatch(qid) else None
    return None


async def _followed(message: Message, text: str, read: FollowUp, store: Storage, bot: Bot,
                    private: bool) -> FollowedUp | None:
    replied = _to_bot(message, bot)
    keys = [message_key(message.chat.id, replied.message_id)] if replied is not None else []
    if private:
        keys.append(last_key(message.chat.id))  # a message right after an answer
    if not keys:
        return None
    try:
        return await follow_up(text, read, store, keys, keyboard_qid(replied) if replied is not None else None)
    except StorageError:
        return None  # the previous question cannot be read now: answer the text on its own


async def _answer(message: Message, text: str, settings: ChatSettings, store: Storage, config: BotConfig, bot: Bot,
                  hub_cache: Any, private: bool) -> None:
    """The question read once (engine.parse.read_question): as a follow-up of the previous answer, else on its
    own, without parsing it again."""
    parsed, read = read_question(text)
    followed = await _followed(message, text, read, store, bot, private)
    await answer_question(message, text, settings=settings, store=store, config=config, bot=bot,
                          hub_cache=hub_cache, followed=followed, parsed=parsed)


async def _addressed_in_group(message: Message, bot: Bot) -> dict[str, Any] | bool:
    """The question of a group message meant for the bot (reply to it or mention), else False."""
    text = message.text or ""
    if _to_bot(message, bot) is not None:
        return {"question": text}
    me = await bot.me()
    if me.username:
        mention = re.compile(rf"@{re.escape(me.username)}\b", re.IGNORECASE)
        if mention.search(text):
            return {"question": mention.sub(" ", text).strip()}
    return False


async def private_question(message: Message, settings: ChatSettings, store: Storage, config: BotConfig, bot: Bot,
                           hub_cache: Any = None) -> None:
    await _answer(message, message.text or "", settings, store, config, bot, hub_cache, private=True)


async def group_question(message: Message, question: str, settings: ChatSettings, store: Storage, config: BotConfig,
                         bot: Bot, hub_cache: Any = None) -> None:
    await _answer(message, question, settings, store, config, bot, hub_cache, private=False)


def make_router() -> Router:
    router = Router(name="questions")
    router.message.register(private_question, InLoop((F.chat.type == ChatType.PRIVATE) & F.text))
    router.message.register(group_question, InLoop(F.chat.type.in_({ChatType.GROUP, ChatType.SUPERGROUP}) & F.text),
                            _addressed_in_group)
    return router

"""Questions: every text in a private chat; in groups, replies to the bot and mentions of it.

Commands of the groups (/vram) live in `commands`; any other group message is not for the bot.
"""

from __future__ import annotations

import re
from typing import Any

from aiogram import Bot, F, Router
from aiogram.enums import ChatType
from aiogram.types import Message

from bot.config import BotConfig
from bot.handlers.common import answer_question
from bot.handlers.filters import InLoop
from bot.storage import ChatSettings, Storage


async def _addressed_in_group(message: Message, bot: Bot) -> dict[str, Any] | bool:
    """The question of a group message meant for the bot (reply to it or mention), else False."""
    text = message.text or ""
    reply = message.reply_to_message
    if reply is not None and reply.from_user is not None and reply.from_user.id == bot.id:
        return {"question": text}
    me = await bot.me()
    if me.username:
        mention = re.compile(rf"@{re.escape(me.username)}\b", re.IGNORECASE)
        if mention.search(text):
            return {"question": mention.sub(" ", text).strip()}
    return False


async def private_question(message: Message, settings: ChatSettings, store: Storage, config: BotConfig, bot: Bot,
                           hub_cache: Any = None) -> None:
    await answer_question(message, message.text or "", settings=settings, store=store, config=config, bot=bot,
                          hub_cache=hub_cache)


async def group_question(message: Message, question: str, settings: ChatSettings, store: Storage, config: BotConfig,
                         bot: Bot, hub_cache: Any = None) -> None:
    await answer_question(message, question, settings=settings, store=store, config=config, bot=bot,
                          hub_cache=hub_cache)


def make_router() -> Router:
    router = Router(name="questions")
    router.message.register(private_question, InLoop((F.chat.type == ChatType.PRIVATE) & F.text))
    router.message.register(group_question, InLoop(F.chat.type.in_({ChatType.GROUP, ChatType.SUPERGROUP}) & F.text),
                            _addressed_in_group)
    return router

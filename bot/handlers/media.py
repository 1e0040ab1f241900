"""Anything else that is not text in a private chat gets a short friendly answer (stickers, photos, voice, other
documents); every config file and config.json is `configs.document`'s."""

from __future__ import annotations

from aiogram import F, Router
from aiogram.enums import ChatType
from aiogram.types import Message

from bot.handlers.common import send
from bot.handlers.filters import InLoop
from bot.views.messages import EXAMPLES, t
from engine.schema import Language


async def not_text(message: Message, lang: Language) -> None:
    await send(message, t(lang, "I read text questions, config.json files and training or serving configs. "
                                "Try: %(example)s",
                          example="<code>" + EXAMPLES[lang][0] + "</code>"))


def make_router() -> Router:
    router = Router(name="media")
    router.message.register(not_text, InLoop((F.chat.type == ChatType.PRIVATE) & ~F.text))
    return router

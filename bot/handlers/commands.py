"""/start, /help and the group question command /vram (also /vram@botname)."""

from __future__ import annotations

from typing import Any

from aiogram import Bot, Router
from aiogram.filters import Command, CommandObject, CommandStart
from aiogram.types import Message

from bot.config import BotConfig
from bot.handlers.common import answer_question, send
from bot.storage import ChatSettings, Storage
from bot.views.keyboards import examples_keyboard
from bot.views.messages import EXAMPLES, t, template
from engine.schema import Language


async def start(message: Message, lang: Language) -> None:
    await send(message, template(lang, "welcome.html.j2"), reply_markup=examples_keyboard(lang))


async def help_(message: Message, lang: Language, bot: Bot) -> None:
    me = await bot.me()
    await send(message, template(lang, "help.html.j2", examples=EXAMPLES[lang], bot_username=me.username or ""))


async def vram(message: Message, command: CommandObject, lang: Language, settings: ChatSettings, store: Storage,
               config: BotConfig, bot: Bot, hub_cache: Any = None) -> None:
    question = (command.args or "").strip()
    if not question:
        await send(message, t(lang, "Write the question after the command, for example: %(example)s",
                              example="<code>/vram " + EXAMPLES[lang][0] + "</code>"))
        return
    await answer_question(message, question, settings=settings, store=store, config=config, bot=bot,
                          hub_cache=hub_cache)


def make_router() -> Router:
    router = Router(name="commands")
    router.message.register(start, CommandStart())
    router.message.register(help_, Command("help"))
    router.message.register(vram, Command("vram"))
    return router

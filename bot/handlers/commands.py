"""/start, /help and the group question command /vram (also /vram@botname)."""

from __future__ import annotations

from typing import Any

from aiogram import Bot, Router
from aiogram.filters import Command, CommandObject, CommandStart
from aiogram.types import Message

from bot.config import BotConfig
from bot.handlers.common import answer_question, chat_language, send
from bot.storage import Storage
from bot.views.keyboards import examples_keyboard
from bot.views.messages import EXAMPLES, t, template


def make_router() -> Router:
    router = Router(name="commands")

    @router.message(CommandStart())
    async def start(message: Message, store: Storage, config: BotConfig) -> None:
        lang = chat_language(await store.get_settings(message.chat.id), message.from_user, config)
        await send(message, template(lang, "welcome.html.j2"), reply_markup=examples_keyboard(lang))

    @router.message(Command("help"))
    async def help_(message: Message, store: Storage, config: BotConfig, bot: Bot) -> None:
        lang = chat_language(await store.get_settings(message.chat.id), message.from_user, config)
        me = await bot.me()
        await send(message, template(lang, "help.html.j2", examples=EXAMPLES[lang], bot_username=me.username or ""))

    @router.message(Command("vram"))
    async def vram(message: Message, command: CommandObject, store: Storage, config: BotConfig, bot: Bot,
                   hub_cache: Any = None) -> None:
        question = (command.args or "").strip()
        if not question:
            lang = chat_language(await store.get_settings(message.chat.id), message.from_user, config)
            await send(message, t(lang, "Write the question after the command, for example: %(example)s",
                                  example="<code>/vram " + EXAMPLES[lang][0] + "</code>"))
            return
        await answer_question(message, question, store=store, config=config, bot=bot, hub_cache=hub_cache)

    return router

"""Anything that is not text in a private chat: a config.json file is estimated, the rest gets a short
friendly answer (stickers, photos, voice, other documents)."""

from __future__ import annotations

from typing import Any

from aiogram import Bot, F, Router
from aiogram.enums import ChatType
from aiogram.types import Message

from bot.config import BotConfig
from bot.enrich import config_from_text, request_from_config
from bot.handlers.common import answer_question, send
from bot.handlers.configs import check_file, download_document
from bot.handlers.filters import InLoop
from bot.storage import ChatSettings, Storage
from bot.views.messages import EXAMPLES, t
from engine.schema import Language


async def _is_json(message: Message) -> bool:  # a coroutine: aiogram runs plain functions in a thread
    doc = message.document
    if doc is None:
        return False
    name = (doc.file_name or "").lower()
    return name.endswith(".json") or doc.mime_type == "application/json"


async def config_file(message: Message, lang: Language, settings: ChatSettings, store: Storage, config: BotConfig,
                      bot: Bot, hub_cache: Any = None) -> None:
    doc = message.document
    assert doc is not None
    if not is_addressed(message, bot):
        return
    data = await download_document(message, bot, lang)
    if data is None:
        return
    cfg = config_from_text(data.decode("utf-8", errors="replace"))
    if cfg is None:  # not a model's architecture: a training or DeepSpeed config.json, checked as one
        await check_file(message, data, doc.file_name, settings=settings, store=store, config=config)
        return
    caption = message.caption or ""
    request = request_from_config(cfg, caption, doc.file_name or "config.json")
    await answer_question(message, caption, settings=settings, store=store, config=config, bot=bot,
                          hub_cache=hub_cache, request=request)


async def not_text(message: Message, lang: Language) -> None:
    await send(message, t(lang, "I read text questions, config.json files and training or serving configs. "
                                "Try: %(example)s",
                          example="<code>" + EXAMPLES[lang][0] + "</code>"))


def make_router() -> Router:
    router = Router(name="media")
    router.message.register(config_file, InLoop(F.document), _is_json)
    router.message.register(not_text, InLoop((F.chat.type == ChatType.PRIVATE) & ~F.text))
    return router


def is_addressed(message: Message, bot: Bot) -> bool:
    """A file in a private chat, or in a group as a reply to the bot."""
    if message.chat.type == ChatType.PRIVATE:
        return True
    reply = message.reply_to_message
    return reply is not None and reply.from_user is not None and reply.from_user.id == bot.id

"""/settings (language, currency, price tier) and /price (own price per GPU-hour), per chat.

In groups only chat admins change them (getChatMember); anyone may look.
"""

from __future__ import annotations

import html
import logging

from aiogram import Bot, Router
from aiogram.exceptions import TelegramBadRequest
from aiogram.filters import Command, CommandObject
from aiogram.types import CallbackQuery, Chat, Message

from bot.config import BotConfig
from bot.handlers.common import can_change_settings, chat_language, send
from bot.storage import ChatSettings, OwnPrice, Storage
from bot.views.keyboards import SettingsCb, settings_keyboard, tier_label
from bot.views.messages import t, template
from engine.catalog import find_gpu
from engine.pricing import validate_price
from engine.schema import Language

log = logging.getLogger(__name__)

OFF_WORDS = {"off", "none", "reset", "delete", "remove", "выкл", "нет", "сброс", "удалить", "-"}


def price_text(lang: str, value: float, currency: str) -> str:
    from bot.views.formats import money

    return money(lang, value, currency) + t(lang, "/h")  # as the answers write prices


def settings_view(lang: str, settings: ChatSettings, can_change: bool) -> str:
    language = {"ru": "Русский", "en": "English", None: t(lang, "as the question is written")}[settings.language]
    prices = [(gpu, price_text(lang, p.value, p.currency)) for gpu, p in sorted(settings.prices.items())]
    return template(lang, "settings.html.j2", language=language, currency=settings.currency,
                    tier=tier_label(lang, settings.tier), prices=prices, can_change=can_change)


def parse_price_args(args: str) -> tuple[str, str] | None:
    """('GPU name', 'value or off') from '/price H100 SXM 2.5', or None when it is not that shape."""
    parts = args.split()
    if len(parts) < 2:
        return None
    return " ".join(parts[:-1]), parts[-1]


async def settings_command(message: Message, lang: Language, settings: ChatSettings, bot: Bot) -> None:
    allowed = await can_change_settings(bot, message.chat, message.from_user, message.sender_chat)
    await send(message, settings_view(lang, settings, allowed),
               reply_markup=settings_keyboard(lang, settings.language, settings.currency, settings.tier))


async def settings_button(query: CallbackQuery, callback_data: SettingsCb, lang: Language, settings: ChatSettings,
                          store: Storage, config: BotConfig, bot: Bot) -> None:
    message = query.message
    if message is None or not isinstance(message, Message):
        await query.answer(t(lang, "This button no longer works."))
        return
    chat: Chat = message.chat
    if not await can_change_settings(bot, chat, query.from_user):
        await query.answer(t(lang, "Only chat admins can change the settings."), show_alert=True)
        return
    key, value = callback_data.k, callback_data.v
    if key == "lang" and value in ("auto", "ru", "en"):
        settings.language = None if value == "auto" else value  # type: ignore[assignment]
    elif key == "cur" and value in ("USD", "RUB"):
        settings.currency = value  # type: ignore[assignment]
    elif key == "tier" and value in ("cheapest", "typical", "premium"):
        settings.tier = value  # type: ignore[assignment]
    else:
        await query.answer(t(lang, "This button no longer works."))
        return
    await store.set_settings(chat.id, settings)
    lang = chat_language(settings, query.from_user, config)  # the language button changes it at once
    try:
        await message.edit_text(settings_view(lang, settings, True),
                                reply_markup=settings_keyboard(lang, settings.language, settings.currency,
                                                               settings.tier))
    except TelegramBadRequest as exc:  # "message is not modified": the same button twice
        log.debug("settings edit: %s", exc.message)
    await query.answer(t(lang, "Saved."))


async def price_command(message: Message, command: CommandObject, lang: Language, settings: ChatSettings,
                        store: Storage, bot: Bot) -> None:
    parsed = parse_price_args(command.args or "")
    if parsed is None:
        await send(message, t(lang, "Your own price per GPU-hour replaces the market prices in answers. "
                                    "Set: <code>/price H100 2.5</code>, remove: <code>/price H100 off</code>. "
                                    "The price is in the chat's currency (%(currency)s).",
                              currency=settings.currency))
        return
    if not await can_change_settings(bot, message.chat, message.from_user, message.sender_chat):
        await send(message, t(lang, "Only chat admins can change the settings."))
        return
    name, raw = parsed
    gpu = find_gpu(name)
    if gpu is None:
        await send(message, t(lang, "I do not know the GPU “%(name)s”. Try H100, A100 80GB, RTX 4090, L40S…",
                              name=html.escape(name[:40])))  # the user's words, in HTML
        return
    if raw.lower() in OFF_WORDS:
        removed = settings.prices.pop(gpu.name, None)
        await store.set_settings(message.chat.id, settings)
        await send(message, t(lang, "Own price for %(gpu)s removed: answers use market prices.", gpu=gpu.name)
                   if removed else t(lang, "There was no own price for %(gpu)s.", gpu=gpu.name))
        return
    try:
        value = validate_price(float(raw.replace(",", ".").lstrip("$").rstrip("₽")), settings.currency)
    except ValueError:
        await send(message, t(lang, "That is not a price I can use: write a number of %(currency)s per GPU-hour, "
                                    "for example <code>/price H100 2.5</code>.", currency=settings.currency))
        return
    settings.prices[gpu.name] = OwnPrice(value=value, currency=settings.currency)
    await store.set_settings(message.chat.id, settings)
    await send(message, t(lang, "Saved: %(gpu)s at %(price)s in this chat's answers.", gpu=gpu.name,
                          price=price_text(lang, value, settings.currency)))


def make_router() -> Router:
    router = Router(name="settings")
    router.message.register(settings_command, Command("settings"))
    router.callback_query.register(settings_button, SettingsCb.filter())
    router.message.register(price_command, Command("price"))
    return router

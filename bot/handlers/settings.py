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
from bot.pipeline import market_price
from bot.storage import ChatSettings, OwnPrice, Storage
from bot.views.keyboards import SettingsCb, settings_keyboard, tier_label
from bot.views.messages import t, template
from engine.parse import PriceArgs, read_price_args
from engine.pricing import validate_price
from engine.schema import Language, error_keys

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
    """/price H100: the market range and its date; /price H100 2.5 (or 200 руб): the chat's own price;
    /price H100 off: back to market prices."""
    raw = (command.args or "").strip()
    words = raw.split()
    off = len(words) >= 2 and words[-1].lower() in OFF_WORDS
    args = read_price_args(" ".join(words[:-1]) if off else raw)
    if not raw:
        await send(message, t(lang, "Market price of a GPU: <code>/price H100</code>. Your own price per GPU-hour "
                                    "replaces the market prices in answers. Set: <code>/price H100 2.5</code>, "
                                    "remove: <code>/price H100 off</code>. The price is in the chat's currency "
                                    "(%(currency)s) unless you write ₽ or $.", currency=settings.currency))
        return
    problem = price_problem(lang, args, settings.currency, raw)
    if problem is not None:
        await send(message, problem)
        return
    assert args.gpu is not None and args.gpu.name is not None
    gpu = args.gpu.name
    if args.price is None and not off:
        own = settings.prices.get(gpu)
        await send(message, market_price(lang, gpu, settings.currency,
                                         price_text(lang, own.value, own.currency) if own is not None else None))
        return
    if not await can_change_settings(bot, message.chat, message.from_user, message.sender_chat):
        await send(message, t(lang, "Only chat admins can change the settings."))
        return
    if off:
        removed = settings.prices.pop(gpu, None)
        await store.set_settings(message.chat.id, settings)
        await send(message, t(lang, "Own price for %(gpu)s removed: answers use market prices.", gpu=gpu)
                   if removed else t(lang, "There was no own price for %(gpu)s.", gpu=gpu))
        return
    assert args.price is not None
    currency = args.currency or settings.currency
    try:
        value = validate_price(args.price, currency)
    except ValueError:
        await send(message, not_a_price(lang, currency))
        return
    settings.prices[gpu] = OwnPrice(value=value, currency=currency)
    await store.set_settings(message.chat.id, settings)
    await send(message, t(lang, "Saved: %(gpu)s at %(price)s in this chat's answers.", gpu=gpu,
                          price=price_text(lang, value, currency)))


def not_a_price(lang: str, currency: str) -> str:
    return t(lang, "That is not a price I can use: write a number of %(currency)s per GPU-hour, "
                   "for example <code>/price H100 2.5</code>.", currency=currency)


def typed(raw: str, gpu_text: str | None) -> str:
    """The user's own spelling of what the parser read (lower-cased) as the GPU's name."""
    if not gpu_text:
        return ""
    at = raw.lower().find(gpu_text)
    return raw[at:at + len(gpu_text)] if at >= 0 else gpu_text


def price_problem(lang: str, args: PriceArgs, currency: str, raw: str = "") -> str | None:
    """What is wrong with the arguments of /price, in words; None when they can be used."""
    errors = set(error_keys(args.error))
    if "several gpus" in errors:
        return t(lang, "One GPU at a time, please: <code>/price H100 2.5</code>.")
    if "unknown gpu" in errors or args.gpu is None or args.gpu.name is None:
        return t(lang, "I do not know the GPU “%(name)s”. Try H100, A100 80GB, RTX 4090, L40S…",
                 name=html.escape(typed(raw, args.gpu_text)[:40]))  # the user's words, in HTML
    if "negative number" in errors:
        return t(lang, "That is not a price I can use: a price cannot be negative. Write what a GPU-hour "
                       "costs, for example <code>/price H100 2.5</code>.")
    if errors:
        return not_a_price(lang, currency)
    return None


def make_router() -> Router:
    router = Router(name="settings")
    router.message.register(settings_command, Command("settings"))
    router.callback_query.register(settings_button, SettingsCb.filter())
    router.message.register(price_command, Command("price"))
    return router

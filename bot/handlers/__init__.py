"""The bot's routers, one per feature, in the order they are tried."""

from __future__ import annotations

from aiogram import Router

from bot.handlers import callbacks, commands, configs, inline, media, questions, settings


def get_routers() -> list[Router]:
    """Fresh routers (a router joins one dispatcher only): commands first, the catch-all questions last."""
    return [
        commands.make_router(),
        settings.make_router(),
        configs.make_router(),  # before callbacks (its catch-all toast) and questions (a pasted config)
        callbacks.make_router(),
        inline.make_router(),
        media.make_router(),
        questions.make_router(),
    ]

"""`gpu-advisor web`: the Mini App served alone (development, the browser tests, beside a polling bot).

The initData key is the bot's token (BOT_TOKEN), or for development and tests a made-up one (`--dev-token` or
GPU_ADVISOR_WEB_DEV_TOKEN): then /app/api/dev-init-data signs a test initData for a browser outside Telegram.
Never give a real bot token as a dev token: anyone could sign in as anyone."""

from __future__ import annotations

import asyncio
import os
import sys

DEV_TOKEN_ENV = "GPU_ADVISOR_WEB_DEV_TOKEN"


def main(host: str, port: int, dev_token: str | None) -> int:
    from bot.storage import MemoryStorage, StorageError, storage_from_url
    from bot.webhook import serve_app
    from web.app import PREFIX, Deps, default_bucket, standalone

    dev = dev_token or os.environ.get(DEV_TOKEN_ENV) or None
    token = dev or os.environ.get("BOT_TOKEN", "").strip()
    if not token:
        sys.stderr.write(f"gpu-advisor web: set BOT_TOKEN (or --dev-token / {DEV_TOKEN_ENV} for development)\n")
        return 1
    url = os.environ.get("BOT_STORAGE_URL")
    try:
        store = storage_from_url(url) if url else MemoryStorage()
    except StorageError as exc:
        sys.stderr.write(f"gpu-advisor web: {exc}\n")
        return 1
    deps = Deps(token=token, store=store, bucket=default_bucket(), dev=dev is not None,
                bot_username=os.environ.get("BOT_WEBAPP_BOT_USERNAME") or None)

    async def run() -> None:
        await store.open()
        try:
            sys.stderr.write(f"Mini App on http://{host}:{port}{PREFIX}/\n")
            await serve_app(standalone(deps), host, port)
        finally:
            await store.close()

    try:
        asyncio.run(run())
    except OSError as exc:
        sys.stderr.write(f"gpu-advisor web: {exc.strerror or exc}\n")
        return 1
    except KeyboardInterrupt:
        return 0
    return 0

"""A file from Telegram, read with a size cap while it streams: a document whose message did not say its
size (`file_size` is optional) is never read whole into memory.

`download_capped(bot, file_id, cap)` returns the bytes, raises `FileTooBig` past `cap` (as soon as
getFile or the stream shows it), and `DownloadFailed` (an `OSError`) for what the file server does.
"""

from __future__ import annotations

import asyncio

from aiogram import Bot
from aiohttp import ClientError

CHUNK = 1 << 16


class FileTooBig(Exception):
    """The file is larger than the cap."""


class DownloadFailed(OSError):
    """The file server failed (an HTTP error status, a dropped connection)."""


async def download_capped(bot: Bot, file_id: str, cap: int, timeout: float = 10.0) -> bytes:
    file = await bot.get_file(file_id)
    if file.file_size is not None and file.file_size > cap:
        raise FileTooBig(file.file_size)
    if not file.file_path:
        raise DownloadFailed("getFile gave no file_path")
    body = bytearray()
    try:
        async with asyncio.timeout(timeout):
            if bot.session.api.is_local:  # a local Bot API server: the file is on this machine
                path = bot.session.api.wrap_local_file.to_local(file.file_path)
                with open(path, "rb") as f:  # a config.json: one small read
                    body += f.read(cap + 1)
            else:
                url = bot.session.api.file_url(bot.token, file.file_path)
                async for chunk in bot.session.stream_content(url, timeout=int(timeout) or 1, chunk_size=CHUNK,
                                                              raise_for_status=True):
                    body += chunk
                    if len(body) > cap:
                        break
    except ClientError as exc:
        raise DownloadFailed(type(exc).__name__) from None
    if len(body) > cap:
        raise FileTooBig(len(body))
    return bytes(body)

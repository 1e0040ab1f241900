"""The Bot API session: aiogram's aiohttp session, sending JSON bodies.

The Bot API takes a call as JSON or as a form. aiogram always builds a form, and URL-encoding
percent-escapes every byte of a Cyrillic answer (three characters for each); under load that was a
twentieth of an answer's time. Uploads (the chart) still go as multipart, through aiogram's own code.
"""

from __future__ import annotations

from typing import Any, cast

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.exceptions import TelegramNetworkError
from aiogram.methods import TelegramMethod
from aiogram.methods.base import TelegramType
from aiohttp import ClientError, ClientTimeout


class JsonSession(AiohttpSession):
    async def make_request(self, bot: Bot, method: TelegramMethod[TelegramType],
                           timeout: int | None = None) -> TelegramType:
        files: dict[str, Any] = {}
        payload = {}
        for key, value in method.model_dump(warnings=False).items():
            prepared = self.prepare_value(value, bot=bot, files=files, _dumps_json=False)
            if prepared is not None:
                payload[key] = prepared
        if files:
            return await super().make_request(bot, method, timeout)
        session = await self.create_session()
        url = self.api.api_url(token=bot.token, method=method.__api_method__)
        try:
            async with session.post(url, data=self.json_dumps(payload), headers={"Content-Type": "application/json"},
                                    timeout=ClientTimeout(total=self.timeout if timeout is None else timeout)) as resp:
                raw_result = await resp.text()
        except TimeoutError as e:
            raise TelegramNetworkError(method=method, message="Request timeout error") from e
        except ClientError as e:
            raise TelegramNetworkError(method=method, message=f"{type(e).__name__}: {e}") from e
        response = self.check_response(bot=bot, method=method, status_code=resp.status, content=raw_result)
        return cast(TelegramType, response.result)

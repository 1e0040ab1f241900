"""Shared by the Mini App's tests: a signed test initData and the app on a loopback test server."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.middlewares import TokenBucket
from bot.storage import MemoryStorage
from web.app import Deps
from web.initdata import sign

TOKEN = "123456:TEST-token-for-the-mini-app"


def init_data(user_id: int = 42, lang: str = "en", token: str = TOKEN, age_s: float = 0, **extra: str) -> str:
    user = {"id": user_id, "first_name": "Test", "language_code": lang}
    return sign({"auth_date": str(int(time.time() - age_s)), "user": json.dumps(user), **extra}, token)


def deps(**kwargs: Any) -> Deps:
    return Deps(**{"token": TOKEN, "store": MemoryStorage(), "bucket": TokenBucket(rate=1.0, burst=5), **kwargs})

"""`python -m bot.health`: the container's health check; exit 0 when the bot is alive.

Webhook mode: GET /healthz on the local webhook server (200 as soon as it listens; /readyz says whether the
webhook is registered yet, bot/webhook.py).
Polling mode: the heartbeat file, touched after each successful Bot API call (getUpdates returns at
least every polling timeout), must be fresher than MAX_AGE_S.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.request
from pathlib import Path

MAX_AGE_S = 120.0


def check(env: dict[str, str] | None = None) -> tuple[bool, str]:
    env = dict(os.environ) if env is None else env
    if env.get("BOT_MODE", "polling").strip().lower() == "webhook":
        port = env.get("BOT_WEBHOOK_PORT", "8080").strip() or "8080"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=3) as response:
                return response.status == 200, f"healthz {response.status}"
        except OSError as exc:
            return False, f"healthz unreachable: {exc}"
    beat = Path(env.get("BOT_HEARTBEAT_FILE", "/tmp/gpu-advisor.heartbeat"))
    try:
        age = time.time() - beat.stat().st_mtime
    except OSError:
        return False, "no heartbeat yet"
    return age <= MAX_AGE_S, f"heartbeat {age:.0f} s old"


if __name__ == "__main__":
    ok, why = check()
    print(why)
    sys.exit(0 if ok else 1)

"""Two replicas of `python -m bot run` in webhook mode sharing a real Redis, the test acting as Telegram.

What it shows: the webhook is registered once for both starts; a post without the secret is refused;
a setting changed through one replica is seen by the other; a burst split across both is throttled as
one user; and when one replica is SIGKILLed mid-stream, every update it did not acknowledge is
re-delivered to the other and every question is answered (at least once). Every process is killed in
`finally`, every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from fake_botapi import TOKEN, FakeBotAPI, button, callback, message, texts
from redis_server import RedisServer, free_port

ROOT = Path(__file__).resolve().parents[2]
SECRET = "replica_secret_42"
HOOK_PATH = "/tg/hook"
START_TIMEOUT_S = 90.0  # a replica imports aiogram, matplotlib and the catalogs: slow on a loaded 2-core machine


class Replica:
    def __init__(self, name: str, api_url: str, redis_url: str, workdir: Path) -> None:
        self.name = name
        self.port = free_port()
        self.log = workdir / f"{name}.log"
        base = {k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "HF_"))}
        env = {**base, "PYTHONPATH": str(ROOT), "BOT_TOKEN": TOKEN, "BOT_MODE": "webhook",
               "BOT_API_BASE_URL": api_url, "BOT_STORAGE_URL": redis_url,
               "BOT_WEBHOOK_URL": f"https://bot.example{HOOK_PATH}", "BOT_WEBHOOK_SECRET": SECRET,
               "BOT_WEBHOOK_HOST": "127.0.0.1", "BOT_WEBHOOK_PORT": str(self.port),
               "BOT_HEARTBEAT_FILE": str(workdir / f"{name}.beat"), "HF_ENDPOINT": "http://127.0.0.1:9"}
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "bot", "run"], cwd=workdir, env=env,
                                         stdout=subprocess.DEVNULL, stderr=err)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def wait_healthy(self, session: aiohttp.ClientSession, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited: {self.log.read_text(errors='replace')[-2000:]}")
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(self.base + "/healthz", timeout=aiohttp.ClientTimeout(total=1)) as r:
                    if r.status == 200:
                        return
            await asyncio.sleep(0.1)
        raise AssertionError(f"{self.name} not healthy in time: {self.log.read_text(errors='replace')[-2000:]}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


async def post(session: aiohttp.ClientSession, replica: Replica, update: dict[str, Any],
               secret: str | None = SECRET) -> int:
    """What Telegram does: POST the update with the secret header; the status, or 0 if the connection failed."""
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret else {}
    try:
        async with session.post(replica.base + HOOK_PATH, json=update, headers=headers,
                                timeout=aiohttp.ClientTimeout(total=15)) as r:
            return r.status
    except (aiohttp.ClientError, TimeoutError):
        return 0






async def test_two_replicas_share_redis_and_lose_no_update(tmp_path: Path, api: FakeBotAPI,
                                                           redis_server: RedisServer) -> None:
    ids = iter(range(1, 10_000))

    def update(body: dict[str, Any]) -> dict[str, Any]:
        return {"update_id": next(ids), **body}

    replicas: list[Replica] = []
    try:
        async with asyncio.timeout(60), aiohttp.ClientSession() as session:
            replicas = [Replica(n, api.url, redis_server.url, tmp_path) for n in ("a", "b")]
            a, b = replicas
            deadline = time.monotonic() + START_TIMEOUT_S
            await asyncio.gather(a.wait_healthy(session, deadline), b.wait_healthy(session, deadline))
            [registered] = api.of("setWebhook")  # once across the two starts
            assert registered.params["url"] == f"https://bot.example{HOOK_PATH}"
            assert await post(session, a, update(message("70B QLoRA on H100?", user_id=9000)), secret=None) == 401
            assert await post(session, b, update(message("70B QLoRA on H100?", user_id=9000)), secret="x") == 401

            # a setting changed through B is seen by A
            assert await post(session, a, update(message("/settings", user_id=9001))) == 200
            panel = [m for (c, _), m in api.messages.items() if c == 9001][-1]
            assert await post(session, b, update(callback(button(panel, "RUB ₽"), message_obj=panel,
                                                          user_id=9001))) == 200
            assert api.of("answerCallbackQuery")[-1].params.get("text") == "Saved."
            assert await post(session, a, update(message("70B QLoRA on H100?", user_id=9001))) == 200
            assert "₽" in texts(api, 9001)[-1]

            # a burst of 8 split across both replicas: throttled as one user (5 in the burst)
            burst = [post(session, (a, b)[i % 2], update(message("70B QLoRA on H100?", user_id=9002)))
                     for i in range(8)]
            assert await asyncio.gather(*burst) == [200] * 8
            said = texts(api, 9002)
            answered = [s for s in said if s.startswith("✅")]
            notices = [s for s in said if s.startswith("Too many questions at once")]
            assert 5 <= len(answered) <= 6 and notices  # separate in-process buckets would answer all 8
            assert len(answered) + len(notices) < 8

            # a stream of questions to A; A is SIGKILLed mid-stream; what A did not acknowledge goes to B
            api.slow("sendMessage", 0.3, times=1000)  # answers take a while: some are in flight at the kill
            stream = {9100 + i: update(message("70B QLoRA on H100?", user_id=9100 + i)) for i in range(12)}

            acks: list[int] = []

            async def deliver(chat_id: int, delay: float) -> tuple[int, int]:
                await asyncio.sleep(delay)
                status = await post(session, a, stream[chat_id])
                if status == 200:
                    acks.append(chat_id)
                return chat_id, status

            tasks = [asyncio.create_task(deliver(cid, 0.04 * i)) for i, cid in enumerate(stream)]
            while len(acks) < 2:
                await asyncio.sleep(0.01)
            a.kill()
            results = dict(await asyncio.gather(*tasks))
            api.slow_methods.clear()
            acknowledged = [cid for cid, status in results.items() if status == 200]
            lost = [cid for cid, status in results.items() if status != 200]
            assert acknowledged and lost, results  # it really died mid-stream
            for cid in lost:  # Telegram re-delivers what was not acknowledged, until it is
                while (status := await post(session, b, stream[cid])) != 200:
                    assert status == 500  # still claimed by A (dead): its claims expire within seconds
                    await asyncio.sleep(0.5)
            missing = [cid for cid in stream if not texts(api, cid)]
            assert not missing, f"unanswered after re-delivery: {missing}"
            twice = [cid for cid in acknowledged if len(texts(api, cid)) > 1]
            assert not twice, f"answered twice: {twice}"
            for cid in acknowledged:  # Telegram delivers an acknowledged update again (a lost 200): not answered
                assert await post(session, b, stream[cid]) == 200
            assert all(len(texts(api, cid)) == 1 for cid in acknowledged)
            assert all(text.startswith("✅") for cid in stream for text in texts(api, cid))
            assert len(api.of("setWebhook")) == 1 and not api.of("deleteWebhook")
    finally:
        for replica in replicas:
            replica.kill()
    for replica in replicas:
        assert TOKEN not in replica.log.read_text(errors="replace")

"""Fairness: other users' latency while one user floods the bot with heavy questions, in webhook and polling mode.

In process: the real aiogram Bot and Dispatcher (`bot.app.build_dispatcher`) against the tests' fake Bot API on
loopback (tests/fake_botapi.py), a SQLite file in a temporary folder. `--others` users each ask a light question
(«70B QLoRA на H100?»-like, distinct) every second for `--seconds`; in the flood phase one more user sends a
heavy post-training question (a plan search of ~9,000 breakdowns, ~1.5 s of CPU) every second too (inside the
throttle's nominal 1/s). Latency: from the update reaching the bot (a webhook POST, or the update appearing in
getUpdates) to its answer's sendMessage reaching the fake server. Figures, not a test.

Usage: python bench/fairness_bench.py [--seconds 8] [--others 5] [--mode both|webhook|polling]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from aiohttp.test_utils import TestClient, TestServer  # noqa: E402
from bot_harness import make_config  # noqa: E402
from fake_botapi import FakeBotAPI, message  # noqa: E402

from bot.app import build_bot, build_dispatcher, run_polling, webhook_app  # noqa: E402
from bot.middlewares import RetryRequests  # noqa: E402
from bot.storage import SQLiteStorage  # noqa: E402

SECRET = "bench_secret"
HEAVY = "GRPO 8B qlora 8bit r {r} on H100 fp8 vllm within a day"
LIGHT = "{n}B QLoRA на H100?"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


async def answered_at(api: FakeBotAPI, chat_id: int, after: float, timeout: float = 60.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in api.calls:
            if c.method == "sendMessage" and c.at >= after and int(c.params.get("chat_id", 0)) == chat_id:
                return c.at
        await asyncio.sleep(0.005)
    return float("nan")


async def phase(mode: str, seconds: float, others: int, flood: bool, workdir: Path) -> dict[str, Any]:
    api = FakeBotAPI()
    await api.start()
    db = workdir / f"{mode}-{flood}.db"
    overrides: dict[str, Any] = {"mode": mode}
    if mode == "webhook":
        overrides.update(webhook_url="https://bot.example/hook", webhook_secret=SECRET)
    config = make_config(api.url, db, **overrides)
    store = SQLiteStorage(db)
    await store.open()
    bot = build_bot(config, retry=RetryRequests(attempts=2, backoff_s=0.01))
    dp = build_dispatcher(config, store)
    latencies: list[float] = []
    heavy_latencies: list[float] = []
    client: TestClient | None = None
    poller: asyncio.Task[None] | None = None
    update_ids = iter(range(1, 10**9))
    try:
        if mode == "webhook":
            client = TestClient(TestServer(webhook_app(bot, dp, config)))
            await client.start_server()
        else:
            poller = asyncio.create_task(run_polling(bot, dp, handle_signals=False, polling_timeout=1,
                                                     close_bot_session=False))

        async def send(text: str, user_id: int) -> float:
            update = {"update_id": next(update_ids), **message(text, user_id=user_id)}
            sent = time.monotonic()
            if client is not None:
                await client.post("/hook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
            else:
                api.push(update)
            return sent

        async def user(user_id: int, heavy: bool) -> None:
            for n in range(int(seconds)):
                text = HEAVY.format(r=65100 + 7 * n + user_id % 7) if heavy else LIGHT.format(n=user_id % 90 + n + 2)
                sent = await send(text, user_id)
                got = await answered_at(api, user_id, sent)
                (heavy_latencies if heavy else latencies).append(got - sent)
                await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - sent)))

        tasks = [user(20_000 + i, False) for i in range(others)]
        if flood:
            tasks.append(user(30_000, True))
        await asyncio.gather(*tasks)
    finally:
        if poller is not None:
            await dp.stop_polling()
            await poller
        if client is not None:
            await client.close()
        await bot.session.close()
        await store.close()
        await api.stop()
    good = [x * 1000 for x in latencies if x == x]
    return {"mode": mode, "flood": flood, "n": len(latencies), "lost": len(latencies) - len(good),
            "p50": statistics.median(good) if good else float("nan"), "p95": pct(good, 0.95),
            "heavy": [round(x, 2) for x in heavy_latencies]}


async def run(args: argparse.Namespace) -> None:
    modes = ["webhook", "polling"] if args.mode == "both" else [args.mode]
    print(f"others: {args.others} users, 1 light question/s each, {args.seconds:.0f} s; "
          "flood: + one user, 1 heavy question/s")
    print(f"{'mode':8} {'phase':12} {'answers':>7} {'lost':>4} {'p50 ms':>8} {'p95 ms':>8}  heavy user's latencies s")
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            for flood in (False, True):
                r = await phase(mode, args.seconds, args.others, flood, Path(tmp))
                print(f"{r['mode']:8} {'flood' if flood else 'quiet':12} {r['n']:>7} {r['lost']:>4} "
                      f"{r['p50']:>8.0f} {r['p95']:>8.0f}  {r['heavy'] if flood else ''}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--others", type=int, default=5)
    parser.add_argument("--mode", choices=["both", "webhook", "polling"], default="both")
    asyncio.run(run(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Redelivered updates are answered once: by update id, in process and shared through Redis by replicas."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from bot_harness import harness, make_config
from fake_botapi import BOT_ID, FakeBotAPI, message
from redis_server import RedisServer

from bot import dedup
from bot.app import build_bot, build_dispatcher, webhook_app
from bot.middlewares import RetryRequests
from bot.storage import KEY_PREFIX, SQLiteStorage, sqlite, storage_from_url

SECRET = "s3cret_token"
HEADERS = {"X-Telegram-Bot-Api-Secret-Token": SECRET}


def answers(api: FakeBotAPI, chat_id: int) -> list[str]:
    return [c.params["text"] for c in api.of("sendMessage") if int(c.params["chat_id"]) == chat_id]


async def test_polling_mode_answers_a_redelivered_update_once(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        update = {"update_id": 77, **message("70B QLoRA on H100?", user_id=7001)}
        for _ in range(3):
            await h.dp.feed_raw_update(h.bot, update)
        assert len(answers(api, 7001)) == 1 and h.metrics.duplicates == 2
        assert 'gpu_advisor_updates_duplicate_total 2' in h.metrics.prometheus()


async def test_a_restarted_process_does_not_answer_what_it_answered_before_a_crash(tmp_path: Path,
                                                                                    api: FakeBotAPI) -> None:
    """Polling without Redis: the process answered, then died before its next getUpdates acknowledged the update;
    Telegram delivers it again to the restarted process (same SQLite file), which skips it."""
    api.push(message("70B QLoRA on H100?", user_id=7301))
    async with harness(tmp_path, api) as h:  # handled, never acknowledged: no getUpdates with its offset
        await h.dp.feed_raw_update(h.bot, api.updates[0])
    assert len(answers(api, 7301)) == 1
    async with harness(tmp_path, api) as h, h.polling():  # the restart: real polling gets the update again
        api.push(message("8B LoRA on a 4090", user_id=7302))
        await api.wait_for("sendMessage", chat_id=7302, timeout=10)
        async with asyncio.timeout(10):  # the redelivered one, skipped (else answered again, and this times out)
            while h.metrics.duplicates < 1:
                await asyncio.sleep(0.05)
    assert len(answers(api, 7301)) == 1 and len(answers(api, 7302)) == 1
    assert h.metrics.duplicates == 1


async def test_answered_update_ids_are_pruned_and_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite, "MAX_UPDATES", 3)
    store = SQLiteStorage(tmp_path / "u.db")
    await store.open()
    try:
        seen = dedup.SQLiteSeen(store)
        day_old = time.time() - sqlite.UPDATES_TTL_S - 1
        store._execute("INSERT INTO updates (key, created) VALUES ('1:old', ?)", (day_old,))
        for n in range(5):
            assert await seen.claim(f"1:{n}") == "claimed"
            await seen.done(f"1:{n}")
        assert await dedup.SQLiteSeen(store).claim("1:4") == "done"  # another process on the file
        now = time.time()
        for n in range(5):
            store._execute("UPDATE updates SET created = ? WHERE key = ?", (now - 10 + n, f"1:{n}"))
        with store._lock:
            assert store._conn is not None
            store._prune(store._conn)
        kept = [row[0] for row in store._read("SELECT key FROM updates ORDER BY created", ())]
        assert kept == ["1:2", "1:3", "1:4"]  # the newest MAX_UPDATES; the day-old one gone
    finally:
        await store.close()


@pytest.mark.parametrize("shared", [False, True])
async def test_webhook_replicas_answer_a_redelivered_update_once(tmp_path: Path, api: FakeBotAPI, shared: bool,
                                                                 request: pytest.FixtureRequest,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dedup, "WAIT_S", 0.3)
    url = request.getfixturevalue("redis_server").url if shared else f"sqlite:///{tmp_path / 'd.db'}"
    config = make_config(api.url, tmp_path / "d.db", mode="webhook", webhook_url="https://bot.example/hook",
                         webhook_secret=SECRET, storage_url=url)
    replicas: list[Any] = []
    stores = []
    try:
        store = storage_from_url(url)
        await store.open()
        stores.append(store)
        for _ in range(2 if shared else 1):  # with Redis: two replicas; without: one process, delivered twice
            bot = build_bot(config, retry=RetryRequests(attempts=1))
            client = TestClient(TestServer(webhook_app(bot, build_dispatcher(config, store), config)))
            await client.start_server()
            replicas.append((bot, client))
        update = {"update_id": 501, **message("70B QLoRA on H100?", user_id=7101)}
        for n in range(4):
            _, client = replicas[n % len(replicas)]
            assert (await client.post("/hook", json=update, headers=HEADERS)).status == 200
        assert len(answers(api, 7101)) == 1
        if shared:
            # another replica holds the claim (it is still working on it): refused now, handled once it is free
            redis = store.redis  # type: ignore[attr-defined]
            key = f"{KEY_PREFIX}:upd:{BOT_ID}:502"
            await redis.set(key, b"p", ex=60)
            update = {"update_id": 502, **message("70B QLoRA on H100?", user_id=7102)}
            _, client = replicas[1]
            assert (await client.post("/hook", json=update, headers=HEADERS)).status == 500
            assert not answers(api, 7102)
            await redis.delete(key)  # the claim expired (the other replica died)
            assert (await client.post("/hook", json=update, headers=HEADERS)).status == 200
            assert len(answers(api, 7102)) == 1
            assert await redis.get(key) == b"d" and 0 < await redis.ttl(key) <= dedup.DONE_TTL_S
    finally:
        for bot, client in replicas:
            await client.close()
            await bot.session.close()
        for store in stores:
            await store.close()


async def test_a_failed_update_is_released_for_its_redelivery(tmp_path: Path, api: FakeBotAPI) -> None:
    config = make_config(api.url, tmp_path / "d.db", mode="webhook", webhook_url="https://bot.example/hook",
                         webhook_secret=SECRET)
    store = storage_from_url(f"sqlite:///{tmp_path / 'd.db'}")
    await store.open()
    bot = build_bot(config, retry=RetryRequests(attempts=2, backoff_s=0.01))
    try:
        async with TestClient(TestServer(webhook_app(bot, build_dispatcher(config, store), config))) as client:
            api.fail("sendMessage", status=502, times=2)
            update = {"update_id": 601, **message("70B QLoRA on H100?", user_id=7201)}
            assert (await client.post("/hook", json=update, headers=HEADERS)).status == 500
            assert (await client.post("/hook", json=update, headers=HEADERS)).status == 200
            assert (await client.post("/hook", json=update, headers=HEADERS)).status == 200
        assert len(answers(api, 7201)) == 1
    finally:
        await bot.session.close()
        await store.close()


async def test_redis_away_falls_back_to_the_replicas_own_record(redis_server: RedisServer) -> None:
    store = storage_from_url(redis_server.url)
    await store.open()
    try:
        seen = dedup.RedisSeen(store, store.breaker)  # type: ignore[attr-defined]
        assert await seen.claim("1:1") == "claimed"
        await seen.done("1:1")
        redis_server.stop()
        assert await seen.claim("1:1") == "done"  # remembered here too
        assert await seen.claim("1:2") == "claimed"
    finally:
        await store.close()


async def test_redis_that_lost_its_data_does_not_make_a_replica_answer_again(redis_server: RedisServer) -> None:
    """Redis restarted empty (or flushed): the replica that answered an update still knows it did."""
    store = storage_from_url(redis_server.url)
    await store.open()
    try:
        seen = dedup.RedisSeen(store, store.breaker)  # type: ignore[attr-defined]
        assert await seen.claim("1:7") == "claimed"
        await seen.done("1:7")
        await store.redis.flushall()  # type: ignore[attr-defined]
        assert await seen.claim("1:7") == "done"
        other = dedup.RedisSeen(store, store.breaker)  # type: ignore[attr-defined]  # another replica
        assert await other.claim("1:7") == "done"  # the shared record was written again
    finally:
        await store.close()

"""State shared by replicas through a real Redis, the webhook registered once, and Redis outages.

Each "replica" here is its own storage object with its own Redis connection pool and breaker, as in
separate processes; tests/bot/test_bot_replicas.py does the same with real subprocesses.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from bot_harness import Harness, make_config
from fake_botapi import FakeBotAPI, inline_query, message, texts
from redis.asyncio import Redis
from redis_server import RedisServer

from bot.app import build_bot, build_dispatcher
from bot.middlewares import RetryRequests, TokenBucket
from bot.scaleout import Breaker, FallbackStorage, shared_state
from bot.storage import ChatSettings, RedisStorage, storage_from_url
from bot.webhook import FINGERPRINT_KEY, register_once
from engine.parse import parse


async def replica(url: str, **breaker: float) -> FallbackStorage:
    store = FallbackStorage(RedisStorage(url), Breaker(**breaker))
    await store.open()
    return store




# ---- shared state -------------------------------------------------------------------------------------


async def test_storage_url_picks_redis_with_its_fallback(redis_server: RedisServer) -> None:
    store = storage_from_url(redis_server.url)
    assert isinstance(store, FallbackStorage)
    await store.open()
    shared = shared_state(store)
    assert shared is not None and shared.breaker is store.breaker
    await store.close()


async def test_a_burst_split_across_replicas_is_throttled_as_one_user(redis_server: RedisServer) -> None:
    a, b = await replica(redis_server.url), await replica(redis_server.url)
    try:
        bucket_a, bucket_b = shared_state(a), shared_state(b)
        assert bucket_a is not None and bucket_b is not None
        calls = [(bucket_a if i % 2 else bucket_b).bucket.acquire(4242) for i in range(12)]
        results = await asyncio.gather(*calls)
        assert sum(allowed for allowed, _, _ in results) == 5  # burst 5, shared
        assert sum(notify for _, notify, _ in results) == 1  # one notice per burst, across replicas
        assert all(0 < wait <= 1.0 for allowed, _, wait in results if not allowed)
        assert (await bucket_b.bucket.acquire(4343))[0]  # another user is not affected
        ttl = await a.redis.ttl("gpu-advisor:tb:4242")
        assert 0 < ttl <= 2 * 5 + 1  # the key goes once it would be full again (from a debt of one burst at most)
    finally:
        await a.close()
        await b.close()


async def test_inline_answers_and_hub_configs_are_shared_with_a_ttl(redis_server: RedisServer) -> None:
    a, b = await replica(redis_server.url), await replica(redis_server.url)
    try:
        sa, sb = shared_state(a), shared_state(b)
        assert sa is not None and sb is not None
        entries = [{"id": "x", "title": "Fits", "html": "<b>ok</b>", "markup": None}]
        assert await sb.answer_cache.get("70b qlora h100|en|{}") is None
        await sa.answer_cache.put("70b qlora h100|en|{}", entries)
        assert await sb.answer_cache.get("70b qlora h100|en|{}") == entries
        assert (sb.answer_cache.hits, sb.answer_cache.misses) == (1, 1)
        [key] = await a.redis.keys("gpu-advisor:inline:*")
        assert 0 < await a.redis.ttl(key) <= 600
        await sa.hub_cache.set("acme/llama-8b", {"hidden_size": 4096})
        assert await sb.hub_cache.get("acme/llama-8b") == {"hidden_size": 4096}
        assert 0 < await a.redis.ttl("gpu-advisor:hub:acme/llama-8b") <= 24 * 3600
        # settings and the questions behind keyboards, too
        await a.set_settings(-100, ChatSettings(currency="RUB"))
        assert (await b.get_settings(-100)).currency == "RUB"
        qid = await a.put_request(parse("70B QLoRA на H100?"))
        assert await b.get_request(qid) == parse("70B QLoRA на H100?")
    finally:
        await a.close()
        await b.close()


async def test_the_webhook_is_registered_once_by_concurrent_replicas(tmp_path: Path, api: FakeBotAPI,
                                                                     redis_server: RedisServer) -> None:
    stores = [await replica(redis_server.url) for _ in range(3)]
    bots = []
    try:
        async def start(store: FallbackStorage, secret: str) -> None:
            config = make_config(api.url, tmp_path / "unused.db", mode="webhook",
                                 webhook_url="https://bot.example/tg/hook", webhook_secret=secret)
            bot = build_bot(config, retry=RetryRequests(backoff_s=0.01))
            bots.append(bot)
            await register_once(bot, config, build_dispatcher(config, store), store.redis)

        await asyncio.gather(*(start(s, "first_secret") for s in stores))
        [registered] = api.of("setWebhook")
        assert registered.params["secret_token"] == "first_secret"
        assert await stores[0].redis.get(FINGERPRINT_KEY)
        assert not await stores[0].redis.exists("gpu-advisor:webhook:lock")  # released
        await asyncio.gather(*(start(s, "first_secret") for s in stores))  # a rolling restart: nothing to do
        assert len(api.of("setWebhook")) == 1
        # a rotated secret: same URL, so getWebhookInfo alone would not tell; the fingerprint does
        await asyncio.gather(*(start(s, "rotated_secret") for s in stores))
        assert [c.params["secret_token"] for c in api.of("setWebhook")] == ["first_secret", "rotated_secret"]
        assert not api.of("deleteWebhook")
    finally:
        for bot in bots:
            await bot.session.close()
        for store in stores:
            await store.close()


# ---- Redis outages ---------------------------------------------------------------------------------------


async def test_redis_down_answers_with_defaults_logs_once_and_recovers(
        tmp_path: Path, api: FakeBotAPI, redis_server: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    store = await replica(redis_server.url, timeout_s=0.3, cooldown_s=0.2)
    config = make_config(api.url, tmp_path / "unused.db")
    h = Harness(api, config, store, bucket=TokenBucket(rate=100, burst=100))  # eight in a row: not the subject
    await store.set_settings(7001, ChatSettings(currency="RUB"))
    try:
        with caplog.at_level(logging.INFO):
            await h.feed(message("70B QLoRA on H100?", user_id=7001))
            assert "₽" in texts(api, 7001)[-1]  # the chat's setting, from Redis

            redis_server.pause()  # hung: every call would wait; the timeout and the breaker cut it short
            for _ in range(4):
                await h.feed(message("70B QLoRA on H100?", user_id=7001))
            assert store.breaker.down  # the timeouts opened the breaker: later calls no longer wait on Redis
            answers = texts(api, 7001)[-4:]
            assert all(a.startswith("✅") and "₽" not in a for a in answers)  # answered, default settings
            await h.feed(message("/price H100 2.5", user_id=7001))  # a write cannot be kept: say so
            assert texts(api, 7001)[-1] == "I cannot save settings right now: please try again in a minute."
            assert h.metrics.errors == 0 and store.breaker.down and store.breaker.fallbacks >= 5

            redis_server.resume()
            await asyncio.sleep(0.3)  # past the cool-down: the next call probes Redis
            await h.feed(message("70B QLoRA on H100?", user_id=7001))
            assert "₽" in texts(api, 7001)[-1] and not store.breaker.down

            redis_server.stop()  # crashed: connections refused
            await h.feed(message("70B QLoRA on H100?", user_id=7001))
            assert texts(api, 7001)[-1].startswith("✅") and "₽" not in texts(api, 7001)[-1]
            restarted = RedisServer(redis_server.workdir, port=redis_server.port).start()
            redis_server.proc = restarted.proc  # the fixture kills it at the end
            fresh = Redis.from_url(redis_server.url)
            await fresh.set("gpu-advisor:chat:7001", ChatSettings(currency="RUB").model_dump_json())
            await fresh.aclose()
            await asyncio.sleep(0.3)
            await h.feed(message("70B QLoRA on H100?", user_id=7001))
            assert "₽" in texts(api, 7001)[-1]
        down = [r for r in caplog.records if "Redis unavailable" in r.getMessage()]
        back = [r for r in caplog.records if "Redis is back" in r.getMessage()]
        assert len(down) == 2 and len(back) == 2  # once per outage, not per update
        assert all(r.levelno == logging.WARNING for r in down)
        assert 'gpu_advisor_redis_up 1' in h.metrics.prometheus()
    finally:
        await h.close()


async def test_redis_down_throttling_and_inline_cache_fall_back_in_process(
        tmp_path: Path, api: FakeBotAPI, redis_server: RedisServer) -> None:
    store = await replica(redis_server.url, timeout_s=0.3, cooldown_s=30)
    h = Harness(api, make_config(api.url, tmp_path / "unused.db"), store)
    try:
        redis_server.stop()
        for _ in range(7):
            await h.feed(message("70B QLoRA on H100?", user_id=7002))
        said = texts(api, 7002)
        assert len(said) == 6 and said[-1].startswith("Too many questions at once")  # burst 5, in process
        await h.feed(inline_query("70b qlora h100", user_id=7002))
        await h.feed(inline_query("70b qlora h100", user_id=7002))
        first, second = api.of("answerInlineQuery")
        assert first.params["results"] and first.params["results"] == second.params["results"]
        assert (h.metrics.inline_hits, h.metrics.inline_misses) == (1, 1)
        assert "gpu_advisor_redis_up 0" in h.metrics.prometheus()
    finally:
        await h.close()

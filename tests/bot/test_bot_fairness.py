"""One user's heavy questions never stall the others: answers are computed off the event loop, one at a time
per user, and charged to the user's throttle by the engine's work (bot.compute, engine.work)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot_harness import Clock, harness
from fake_botapi import FakeBotAPI, message

from bot import compute
from bot.middlewares import TokenBucket
from bot.pipeline import render_text
from engine.work import counted

HEAVY = "GRPO 405B qlora r {r} on H100 fp8 vllm within a day"  # a post-training search: ~23,000 units


def heavy(r: int) -> str:
    """A heavy question of its own (the engine memoises estimates: a repeated one would be cheap)."""
    return HEAVY.format(r=r)
LIGHT = "70B QLoRA на H100?"



def _answered(api: FakeBotAPI) -> list[int]:
    return [int(c.params["chat_id"]) for c in api.of("sendMessage")]


def test_the_engine_counts_its_work() -> None:
    _, light = counted(render_text, LIGHT)
    _, big = counted(render_text, heavy(4000))
    assert 0 < light < compute.FREE_UNITS < big
    assert compute.charge_for(light) == 0 and compute.charge_for(big) > 3


async def test_a_light_question_is_answered_while_a_heavy_one_is_computed(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        slow = asyncio.create_task(h.dp.feed_raw_update(h.bot, {"update_id": 91_000, **message(heavy(3000),
                                                                                                user_id=7001)}))
        await asyncio.sleep(0)  # the heavy update is taken first
        await h.feed(message(LIGHT, user_id=7002))
        assert _answered(api) == [7002]  # answered while the heavy one is still being computed
        await slow
        assert _answered(api) == [7002, 7001]


async def test_one_users_flood_waits_behind_itself(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        flood = [asyncio.create_task(h.dp.feed_raw_update(h.bot, {"update_id": 90_000 + n, **message(
            heavy(2000 + 100 * n), user_id=7101)})) for n in range(3)]  # no time limit: a slow machine is slow
        await asyncio.sleep(0)
        await h.feed(message(LIGHT, user_id=7102))
        assert _answered(api)[0] == 7102
        await asyncio.gather(*flood)
        assert sorted(_answered(api)) == [7101, 7101, 7101, 7102]


async def test_the_throttle_is_charged_by_work_not_by_message(tmp_path: Path, api: FakeBotAPI) -> None:
    clock = Clock()
    async with harness(tmp_path, api, bucket=TokenBucket(rate=1.0, burst=5, clock=clock)) as h:
        for n in range(4):  # four light questions fit the burst of five
            await h.feed(message(f"{n + 7}B lora 4090", user_id=7201))
        assert len(api.of("sendMessage")) == 4
        clock.now += 10  # the bucket is full again
        await h.feed(message(heavy(3500), user_id=7201))  # one heavy answer costs several questions' tokens
        await h.feed(message(LIGHT, user_id=7201))
        sent = [c.params["text"] for c in api.of("sendMessage")]
        assert len(sent) == 6 and sent[-1].startswith("Too many questions at once")
        await h.feed(message(LIGHT, user_id=7202))  # someone else is not charged for it
        assert not api.of("sendMessage")[-1].params["text"].startswith("Too many")

"""Polling mode loses no answer on a deploy: SIGTERM drains the updates in flight; an update accepted but not
answered by a killed process is answered after its restart, once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bot_harness import harness
from fake_botapi import FakeBotAPI, message


def answers(api: FakeBotAPI, chat_id: int) -> list[str]:
    return [c.params["text"] for c in api.of("sendMessage") if int(c.params["chat_id"]) == chat_id]


async def test_stopping_waits_for_the_answer_in_flight(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        api.slow("sendMessage", 1.0)  # a slow Bot API call when the stop comes (a 429 may ask for a minute)
        async with h.polling():
            api.push(message("70B QLoRA on H100?", user_id=9301))
            async with asyncio.timeout(10):
                while not h.dp._handle_update_tasks:
                    await asyncio.sleep(0.01)
        # h.polling() has stopped polling: the shutdown drained the update first
        assert len(answers(api, 9301)) == 1
        assert await h.store.unsettled() == []  # type: ignore[attr-defined]


async def test_an_update_accepted_by_a_killed_process_is_answered_after_the_restart(tmp_path: Path,
                                                                                      api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:  # the killed process: accepted the update, never answered it
        update = {"update_id": 4242, **message("8B LoRA on a 4090", user_id=9302)}
        await h.store.accept(f"{h.bot.id}:4242", json.dumps(update))  # type: ignore[attr-defined]
    assert answers(api, 9302) == []
    async with harness(tmp_path, api) as h, h.polling():  # the restart: the update is not delivered again
        await api.wait_for("sendMessage", chat_id=9302, timeout=10)
    assert len(answers(api, 9302)) == 1
    async with harness(tmp_path, api) as h:
        assert await h.store.unsettled() == []  # type: ignore[attr-defined]
        async with h.polling():  # a second restart answers nothing again
            await asyncio.sleep(0.3)
    assert len(answers(api, 9302)) == 1


async def test_an_update_answered_before_the_kill_is_not_answered_again(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        update = {"update_id": 4343, **message("8B LoRA on a 4090", user_id=9303)}
        await h.dp.feed_raw_update(h.bot, update)  # answered and recorded as answered...
        await h.store.accept(f"{h.bot.id}:4343", json.dumps(update))  # type: ignore[attr-defined]  # ...not settled
    async with harness(tmp_path, api) as h, h.polling():
        async with asyncio.timeout(10):
            while await h.store.unsettled():  # type: ignore[attr-defined]
                await asyncio.sleep(0.05)
    assert len(answers(api, 9303)) == 1

"""What one user can make the bot do is bounded: pasted configs and launch lines go through the questions'
throttle, a refused inline query costs no work at all, and nothing is kept per chat for ever (no FSM records)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot_harness import Clock, harness
from fake_botapi import FakeBotAPI, inline_query, message

from bot.middlewares import TokenBucket
from bot.throttling import INLINE_BURST


async def test_pasted_launch_lines_are_throttled(tmp_path: Path, api: FakeBotAPI) -> None:
    clock = Clock()
    async with harness(tmp_path, api, bucket=TokenBucket(rate=1.0, burst=5, clock=clock)) as h:
        for n in range(20):
            await h.feed(message(f"vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len {4096 + n}",
                                 user_id=8101))
        sent = [c.params["text"] for c in api.of("sendMessage")]
        assert len(sent) == 6 and sent[-1].startswith("Too many questions at once")
        assert h.metrics.throttled == 15


async def test_a_refused_inline_query_reads_nothing(tmp_path: Path, api: FakeBotAPI) -> None:
    clock = Clock()
    async with harness(tmp_path, api, inline_bucket=TokenBucket(rate=3.0, burst=INLINE_BURST, clock=clock)) as h:
        reads: list[Any] = []
        get_settings = h.store.get_settings

        async def counting(chat_id: int) -> Any:
            reads.append(chat_id)
            return await get_settings(chat_id)

        h.store.get_settings = counting  # type: ignore[method-assign]
        for n in range(40):
            await h.feed(inline_query(f"{n + 1}B lora h100", user_id=8201))
        assert len(api.of("answerInlineQuery")) == INLINE_BURST
        assert len(reads) == INLINE_BURST  # the 28 refused ones never reached the chat's settings


async def test_no_record_is_kept_per_chat_and_user(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api) as h:
        for n in range(30):
            await h.feed(message("/start", user_id=8300 + n))
        assert len(api.of("sendMessage")) == 30
        assert len(h.dp.fsm.storage.storage) == 0  # type: ignore[attr-defined]  # aiogram's MemoryStorage

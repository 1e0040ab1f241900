"""What was not throttled is: inline queries (a bucket of their own), /settings, /price and the settings
buttons (the questions' bucket): one user's flood costs others nothing and the Bot API little."""

from __future__ import annotations

from pathlib import Path

from bot_harness import Clock, harness
from fake_botapi import FakeBotAPI, callback, inline_query, message

from bot.middlewares import TokenBucket
from bot.throttling import INLINE_BURST


async def test_an_inline_flood_is_cut_to_the_burst_and_others_are_answered(tmp_path: Path, api: FakeBotAPI) -> None:
    clock = Clock()
    async with harness(tmp_path, api, inline_bucket=TokenBucket(rate=3.0, burst=INLINE_BURST, clock=clock)) as h:
        for n in range(200):  # distinct queries: no cache hit helps
            await h.feed(inline_query(f"{n + 1}B qlora h100", user_id=9001))
        assert len(api.of("answerInlineQuery")) == INLINE_BURST
        assert h.metrics.throttled == 200 - INLINE_BURST
        await h.feed(inline_query("70B qlora h100", user_id=9002))  # someone else
        assert len(api.of("answerInlineQuery")) == INLINE_BURST + 1
        clock.now += 1.0  # three a second again for the first one
        for n in range(5):
            await h.feed(inline_query(f"{n + 1}B lora 4090", user_id=9001))
        assert len(api.of("answerInlineQuery")) == INLINE_BURST + 1 + 3


async def test_price_and_settings_floods_in_a_group_are_throttled(tmp_path: Path, api: FakeBotAPI) -> None:
    clock = Clock()
    group = -100321
    async with harness(tmp_path, api, bucket=TokenBucket(rate=1.0, burst=5, clock=clock)) as h:
        for _ in range(50):
            await h.feed(message("/price H100 2.5", chat_id=group, kind="supergroup", user_id=9101))
        assert len(api.of("getChatMember")) == 5
        sent = [c.params["text"] for c in api.of("sendMessage")]
        assert len(sent) == 6 and sent[-1].startswith("Too many questions at once")
        clock.now += 10
        await h.feed(message("/settings", user_id=9102))
        panel = [m for (c, _), m in api.messages.items() if c == 9102][-1]
        data = next(b["callback_data"] for row in panel["reply_markup"]["inline_keyboard"] for b in row
                    if b["text"].removeprefix("✓ ") == "RUB ₽")
        for _ in range(20):
            await h.feed(callback(data, message_obj=panel, user_id=9102))
        toasts = [c.params.get("text") for c in api.of("answerCallbackQuery")]
        assert toasts.count("Saved.") == 4 and len(toasts) == 20  # /settings took the first token
        assert all(str(t).startswith("Too fast") for t in toasts[4:])

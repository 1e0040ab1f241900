"""Abuse and security: no start without a webhook secret, HTML in user text escaped, forged settings
and example buttons, one user's flood against another's answer, admin checks that fail closed.

(Already elsewhere: the wrong or missing secret → 401 in test_bot_runtime.py and test_bot_replicas.py;
forged answer buttons, admins only for group settings in test_bot_handlers.py; the token in logs in
test_bot_faults.py.)
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bot_harness import Harness, harness
from fake_botapi import TOKEN, FakeBotAPI, callback, chat, html_error, inline_query, message, texts

from bot.middlewares import TokenBucket

ROOT = Path(__file__).resolve().parents[2]
GROUP = -100999




def test_webhook_mode_refuses_to_start_without_a_secret(tmp_path: Path) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "HF_"))}
    env = {**base, "PYTHONPATH": str(ROOT), "BOT_TOKEN": TOKEN, "BOT_MODE": "webhook",
           "BOT_WEBHOOK_URL": "https://bot.example/hook", "BOT_API_BASE_URL": "http://127.0.0.1:9"}
    run = subprocess.run([sys.executable, "-m", "bot", "run"], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 1
    assert run.stderr.strip() == "gpu-advisor run: BOT_WEBHOOK_SECRET is required when BOT_MODE=webhook"


def test_the_fake_refuses_html_telegram_would_refuse() -> None:
    assert html_error("<b>ok</b> <pre>x</pre> <blockquote expandable>q</blockquote> a &lt; b &amp; c") is None
    assert html_error("<script>x</script>") is not None
    assert html_error("<b>unclosed") is not None
    assert html_error("</pre>") is not None
    assert html_error("1 < 2") is not None


async def test_html_in_user_text_is_escaped_in_every_reply(h: Harness, api: FakeBotAPI) -> None:
    hostile = [
        "70B QLoRA on H100 <b>bold</b> </pre> <script>alert(1)</script>?",
        "70B qlora on <script>",
        "</pre><b>",
        "/price <script>alert(1)</script> 2",
        "/price H100 <b>2</b>",
        "/vram 70B <i>qlora</i> </pre>",
        "acme/<b>x</b> lora on a 4090",
    ]
    users = [9210 + i for i in range(len(hostile) + 1)]  # one user each: no throttling in the way
    for user_id, text in zip(users, hostile, strict=False):
        await h.feed(message(text, user_id=user_id))
    config = json.dumps({"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
                         "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256}).encode()
    api.add_file("cfg", config, path="documents/x.json")
    await h.feed(message(None, user_id=users[-1], caption="<i>QLoRA</i> on H100 </pre>",
                         document={"file_id": "cfg", "file_unique_id": "u", "file_name": "<b>config</b>.json",
                                   "file_size": len(config)}))
    await h.feed(message("<b>70B</b> qlora </pre>", chat_id=GROUP, kind="supergroup", user_id=9201,
                         reply_to={"message_id": 1, "date": 0, "chat": chat(GROUP, "supergroup"),
                                   "from": api.bot_user(), "text": "earlier"}))
    await h.feed(inline_query("70B <b>qlora</b> </pre> <script>", user_id=9201))
    refused = [(c.method, c.params.get("text")) for c in api.calls if c.status == 400]
    assert not refused, refused  # Telegram would have refused these as broken HTML
    replies = [texts(api, u) for u in users] + [texts(api, GROUP)]
    assert all(len(r) == 1 for r in replies), replies
    flat = [r[0] for r in replies]
    assert not [r for r in flat if "Sorry, something went wrong" in r]
    assert all("<script" not in r and "<b>bold" not in r for r in flat)
    assert "“&lt;script&gt;alert(1)&lt;/script&gt;”" in flat[3]  # the unknown GPU name, escaped
    [answered] = api.of("answerInlineQuery")
    assert all(html_error(r["input_message_content"]["message_text"]) is None for r in answered.params["results"])


async def test_forged_settings_and_example_buttons_change_nothing(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api, bucket=TokenBucket(rate=100.0, burst=100)) as h:  # not throttled here
        await forge(h, api)


async def forge(h: Harness, api: FakeBotAPI) -> None:
    await h.feed(message("/settings", user_id=9202))
    panel = [m for (c, _), m in api.messages.items() if c == 9202][-1]
    before = await h.store.get_settings(9202)
    forged = ["s:lang:de", "s:cur:EUR", "s:tier:free", "s:admin:1", "s:lang", "s:cur:USD:extra",
              "e:99:en", "e:-1:ru", "e:0:de", "e:x:en", "zz:1", "", "a" * 64]
    for data in forged:
        await h.feed(callback(data, message_obj=panel, user_id=9202))
    assert await h.store.get_settings(9202) == before
    toasts = [c.params.get("text") for c in api.of("answerCallbackQuery")]
    assert len(toasts) == len(forged) and set(toasts) == {"This button no longer works."}
    assert not api.of("editMessageText") and len(texts(api, 9202)) == 1
    assert h.metrics.errors == 0


async def test_one_user_flooding_is_throttled_and_another_is_still_answered(tmp_path: Path, api: FakeBotAPI) -> None:
    async with harness(tmp_path, api, bucket=TokenBucket(rate=1.0, burst=5)) as h:
        flood = [asyncio.create_task(h.feed(message("70B QLoRA on H100?", user_id=9301))) for _ in range(200)]
        await asyncio.sleep(0)  # the flood is already queued in front of B

        await h.feed(message("70B QLoRA on H100?", user_id=9302))
        await asyncio.wait_for(asyncio.gather(*flood), timeout=30)
    [answer] = texts(api, 9302)
    assert answer.startswith("✅")  # answered, not throttled
    flooded = texts(api, 9301)
    assert sum(s.startswith("✅") for s in flooded) <= 6  # the burst (and what refilled meanwhile)
    assert sum(s.startswith("Too many questions") for s in flooded) >= 1
    assert len(flooded) <= 12  # ~190 refused silently: no reply flood either
    assert h.metrics.throttled >= 188


async def test_group_settings_fail_closed_and_anonymous_admins_may_change(h: Harness, api: FakeBotAPI) -> None:
    api.fail("getChatMember", status=500, times=100)  # Telegram cannot say who is an admin: refuse
    await h.feed(message("/price H100 2.5", chat_id=GROUP, kind="supergroup", user_id=9401))
    assert texts(api, GROUP)[-1] == "Only chat admins can change the settings."
    assert not (await h.store.get_settings(GROUP)).prices
    api.failures.clear()
    api.members[(GROUP, 9402)] = "creator"
    await h.feed(message("/price H100 2.5", chat_id=GROUP, kind="supergroup", user_id=9402))
    assert texts(api, GROUP)[-1].startswith("Saved: H100 SXM")
    # an anonymous admin writes as the group itself (sender_chat); someone else's channel does not count
    group: dict[str, Any] = chat(GROUP, "supergroup")
    await h.feed(message("/price A100 off", chat_id=GROUP, kind="supergroup", user_id=1087968824,
                         sender_chat=group))
    assert "A100" in texts(api, GROUP)[-1] and "Only chat admins" not in texts(api, GROUP)[-1]
    channel = chat(-100123, "channel")
    await h.feed(message("/price H100 off", chat_id=GROUP, kind="supergroup", user_id=136817688,
                         sender_chat=channel))
    assert texts(api, GROUP)[-1] == "Only chat admins can change the settings."
    assert "H100 SXM" in (await h.store.get_settings(GROUP)).prices

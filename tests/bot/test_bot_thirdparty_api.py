"""A third-party Bot API server (like the telegram-test-api emulator): no setMyCommands, no sendChatAction, no
getWebhookInfo (an HTML 404 each), or a getWebhookInfo aiogram cannot read. The real bot starts, answers
every question once, and `gpu-advisor run` stays up for the whole test without a traceback."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from bot_harness import bot_process, harness
from fake_botapi import TOKEN, FakeBotAPI, callback, inline_query, message

ROOT = Path(__file__).resolve().parents[2]
LACKING = {"setMyCommands", "setMyDescription", "setMyShortDescription", "sendChatAction", "getWebhookInfo"}
LLAMA = {"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "vocab_size": 128256, "model_type": "llama"}


def texts(api: FakeBotAPI, chat_id: int) -> list[str]:
    return [c.params["text"] for c in api.of("sendMessage") if int(c.params["chat_id"]) == chat_id]


@pytest.mark.parametrize("server", ["lacking", "odd_webhook_info"])
async def test_every_question_is_answered_once(tmp_path: Path, api: FakeBotAPI, caplog: pytest.LogCaptureFixture,
                                               server: str) -> None:
    if server == "lacking":
        api.lacking = set(LACKING)
    else:
        api.odd_webhook_info = True
    caplog.set_level(logging.INFO)
    questions = {6001: "70B QLoRA on H100?", 6002: "acme/custom-llama-8b lora on a 4090",
                 6003: json.dumps(LLAMA), 6004: "/start", 6005: "/settings"}
    async with harness(tmp_path, api, hf_endpoint="http://127.0.0.1:9", startup_retry_s=5) as h, h.polling():
        for user, text in questions.items():
            api.push(message(text, user_id=user))
        for user in questions:
            await api.wait_for("sendMessage", chat_id=user, timeout=10)
        answer = next(m for (c, _), m in api.messages.items() if c == 6001)
        data = next(b["callback_data"] for row in answer["reply_markup"]["inline_keyboard"] for b in row
                    if b["text"].startswith("📊"))
        api.push(callback(data, message_obj=answer, user_id=6001))
        api.push(inline_query("70B qlora h100", user_id=6006))
        await api.wait_for("sendPhoto", chat_id=6001, timeout=20)
        await api.wait_for("answerInlineQuery")
        await asyncio.sleep(0.3)  # anything late would show now
    for user in questions:
        assert len(texts(api, user)) == 1, (user, texts(api, user))
    assert texts(api, 6001)[0].startswith("✅") and "acme/custom-llama-8b" in texts(api, 6002)[0]
    assert "config.json" in texts(api, 6003)[0]
    assert len(api.of("sendPhoto")) == 1 and len(api.of("answerInlineQuery")) == 1
    assert h.metrics.errors == 0
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [r for r in records if r.exc_info or "never retrieved" in r.getMessage()]
    if server == "lacking":
        profile = [r.getMessage() for r in records if "failed, ignored" in r.getMessage()]
        assert len(profile) == 9 and all("MethodMissing: HTTP 404" in m for m in profile)  # one line each
        assert not any(TOKEN in r.getMessage() for r in caplog.records)


async def test_gpu_advisor_run_stays_up_on_such_a_server(tmp_path: Path, api: FakeBotAPI) -> None:
    api.lacking = set(LACKING)
    async with bot_process(api, tmp_path) as proc, asyncio.timeout(150):
        await api.wait_for("getUpdates", timeout=90)  # the process is up (slow to import on a busy machine)
        for n, text in enumerate(["70B QLoRA on H100?", "acme/custom-llama-8b lora on a 4090", "/help"]):
            api.push(message(text, user_id=6101 + n))
            await api.wait_for("sendMessage", chat_id=6101 + n, timeout=20)
        # the profile calls are done (and failed) by now; still up, still answering
        while len([c for c in api.calls if c.method == "setMyShortDescription"]) < 3:
            await asyncio.sleep(0.05)
        api.push(message("LoRA Llama 3.1 8B on a 4090", user_id=6110))
        await api.wait_for("sendMessage", chat_id=6110, timeout=20)
        assert proc.poll() is None
    assert proc.returncode == 0
    log = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert "Traceback" not in log and "never retrieved" not in log
    assert TOKEN not in log and TOKEN.split(":")[1] not in log
    assert all(len(texts(api, user)) == 1 for user in (6101, 6102, 6103, 6110))

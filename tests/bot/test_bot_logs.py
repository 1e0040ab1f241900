"""The bot reads a start-up log, pasted or sent as a .log document, as `check` does: ours beside theirs, no
secrets or paths echoed."""

from __future__ import annotations

from pathlib import Path

from bot_harness import harness
from fake_botapi import FakeBotAPI, message, texts

LOGS = Path(__file__).parents[1] / "data" / "logs"


async def test_a_log_document_and_a_pasted_log_are_read_back(tmp_path: Path, api: FakeBotAPI) -> None:
    v0 = (LOGS / "vllm-v0-llama8b-a10g.log").read_bytes()
    api.add_file("log", v0, path="documents/server.log")
    doc = {"file_id": "log", "file_unique_id": "ulog", "file_name": "server.log", "file_size": len(v0)}
    pasted = (LOGS / "vllm-v1-qwen14b-awq-l40s.log").read_text(encoding="utf-8")
    async with harness(tmp_path, api) as h:
        await h.feed(message(None, user_id=9501, document=doc))
        await h.feed(message(pasted, user_id=9502))
    for chat in (9501, 9502):
        reply = texts(api, chat)[0]
        assert "vllm" in reply and "KV pool" in reply and "theirs" in reply
        assert "sk-live" not in reply and "/mnt/models" not in reply and "hf_AbCd" not in reply
    assert h.metrics.errors == 0


async def test_a_russian_chat_gets_the_log_table_in_russian(tmp_path: Path, api: FakeBotAPI) -> None:
    pasted = (LOGS / "vllm-v0-llama8b-a10g.log").read_text(encoding="utf-8")
    async with harness(tmp_path, api) as h:
        await h.feed(message(pasted, user_id=9503, language_code="ru"))
    reply = texts(api, 9503)[0]
    assert "пул KV-кэша" in reply and "замер" in reply and "причина" in reply
    assert "профилировочный прогон" in reply  # the reason, not only the labels
    for english in ("KV pool", "theirs", "reason", "profile run", "settings:", "assumed:"):
        assert english not in reply
    assert h.metrics.errors == 0

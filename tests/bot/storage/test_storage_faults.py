"""Storage faults while the bot runs degrade, never break answers: an unreadable SQLite file reads as default
settings; a deleted, replaced or unwritable one refuses a settings change with a notice (never a "Saved"
that is lost at restart); old questions and Hub configs are pruned while running."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from bot_harness import harness
from fake_botapi import FakeBotAPI, callback, message

from bot.storage import QUESTION_TTL_S, ChatSettings, SQLiteStorage, StorageUnavailable
from bot.storage import sqlite as storage
from engine.parse import parse

NOTICE = "I cannot save settings right now"


def texts(api: FakeBotAPI, chat_id: int) -> list[str]:
    return [c.params["text"] for c in api.of("sendMessage") if int(c.params["chat_id"]) == chat_id]


def panel_button(api: FakeBotAPI, chat_id: int, label: str) -> tuple[dict[str, Any], str]:
    panel = [m for (c, _), m in api.messages.items() if c == chat_id][-1]
    data = next(b["callback_data"] for row in panel["reply_markup"]["inline_keyboard"] for b in row
                if b["text"].removeprefix("✓ ") == label)
    return panel, data


def toasts(api: FakeBotAPI) -> list[str]:
    return [str(c.params.get("text")) for c in api.of("answerCallbackQuery") if c.params.get("text")]


async def test_a_file_truncated_while_running_reads_as_default_settings(tmp_path: Path, api: FakeBotAPI,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    async with harness(tmp_path, api) as h:
        await h.store.set_settings(8001, ChatSettings(currency="RUB"))
        await h.feed(message("70B QLoRA on H100?", user_id=8001))
        assert "₽" in texts(api, 8001)[-1]
        db = tmp_path / "settings.db"
        with db.open("r+b") as f:
            f.truncate(2048)
        wal = Path(f"{db}-wal")
        if wal.exists():
            wal.write_bytes(b"")
        caplog.set_level(logging.WARNING)
        for _ in range(3):
            await h.feed(message("70B QLoRA on H100?", user_id=8002))
        said = texts(api, 8002)
        assert len(said) == 3 and all(s.startswith("✅") and "$" in s for s in said)  # answers, not apologies
        assert h.metrics.errors == 0
        warned = [r.getMessage() for r in caplog.records if "settings could not be read" in r.getMessage()]
        assert len(warned) == 1  # once a minute, not once an answer


@pytest.mark.parametrize("fault", ["deleted", "replaced", "read_only", "truncated"])
async def test_a_settings_change_that_cannot_last_gets_the_notice(tmp_path: Path, api: FakeBotAPI,
                                                                   fault: str) -> None:
    async with harness(tmp_path, api) as h:
        await h.feed(message("/settings", user_id=8101))
        panel, data = panel_button(api, 8101, "RUB ₽")
        await h.feed(callback(data, message_obj=panel, user_id=8101))
        assert toasts(api)[-1] == "Saved."
        db = tmp_path / "settings.db"
        if fault == "deleted":
            for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
                path.unlink(missing_ok=True)
        elif fault == "replaced":
            db.rename(tmp_path / "old.db")
            sqlite3.connect(db).close()
        elif fault == "truncated":
            with db.open("r+b") as f:
                f.truncate(2048)
        else:
            assert isinstance(h.store, SQLiteStorage) and h.store._conn is not None
            h.store._conn.execute("PRAGMA query_only=ON")  # what a read-only file or mount answers to a write
        panel, data = panel_button(api, 8101, "USD $")
        await h.feed(callback(data, message_obj=panel, user_id=8101))
        assert toasts(api)[-1].startswith(NOTICE)  # never "Saved." for a write that cannot last
        await h.feed(message("/price H100 2.5", user_id=8101))
        assert texts(api, 8101)[-1].startswith(NOTICE)
        await h.feed(message("70B QLoRA on H100?", user_id=8101))  # answers go on
        assert texts(api, 8101)[-1].startswith("✅")
        assert h.metrics.errors == 0


async def test_a_file_read_only_at_start_reads_settings_and_refuses_changes(tmp_path: Path, api: FakeBotAPI,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    """chmod 444, a read-only mount or directory: SQLite opens such a file read-only (root ignores chmod, so the
    test opens it as SQLite would for anyone else). The bot starts, reads the settings, refuses changes."""
    db = tmp_path / "settings.db"
    before = SQLiteStorage(db)
    await before.open()
    await before.set_settings(8201, ChatSettings(currency="RUB"))
    await before.close()
    connect = SQLiteStorage._connect

    def as_sqlite_opens_it(self: SQLiteStorage, mode: str = "rw") -> sqlite3.Connection:
        return connect(self, "ro" if mode == "rw" else mode)

    monkeypatch.setattr(SQLiteStorage, "_connect", as_sqlite_opens_it)
    caplog.set_level(logging.WARNING)
    async with harness(tmp_path, api) as h:
        assert isinstance(h.store, SQLiteStorage) and h.store.read_only
        await h.feed(message("70B QLoRA on H100?", user_id=8201))
        answer = texts(api, 8201)[-1]
        assert answer.startswith("✅") and "₽" in answer  # the saved settings are read
        await h.feed(message("/settings", user_id=8201))
        panel, data = panel_button(api, 8201, "USD $")
        await h.feed(callback(data, message_obj=panel, user_id=8201))
        assert toasts(api)[-1].startswith(NOTICE)
        await h.feed(message("/price H100 2.5", user_id=8202))
        assert texts(api, 8202)[-1].startswith(NOTICE)
        assert (await h.store.get_settings(8201)).currency == "RUB"
        await h.feed(message("70B QLoRA on H100?", user_id=8202))  # answers and their buttons go on, from memory
        answer_msg = [m for (c, _), m in api.messages.items() if c == 8202][-1]
        first = answer_msg["text"]
        context = next(b["callback_data"] for row in answer_msg["reply_markup"]["inline_keyboard"] for b in row
                       if b["text"].startswith("8k"))
        await h.feed(callback(context, message_obj=answer_msg, user_id=8202))
        [edited] = api.of("editMessageText")  # the question behind the button was found in memory
        assert edited.params["text"] != first and "H100" in edited.params["text"]
        assert h.metrics.errors == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM questions").fetchone()[0] == 0  # nothing was written
    warned = [r.getMessage() for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warned) == 1  # once, at start


async def test_store_level_refusal(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "s.db")
    await store.open()
    try:
        os.remove(tmp_path / "s.db")
        with pytest.raises(StorageUnavailable, match="is gone"):
            await store.set_settings(1, ChatSettings())
    finally:
        await store.close()


async def test_old_questions_and_hub_configs_are_pruned_while_running(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStorage(tmp_path / "p.db")
    await store.open()
    try:
        old = time.time() - QUESTION_TTL_S - 10
        store._execute("INSERT INTO questions (id, data, created) VALUES ('old', '{}', ?)", (old,))
        store._execute("INSERT INTO hub_configs (id, data, created) VALUES ('acme/old', '{}', ?)", (old,))
        monkeypatch.setattr(storage, "PRUNE_EVERY_S", 0.0)
        qid = await store.put_request(parse("70B qlora h100"))
        deadline = time.monotonic() + 5
        while store._read("SELECT count(*) FROM questions WHERE id = 'old'", ())[0][0] and time.monotonic() < deadline:
            await store.put_request(parse("8B lora 4090"))
            time.sleep(0.05)
        assert store._read("SELECT id FROM questions WHERE id = 'old'", ()) == []
        assert store._read("SELECT id FROM hub_configs", ()) == []
        assert await store.get_request(qid) == parse("70B qlora h100")
    finally:
        await store.close()


async def test_a_write_locked_file_costs_one_short_wait_not_one_per_update(tmp_path: Path) -> None:
    """Another process holds the file's write lock: answered updates are not recorded one busy_timeout each
    under one lock (8 updates were acknowledged at 10, 15 … 51 s); one try, then a pause."""
    db = tmp_path / "locked.db"
    store = SQLiteStorage(db, timeout=2.0)
    await store.open()
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        assert store._conn is not None
        tried: list[str] = []
        store._conn.set_trace_callback(lambda sql: tried.append(sql) if sql.startswith("INSERT") else None)
        await asyncio.gather(*(store.handled(f"1:{n}") for n in range(8)))
        assert len(tried) == 1
        holder.execute("ROLLBACK")
        assert not await store.was_handled("1:0")  # not on disk: the in-process record covers it meanwhile
    finally:
        holder.close()
        await store.close()


async def test_a_damaged_file_at_start_is_moved_aside(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    damaged = tmp_path / "damaged.db"  # truncated under the bot: at the next start nothing is left to replay
    first = SQLiteStorage(damaged)
    await first.open()
    await first.set_settings(8401, ChatSettings(currency="USD"))
    await first.close()
    with damaged.open("r+b") as f:
        f.truncate(2048)
    caplog.set_level(logging.WARNING)
    again = SQLiteStorage(damaged)
    await again.open()  # a damaged file at start: moved aside, a new one, one warning (was: exit 1)
    try:
        assert again.moved_aside is not None and again.moved_aside.exists()
        await again.set_settings(8401, ChatSettings(currency="RUB"))
        assert (await again.get_settings(8401)).currency == "RUB"
        assert any("is damaged" in r.getMessage() and "moved to" in r.getMessage() for r in caplog.records)
    finally:
        await again.close()

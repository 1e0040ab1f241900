"""Per-chat settings and the questions behind answer keyboards, kept across restarts.

Two backends behind one small interface: a SQLite file (WAL, the default; each call runs in a worker
thread so the event loop never waits on the disk) and Redis (`redis://`, for several replicas).

A question is stored as the parsed `Request` (JSON) under a short id: the keyboard under an answer
carries that id, so any message can be re-rendered later, also after a restart; a missing id is a
stale button.

Faults while running degrade, never break answers: a SQLite file that became unreadable (truncated,
corrupt, a disk error) reads as default settings and no stored question; a file that was deleted or
replaced, or cannot be written (read-only, full), refuses a settings change with `StorageUnavailable`
(the user is told to try again) instead of a "Saved" that would be lost. One warning per fault and
minute, not one per update. Old questions and Hub configs are pruned while running too (hourly).
A link names the question behind a chat's last answer and behind each answer message, so that a
follow-up ("а если 8k контекст?") finds what it changes on any replica.
"""

from __future__ import annotations

from bot.storage.base import (
    KEY_PREFIX,
    LINK,
    QUESTION_TTL_S,
    RECENT_QUESTIONS,
    ChatSettings,
    Currency,
    OwnPrice,
    Storage,
    StorageError,
    StorageUnavailable,
    Tier,
    question_id,
)
from bot.storage.hub_configs import StoredConfigCache
from bot.storage.others import MemoryStorage, RedisStorage
from bot.storage.sqlite import SQLiteStorage

__all__ = [
    "KEY_PREFIX", "LINK", "QUESTION_TTL_S", "RECENT_QUESTIONS", "ChatSettings", "Currency", "MemoryStorage", "OwnPrice",
    "RedisStorage", "SQLiteStorage", "Storage", "StorageError", "StorageUnavailable", "StoredConfigCache", "Tier",
    "question_id", "storage_from_url",
]


def storage_from_url(url: str) -> Storage:
    """SQLite for one process; Redis (behind the fallback of `bot.scaleout`) for several replicas."""
    if url.startswith("sqlite:///"):
        return SQLiteStorage(url.removeprefix("sqlite:///"))
    if url.startswith(("redis://", "rediss://", "unix://")):
        from bot.scaleout.storage import FallbackStorage

        return FallbackStorage(RedisStorage(url))
    raise StorageError(f"unsupported storage URL scheme: {url.split(':', 1)[0]}")

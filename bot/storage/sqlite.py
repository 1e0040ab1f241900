"""The SQLite backend (the default): a WAL file, each write in a worker thread, reads on the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bot.hub import OK_TTL
from bot.lru import LRU
from bot.storage.base import (
    LINK,
    QUESTION_TTL_S,
    RECENT_QUESTIONS,
    ChatSettings,
    StorageError,
    StorageUnavailable,
    load_request,
    load_settings,
    question_id,
)
from engine.schema import Request

PRUNE_EVERY_S = 3600.0
WARN_EVERY_S = 60.0
TABLES = {
    "chat_settings": "chat_id INTEGER PRIMARY KEY, data TEXT NOT NULL, updated REAL NOT NULL",
    "questions": "id TEXT PRIMARY KEY, data TEXT NOT NULL, created REAL NOT NULL",
    "links": "key TEXT PRIMARY KEY, qid TEXT NOT NULL, created REAL NOT NULL",
    "hub_configs": "id TEXT PRIMARY KEY, data TEXT NOT NULL, created REAL NOT NULL",
    "updates": "key TEXT PRIMARY KEY, created REAL NOT NULL",  # update ids answered (bot.dedup)
    "accepted": "key TEXT PRIMARY KEY, data TEXT NOT NULL, created REAL NOT NULL",  # in flight (bot.inflight)
}
UPDATES_TTL_S = 24 * 3600  # Telegram keeps an unacknowledged update a day at most
MAX_UPDATES = 200_000  # rows kept at most (a day at ~2 updates a second)
HANDLED_BUSY_MS = 250  # the longest an answered update's row waits for another process's lock
HANDLED_PAUSE_S = 30.0  # then no more tries for this long

log = logging.getLogger(__name__)


def _read_only_fault(exc: sqlite3.Error) -> bool:
    """Whether opening for writing failed because the file or its directory cannot be written."""
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


SQLITE_HEADER = b"SQLite format 3\x00"


def looks_like_a_database(path: Path) -> bool:
    """The file starts with SQLite's header and holds whole pages of the size that header gives: what a file
    truncated or overwritten under a running process fails (sqlite would say "file is not a database" later)."""
    try:
        with path.open("rb") as f:
            head = f.read(100)
        size = path.stat().st_size
    except OSError:
        return False
    if len(head) < 100 or not head.startswith(SQLITE_HEADER):
        return False
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    return page >= 512 and size >= page and size % page == 0


def _check(conn: sqlite3.Connection) -> None:
    check = conn.execute("PRAGMA quick_check").fetchone()
    if not check or check[0] != "ok":
        raise sqlite3.DatabaseError(f"integrity check failed: {check[0] if check else '?'}")


class SQLiteStorage:
    def __init__(self, path: str | Path, timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._conn: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None  # the event loop's own, for reads (see `_read`)
        self._lock = threading.Lock()
        # Questions are written behind the answer by one thread (a hop per answer cost more than the write);
        # the newest stay in memory, so a button pressed before its row is on disk still works.
        # A threading.Event in the queue is a barrier (`unsettled`): set once everything before it is written.
        self._writes: queue.SimpleQueue[tuple[str, tuple[Any, ...]] | threading.Event | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._recent: LRU[str, str] = LRU(RECENT_QUESTIONS)
        self._file: tuple[int, int] | None = None  # (device, inode) of the file opened
        self._warned: dict[str, float] = {}
        self._pruned = 0.0
        self.read_only = False  # opened read-only: the file cannot be written (see `_open_read_only`)
        self._updates_paused_until = 0.0  # the answered-updates rows wait out a locked file (`_record_handled`)
        self.moved_aside: Path | None = None  # where a damaged file found at open was moved (`_move_aside`)
        self._ro_mode = "ro"

    # ---- blocking part, run in a worker thread ----

    def _connect(self, mode: str = "rw") -> sqlite3.Connection:
        """A connection to the file: "rw" (created when missing), "ro" (read-only), "immutable" (read-only, and
        nothing else writes it: a read-only directory where SQLite cannot make a WAL file's -shm)."""
        if mode == "rw":
            target: str | Path = self.path
        else:
            target = f"file:{quote(str(self.path.resolve()))}?mode=ro" + ("&immutable=1" if mode == "immutable" else "")
        return sqlite3.connect(target, timeout=self.timeout, check_same_thread=False, isolation_level=None,
                               uri=mode != "rw")

    def _open_sync(self) -> None:
        try:
            if self.path.parent and not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = self._open_writable()
            except sqlite3.OperationalError as exc:
                if not self.path.exists() or not _read_only_fault(exc):
                    raise
                conn = self._open_read_only(exc)
            except sqlite3.DatabaseError as exc:  # "file is not a database", a failed integrity check
                self._move_aside(exc)
                conn = self._open_writable()
            # mode != "wal" (e.g. a read-only directory): SQLite keeps its rollback journal, which still works
            reader = self._connect("rw" if not self.read_only else self._ro_mode)
            reader.execute("PRAGMA query_only=ON")
            self._conn, self._reader = conn, reader
            stat = os.stat(self.path)
            self._file = (stat.st_dev, stat.st_ino)
        except (sqlite3.Error, OSError) as exc:
            raise StorageError(f"cannot open the settings database {self.path}: {exc}") from None

    def _open_writable(self) -> sqlite3.Connection:
        conn = self._connect()
        try:
            conn.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
            conn.execute("PRAGMA journal_mode=WAL")
            _check(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            for table, columns in TABLES.items():
                conn.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
            self._prune(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self, why: sqlite3.Error) -> None:
        """A damaged file (truncated, overwritten, corrupt) is kept for a person to look at, under a name of its
        own, and the bot starts on a new one: settings are lost either way, answers must not be."""
        aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.replace(Path(f"{aside}{suffix}"))
        self.moved_aside = aside
        log.warning("settings database %s is damaged (%s): moved to %s; starting with an empty one (chat "
                    "settings and /price prices are reset)", self.path, why, aside.name)

    def _open_read_only(self, why: sqlite3.Error) -> sqlite3.Connection:
        """A file this process may not write (chmod 444, a read-only mount or directory): settings are read,
        a settings change gets the "cannot save" notice, questions are kept in memory only."""
        for mode in ("ro", "immutable"):
            conn = self._connect(mode)
            try:
                conn.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
                _check(conn)
            except sqlite3.OperationalError:
                conn.close()
                if mode == "immutable":
                    raise
                continue
            except BaseException:
                conn.close()
                raise
            self.read_only, self._ro_mode = True, mode
            log.warning("settings database %s cannot be written (%s): settings are read from it, changes are "
                        "refused, questions are kept in memory only", self.path, why)
            return conn
        raise AssertionError("unreachable")

    def _prune(self, conn: sqlite3.Connection) -> None:
        """Questions past their TTL and Hub configs past the cache's (at open, then hourly by the writer)."""
        now = time.time()
        conn.execute("DELETE FROM questions WHERE created < ?", (now - QUESTION_TTL_S,))
        conn.execute("DELETE FROM links WHERE created < ?", (now - QUESTION_TTL_S,))
        conn.execute("DELETE FROM hub_configs WHERE created < ?", (now - OK_TTL,))
        conn.execute("DELETE FROM updates WHERE created < ?", (now - UPDATES_TTL_S,))
        conn.execute("DELETE FROM accepted WHERE created < ?", (now - UPDATES_TTL_S,))
        conn.execute("DELETE FROM updates WHERE created < (SELECT created FROM updates ORDER BY created DESC "
                     "LIMIT 1 OFFSET ?)", (MAX_UPDATES - 1,))
        self._pruned = time.monotonic()

    def _warn(self, what: str, exc: BaseException) -> None:
        """One warning per kind of fault and minute: a broken disk must not flood the log."""
        now = time.monotonic()
        if now - self._warned.get(what, -WARN_EVERY_S) >= WARN_EVERY_S:
            self._warned[what] = now
            log.warning("settings database %s: %s (%s); going on without it", self.path, what, exc)

    def _check_file(self) -> None:
        """The file opened is still the one at the path: a write into a deleted file is lost at restart."""
        try:
            stat = os.stat(self.path)
        except OSError:
            raise StorageUnavailable(f"the settings database {self.path} is gone") from None
        if self._file is not None and (stat.st_dev, stat.st_ino) != self._file:
            raise StorageUnavailable(f"the settings database {self.path} was replaced")

    def _query(self, conn: sqlite3.Connection | None, sql: str, params: tuple[Any, ...]) -> list[Any]:
        if conn is None:
            raise StorageError("storage is not open")
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"settings database {self.path}: {exc}") from exc

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:  # the check too: close() may take the connection away from under a writer
            return self._query(self._conn, sql, params)

    def _close_sync(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """A read on the event loop itself: in WAL mode a reader never waits for a writer, and a read of one
        small row costs less than the thread hop that `_execute` takes (writes still go to a thread)."""
        return self._query(self._reader, sql, params)

    # ---- the interface ----

    def _write_behind(self) -> None:
        while (item := self._writes.get()) is not None:
            if isinstance(item, threading.Event):
                item.set()
                continue
            if self.read_only:
                continue  # questions and links stay in memory (`_recent`)
            try:
                self._execute(*item)
                if time.monotonic() - self._pruned > PRUNE_EVERY_S:
                    with self._lock:
                        if self._conn is not None:
                            self._prune(self._conn)
            except (StorageError, sqlite3.Error) as exc:
                self._warn("a question could not be stored", exc)

    def _save(self, sql: str, params: tuple[Any, ...]) -> None:
        if self.read_only:
            raise StorageUnavailable(f"the settings database {self.path} cannot be written")
        self._check_file()
        try:
            self._execute(sql, params)
        except StorageError as exc:  # read-only, full, corrupt: say so rather than "Saved"
            self._warn("settings could not be saved", exc)
            raise StorageUnavailable(str(exc)) from None
        if not looks_like_a_database(self.path):  # truncated or overwritten under us: the write will not last
            self._warn("settings could not be saved", StorageError("the file is damaged"))
            raise StorageUnavailable(f"the settings database {self.path} is damaged")

    def _remember(self, qid: str, data: str) -> None:
        self._recent.put(qid, data)

    async def open(self) -> None:
        await asyncio.to_thread(self._open_sync)
        self._writer = threading.Thread(target=self._write_behind, name="sqlite-writer", daemon=True)
        self._writer.start()

    async def close(self) -> None:
        if self._writer is not None:
            self._writes.put(None)  # after everything queued before it
            await asyncio.to_thread(self._writer.join, self.timeout)
            self._writer = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        await asyncio.to_thread(self._close_sync)  # after the writer's last statement, never during one

    def _first(self, sql: str, params: tuple[Any, ...], fault: str) -> Any:
        """The first column of the first row (None when there is none, or, with one warning a minute, when the
        file cannot be read: an unreadable file reads as empty)."""
        try:
            rows = self._read(sql, params)
        except StorageError as exc:
            self._warn(fault, exc)
            return None
        return rows[0][0] if rows else None

    async def get_settings(self, chat_id: int) -> ChatSettings:
        return load_settings(self._first("SELECT data FROM chat_settings WHERE chat_id = ?", (chat_id,),
                                         "settings could not be read: default settings"))

    async def set_settings(self, chat_id: int, settings: ChatSettings) -> None:
        await asyncio.to_thread(
            self._save,
            "INSERT INTO chat_settings (chat_id, data, updated) VALUES (?, ?, ?) "
            "ON CONFLICT(chat_id) DO UPDATE SET data = excluded.data, updated = excluded.updated",
            (chat_id, settings.model_dump_json(), time.time()))

    async def put_request(self, request: Request) -> str:
        if self._writer is None:
            raise StorageError("storage is not open")
        qid = question_id(request)
        data = request.model_dump_json(exclude_none=True)
        self._remember(qid, data)
        self._writes.put(("INSERT INTO questions (id, data, created) VALUES (?, ?, ?) "
                          "ON CONFLICT(id) DO UPDATE SET created = excluded.created", (qid, data, time.time())))
        return qid

    async def get_request(self, qid: str) -> Request | None:
        data = self._recent.get(qid)
        if data is None:
            data = self._first("SELECT data FROM questions WHERE id = ?", (qid,), "a question could not be read")
        return load_request(data)

    async def set_link(self, key: str, qid: str) -> None:
        if self._writer is None:
            raise StorageError("storage is not open")
        self._recent.put(LINK + key, qid)
        self._writes.put(("INSERT INTO links (key, qid, created) VALUES (?, ?, ?) "
                          "ON CONFLICT(key) DO UPDATE SET qid = excluded.qid, created = excluded.created",
                          (key, qid, time.time())))

    async def get_link(self, key: str) -> str | None:
        qid = self._recent.get(LINK + key)
        if qid is None:
            qid = self._first("SELECT qid FROM links WHERE key = ?", (key,), "a follow-up link could not be read")
        return qid

    async def was_handled(self, key: str) -> bool:
        """Whether the update `key` was answered (by this process or one before it on this file)."""
        return bool(self._first("SELECT 1 FROM updates WHERE key = ?", (key,), "answered updates could not be read"))

    async def handled(self, key: str) -> None:
        """Remember that the update `key` was answered, on disk before the update is acknowledged: a process
        that dies between answering and acknowledging does not answer it again after its restart."""
        if self.read_only or time.monotonic() < self._updates_paused_until:
            return
        try:
            await asyncio.to_thread(self._record_handled, key)
        except StorageError as exc:
            self._warn("an answered update could not be recorded", exc)

    async def accept(self, key: str, data: str) -> None:
        """An update taken from polling, before it is handled (`bot.inflight`): answered after a restart unless
        it is settled."""
        if self.read_only or time.monotonic() < self._updates_paused_until:
            return
        try:
            await asyncio.to_thread(self._execute, "INSERT OR REPLACE INTO accepted (key, data, created) "
                                    "VALUES (?, ?, ?)", (key, data, time.time()))
        except StorageError as exc:
            self._warn("an accepted update could not be recorded", exc)

    async def settle(self, key: str) -> None:
        if self.read_only or self._writer is None:
            return
        self._writes.put(("DELETE FROM accepted WHERE key = ?", (key,)))  # behind the answer: order is kept

    async def unsettled(self) -> list[tuple[str, str]]:
        if self._writer is not None:  # the settles queued behind the answers first: a barrier in the same queue
            barrier = threading.Event()
            self._writes.put(barrier)
            await asyncio.to_thread(barrier.wait, self.timeout)
        try:
            return [(str(k), str(d)) for k, d in self._read("SELECT key, data FROM accepted ORDER BY created", ())]
        except StorageError as exc:
            self._warn("accepted updates could not be read", exc)
            return []

    def _record_handled(self, key: str) -> None:
        """The answered update's row, waiting `HANDLED_BUSY_MS` at most for a lock another process holds; a
        locked file pauses the recording for `HANDLED_PAUSE_S` (the in-process record still de-duplicates), so
        a write-locked file costs one short wait, not `busy_timeout` per update under one lock."""
        with self._lock:
            if time.monotonic() < self._updates_paused_until:
                return
            conn = self._conn
            if conn is None:
                raise StorageError("storage is not open")
            try:
                conn.execute(f"PRAGMA busy_timeout={HANDLED_BUSY_MS}")
                conn.execute("INSERT INTO updates (key, created) VALUES (?, ?) "
                             "ON CONFLICT(key) DO UPDATE SET created = excluded.created", (key, time.time()))
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    self._updates_paused_until = time.monotonic() + HANDLED_PAUSE_S
                raise StorageError(f"settings database {self.path}: {exc}") from exc
            except sqlite3.Error as exc:
                raise StorageError(f"settings database {self.path}: {exc}") from exc
            finally:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")

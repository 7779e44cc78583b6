"""Durable sessions in SQLite: the transcript and the run's events (the run counters are
derived from them), one committed transaction per append.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from endstate_harness.agent.messages import Message

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id         TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    model      TEXT NOT NULL DEFAULT '',
    workdir    TEXT NOT NULL DEFAULT '',
    title      TEXT NOT NULL DEFAULT '',
    status     TEXT NOT NULL DEFAULT 'open'
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    payload    TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
"""

EVENT_KINDS = ("model_call", "compaction", "denied", "unsettled", "tool_call")


class SessionError(RuntimeError):
    """The store cannot be opened or the session does not exist (message says which)."""


@dataclass(frozen=True)
class SessionInfo:
    """One row of ``sessions``, for listing."""

    id: str
    created_at: float
    updated_at: float
    model: str
    workdir: str
    title: str
    status: str
    messages: int


class SessionStore:
    """A SQLite file holding many sessions.

    ``durable=False`` (a store that is deleted when its run ends: eval's and prove's
    temporary ones) skips the sync to disk of each commit. What is committed is still seen by
    every other connection, so a loop that is killed and resumed in the same process reads it
    back alike; only a machine that loses power would lose it, and with it the store that was
    to be deleted anyway. Measured: a scripted run of 25 steps spent 0.3 s of its 0.5 s in
    those syncs.
    """

    def __init__(self, path: Path | str, *, durable: bool = True) -> None:
        self.path = Path(path)
        self.durable = durable
        self._local = threading.local()
        self._kept: list[sqlite3.Connection] = []
        self._kept_lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as conn:
                conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise SessionError(f"cannot open the session store {self.path}: {exc}") from exc

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if not self.durable:
            kept = self._kept_connection()
            try:
                yield kept
                kept.commit()
            except BaseException:
                kept.rollback()
                raise
            return
        conn = sqlite3.connect(self.path, timeout=30.0)
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            yield conn
            conn.commit()
        finally:
            conn.close()

    def _kept_connection(self) -> sqlite3.Connection:
        """A temporary store's connection for this thread, opened once.

        Opening a connection, setting its pragmas and closing it around every append cost
        more than the append (a scripted run of prove's guards makes ~180 of them). A
        durable store keeps a connection per operation: other processes (``sessions``, a
        resumed run) read and write the same file, and nothing stays open between steps."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # used by this thread only; check_same_thread=False lets close() end them all
            conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute("PRAGMA journal_mode = MEMORY")  # no journal file per commit
            self._local.conn = conn
            with self._kept_lock:
                self._kept.append(conn)
        return conn

    def close(self) -> None:
        """Close the connections a temporary store kept (a durable one keeps none).
        Idempotent; a later operation opens a new one."""
        with self._kept_lock:
            kept, self._kept = self._kept, []
            self._local = threading.local()
        for conn in kept:
            conn.close()

    def create(self, *, model: str = "", workdir: str = "", title: str = "") -> Session:
        session_id = uuid.uuid4().hex[:12]
        now = time.time()
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO sessions (id, created_at, updated_at, model, workdir, title)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, now, now, model, workdir, title[:200]),
            )
        return Session(id=session_id, store=self, model=model, workdir=workdir)

    def load(self, session_id: str) -> Session:
        """Read a session back from disk: a fresh object that shares nothing with the writer."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT model, workdir FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise SessionError(f"no session {session_id!r} in {self.path}")
            messages = conn.execute(
                "SELECT payload FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
            events = conn.execute(
                "SELECT kind, payload FROM events WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        session = Session(id=session_id, store=self, model=row[0], workdir=row[1])
        session.messages = [Message.model_validate_json(p) for (p,) in messages]
        session.events = [(kind, json.loads(p)) for kind, p in events]
        return session

    def list(self) -> list[SessionInfo]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT s.id, s.created_at, s.updated_at, s.model, s.workdir, s.title, s.status,"
                " (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)"
                " FROM sessions s ORDER BY s.updated_at DESC"
            ).fetchall()
        return [SessionInfo(*row) for row in rows]

    def _insert(self, table: str, session_id: str, seq: int, **values: str) -> None:
        columns = ", ".join(["session_id", "seq", *values])
        marks = ", ".join("?" * (2 + len(values)))
        with self._connect() as conn:
            conn.execute(
                f"INSERT INTO {table} ({columns}) VALUES ({marks})",
                (session_id, seq, *values.values()),
            )
            conn.execute(
                "UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id)
            )

    def _set_status(self, session_id: str, status: str) -> None:
        with self._connect() as conn:
            conn.execute(
                "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?",
                (status, time.time(), session_id),
            )


@dataclass
class Session:
    """An append-only transcript plus its events, each append committed before it returns."""

    id: str
    store: SessionStore
    model: str = ""
    workdir: str = ""
    messages: list[Message] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def append(self, message: Message) -> None:
        self.store._insert(
            "messages", self.id, len(self.messages), payload=message.model_dump_json()
        )
        self.messages.append(message)

    def record(self, kind: str, **payload: Any) -> None:
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}")
        self.store._insert(
            "events", self.id, len(self.events), kind=kind, payload=json.dumps(payload)
        )
        self.events.append((kind, payload))

    def events_of(self, kind: str) -> list[dict[str, Any]]:
        return [payload for k, payload in self.events if k == kind]

    def set_status(self, status: str) -> None:
        self.store._set_status(self.id, status)

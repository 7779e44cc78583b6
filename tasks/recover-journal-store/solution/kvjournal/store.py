"""The store: a dict in memory, a journal on disk.

The journal is a text stream passed in by the caller (a file opened for appending in
production, ``io.StringIO`` in tests), so the store never decides where data lives.
"""

from __future__ import annotations

from typing import TextIO

from kvjournal.journal import decode_record, encode_record


def replay(lines: list[str]) -> dict[str, str]:
    """The state a journal describes; torn or foreign lines are skipped."""
    state: dict[str, str] = {}
    for line in lines:
        record = decode_record(line)
        if record is None:
            continue
        op, key, value = record
        if op == "set":
            state[key] = value
        else:
            state.pop(key, None)
    return state


class Store:
    """A key-value store that writes every change to ``journal`` before applying it."""

    def __init__(self, journal: TextIO, existing: list[str] | None = None) -> None:
        self._journal = journal
        self._data = replay(existing or [])

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._data.get(key, default)

    def set(self, key: str, value: str) -> None:
        self._journal.write(encode_record("set", key, value))
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._journal.write(encode_record("del", key))
        self._data.pop(key, None)

    def snapshot(self) -> dict[str, str]:
        """A copy of the current state, sorted by key."""
        return dict(sorted(self._data.items()))

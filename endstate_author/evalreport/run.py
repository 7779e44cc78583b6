"""A run folder read back: results.json's rows, and each row's transcript from the sessions.

Reports and comparisons read runs from disk only, so the same code serves a run that has just
finished and one saved last month. A folder without results.json is a clear error, never a
traceback; a transcript that cannot be read is shown as missing, not as an empty one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from endstate_harness.agent.session import SessionError, SessionStore
from endstate_harness.sandbox.choice import where_ran


class RunError(ValueError):
    """The folder is not a readable eval run (the message says why)."""


@dataclass
class Run:
    folder: Path
    data: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        model = self.data.get("model") or "unknown model"
        return f"{model} ({self.folder.name})"

    @property
    def where(self) -> str:
        """Where the run ran: ``docker (image)``, ``local (not isolated)``."""
        return where_ran(
            self.data.get("sandbox"), self.data.get("sandbox_image"), self.data.get("walls")
        )

    @property
    def summary(self) -> dict[str, Any]:
        return dict(self.data.get("summary") or {})

    def transcript(self, session_id: str) -> list[dict[str, Any]] | None:
        """The messages of a run's session (role, text, tool calls, tool result), or None."""
        store_path = self.folder / "sessions.sqlite3"
        if not session_id or not store_path.is_file():
            return None
        try:
            session = SessionStore(store_path).load(session_id)
        except (SessionError, OSError, ValueError):
            return None
        out = []
        for message in session.messages:
            out.append(
                {
                    "role": message.role,
                    "content": message.content,
                    "calls": [
                        f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})"
                        for c in message.tool_calls
                    ],
                    "result": message.tool_result.content if message.tool_result else None,
                    "error": bool(message.tool_result and message.tool_result.is_error),
                }
            )
        return out


def load_run(folder: Path) -> Run:
    """Read ``folder/results.json`` (written by ``eval --out``)."""
    path = folder / "results.json"
    if not path.is_file():
        raise RunError(f"{folder} holds no results.json (write one with `eval --out {folder}`)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunError(f"{path} cannot be read: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise RunError(f"{path} is not an eval results file (no 'results' list)")
    rows = [r for r in data["results"] if isinstance(r, dict) and "task_id" in r]
    return Run(folder, data, rows)


def verdict(row: dict[str, Any]) -> str:
    """pass, FAIL or ERROR (an error is unassessed, never a failure)."""
    if row.get("error"):
        return "ERROR"
    return "pass" if row.get("passed") else "FAIL"


def failing_checks(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in row.get("checks") or [] if isinstance(c, dict) and not c.get("passed")]

"""Oracles: the scripted agents prove drives through the real loop (task-format.md §7)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from endstate_harness.agent.providers import ScriptedProvider
from endstate_harness.agent.tools import default_tools
from endstate_harness.layout import PRUNED_NAMES
from endstate_harness.task import Task

Step = list[dict[str, Any]]

TOOL_NAMES = tuple(t.name for t in default_tools())


class OracleError(ValueError):
    """An oracle.json that is not a list of steps, or a solution/ that cannot be scripted."""


def parse_oracle(data: Any, *, source: str = "oracle.json") -> list[Step]:
    """Validate the oracle format; the message names the exact step and call at fault."""
    if not isinstance(data, list) or not data:
        raise OracleError(f"{source}: expected a non-empty JSON list of steps")
    steps: list[Step] = []
    for i, step in enumerate(data):
        if not isinstance(step, list) or not step:
            raise OracleError(f"{source}: step {i} must be a non-empty list of tool calls")
        calls: Step = []
        for j, call in enumerate(step):
            where = f"{source}: step {i}, call {j}"
            if not isinstance(call, dict):
                raise OracleError(f'{where}: expected an object {{"tool": ..., "args": ...}}')
            extra = set(call) - {"tool", "args"}
            if extra:
                raise OracleError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
            tool = call.get("tool")
            if tool not in TOOL_NAMES:
                raise OracleError(f"{where}: tool {tool!r} is not one of {', '.join(TOOL_NAMES)}")
            args = call.get("args", {})
            if not isinstance(args, dict):
                raise OracleError(f"{where}: args must be an object")
            calls.append({"tool": tool, "args": args})
        steps.append(calls)
    return steps


def load_oracle(path: Path) -> list[Step]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OracleError(f"{path}: {exc}") from exc
    return parse_oracle(data, source=str(path))


def _files(root: Path) -> list[str]:
    out: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in PRUNED_NAMES)
        for name in sorted(files):
            if name in PRUNED_NAMES:
                continue
            out.append(Path(folder, name).relative_to(root).as_posix())
    return out


def solution_oracle(fixture: Path, solution: Path) -> list[Step]:
    """One step per file solution/ adds or changes: ``read`` (when it exists) then ``write``.

    Raises:
        OracleError: a solution file is a symlink or not UTF-8 text (the write tool
            writes text; such a task needs an oracle.json).
    """
    steps: list[Step] = []
    for rel in _files(solution):
        source = solution / rel
        if source.is_symlink():
            raise OracleError(
                f"{source}: a symlink cannot be written by the write tool; give the task "
                "an oracle.json"
            )
        if not source.is_file():  # a fifo would block the read below
            raise OracleError(f"{source}: not a file (a fifo, socket or device)")
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            raise OracleError(
                f"{source!r}: a name that is not UTF-8 cannot be written by the write tool; "
                "give the task an oracle.json"
            ) from None
        try:
            new = source.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as exc:
            raise OracleError(
                f"{source}: not UTF-8 text ({exc}); give the task an oracle.json"
            ) from exc
        old_path = fixture / rel
        old: str | None = None
        if old_path.is_file() and not old_path.is_symlink():
            try:
                old = old_path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                old = None
        if old == new:
            continue
        step: Step = []
        if old_path.exists() or old_path.is_symlink():
            step.append({"tool": "read", "args": {"path": rel}})
        step.append({"tool": "write", "args": {"path": rel, "content": new}})
        steps.append(step)
    return steps


def task_oracle_steps(task: Task) -> list[Step]:
    """The task's oracle.json if it has one, else the solution oracle (empty without solution/).

    Raises:
        OracleError: the oracle.json is malformed or the solution cannot be scripted.
    """
    if task.oracle_file is not None:
        return load_oracle(task.oracle_file)
    if task.solution is not None:
        return solution_oracle(task.fixture, task.solution)
    return []


def oracle_provider(task: Task) -> ScriptedProvider:
    """A fresh scripted provider that plays this task's oracle."""
    return ScriptedProvider(task_oracle_steps(task), model="oracle")


def solution_provider(task: Task) -> ScriptedProvider:
    """The plain solution oracle of ``eval --provider oracle``: it writes solution/ and nothing
    else, so it passes exactly the tasks where producing the right files is the whole job and
    fails compaction and permissioning tasks, which measure something else (endstate's own
    README: a byte-perfect oracle passes 16 of its 22 tasks). oracle.json is prove's business.

    Raises:
        OracleError: the solution cannot be scripted (a symlink, a binary file).
    """
    steps = solution_oracle(task.fixture, task.solution) if task.solution is not None else []
    return ScriptedProvider(steps, model="oracle")

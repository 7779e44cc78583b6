"""prove's wire format: a check result, the sandbox it chose and the progress events, as
they leave the process that proved them, and as every consumer reads them back.

Why one module: a check result crosses a boundary in five places (``-o json``, each
``--progress-json`` line, the whole-task and per-check caches, the language server reading
the stream and the report), and each once had a shape or a decoder of its own; a field added
in one was missing in another. Here the record is written once and read once, and it says
its version.

The record: every field of :class:`~endstate_author.prove.model.CheckResult` under its own
name; a field whose value is null is left out and reads back as null (so ``tests`` and
``counterexample`` appear only when they hold something, as ``-o json`` always had them);
``seconds`` rounded to the millisecond. The report (``-o json``) and every progress event
carry ``wire_version``; a record without one is of the unversioned format before it (the
same names; its report left out all but ``check``, ``outcome``, ``seconds``, ``detail``,
``tests``, ``counterexample`` and a ``walls`` of "none") and is read alike. A newer version
is refused with :class:`WireVersionError`, never guessed at: a language server may run
another install's prove.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.prove.model import CheckResult, Outcome, TaskProof
from endstate_harness.sandbox.choice import SandboxChoice

WIRE_VERSION = 1
"""The version of the record and of the events; raised when a field changes meaning or a
reader could no longer read what is written."""

VERSION_KEY = "wire_version"

OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

EventKind = Literal["sandbox", "start", "done", "task"]
EVENTS: tuple[EventKind, ...] = get_args(EventKind)

_FIELDS = tuple(f.name for f in fields(CheckResult))


class WireVersionError(ValueError):
    """A record of a newer wire version than this reader's (:data:`WIRE_VERSION`)."""


def _optional(kind: type | tuple[type, ...]) -> Any:
    return lambda value: value is None or (isinstance(value, kind)
                                           and not isinstance(value, bool))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_VALID: dict[str, Any] = {
    "check": lambda v: isinstance(v, str),
    "group": lambda v: isinstance(v, str),
    "outcome": lambda v: v in OUTCOMES,
    "seconds": _number,
    "detail": lambda v: isinstance(v, str),
    "code": _optional(str),
    "grader_index": _optional(int),
    "severity": lambda v: v in ("error", "warning"),
    "path": _optional(str),
    "line": _optional(int),
    "cached": lambda v: isinstance(v, bool),
    "tests": lambda v: v is None or (isinstance(v, list)
                                     and all(isinstance(t, dict) for t in v)),
    "unrun": lambda v: isinstance(v, bool),
    "walls": lambda v: isinstance(v, str),
    "counterexample": _optional(dict),
    "evidence": _optional(dict),
}
"""What each field may hold (one rule per field of CheckResult, held by the round-trip
test); a record breaking any is not a check result."""

_REQUIRED = ("check", "outcome")
"""A record has at least these; ``group`` is written by every version, but the report of the
unversioned format before it left it out (it reads back as "")."""


def check_version(data: dict[str, Any]) -> None:
    """Refuse a record of a newer version than this reader's.

    Raises:
        WireVersionError: ``data`` says a version above :data:`WIRE_VERSION`.
    """
    version = data.get(VERSION_KEY)
    if version is None:
        return
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise WireVersionError(f"{VERSION_KEY} {version!r} is not a version number")
    if version > WIRE_VERSION:
        raise WireVersionError(
            f"prove wrote wire version {version}; this reader knows up to {WIRE_VERSION} "
            "(use the same endstate-author for prove and its reader)"
        )


# ----- a check result -------------------------------------------------------------------


def encode_check(result: CheckResult) -> dict[str, Any]:
    """A check result as the wire carries it (nulls left out, seconds to the millisecond)."""
    data: dict[str, Any] = {}
    for name in _FIELDS:
        value = getattr(result, name)
        if value is None:
            continue
        data[name] = round(value, 3) if name == "seconds" else value
    return data


def decode_check(data: Any) -> CheckResult | None:
    """A check result read back; None when ``data`` is not one (a key it does not know, a
    value of the wrong type, a required key missing)."""
    if not isinstance(data, dict) or not all(k in data for k in _REQUIRED):
        return None
    if any(key not in _VALID or not _VALID[key](value) for key, value in data.items()):
        return None
    return CheckResult(**{"group": "", **data})


# ----- a task's proof and the report ------------------------------------------------------


def encode_proof(proof: TaskProof) -> dict[str, Any]:
    """One task of the report: its id, folder, checks, and what walled them in."""
    data: dict[str, Any] = {
        "task": proof.task_id,
        "path": str(proof.path),
        "checks": [encode_check(c) for c in proof.checks],
    }
    if proof.walls:
        data["walls"] = proof.walls
    if proof.mutation is not None:
        data["mutation_score"] = proof.mutation
    if proof.node:
        data["node"] = proof.node
    return data


def encode_report(
    sandbox: SandboxChoice, diagnostics: Sequence[Diagnostic], proofs: Sequence[TaskProof]
) -> dict[str, Any]:
    """``prove -o json``: the version, where every check ran and why, the findings, and each
    task's checks."""
    return {
        VERSION_KEY: WIRE_VERSION,
        "sandbox": encode_sandbox(sandbox),
        "diagnostics": [d.to_json() for d in diagnostics],
        "tasks": [encode_proof(p) for p in proofs],
    }


def report_checks(report: Any) -> list[CheckResult]:
    """Every check result of a report (``-o json``), in order; what is not one is passed over.

    Raises:
        WireVersionError: the report is of a newer version.
    """
    if not isinstance(report, dict):
        return []
    check_version(report)
    tasks = report.get("tasks")
    found = []
    for task in tasks if isinstance(tasks, list) else []:
        checks = task.get("checks") if isinstance(task, dict) else None
        for item in checks if isinstance(checks, list) else []:
            result = decode_check(item)
            if result is not None:
                found.append(result)
    return found


# ----- the sandbox ------------------------------------------------------------------------


def encode_sandbox(choice: SandboxChoice) -> dict[str, str | None]:
    """Where the checks run and why (:meth:`SandboxChoice.describe`)."""
    return choice.describe()


def decode_sandbox(data: Any) -> SandboxChoice | None:
    """The sandbox prove said it chose, as prove's grading uses it (so a reader keys the
    caches exactly as that prove did); None when ``data`` does not say one."""
    if not isinstance(data, dict) or data.get("kind") not in ("local", "docker"):
        return None
    image, reason = data.get("image"), data.get("reason")
    if image is not None and not isinstance(image, str):
        return None
    return SandboxChoice(data["kind"], image, reason=reason if isinstance(reason, str) else "",
                         grading=True)


# ----- the progress events ----------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One line of ``--progress-json``: ``sandbox`` once, before any check; ``start`` as a
    check starts running (one the cache answers never starts); ``done`` as a check ends,
    with its result (``result.cached``: the cache answered it); ``task`` as a task's proof is
    complete (``cached``: answered whole from the cache)."""

    kind: EventKind
    task: str | None = None
    check: str | None = None
    result: CheckResult | None = None
    sandbox: SandboxChoice | None = None
    cached: bool = False


def sandbox_event(choice: SandboxChoice) -> dict[str, Any]:
    return {"event": "sandbox", VERSION_KEY: WIRE_VERSION, **encode_sandbox(choice)}


def start_event(task_id: str, check: str) -> dict[str, Any]:
    return {"event": "start", VERSION_KEY: WIRE_VERSION, "task": task_id, "check": check}


def done_event(task_id: str, check: str, result: CheckResult) -> dict[str, Any]:
    return {"event": "done", VERSION_KEY: WIRE_VERSION, "task": task_id, "check": check,
            "result": encode_check(result)}


def task_event(proof: TaskProof) -> dict[str, Any]:
    return {"event": "task", VERSION_KEY: WIRE_VERSION, "task": proof.task_id,
            "cached": proof.cached}


def decode_event(data: Any) -> Event | None:
    """An event read back; None when ``data`` is not one.

    Raises:
        WireVersionError: the event is of a newer version.
    """
    if not isinstance(data, dict) or data.get("event") not in EVENTS:
        return None
    check_version(data)
    kind: EventKind = data["event"]
    task, check = data.get("task"), data.get("check")
    if kind == "sandbox":
        sandbox = decode_sandbox(data)
        return Event(kind, sandbox=sandbox) if sandbox is not None else None
    if not isinstance(task, str):
        return None
    if kind == "task":
        return Event(kind, task, cached=data.get("cached") is True)
    if not isinstance(check, str):
        return None
    if kind == "start":
        return Event(kind, task, check)
    result = decode_check(data.get("result"))
    if result is None or result.check != check:
        return None
    return Event(kind, task, check, result)


def decode_line(text: str) -> Event | None:
    """A line prove printed on stderr, read as an event (None for any other line).

    Raises:
        WireVersionError: the event is of a newer version.
    """
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return decode_event(data)

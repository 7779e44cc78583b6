"""A task.json recognised as valid without the pydantic model (lint's cold start).

:class:`endstate_harness.task.TaskManifest` is the single source of truth for what a manifest
may say, but building it costs about a tenth of a second at import, most of a one-task lint.
:func:`plainly_valid` accepts only manifests the model accepts (a differential test holds it
to that) and says False for anything it is not sure of; the model then decides, and its
errors are what lint reports. So a wrong answer here can only cost time, never a finding.
"""

from __future__ import annotations

import math
from typing import Any

from endstate_harness.layout import CATEGORIES, COUNTERS, STOP_REASONS

_TOP = frozenset({
    "$schema", "id", "category", "description", "prompt", "max_steps", "timeout_s",
    "budget", "graders", "requires", "recovery",
})  # fmt: skip
_BUDGET = frozenset({"max_context_tokens", "reserve_output_tokens"})
_REQUIRES = frozenset({*COUNTERS, "stop_reason"})


def _int(value: Any, least: int) -> bool:
    return type(value) is int and value >= least


def _optional_str(value: Any) -> bool:
    return value is None or type(value) is str


def _bound(value: Any) -> bool:
    if value is None:
        return True
    if type(value) is not dict or not set(value) <= {"min", "max"}:
        return False
    return all(v is None or _int(v, 0) for v in value.values())


def _grader(value: Any) -> bool:
    if type(value) is not dict or not set(value) <= {"name", "args"}:
        return False
    args = value.get("args", {})
    return (
        type(value.get("name")) is str
        and type(args) is dict
        and all(type(k) is str for k in args)
    )


def _requires(value: Any) -> bool:
    if type(value) is not dict or not set(value) <= _REQUIRES:
        return False
    stop = value.get("stop_reason")
    if stop is not None and (type(stop) is not str or stop not in STOP_REASONS):
        return False
    return all(_bound(v) for k, v in value.items() if k != "stop_reason")


def _recovery(value: Any) -> bool:
    if value is None:
        return True
    if type(value) is not dict or not set(value) <= {"crash_at_call", "after_side_effect"}:
        return False
    return _int(value.get("crash_at_call"), 0) and type(
        value.get("after_side_effect", False)
    ) is bool


def _budget(value: Any) -> bool:
    return (
        type(value) is dict
        and set(value) <= _BUDGET
        and _int(value.get("max_context_tokens", 1), 1)
        and _int(value.get("reserve_output_tokens", 0), 0)
    )


def plainly_valid_part(model: str, data: Any) -> bool:
    """True only for an object the part of the model named ``model`` validates (``Bound``,
    ``Requires``, ``Budget``, ``Recovery``, ``GraderSpec``, ``TaskManifest``): the values a
    caller builds (``GraderSpec(name=...)``) are checked without the model too."""
    if model == "TaskManifest":
        return plainly_valid(data)
    if type(data) is not dict:
        return False
    checks = {"Bound": _bound, "Requires": _requires, "Budget": _budget, "Recovery": _recovery,
              "GraderSpec": _grader}  # fmt: skip
    return checks[model](data)


def plainly_valid(data: Any) -> bool:
    """True only for a manifest :class:`~endstate_harness.task.TaskManifest` validates."""
    if type(data) is not dict or not set(data) <= _TOP:
        return False
    if not (_optional_str(data.get("$schema")) and _optional_str(data.get("id"))):
        return False
    category = data.get("category", "bug-fix")
    if type(category) is not str or category not in CATEGORIES:
        return False
    if type(data.get("description", "")) is not str or type(data.get("prompt", "")) is not str:
        return False
    if not _int(data.get("max_steps", 25), 1):
        return False
    timeout = data.get("timeout_s", 300.0)
    if type(timeout) not in (int, float) or not math.isfinite(timeout) or timeout <= 0:
        return False
    if not _budget(data.get("budget", {})):
        return False
    graders = data.get("graders")
    if type(graders) is not list or not graders or not all(_grader(g) for g in graders):
        return False
    return _requires(data.get("requires", {})) and _recovery(data.get("recovery"))

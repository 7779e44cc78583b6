"""The task model: what a task folder means, strictly (task-format.md §1–2). Every level of
task.json is closed and every type strict; what a manifest may say is decided by the pydantic
model, :mod:`endstate_harness.task_model` (the linter maps its validation errors onto JSON
positions). A loaded task carries plain values of the same names (:class:`Value`), so loading
a sound task imports neither pydantic nor the model: ~0.14 s of a one-check prove (issue 48).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from endstate_harness.layout import (  # noqa: F401  (re-exported: the names every caller knows)
    CATEGORIES,
    COUNTERS,
    DEFECTS_DIR,
    FIXTURE_DIR,
    HOLDOUT_DIR,
    ORACLE_FILE,
    PROMPT_FILE,
    PRUNED_NAMES,
    SOLUTION_DIR,
    STOP_REASONS,
    TASK_FILE,
    find_task_dirs,
)
from endstate_harness.plain_manifest import plainly_valid, plainly_valid_part
from endstate_harness.values import REQUIRED, Value

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

Category = Literal[
    "bug-fix", "feature", "refactor", "compaction", "permissioning", "recovery", "cost"
]
StopReason = Literal["end_turn", "tool_use", "max_tokens", "budget_exceeded", "max_steps", "error"]
# the vocabulary lives in layout.py (lint reads it without this model); the types must agree
assert get_args(Category) == CATEGORIES and get_args(StopReason) == STOP_REASONS


class _Part(Value):
    """A part of a manifest (:mod:`endstate_harness.values`): checked by
    :func:`~endstate_harness.plain_manifest.plainly_valid_part` (a differential test holds it
    to the model), else by :mod:`endstate_harness.task_model`, whose errors are raised."""

    _model_module = "endstate_harness.task_model"

    @classmethod
    def _plain(cls, data: Any) -> bool:
        return plainly_valid_part(cls.__name__, data)


class Bound(_Part):
    """An inclusive range on a run counter; either end may be left out."""

    _defaults: ClassVar[dict[str, Any]] = {"min": None, "max": None}
    min: int | None
    max: int | None

    def admits(self, value: int) -> bool:
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)

    def __str__(self) -> str:
        if self.min is not None and self.max is not None:
            return f"is {self.min}" if self.min == self.max else f"is {self.min}-{self.max}"
        if self.min is not None:
            return f"is at least {self.min}"
        if self.max is not None:
            return f"is at most {self.max}"
        return "is anything"


class Requires(_Part):
    """Run-level assertions the runner checks and conjoins with the graders' verdict."""

    _defaults: ClassVar[dict[str, Any]] = {**dict.fromkeys(COUNTERS), "stop_reason": None}
    compaction_events: Bound | None
    denied_calls: Bound | None
    unsettled_calls: Bound | None
    steps: Bound | None
    input_tokens: Bound | None
    output_tokens: Bound | None
    total_tokens: Bound | None
    stop_reason: StopReason | None

    @classmethod
    def _convert(cls, name: str, raw: Any) -> Any:
        return Bound._build(raw) if name in COUNTERS and raw is not None else raw

    def bounds(self) -> dict[str, Bound]:
        return {name: getattr(self, name) for name in COUNTERS if getattr(self, name) is not None}


class Budget(_Part):
    """The context budget. Usable context is ``max_context_tokens - reserve_output_tokens``."""

    _defaults: ClassVar[dict[str, Any]] = {
        "max_context_tokens": 128_000, "reserve_output_tokens": 8_000,
    }  # fmt: skip
    max_context_tokens: int
    reserve_output_tokens: int

    @property
    def usable_tokens(self) -> int:
        return self.max_context_tokens - self.reserve_output_tokens


class Recovery(_Part):
    """Kill the run at a tool call, then resume it with a fresh loop over the saved session."""

    _defaults: ClassVar[dict[str, Any]] = {"crash_at_call": REQUIRED, "after_side_effect": False}
    crash_at_call: int
    after_side_effect: bool


class GraderSpec(_Part):
    """A grader named by ``module:function`` and the keyword arguments it is bound with."""

    _defaults: ClassVar[dict[str, Any]] = {"name": REQUIRED, "args": dict}
    name: str
    args: dict[str, Any]

    @classmethod
    def _convert(cls, name: str, raw: Any) -> Any:
        return dict(raw) if name == "args" else raw


class TaskManifest(_Part):
    """The content of task.json (task-format.md §2, plus the ``$schema`` key of §7)."""

    _defaults: ClassVar[dict[str, Any]] = {
        "schema_": None, "id": None, "category": "bug-fix", "description": "", "prompt": "",
        "max_steps": 25, "timeout_s": 300.0, "budget": Budget, "graders": REQUIRED,
        "requires": Requires, "recovery": None,
    }  # fmt: skip
    _aliases: ClassVar[dict[str, str]] = {"schema_": "$schema"}
    schema_: str | None
    id: str | None
    category: Category
    description: str
    prompt: str
    max_steps: int
    timeout_s: float
    budget: Budget
    graders: list[GraderSpec]
    requires: Requires
    recovery: Recovery | None

    @classmethod
    def _convert(cls, name: str, raw: Any) -> Any:
        parts: dict[str, type[Value]] = {"budget": Budget, "requires": Requires,
                                          "recovery": Recovery}  # fmt: skip
        if name == "timeout_s":
            return float(raw)  # the model's strict float takes an int as that float
        if name == "graders":
            return [GraderSpec._build(g) for g in raw]
        if name in parts and raw is not None:
            return parts[name]._build(raw)
        return raw


def model_at(path: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The pydantic model (:mod:`endstate_harness.task_model`) that validates the JSON object
    at ``path`` of a manifest (None: not an object the format defines). Lint uses it for
    did-you-mean, the editor for completion and hover."""
    # deferred: the pydantic model, which only lint's findings and the editor read
    import endstate_harness.task_model as task_model

    if not path:
        return task_model.TaskManifest
    head = path[0]
    if head in ("budget", "recovery", "requires") and len(path) == 1:
        tops: dict[str, type[BaseModel]] = {
            "budget": task_model.Budget,
            "recovery": task_model.Recovery,
            "requires": task_model.Requires,
        }
        return tops[str(head)]
    if head == "requires" and len(path) == 2 and path[1] in COUNTERS:
        return task_model.Bound
    if head == "graders" and len(path) == 2 and isinstance(path[1], int):
        return task_model.GraderSpec
    return None


class TaskError(ValueError):
    """A task folder that cannot be loaded; the message says which and why."""


class Task:
    """One loaded task: the manifest plus where its parts live."""

    def __init__(self, *, id: str, root: Path | str, manifest: TaskManifest | dict[str, Any],
                 prompt: str) -> None:
        if not isinstance(id, str) or not isinstance(prompt, str):
            raise TypeError("Task: id and prompt are text")
        self.id = id
        self.root = Path(root)
        if not isinstance(manifest, TaskManifest):
            manifest = TaskManifest.model_validate(manifest)
        self.manifest = manifest
        self.prompt = prompt

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Task:
        """A shallow copy with ``update``'s fields replaced (as pydantic's, unchecked)."""
        task = Task.__new__(Task)
        task.__dict__.update(self.__dict__)
        task.__dict__.update(update or {})
        return task

    def __eq__(self, other: object) -> bool:
        if type(other) is not Task:
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Task(id={self.id!r}, root={self.root!r})"

    @property
    def category(self) -> str:
        return self.manifest.category

    @property
    def graders(self) -> list[GraderSpec]:
        return self.manifest.graders

    @property
    def requires(self) -> Requires:
        return self.manifest.requires

    @property
    def fixture(self) -> Path:
        return self.root / FIXTURE_DIR

    def _optional_dir(self, name: str) -> Path | None:
        path = self.root / name
        return path if path.is_dir() else None

    @property
    def holdout(self) -> Path | None:
        return self._optional_dir(HOLDOUT_DIR)

    @property
    def solution(self) -> Path | None:
        return self._optional_dir(SOLUTION_DIR)

    @property
    def oracle_file(self) -> Path | None:
        path = self.root / ORACLE_FILE
        return path if path.is_file() else None

    @property
    def defects(self) -> dict[str, Path]:
        folder = self.root / DEFECTS_DIR
        if not folder.is_dir():
            return {}
        return {p.name: p for p in sorted(folder.iterdir()) if p.is_dir()}



def format_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def load_task(directory: Path | str) -> Task:
    """Load one task folder strictly.

    Raises:
        TaskError: the folder is not a well-formed task (the message names the problem).
    """
    directory = Path(directory)
    manifest_path = directory / TASK_FILE
    if not manifest_path.is_file():
        raise TaskError(f"{directory}: no {TASK_FILE}")
    try:
        data = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TaskError(f"{manifest_path}: {exc}") from exc
    if not isinstance(data, dict):
        raise TaskError(f"{manifest_path}: the top level is not an object")
    if plainly_valid(data):
        manifest = TaskManifest._build(data)
    else:
        # deferred: pydantic's error type, for a manifest the plain check is not sure of
        from pydantic import ValidationError

        try:
            manifest = TaskManifest.model_validate(data)
        except ValidationError as exc:
            raise TaskError(f"{manifest_path}: {format_validation_error(exc)}") from exc
    if not (directory / FIXTURE_DIR).is_dir():
        raise TaskError(f"{directory}: no {FIXTURE_DIR}/ directory")
    prompt = manifest.prompt
    prompt_path = directory / PROMPT_FILE
    if prompt_path.is_file():
        try:
            prompt = prompt_path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise TaskError(f"{prompt_path}: {exc}") from exc
    if not prompt.strip():
        raise TaskError(f"{directory}: no prompt, in {PROMPT_FILE} or in {TASK_FILE}")
    return Task(id=manifest.id or directory.name, root=directory, manifest=manifest, prompt=prompt)


def discover_tasks(root: Path | str) -> list[Task]:
    """Load every task below ``root``, ordered by id; ids must be unique.

    Raises:
        TaskError: a task is malformed or two tasks share an id.
    """
    root = Path(root)
    if not root.is_dir():
        raise TaskError(f"no such suite directory: {root}")
    tasks = [load_task(d) for d in find_task_dirs(root)]
    seen: dict[str, Path] = {}
    for task in tasks:
        if task.id in seen:
            raise TaskError(f"duplicate task id {task.id!r}: {seen[task.id]} and {task.root}")
        seen[task.id] = task.root
    return sorted(tasks, key=lambda t: t.id)

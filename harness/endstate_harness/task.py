"""The task model: what a task folder means, strictly (task-format.md §1–2). Every level of
task.json is closed and every type strict; the linter maps this model's validation errors onto
JSON positions, so it is the one source of truth for what a manifest may say.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from pydantic import ValidationError as _ValidationError

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

Category = Literal[
    "bug-fix", "feature", "refactor", "compaction", "permissioning", "recovery", "cost"
]
StopReason = Literal["end_turn", "tool_use", "max_tokens", "budget_exceeded", "max_steps", "error"]
# the vocabulary lives in layout.py (lint reads it without this model); the types must agree
assert get_args(Category) == CATEGORIES and get_args(StopReason) == STOP_REASONS


_closed = ConfigDict(extra="forbid", strict=True)

NonNegInt = Annotated[StrictInt, Field(ge=0)]


class Bound(BaseModel):
    """An inclusive range on a run counter; either end may be left out."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [{"min": 1}, {"max": 8}, {"min": 1, "max": 3}]},
    )

    min: NonNegInt | None = Field(default=None, description="Least value allowed (inclusive).")
    max: NonNegInt | None = Field(default=None, description="Greatest value allowed (inclusive).")

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


class Requires(BaseModel):
    """Run-level assertions the runner checks and conjoins with the graders' verdict."""

    model_config = _closed

    compaction_events: Bound | None = Field(default=None, description=COUNTERS["compaction_events"])
    denied_calls: Bound | None = Field(default=None, description=COUNTERS["denied_calls"])
    unsettled_calls: Bound | None = Field(default=None, description=COUNTERS["unsettled_calls"])
    steps: Bound | None = Field(default=None, description=COUNTERS["steps"])
    input_tokens: Bound | None = Field(default=None, description=COUNTERS["input_tokens"])
    output_tokens: Bound | None = Field(default=None, description=COUNTERS["output_tokens"])
    total_tokens: Bound | None = Field(default=None, description=COUNTERS["total_tokens"])
    stop_reason: StopReason | None = Field(
        default=None, description="The run's stop reason must equal this."
    )

    def bounds(self) -> dict[str, Bound]:
        return {name: getattr(self, name) for name in COUNTERS if getattr(self, name) is not None}


class Budget(BaseModel):
    """The context budget. Usable context is ``max_context_tokens - reserve_output_tokens``."""

    model_config = _closed

    max_context_tokens: Annotated[StrictInt, Field(gt=0)] = Field(
        default=128_000, description="Context window the loop may fill, in estimated tokens."
    )
    reserve_output_tokens: NonNegInt = Field(
        default=8_000, description="Tokens kept free for the model's answer."
    )

    @property
    def usable_tokens(self) -> int:
        return self.max_context_tokens - self.reserve_output_tokens


class Recovery(BaseModel):
    """Kill the run at a tool call, then resume it with a fresh loop over the saved session."""

    model_config = _closed

    crash_at_call: NonNegInt = Field(
        description="0-based index of the tool call, counted across the whole run, that dies."
    )
    after_side_effect: StrictBool = Field(
        default=False,
        description="false: die before the call runs; true: after it ran, before it was recorded.",
    )


class GraderSpec(BaseModel):
    """A grader named by ``module:function`` and the keyword arguments it is bound with."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {
                    "name": "endstate.evals.graders:command_succeeds",
                    "args": {"command": "python -m unittest discover -s tests -t . -q"},
                }
            ]
        },
    )

    name: StrictStr = Field(description="`module:function` path of the grader.")
    args: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments bound before the grader runs."
    )


class TaskManifest(BaseModel):
    """The content of task.json (task-format.md §2, plus the ``$schema`` key of §7)."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    schema_: StrictStr | None = Field(
        default=None,
        alias="$schema",
        description="The JSON Schema editors validate this file with (ignored by the runner).",
    )
    id: StrictStr | None = Field(
        default=None, description="Unique in the suite; defaults to the folder name."
    )
    category: Category = Field(
        default="bug-fix", description="What the task measures; a typo is an error, not a filter."
    )
    description: StrictStr = Field(default="", description="One line on what the task tests.")
    prompt: StrictStr = Field(
        default="", description="What the agent is told; used only when prompt.md is absent."
    )
    max_steps: Annotated[StrictInt, Field(gt=0)] = Field(
        default=25, description="Agent loop steps (model calls) before the run stops."
    )
    timeout_s: Annotated[StrictFloat, Field(gt=0)] = Field(
        default=300.0, description="Wall clock for the run; the end state is graded on expiry."
    )
    budget: Budget = Field(default_factory=Budget, description="The context budget.")
    graders: list[GraderSpec] = Field(
        min_length=1, description="A conjunction: every check of every grader must pass."
    )
    requires: Requires = Field(
        default_factory=Requires, description="Run counters the runner checks."
    )
    recovery: Recovery | None = Field(
        default=None, description="Kill the run at a tool call, then resume it."
    )


def model_at(path: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The model that validates the JSON object at ``path`` of a manifest (None: not an object
    the format defines). Lint uses it for did-you-mean, the editor for completion and hover."""
    if not path:
        return TaskManifest
    head = path[0]
    if head in ("budget", "recovery", "requires") and len(path) == 1:
        tops: dict[str, type[BaseModel]] = {
            "budget": Budget,
            "recovery": Recovery,
            "requires": Requires,
        }
        return tops[str(head)]
    if head == "requires" and len(path) == 2 and path[1] in COUNTERS:
        return Bound
    if head == "graders" and len(path) == 2 and isinstance(path[1], int):
        return GraderSpec
    return None


class TaskError(ValueError):
    """A task folder that cannot be loaded; the message says which and why."""


class Task(BaseModel):
    """One loaded task: the manifest plus where its parts live."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    root: Path
    manifest: TaskManifest
    prompt: str

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


def format_validation_error(exc: _ValidationError) -> str:
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
    try:
        manifest = TaskManifest.model_validate(data)
    except _ValidationError as exc:
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

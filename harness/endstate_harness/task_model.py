"""The pydantic model of task.json: what a manifest may say, strictly (task-format.md §1–2).

Every level of task.json is closed and every type strict. This is the one source of truth for
what a manifest may say: its validation errors are what ``load_task`` and lint report (lint
maps them onto JSON positions), its fields are what the editor completes and hovers
(:func:`endstate_harness.task.model_at`), and the shipped JSON Schema is generated from it.

Why apart from :mod:`endstate_harness.task`: building these models (and importing pydantic)
costs ~0.14 s, most of prove's start for a one-check run (issue 48). A loaded task carries
plain values (``endstate_harness.task``'s classes of the same names); a manifest that
:func:`~endstate_harness.plain_manifest.plainly_valid` accepts loads without this module, and
anything else is validated here, so a wrong answer there can cost time, never a finding.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from endstate_harness.layout import CATEGORIES, COUNTERS, STOP_REASONS

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


class Budget(BaseModel):
    """The context budget. Usable context is ``max_context_tokens - reserve_output_tokens``."""

    model_config = _closed

    max_context_tokens: Annotated[StrictInt, Field(gt=0)] = Field(
        default=128_000, description="Context window the loop may fill, in estimated tokens."
    )
    reserve_output_tokens: NonNegInt = Field(
        default=8_000, description="Tokens kept free for the model's answer."
    )


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

"""What the words of task.json mean: the texts completion and hover show for them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

MAX_DOCUMENT_BYTES = 1 << 20
"""Documents over 1 MiB get no completion, hover or lint: a task.json is never that large."""

PATH_ARGS = frozenset({"path", "paths", "allowed", "start_dir", "top_level_dir"})
"""Grader arguments whose values are paths (or path patterns) relative to the fixture."""

CATEGORY_TEXT: dict[str, str] = {
    "bug-fix": "the fixture has a bug and a failing test; the agent fixes the code",
    "feature": "the agent adds behaviour the tests describe",
    "refactor": "the agent restructures code while the tests keep passing",
    "compaction": "the run must survive context compaction (requires.compaction_events.min >= 1)",
    "permissioning": "the agent is asked for something destructive and must be refused "
    "(tree_unchanged + requires.denied_calls.min >= 1; no solution/)",
    "recovery": "the run is killed at a tool call and resumed (needs a recovery block)",
    "cost": "the work must fit a step or token budget (a max on requires.steps or total_tokens)",
}

STOP_REASON_TEXT: dict[str, str] = {
    "end_turn": "the model ended its turn with a final message",
    "tool_use": "the run stopped while the model still asked for tools",
    "max_tokens": "the model hit its output limit",
    "budget_exceeded": "the context budget could not be met",
    "max_steps": "the loop ran out of steps",
    "error": "the loop stopped on an error",
}


def model_fields(model: type[BaseModel]) -> list[tuple[str, str, str]]:
    """(json key, type text, description) for each field of ``model``."""
    out = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        ann = getattr(info.annotation, "__name__", None) or str(info.annotation)
        ann = ann.replace("typing.", "").replace("Annotated[", "").replace("NoneType", "None")
        out.append((key, ann, info.description or ""))
    return out

"""The JSON Schema of task.json, generated from the task model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from endstate_harness.task_model import TaskManifest

SCHEMA_ID = "https://endstate-author.invalid/schemas/task.schema.json"
SHIPPED = Path(__file__).parent / "data" / "task.schema.json"

CATEGORY_DOCS = {
    "bug-fix": "Fix a bug; the fixture ships the failing test.",
    "feature": "Add behaviour the tests describe.",
    "refactor": "Change structure without changing behaviour (e.g. pattern_count).",
    "compaction": "The task does not fit the context budget; needs requires.compaction_events.",
    "permissioning": "The agent must refuse; tree_unchanged + requires.denied_calls, no solution/.",
    "recovery": "The run is killed at a tool call and resumed; needs a recovery block.",
    "cost": "Finish under a step/token budget; needs requires.steps.max or total_tokens.max.",
}

STOP_REASON_DOCS = {
    "end_turn": "The model answered with a final message.",
    "tool_use": "The run ended while the model was still calling tools.",
    "max_tokens": "The model's answer hit its output limit.",
    "budget_exceeded": "The context budget could not be met even after compaction.",
    "max_steps": "The loop reached max_steps.",
    "error": "The provider or the harness failed.",
}


def _walk(node: Any) -> None:
    if isinstance(node, dict):
        for value in node.values():
            _walk(value)
        enum = node.get("enum")
        if isinstance(enum, list):
            docs = CATEGORY_DOCS if set(enum) <= set(CATEGORY_DOCS) else STOP_REASON_DOCS
            if set(enum) <= set(docs):
                node["markdownEnumDescriptions"] = [docs[v] for v in enum]
                node["enumDescriptions"] = [docs[v] for v in enum]
    elif isinstance(node, list):
        for value in node:
            _walk(value)


def build_schema() -> dict[str, Any]:
    schema = TaskManifest.model_json_schema(by_alias=True)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "endstate task.json",
        **{k: v for k, v in schema.items() if k != "title"},
    }
    schema["description"] = (
        "The manifest of an endstate evaluation task (task-format.md §2). Every level is closed: "
        "unknown keys are errors, types are strict."
    )
    schema["examples"] = [
        {
            "id": "fix-chunk-off-by-one",
            "category": "bug-fix",
            "graders": [
                {
                    "name": "endstate.evals.graders:command_succeeds",
                    "args": {"command": "python -m unittest discover -s tests -t . -q"},
                }
            ],
        }
    ]
    _walk(schema)
    return schema


def render_schema() -> str:
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"

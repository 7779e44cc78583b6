"""The quick recogniser of valid manifests never calls valid what the model rejects, and
recognises the manifests authors actually write (else lint would import the model for them)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from endstate_harness.plain_manifest import plainly_valid
from endstate_harness.task_model import TaskManifest  # the model itself, not the loaded value
from tests.support.fuzzgen import documents, mutate

ROOT = Path(__file__).resolve().parents[2]


def _model_accepts(data: Any) -> bool:
    try:
        TaskManifest.model_validate(data)
    except ValidationError:
        return False
    return True


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents(), st.integers(0, 10**6), st.sampled_from(["none", "value", "key", "drop"]))
def test_never_valid_where_the_model_says_invalid(doc: Any, seed: int, how: str) -> None:
    if how != "none":
        try:
            doc = json.loads(mutate(doc, how, random.Random(seed)))
        except (ValueError, UnicodeDecodeError):
            return
    if plainly_valid(doc):
        assert _model_accepts(doc), doc


EDGES: list[Any] = [
    {"graders": [{"name": "a:b"}], "timeout_s": True},
    {"graders": [{"name": "a:b"}], "timeout_s": float("nan")},
    {"graders": [{"name": "a:b"}], "timeout_s": float("inf")},
    {"graders": [{"name": "a:b"}], "timeout_s": 0},
    {"graders": [{"name": "a:b"}], "max_steps": True},
    {"graders": [{"name": "a:b"}], "max_steps": 0},
    {"graders": [{"name": "a:b", "args": {"x": 1}, "extra": 1}]},
    {"graders": []},
    {"graders": [{"name": 3}]},
    {"graders": [{"name": "a:b"}], "category": "bugfix"},
    {"graders": [{"name": "a:b"}], "schema_": "x"},
    {"graders": [{"name": "a:b"}], "requires": {"steps": {"min": -1}}},
    {"graders": [{"name": "a:b"}], "requires": {"steps": {"min": 1, "mid": 2}}},
    {"graders": [{"name": "a:b"}], "requires": {"stop_reason": "done"}},
    {"graders": [{"name": "a:b"}], "recovery": {"crash_at_call": 0, "after_side_effect": 1}},
    {"graders": [{"name": "a:b"}], "recovery": {"after_side_effect": True}},
    {"graders": [{"name": "a:b"}], "budget": {"max_context_tokens": 0}},
    {"graders": [{"name": "a:b"}], "description": None},
]


def test_edges_are_left_to_the_model() -> None:
    for doc in EDGES:
        assert not plainly_valid(doc) or _model_accepts(doc), doc


def test_every_shipped_and_scaffolded_manifest_is_recognised(tmp_path: Path) -> None:
    from endstate_author.scaffold import create_task
    from endstate_harness.layout import CATEGORIES

    manifests = sorted((ROOT / "tasks").glob("*/task.json"))
    for category in CATEGORIES:
        create_task(f"new-{category}", category, tmp_path)
    manifests += sorted(tmp_path.glob("*/task.json"))
    assert len(manifests) > len(CATEGORIES)
    for path in manifests:
        data = json.loads(path.read_text())
        assert _model_accepts(data), path
        assert plainly_valid(data), path

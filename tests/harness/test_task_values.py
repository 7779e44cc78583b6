"""A loaded task's plain values (``endstate_harness.task``) against the pydantic model they
stand for (``endstate_harness.task_model``): the same fields, defaults and keys, the same value
for every manifest the model accepts, the model's own errors for what it refuses; and loading
a sound task imports neither pydantic nor the model (issue 48: ~0.14 s of a one-check prove)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from endstate_harness import task, task_model, values
from endstate_harness.plain_manifest import plainly_valid_part
from tests.support.fuzzgen import documents

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("Bound", "Requires", "Budget", "Recovery", "GraderSpec", "TaskManifest")
SHIPPED = sorted(p.parent for p in (ROOT / "tasks").glob("*/task.json"))


def _default(value: Any) -> Any:
    return value() if callable(value) else value


@pytest.mark.parametrize("name", PARTS)
def test_every_field_default_and_key_is_the_models(name: str) -> None:
    value: type[values.Value] = getattr(task, name)
    model: type[BaseModel] = getattr(task_model, name)
    assert set(value._defaults) == set(model.model_fields)
    for field, info in model.model_fields.items():
        ours = value._defaults[field]
        if info.is_required():
            assert ours is values.REQUIRED, field
        else:
            theirs = info.get_default(call_default_factory=True)
            mine = _default(ours)
            assert (mine.model_dump() if isinstance(mine, values.Value) else mine) == (
                theirs.model_dump() if isinstance(theirs, BaseModel) else theirs), field
        assert value._aliases.get(field, field) == (info.alias or field)


@pytest.mark.parametrize("root", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_manifest_loads_to_what_the_model_reads(root: Path) -> None:
    data = json.loads((root / "task.json").read_text())
    loaded = task.load_task(root).manifest
    assert loaded.model_dump(by_alias=True) == task_model.TaskManifest.model_validate(
        data).model_dump(by_alias=True)


def _outcome(cls: Any, data: Any) -> Any:
    try:
        return ("ok", cls.model_validate(data).model_dump(by_alias=True))
    except ValidationError as exc:
        return ("error", exc.errors(include_url=False))


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents(), st.sampled_from(PARTS))
def test_any_object_gets_the_models_answer(doc: Any, name: str) -> None:
    """Valid: the same fields; invalid: pydantic's very errors (what lint and load_task say)."""
    if name != "TaskManifest" and isinstance(doc, dict):
        doc = doc.get("budget" if name == "Budget" else "recovery" if name == "Recovery"
                      else "requires" if name == "Requires" else "graders", doc)
        if name == "GraderSpec" and isinstance(doc, list) and doc:
            doc = doc[0]
        if name == "Bound" and isinstance(doc, dict) and doc:
            doc = next(iter(doc.values()))
    assert _outcome(getattr(task, name), doc) == _outcome(getattr(task_model, name), doc)


@pytest.mark.parametrize("name", PARTS)
def test_the_plain_check_never_accepts_what_the_model_refuses(name: str) -> None:
    samples: list[Any] = [{}, {"min": True}, {"min": -1}, {"max": 2.0}, {"name": 3},
                          {"name": "a:b", "args": {"k": 1}}, {"name": "a:b", "args": []},
                          {"crash_at_call": 0}, {"crash_at_call": 0, "after_side_effect": 1},
                          {"steps": {"max": 3}}, {"stop_reason": "end_turn"},
                          {"stop_reason": "nope"}, {"max_context_tokens": 0},
                          {"reserve_output_tokens": 0}, {"graders": [{"name": "a:b"}]},
                          {"graders": [{"name": "a:b"}], "timeout_s": 1}]  # fmt: skip
    for data in samples:
        if plainly_valid_part(name, data):
            getattr(task_model, name).model_validate(data)


def test_values_keep_the_interface_callers_use() -> None:
    spec = task.GraderSpec(name="endstate.evals.graders:tree_unchanged")
    assert spec.args == {} and spec == task.GraderSpec(name=spec.name, args={})
    with pytest.raises(ValidationError):
        task.GraderSpec(name=3)
    manifest = task.TaskManifest.model_validate({"graders": [{"name": "a:b"}], "timeout_s": 2})
    assert manifest.timeout_s == 2.0 and isinstance(manifest.timeout_s, float)
    changed = manifest.model_copy(update={"requires": task.Requires(steps={"max": 4})})
    assert changed.requires.bounds()["steps"].admits(4) and not manifest.requires.bounds()
    assert str(changed.requires.steps) == "is at most 4"
    assert changed.requires.model_dump(exclude_none=True, exclude_defaults=True) == {
        "steps": {"max": 4}}
    assert task.Budget(max_context_tokens=10, reserve_output_tokens=4).usable_tokens == 6


PROBE = """
import sys
from endstate_harness.task import load_task
loaded = load_task({root!r})
assert loaded.manifest.graders and loaded.prompt
print(sorted(m for m in sys.modules if m.split(".")[0] == "pydantic"
             or m == "endstate_harness.task_model"))
"""


def test_loading_a_sound_task_imports_neither_pydantic_nor_the_model() -> None:
    root = str(ROOT / "tasks" / "fix-help-text-wrap")
    proc = subprocess.run([sys.executable, "-c", PROBE.format(root=root)],
                          capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout


def test_an_unsound_task_is_refused_in_the_models_words(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "fixture").mkdir(parents=True)
    (root / "task.json").write_text(json.dumps({"graders": [], "colour": "red"}))
    with pytest.raises(task.TaskError) as caught:
        task.load_task(root)
    assert "graders: List should have at least 1 item" in str(caught.value)
    assert "colour: Extra inputs are not permitted" in str(caught.value)

"""Every shipped task.json validates against the shipped JSON Schema, and ``"$schema"`` works.

Editors without the language server validate task.json through the schema alone (VS Code's
jsonValidation, or a ``"$schema"`` key, task-format.md §7), so the schema must accept every
real task, must accept the ``$schema`` key itself, and must still refuse what lint refuses
at the manifest level (an unknown key, a wrong category).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from endstate_author.schema import SHIPPED

ROOT = Path(__file__).resolve().parents[1]
TASKS = sorted((ROOT / "tasks").glob("**/task.json"))
TASKS = [t for t in TASKS if not {"fixture", "holdout", "solution", "defects"} & set(t.parts)]


def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SHIPPED.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(data)
    return data


def errors(instance: Any, against: dict[str, Any] | None = None) -> list[str]:
    validator = Draft202012Validator(against or schema())
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(instance)
    ]


def test_shipped_suite_is_present() -> None:
    assert len(TASKS) >= 10, "tasks/ should hold the shipped suite"


@pytest.mark.parametrize("task_json", TASKS, ids=lambda p: p.parent.name)
def test_every_shipped_task_validates(task_json: Path) -> None:
    instance = json.loads(task_json.read_text(encoding="utf-8"))
    assert errors(instance) == []


@pytest.mark.parametrize("task_json", TASKS, ids=lambda p: p.parent.name)
def test_schema_key_is_allowed_and_addressable(task_json: Path) -> None:
    """``"$schema": "<relative path>"`` resolves from the task's folder to the shipped schema."""
    instance = json.loads(task_json.read_text(encoding="utf-8"))
    rel = os.path.relpath(SHIPPED, task_json.parent)
    instance = {"$schema": Path(rel).as_posix(), **instance}
    named = (task_json.parent / instance["$schema"]).resolve()
    assert named == SHIPPED.resolve()
    assert errors(instance, json.loads(named.read_text(encoding="utf-8"))) == []


def test_schema_refuses_what_the_manifest_refuses() -> None:
    base = json.loads(TASKS[0].read_text(encoding="utf-8"))
    assert any("max_step" in e for e in errors({**base, "max_step": 5}))
    assert errors({**base, "category": "bugfix"})
    assert errors({k: v for k, v in base.items() if k != "graders"})
    assert errors({**base, "$schema": 3})
    assert errors({**base, "requires": {"steps": {"max": 3, "maximum": 4}}})


def test_check_jsonschema_cli_agrees(tmp_path: Path) -> None:
    """A second, independent validator (check-jsonschema, a dev dependency) on the same files."""
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    if tool is None:
        print("SKIP REASON: check-jsonschema is not installed in the venv")
        pytest.skip("check-jsonschema is not installed in the venv")
    ok = subprocess.run(
        [tool, "--schemafile", str(SHIPPED), *map(str, TASKS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / "task.json"
    bad.write_text(json.dumps({**json.loads(TASKS[0].read_text()), "max_step": 5}))
    refused = subprocess.run(
        [tool, "--schemafile", str(SHIPPED), str(bad)], capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 1 and "max_step" in refused.stdout + refused.stderr
